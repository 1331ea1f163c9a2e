from __future__ import annotations

from django.contrib import admin

from teams_app.models import ApiToken, Invitation, Membership, OneTimePassword, ProviderKey, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "user", "name", "created_at", "last_used_at"]
    readonly_fields = ["digest", "prefix", "created_at", "last_used_at"]


@admin.register(ProviderKey)
class ProviderKeyAdmin(admin.ModelAdmin):
    """Write-only here too: the ciphertext is neither shown nor editable."""

    list_display = ["name", "team", "last4", "created_by", "created_at"]
    fields = ["team", "name", "last4", "created_by", "created_at"]
    readonly_fields = ["team", "name", "last4", "created_by", "created_at"]

    def has_add_permission(self, request: object) -> bool:
        return False


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["team", "role", "created_by", "created_at", "expires_at", "used_at"]
    readonly_fields = ["digest", "created_at", "used_at", "used_by"]


@admin.register(OneTimePassword)
class OneTimePasswordAdmin(admin.ModelAdmin):
    list_display = ["user", "created_at"]
