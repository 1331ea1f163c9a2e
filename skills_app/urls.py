from __future__ import annotations

from django.urls import path

from skills_app import views

app_name = "skills"
urlpatterns = [
    path("", views.skill_list, name="list"),
    path("import/", views.skill_import, name="import"),
    path("export/", views.skill_export, name="export"),
    path("sessions/<int:session_id>/", views.session_skills, name="session"),
]
# One new / edit / delete route per kind, each with its own id parameter.
for key, param in views.ID_PARAMS.items():
    urlpatterns += [
        path(f"{key}/new/", views.item_new, {"key": key}, name=f"{key}-new"),
        path(f"{key}/<int:{param}>/", views.item_edit, {"key": key}, name=f"{key}-edit"),
        path(f"{key}/<int:{param}>/delete/", views.item_delete, {"key": key}, name=f"{key}-delete"),
    ]
