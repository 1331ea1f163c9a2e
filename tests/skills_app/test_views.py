"""The Skills page and the new-session form: the same rules as the API, the same team wall."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

pytestmark = pytest.mark.django_db


def test_the_page_lists_searches_and_walls_off(client, personas, skill, bundle, command,
                                               subagent_type):  # fmt: skip
    client.force_login(personas["alice"][0])
    page = client.get("/skills/").content.decode()
    for text in ("pdf-forms", "Documents", "/review", "researcher", "Import skills"):
        assert text in page
    found = client.get("/skills/?q=nothing-like-it", headers={"HX-Request": "true"})
    assert "pdf-forms" not in found.content.decode() and 'id="skill-list"' in found.content.decode()

    client.force_login(personas["charlie"][0])
    assert "pdf-forms" not in client.get("/skills/").content.decode()
    for url in (f"/skills/skill/{skill.pk}/", f"/skills/bundle/{bundle.pk}/",
                f"/skills/command/{command.pk}/", f"/skills/subagent/{subagent_type.pk}/"):  # fmt: skip
        assert client.get(url).status_code == 404
        assert client.post(url.rstrip("/") + "/delete/").status_code == 404


def test_create_edit_delete_through_the_forms(client, personas):
    from skills_app.models import Skill, SlashCommand

    client.force_login(personas["bob"][0])
    made = client.post("/skills/skill/new/", {"skill-name": "lint", "skill-description": "Lint.",
                                             "skill-body": "Run ruff."})  # fmt: skip
    assert made.status_code == 302
    skill = Skill.objects.get(name="lint")
    assert client.get(f"/skills/skill/{skill.pk}/").status_code == 200
    saved = client.post(f"/skills/skill/{skill.pk}/", {"name": "lint", "description": "Lint it.",
                                                      "body": "Run ruff twice."})  # fmt: skip
    assert saved.status_code == 302
    skill.refresh_from_db()
    assert skill.body == "Run ruff twice."
    refused = client.post("/skills/command/new/", {"command-name": "compact",
                                                  "command-template": "x"})  # fmt: skip
    assert refused.status_code == 400 and "built-in" in refused.content.decode()
    assert not SlashCommand.objects.exists()
    assert client.post(f"/skills/skill/{skill.pk}/delete/").status_code == 302
    assert not Skill.objects.exists()


def test_import_and_export_buttons(client, personas):
    client.force_login(personas["alice"][0])
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a/SKILL.md", "---\nname: a\ndescription: A.\n---\nBody\n")
        archive.writestr("b/SKILL.md", "not front matter")
    refused = client.post(
        "/skills/import/", {"file": SimpleUploadedFile("s.zip", buffer.getvalue())}
    )
    assert refused.status_code == 400 and "b/SKILL.md" in refused.content.decode()
    exported = client.get("/skills/export/")
    assert exported.status_code == 200 and exported["Content-Type"] == "application/zip"


def test_the_new_session_form_selects_skills_and_bundles(client, personas, card, skill, bundle):
    from sessions_app.models import Session

    client.force_login(personas["alice"][0])
    page = client.get("/sessions/new/").content.decode()
    assert "pdf-forms — Fill PDF forms." in page and "Documents" in page
    made = client.post("/sessions/new/", {"model": card.pk, "auto_compact": "on", "skills": [skill.pk],
                                 "bundles": [bundle.pk]})  # fmt: skip
    assert made.status_code == 302, made.content.decode()[:2000]
    session = Session.objects.get()
    assert session.skills == [skill.pk] and session.bundles == [bundle.pk]


def test_htmx_gets_the_refused_form_back_alone(client, personas, skill):
    client.force_login(personas["alice"][0])
    refused = client.post("/skills/skill/new/", {"skill-name": skill.name, "skill-description": "D."},
                          headers={"HX-Request": "true"})  # fmt: skip
    html = refused.content.decode()
    assert refused.status_code == 200 and 'id="skill-form"' in html and "<html" not in html
    assert "already exists" in html


def test_the_edit_page_lists_a_skills_files(client, personas):
    from skills_app.services import skill_create

    made = skill_create(user=personas["alice"][0], team=personas["acme"], fields={
        "name": "f", "description": "F.", "files": {"scripts/run.sh": "echo"}})  # fmt: skip
    client.force_login(personas["bob"][0])
    page = client.get(f"/skills/skill/{made.pk}/").content.decode()
    assert "scripts/run.sh" in page and 'value="f"' in page
