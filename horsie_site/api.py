"""The one `NinjaAPI`: bearer tokens or the browser's session, JSON errors everywhere."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer, SessionAuth

from teams_app.selectors import user_for_token


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
    auth=[TokenAuth(), SessionAuth()],
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


api.add_router("/", "sessions_app.api.router")
api.add_router("/", "teams_app.api.router")
