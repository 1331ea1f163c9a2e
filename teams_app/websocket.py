"""Who a websocket is, and the answer to a socket nobody serves.

A token (`?token=`) authenticates like a bearer token, from any origin or none: scripts send
no `Origin`. Without a token the browser's session cookie is read, but only when the
`Origin` is one of `ALLOWED_HOSTS` (the rule of Channels' `AllowedHostsOriginValidator`), so
a page elsewhere cannot ride a person's cookie; a cookie login still holding its one-time
password counts as anonymous, as it may open no page either. Anyone else is anonymous. Sockets are never
refused at the handshake (a browser sees that as 1006 and reconnects forever): consumers
accept, then close with 4401 (no or bad token) or 4404 (not found or not yours).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.security.websocket import AllowedHostsOriginValidator
from django.contrib.auth.models import AnonymousUser

from teams_app.selectors import must_change_password, user_for_token

CLOSE_UNAUTHORIZED = 4401
CLOSE_NOT_FOUND = 4404


def origin_of(scope: dict[str, Any]) -> Any:
    for name, value in scope.get("headers", []):
        if name == b"origin":
            try:
                return urlparse(value.decode("latin1"))
            except ValueError:
                return None
    return None


class SocketAuthMiddleware:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.with_cookie = AuthMiddlewareStack(OneTimePasswordHold(inner))
        self.origins = AllowedHostsOriginValidator(inner)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        token = parse_qs(scope.get("query_string", b"").decode("latin1")).get("token")
        if token:
            user = await database_sync_to_async(user_for_token)(token[0])
            scope = {**scope, "user": user or AnonymousUser(), "auth": "token"}
            return await self.inner(scope, receive, send)
        if self.origins.valid_origin(origin_of(scope)):
            return await self.with_cookie({**scope, "auth": "cookie"}, receive, send)
        return await self.inner({**scope, "user": AnonymousUser(), "auth": None}, receive, send)


class OneTimePasswordHold:
    """A cookie login made with a one-time password is anonymous here until it is changed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if await database_sync_to_async(must_change_password)(scope["user"]):
            scope = {**scope, "user": AnonymousUser()}
        return await self.inner(scope, receive, send)


class NoSuchSocket(AsyncWebsocketConsumer):
    """Any websocket path no route serves: accepted, then closed as not found."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)
