from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from horsie_site.api import api
from teams_app.views import PasswordChange

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", PasswordChange.as_view(), name="password_change"),
    path("teams/", include("teams_app.urls")),
    path("memory/", include("memory_app.urls")),
    path("skills/", include("skills_app.urls")),
    path("", include("sessions_app.urls")),
]
