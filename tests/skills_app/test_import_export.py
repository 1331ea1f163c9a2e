"""Import is all or nothing, names the file it refuses, and refuses what could hurt; export
gives back what import takes."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

pytestmark = pytest.mark.django_db

GOOD = """---
name: pdf-forms
description: Fill in PDF forms
  from a spreadsheet.
license: MIT
allowed-tools: [read_entry]
---

# Filling forms

See `REFERENCE.md`.
"""


def skill_md(name, description="Does things.", body="Body.\n"):
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}"


def zipped(files, method=zipfile.ZIP_DEFLATED):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        for name, body in files.items():
            info = name if isinstance(name, zipfile.ZipInfo) else zipfile.ZipInfo(name)
            info.compress_type = method
            archive.writestr(info, body)
    return buffer.getvalue()


def upload(client, personas, data, name="skills.zip", who="alice"):
    client.force_login(personas[who][0])
    return client.post("/api/v1/skills/import", {"file": SimpleUploadedFile(name, data)})


def nothing_imported():
    from skills_app.models import Skill

    return not Skill.objects.exists()


def test_import_keeps_front_matter_body_and_files_and_exports_back(client, personas):
    files = {
        "skills/pdf-forms/SKILL.md": GOOD,
        "skills/pdf-forms/REFERENCE.md": "# Reference\n",
        "skills/pdf-forms/scripts/fill.py": "print('fill')\n",
        "skills/git/SKILL.md": skill_md("git", "Use git well."),
        "skills/.DS_Store": "litter",
        "__MACOSX/skills/._git": "litter",
    }
    made = upload(client, personas, zipped(files))
    assert made.status_code == 201, made.content
    body = made.json()
    assert [s["name"] for s in body["skills"]] == ["git", "pdf-forms"]
    pdf = body["skills"][1]
    assert pdf["description"] == "Fill in PDF forms from a spreadsheet."
    assert pdf["body"] == "# Filling forms\n\nSee `REFERENCE.md`.\n"
    assert pdf["files"] == ["REFERENCE.md", "scripts/fill.py"]
    assert pdf["meta"] == {"license": "MIT", "allowed-tools": ["read_entry"]}
    assert sorted(body["ignored"]) == ["__MACOSX/skills/._git", "skills/.DS_Store"]

    exported = client.get("/api/v1/skills/export")
    assert exported.status_code == 200 and exported["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(exported.content)) as archive:
        assert sorted(archive.namelist()) == [
            "git/SKILL.md", "pdf-forms/REFERENCE.md", "pdf-forms/SKILL.md",
            "pdf-forms/scripts/fill.py",
        ]  # fmt: skip
    before = {s["name"]: s for s in client.get("/api/v1/skills").json()}
    from skills_app.models import Skill

    Skill.objects.all().delete()
    again = upload(client, personas, exported.content)
    assert again.status_code == 201, again.content
    after = {s["name"]: s for s in client.get("/api/v1/skills").json()}
    keep = ("description", "body", "files", "meta", "bundle")
    assert {n: {k: s[k] for k in keep} for n, s in after.items()} == {
        n: {k: s[k] for k in keep} for n, s in before.items()
    }
    assert Skill.objects.get(name="pdf-forms").files["scripts/fill.py"] == "print('fill')\n"


@pytest.mark.parametrize(
    ("files", "named"),
    [
        ({"b/SKILL.md": "no front matter\n"}, "b/SKILL.md"),
        ({"b/SKILL.md": "---\nname: b\n---\nbody"}, "b/SKILL.md"),  # no description
        ({"b/SKILL.md": "---\ndescription: d\n---\nbody"}, "b/SKILL.md"),  # no name
        ({"b/SKILL.md": "---\nname: [unclosed\ndescription: d\n---\n"}, "b/SKILL.md"),
        ({"b/SKILL.md": "---\nname: b\ndescription: d\n"}, "b/SKILL.md"),  # never closed
        ({"b/SKILL.md": skill_md("Bad Name")}, "b/SKILL.md"),
        ({"b/SKILL.md": skill_md("b"), "b/logo.png": b"\x89PNG\r\n\x1a\n\xff\xfe"}, "b/logo.png"),
        ({"b/SKILL.md": skill_md("a")}, "b/SKILL.md"),  # a second skill named `a`
        ({"stray.md": "x", "b/SKILL.md": skill_md("b")}, "stray.md"),
        ({"b/SKILL.md": "---\na: &x [1]\nb: *x\nname: b\ndescription: d\n---\n"}, "b/SKILL.md"),
    ],
)
def test_one_bad_file_imports_nothing_and_is_named(client, personas, files, named):
    data = zipped({"a/SKILL.md": skill_md("a"), "a/notes.md": "ok", **files})
    refused = upload(client, personas, data)
    assert refused.status_code == 400, refused.content
    assert named in refused.json()["detail"], refused.json()
    assert nothing_imported()


def test_a_name_taken_in_the_team_imports_nothing(client, personas, skill):
    data = zipped({"a/SKILL.md": skill_md("a"), "p/SKILL.md": skill_md(skill.name)})
    refused = upload(client, personas, data)
    assert refused.status_code == 400 and "p/SKILL.md" in refused.json()["detail"]
    from skills_app.models import Skill

    assert list(Skill.objects.values_list("name", flat=True)) == [skill.name]


@pytest.mark.parametrize(
    "path", ["../evil/SKILL.md", "/etc/x/SKILL.md", "a/../../SKILL.md", "C:/x/SKILL.md",
             "a\\..\\SKILL.md"],
)  # fmt: skip
def test_path_tricks_are_refused_and_named(client, personas, path):
    refused = upload(client, personas, zipped({"a/SKILL.md": skill_md("a"), path: skill_md("e")}))
    assert refused.status_code == 400 and "path trick" in refused.json()["detail"]
    assert nothing_imported()


def test_a_symlink_is_refused(client, personas):
    link = zipfile.ZipInfo("a/link")
    link.external_attr = 0o120777 << 16
    refused = upload(client, personas, zipped({"a/SKILL.md": skill_md("a"), link: "/etc/passwd"}))
    assert refused.status_code == 400 and "a/link" in refused.json()["detail"]
    assert nothing_imported()


def test_a_zip_bomb_is_refused(client, personas):
    bomb = zipped({"a/SKILL.md": skill_md("a"), "a/big.txt": "0" * 900_000})
    refused = upload(client, personas, bomb)
    assert refused.status_code == 413 and "a/big.txt" in refused.json()["detail"]
    assert "zip bomb" in refused.json()["detail"]
    assert nothing_imported()


def test_too_many_or_too_large_files_are_refused(client, personas, monkeypatch):
    from skills_app import archives

    monkeypatch.setattr(archives, "ZIP_MAX_FILES", 3)
    many = zipped({"a/SKILL.md": skill_md("a"), **{f"a/{i}.md": "x" for i in range(5)}})
    assert upload(client, personas, many).status_code == 413
    monkeypatch.setattr(archives, "FILE_MAX_BYTES", 100)
    large = zipped({"a/SKILL.md": skill_md("a"), "a/x.md": "y" * 500}, zipfile.ZIP_STORED)
    refused = upload(client, personas, large)
    assert refused.status_code == 413 and "a/x.md" in refused.json()["detail"]
    assert nothing_imported()


def test_not_a_zip_is_refused(client, personas):
    refused = upload(client, personas, b"plain text", name="notes.zip")
    assert refused.status_code == 400 and "notes.zip" in refused.json()["detail"]


def test_export_is_the_teams_only(client, personas, skill):
    client.force_login(personas["charlie"][0])
    exported = client.get("/api/v1/skills/export")
    with zipfile.ZipFile(io.BytesIO(exported.content)) as archive:
        assert archive.namelist() == []
    assert client.get("/api/v1/skills/export?team=acme").status_code == 404
