from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from sessions_app.models import AgentPreset, Entry, ModelCard, QueuedInput, Session


@admin.register(ModelCard)
class ModelCardAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "wire", "model", "context_window", "max_output_tokens"]
    list_filter = ["wire", "team"]


@admin.register(AgentPreset)
class AgentPresetAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "model", "auto_compact", "max_steps"]
    list_filter = ["team"]


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "team", "kind", "model", "status", "last_seq", "created_at"]
    list_filter = ["team", "kind", "status"]
    search_fields = ["title"]
    readonly_fields = ["last_seq", "lease_owner", "lease_expires_at"]


@admin.register(Entry)
class EntryAdmin(admin.ModelAdmin):
    """Read-only: the log is append-only, for people as for code."""

    list_display = ["session", "seq", "kind", "author", "tokens", "created_at"]
    list_filter = ["kind"]
    search_fields = ["content"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(QueuedInput)
class QueuedInputAdmin(admin.ModelAdmin):
    list_display = ["session", "author", "created_at"]
