"""Import is all or nothing and refuses what could hurt; export gives back what import takes."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

pytestmark = pytest.mark.django_db

AGENTS = """# Acme agent guide

Read this first.

## Build / test

Run `make test`.

```sh
# not a heading
```

## Style

Tabs.
"""


def zipped(files, method=zipfile.ZIP_DEFLATED):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        for name, body in files.items():
            archive.writestr(name, body)
    return buffer.getvalue()


def upload(client, personas, *files, **fields):
    client.force_login(personas["alice"][0])
    return client.post(
        "/api/v1/memory-spaces/import",
        {"file": [SimpleUploadedFile(name, data) for name, data in files], **fields},
    )


def nothing_imported():
    from memory_app.models import MemoryNote, MemorySpace

    return not MemorySpace.objects.exists() and not MemoryNote.objects.exists()


def test_import_a_zip_and_export_it_back(client, personas):
    files = {"Style.md": "Tabs.\n", "Deploys.md": "Never on Friday — ever.\n", "Empty.md": ""}
    made = upload(client, personas, ("team-notes.zip", zipped(files)))
    assert made.status_code == 201, made.content
    space = made.json()["space"]
    assert space["name"] == "team-notes" and sorted(made.json()["notes"]) == sorted(
        t[:-3] for t in files
    )

    exported = client.get(f"/api/v1/memory-spaces/{space['id']}/export")
    assert exported.status_code == 200 and exported["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(exported.content)) as archive:
        assert {n: archive.read(n).decode() for n in archive.namelist()} == files

    again = upload(client, personas, ("x.zip", exported.content), name="copy")
    assert again.status_code == 201 and sorted(again.json()["notes"]) == sorted(
        t[:-3] for t in files
    )


def test_agents_md_splits_by_heading(client, personas):
    made = upload(client, personas, ("AGENTS.md", AGENTS.encode()), name="guide")
    assert made.status_code == 201, made.content
    from memory_app.models import MemoryNote

    notes = dict(MemoryNote.objects.values_list("title", "body"))
    assert notes == {
        "AGENTS": "# Acme agent guide\n\nRead this first.",
        "Build - test": "Run `make test`.\n\n```sh\n# not a heading\n```",
        "Style": "Tabs.",
    }


def test_a_set_of_markdown_files(client, personas):
    made = upload(client, personas, ("one.md", b"1"), ("two.md", b"2"), name="set")
    assert made.status_code == 201 and sorted(made.json()["notes"]) == ["one", "two"]


@pytest.mark.parametrize(
    ("files", "status", "words"),
    [
        ({"good.md": "ok", "image.png": "\x89PNG"}, 400, "image.png` is not markdown"),
        ({"good.md": "ok", "../evil.md": "x"}, 400, "../evil.md"),
        ({"good.md": "ok", "/etc/evil.md": "x"}, 400, "plain file names"),
        ({"good.md": "ok", "dir/inner.md": "x"}, 400, "dir/inner.md"),
        ({"good.md": "ok", ".md": "x"}, 400, "hidden"),
        ({"good.md": "ok", "big.md": "x" * 20_001}, 413, "big.md"),
        ({"good.md": "ok", "bad.md": b"\xff\xfe\xfa"}, 400, "not UTF-8"),
        ({"good.md": "ok", "nul.md": "a\x00b"}, 400, "NUL"),
    ],
)
def test_a_bad_file_imports_nothing(client, personas, files, status, words):
    refused = upload(client, personas, ("notes.zip", zipped(files)))
    assert refused.status_code == status, refused.content
    assert words in refused.json()["detail"]
    assert nothing_imported()


def test_a_zip_bomb_is_refused(client, personas):
    bomb = zipped({"bomb.md": "0" * 5_000_000})
    assert len(bomb) < 10_000
    refused = upload(client, personas, ("bomb.zip", bomb))
    assert refused.status_code == 413 and "zip bomb" in refused.json()["detail"]
    many = zipped({f"n{i}.md": "x" for i in range(501)})
    refused = upload(client, personas, ("many.zip", many))
    assert refused.status_code == 413 and "501 files" in refused.json()["detail"]
    assert nothing_imported()


def test_duplicate_and_empty_titles_are_named(client, personas):
    doubled = "## Style\nTabs.\n## Style\nSpaces.\n"
    refused = upload(client, personas, ("CLAUDE.md", doubled.encode()))
    assert refused.status_code == 400 and "'Style' is already taken" in refused.json()["detail"]
    refused = upload(client, personas, ("a.md", b"x"), ("b.zip", zipped({"a.md": "y"})))
    assert refused.status_code == 400 and "already taken" in refused.json()["detail"]
    empty = upload(client, personas, ("AGENTS.md", b"## \xc2\xa0\nx\n## Two\ny\n"))
    assert empty.status_code == 400 and "empty" in empty.json()["detail"]
    assert not_zip(client, personas)
    assert nothing_imported()


def not_zip(client, personas):
    refused = upload(client, personas, ("fake.zip", b"not a zip at all"))
    return refused.status_code == 400 and "fake.zip" in refused.json()["detail"]


def test_import_into_a_taken_name_leaves_nothing(client, personas, space):
    from memory_app.models import MemoryNote

    refused = upload(client, personas, ("conventions.md", b"x"))
    assert refused.status_code == 400 and "already exists" in refused.json()["detail"]
    assert not MemoryNote.objects.exists()
