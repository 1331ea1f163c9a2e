from __future__ import annotations

from django.urls import path

from teams_app import views

app_name = "teams"
urlpatterns = [
    path("", views.team_detail, name="detail"),
    path("switch/", views.team_switch, name="switch"),
    path("members/<int:user_id>/role/", views.member_role, name="member-role"),
    path("members/<int:user_id>/remove/", views.member_remove, name="member-remove"),
    path("invitations/", views.invitation_new, name="invite"),
    path("keys/", views.provider_key_new, name="key-new"),
    path("keys/<int:key_id>/remove/", views.provider_key_remove, name="key-remove"),
    path("join/<str:token>/", views.invitation_join, name="join"),
]
