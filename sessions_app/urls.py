from __future__ import annotations

from django.urls import path

from sessions_app import card_views, preset_views, views

app_name = "sessions"
urlpatterns = [
    path("", views.session_list, name="list"),
    path("sessions/new/", views.session_new, name="new"),
    path("sessions/new/memory-cost/", views.session_new_cost, name="new-cost"),
    path("models/", card_views.card_list, name="models"),
    path("models/new/", card_views.card_new, name="model-new"),
    path("models/<int:card_id>/", card_views.card_edit, name="model"),
    path("models/<int:card_id>/test/", card_views.card_test, name="model-test"),
    path("models/<int:card_id>/delete/", card_views.card_delete, name="model-delete"),
    path("presets/", preset_views.preset_list, name="presets"),
    path("presets/new/", preset_views.preset_new, name="preset-new"),
    path("presets/<int:preset_id>/", preset_views.preset_edit, name="preset"),
    path("presets/<int:preset_id>/delete/", preset_views.preset_delete, name="preset-delete"),
    path("sessions/<int:session_id>/", views.session_detail, name="detail"),
    path("sessions/<int:session_id>/send/", views.message_send, name="send"),
    path("sessions/<int:session_id>/answer/", views.answer_send, name="answer"),
    path("sessions/<int:session_id>/complete/", views.command_complete, name="complete"),
    path("sessions/<int:session_id>/meter/", views.context_meter, name="meter"),
    path("sessions/<int:session_id>/memory/", views.memory_change, name="memory"),
    path("sessions/<int:session_id>/entries/", views.entries_earlier, name="entries"),
    path("sessions/<int:session_id>/entries/<int:seq>/", views.entry_detail, name="entry"),
    path("sessions/<int:session_id>/context/", views.context_view, name="context"),
    path("sessions/<int:session_id>/chart/", views.context_chart, name="chart"),
    path("sessions/<int:session_id>/summary/", views.summary_save, name="summary"),
    path("sessions/<int:session_id>/fork/", views.fork_start, name="fork"),
    path("sessions/<int:session_id>/rewind/", views.rewind_start, name="rewind"),
]
