"""`?token=` on a websocket URL authenticates like a bearer token; else the session cookie."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware

from teams_app.selectors import user_for_token


class TokenAuthMiddleware(BaseMiddleware):
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        token = parse_qs(scope.get("query_string", b"").decode()).get("token")
        if token:
            from django.contrib.auth.models import AnonymousUser

            user = await database_sync_to_async(user_for_token)(token[0])
            scope = {**scope, "user": user or AnonymousUser()}
        return await super().__call__(scope, receive, send)
