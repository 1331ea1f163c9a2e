from __future__ import annotations

from django.urls import path

from sessions_app.consumers import SessionConsumer

websocket_urlpatterns = [
    path("ws/v1/sessions/<int:session_id>/", SessionConsumer.as_asgi()),
]
