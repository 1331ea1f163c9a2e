from __future__ import annotations

from django.urls import path

from teams_app import views

app_name = "teams"
urlpatterns = [
    path("switch/", views.team_switch, name="switch"),
]
