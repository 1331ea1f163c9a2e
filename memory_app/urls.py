from __future__ import annotations

from django.urls import path

from memory_app import views

app_name = "memory"
urlpatterns = [
    path("", views.space_list, name="list"),
    path("new/", views.space_new, name="space-new"),
    path("import/", views.space_import, name="import"),
    path("preview/", views.note_preview, name="preview"),
    path("<int:space_id>/", views.space_detail, name="space"),
    path("<int:space_id>/live/", views.space_live, name="space-live"),
    path("<int:space_id>/settings/", views.space_edit, name="space-edit"),
    path("<int:space_id>/delete/", views.space_delete, name="space-delete"),
    path("<int:space_id>/export/", views.space_export, name="export"),
    path("<int:space_id>/notes/", views.note_new, name="note-new"),
    path("notes/<int:note_id>/", views.note_card, name="note"),
    path("notes/<int:note_id>/edit/", views.note_edit, name="note-edit"),
    path("notes/<int:note_id>/pin/", views.note_pin, name="note-pin"),
    path("notes/<int:note_id>/delete/", views.note_delete, name="note-delete"),
    path("notes/<int:note_id>/revisions/", views.note_history, name="history"),
    path("notes/<int:note_id>/revisions/<int:rev>/restore/", views.note_restore, name="restore"),
]
