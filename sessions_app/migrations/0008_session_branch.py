from django.db import migrations, models


def branches_backfill(apps, schema_editor):
    """Forks made before the field: the first entry of each says how it was made."""
    Session = apps.get_model("sessions_app", "Session")
    Entry = apps.get_model("sessions_app", "Entry")
    for session in Session.objects.filter(kind="fork", branch=""):
        first = Entry.objects.filter(session_id=session.pk, seq=1).first()
        data = first.data if first is not None and isinstance(first.data, dict) else {}
        if data.get("copied_from"):
            session.branch = "rewind"
        elif data.get("handoff"):
            session.branch = "handoff"
        else:
            session.branch = "summary"
        session.save(update_fields=["branch"])


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0007_model_card_thinking_budget"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="branch",
            field=models.CharField(
                blank=True,
                choices=[
                    ("", "none"),
                    ("summary", "summary"),
                    ("handoff", "handoff"),
                    ("rewind", "rewind"),
                ],
                default="",
                max_length=10,
            ),
        ),
        migrations.RunPython(branches_backfill, migrations.RunPython.noop),
    ]
