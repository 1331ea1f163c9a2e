from __future__ import annotations

from django.urls import path

from sessions_app.consumers import SessionConsumer
from sessions_app.ui_consumer import SessionUIConsumer

websocket_urlpatterns = [
    path("ws/v1/sessions/<int:session_id>/", SessionConsumer.as_asgi()),
    path("ws/v1/sessions/<int:session_id>/ui/", SessionUIConsumer.as_asgi()),
]
