"""The one `NinjaAPI`: bearer tokens or the browser's session, JSON errors everywhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.db import DatabaseError, connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja import NinjaAPI, Status
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer, SessionAuth

from horsie_site import readiness
from teams_app.selectors import must_change_password, user_for_token


class BrowserSessionAuth(SessionAuth):
    """The browser's session, unless its login still holds a one-time password: then 403
    until the password is changed (`OneTimePasswordMiddleware` holds the pages)."""

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = super().authenticate(request, key)
        if user is not None and must_change_password(user):
            raise PermissionDenied("Change your one-time password first, at /password/.")
        return user


class TokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> Any:
        user = user_for_token(token)
        if user is not None:
            request.user = user
        return user


api = NinjaAPI(
    title="Horsie",
    version="1",
    urls_namespace="api",
    auth=[TokenAuth(), BrowserSessionAuth()],
    docs_url="/docs",
)


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc) or "Not found."}, status=404)


@api.exception_handler(PermissionDenied)
def forbidden(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    detail = str(exc) or "Your role in this team may not do this."
    return api.create_response(request, {"detail": detail}, status=403)


@api.exception_handler(AuthenticationError)
def unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    detail = "Send a valid token as 'Authorization: Bearer <token>', or log in."
    return api.create_response(request, {"detail": detail}, status=401)


@api.exception_handler(ValidationError)
def invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return api.create_response(request, {"detail": exc.errors}, status=422)


@api.exception_handler(RequestDataTooBig)
def too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    detail = f"The request body is larger than {limit} bytes."
    return api.create_response(request, {"detail": detail}, status=413)


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc)}, status=exc.status_code)


@api.get("/health", auth=None, response={200: dict, 503: dict}, tags=["health"])
def health(request: HttpRequest) -> Any:
    """For a readiness probe, no token needed: 200 once the process's start-up work is done
    and its database answers, else 503 with what it is still doing or that the database
    does not answer. A process serves while it starts; a turn then shares it with that work."""
    starting = readiness.starting()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = "ok"
    except DatabaseError:
        database = "unreachable"
    ready = not starting and database == "ok"
    return Status(
        200 if ready else 503, {"ready": ready, "starting": starting, "database": database}
    )


api.add_router("/", "sessions_app.api.router")
api.add_router("/", "teams_app.api.router")
api.add_router("/", "memory_app.api.router")
api.add_router("/", "skills_app.api.router")


API_PREFIX = "/api/"


class JsonErrorsMiddleware:
    """Under `/api/`, an error Django or ninja answers in HTML (an unknown path's 404, a wrong
    method's 405, a server error) is answered as JSON `{"detail"}` like every other."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            not request.path.startswith(API_PREFIX)
            or response.status_code < 400
            or response.get("Content-Type", "").startswith("application/json")
        ):
            return response
        as_json = JsonResponse(
            {"detail": error_detail(request, response)}, status=response.status_code
        )
        if response.has_header("Allow"):
            as_json["Allow"] = response["Allow"]
        return as_json


def error_detail(request: HttpRequest, response: HttpResponse) -> str:
    if response.status_code == 404:
        return f"No such path: {request.path[:200]} (the API is described at /api/v1/docs)."
    if response.status_code == 405:
        allowed = response.get("Allow", "")
        return f"{request.method} is not allowed here; this path takes {allowed}."
    return str(response.reason_phrase)
