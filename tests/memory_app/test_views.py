"""The memory pages through the Django client: the list with costs, a space with its notes,
editing in place, and a stale edit that never overwrites but offers the merge."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


@pytest.fixture
def alice(client, personas):
    client.force_login(personas["alice"][0])
    return client


def test_the_list_shows_spaces_with_their_cost(alice, space, note, personal, personas):
    from memory_app.services import space_create

    space_create(user=personas["bob"][0], team=personas["acme"], name="bobs-own", scope="personal")
    page = alice.get("/memory/").content.decode()
    assert "conventions" in page and "alice-only" in page and "bobs-own" not in page
    assert "1 note" in page and "/ 2,000" in page
    assert 'href="/memory/"' in page  # the sidebar link


def test_create_a_space_and_a_note(alice):
    made = alice.post("/memory/new/", {"name": "rules", "scope": "team", "budget_tokens": 500})
    assert made.status_code == 302
    url = made["Location"]
    added = alice.post(
        url + "notes/", {"title": "Tests", "body": "Run **all** of them."}, headers=HTMX
    )
    assert added.status_code == 200
    html = added.content.decode()
    assert "<strong>all</strong>" in html and 'id="space-cost"' in html
    refused = alice.post(url + "notes/", {"title": "Tests", "body": "again"}, headers=HTMX)
    assert refused.status_code == 400 and "already exists" in refused.content.decode()
    assert refused["HX-Retarget"] == "#new-note"
    found = alice.get(url + "?q=ALL", headers=HTMX).content.decode()
    assert "Tests" in found
    assert "No note contains" in alice.get(url + "?q=zzz", headers=HTMX).content.decode()


def test_a_stale_edit_shows_both_and_merges(alice, client, note, personas):
    from memory_app.models import MemoryNote
    from memory_app.services import note_update

    form = alice.get(f"/memory/notes/{note.pk}/edit/", headers=HTMX).content.decode()
    assert 'name="version" value="1"' in form
    # bob saves first
    note_update(note=note, version=1, body="Use tabs.\nSemicolons: yes.\n", user=personas["bob"][0])
    mine = "Use tabs.\nNo semicolons.\nWrap at 100.\n"
    stale = alice.post(f"/memory/notes/{note.pk}/edit/",
                       {"title": "Style", "body": mine, "version": 1})  # fmt: skip
    assert stale.status_code == 409
    html = stale.content.decode()
    assert "Not saved: this note changed" in html
    assert "Semicolons: yes." in html  # the current text, beside
    assert 'class="diff-added"' in html and "Wrap at 100." in html  # what only I wrote
    assert 'name="version" value="2"' in html  # saving now merges onto the current version
    assert "Wrap at 100." in html.split("<textarea", 1)[1]  # my text is kept in the form
    assert MemoryNote.objects.get(pk=note.pk).body == "Use tabs.\nSemicolons: yes.\n"

    htmx = alice.post(f"/memory/notes/{note.pk}/edit/",
                      {"title": "Style", "body": mine, "version": 1}, headers=HTMX)  # fmt: skip
    assert htmx.status_code == 200 and "Save merged text" in htmx.content.decode()

    merged = "Use tabs.\nSemicolons: yes.\nWrap at 100.\n"
    saved = alice.post(f"/memory/notes/{note.pk}/edit/",
                       {"title": "Style", "body": merged, "version": 2}, headers=HTMX)  # fmt: skip
    assert saved.status_code == 200 and "v3" in saved.content.decode()
    assert MemoryNote.objects.get(pk=note.pk).body == merged


def test_pin_delete_and_history(alice, note):
    pinned = alice.post(
        f"/memory/notes/{note.pk}/pin/", {"version": 1, "pinned": "1"}, headers=HTMX
    )
    assert pinned.status_code == 200 and "Unpin" in pinned.content.decode()
    stale = alice.post(f"/memory/notes/{note.pk}/delete/", {"version": 1}, headers=HTMX)
    assert stale.status_code == 200 and "Not done" in stale.content.decode()
    assert stale["HX-Retarget"] == f"#note-{note.pk}"
    alice.post(f"/memory/notes/{note.pk}/edit/", {"title": "Style", "body": "New.", "version": 2})
    history = alice.get(f"/memory/notes/{note.pk}/revisions/", headers=HTMX).content.decode()
    assert "v3</strong> update" in history and "Restore v1" in history
    assert 'class="diff-added"' in history
    restored = alice.post(
        f"/memory/notes/{note.pk}/revisions/1/restore/", {"version": 3}, headers=HTMX
    )
    assert restored.status_code == 200 and "No semicolons." in restored.content.decode()
    gone = alice.post(f"/memory/notes/{note.pk}/delete/", {"version": 4}, headers=HTMX)
    assert gone.status_code == 200 and f'id="note-{note.pk}"' not in gone.content.decode()


def test_preview_renders_safely(alice):
    shown = alice.post("/memory/preview/", {"body": "# Hi\n<script>x</script>"}).content.decode()
    assert "<h1>Hi</h1>" in shown and "<script>" not in shown


def test_import_and_export_buttons(alice, space, note):
    from django.core.files.uploadedfile import SimpleUploadedFile

    page = alice.get(f"/memory/{space.pk}/").content.decode()
    assert f"/memory/{space.pk}/export/" in page
    exported = alice.get(f"/memory/{space.pk}/export/")
    assert exported["Content-Type"] == "application/zip"
    made = alice.post("/memory/import/", {"file": SimpleUploadedFile("x.zip", exported.content),
                                          "name": "copy"})  # fmt: skip
    assert made.status_code == 302
    bad = alice.post("/memory/import/", {"file": SimpleUploadedFile("x.png", b"png")}, headers=HTMX)
    assert bad.status_code == 400 and "not markdown" in bad.content.decode()


def test_personal_space_pages_are_404_for_others(client, personal, personas):
    for name in ("bob", "charlie"):
        client.force_login(personas[name][0])
        assert client.get(f"/memory/{personal.pk}/").status_code == 404
        assert client.get(f"/memory/{personal.pk}/export/").status_code == 404


def test_the_new_session_form_selects_spaces(alice, card, space, personal, personas):
    from memory_app.services import space_create
    from sessions_app.models import Session

    hidden = space_create(
        user=personas["bob"][0], team=personas["acme"], name="bobs", scope="personal"
    )
    form = alice.get("/sessions/new/").content.decode()
    assert f'name="memory_{space.pk}"' in form and f'name="memory_{personal.pk}"' in form
    assert f'name="memory_{hidden.pk}"' not in form
    made = alice.post("/sessions/new/", {"model": card.pk, f"memory_{space.pk}": "write",
                                         f"memory_{personal.pk}": "read"})  # fmt: skip
    assert made.status_code == 302
    session = Session.objects.get()
    assert sorted(session.memory, key=lambda i: i["space"]) == [
        {"space": space.pk, "mode": "write"}, {"space": personal.pk, "mode": "read"},
    ]  # fmt: skip
    # a space the form does not offer cannot be selected through it: refused, as the API does
    refused = alice.post("/sessions/new/", {"model": card.pk, f"memory_{hidden.pk}": "write"})
    assert f"No such memory space: {hidden.pk}." in refused.content.decode()
    assert Session.objects.count() == 1


def test_a_stale_pin_without_htmx_says_so_on_its_card(alice, note, personas):
    from memory_app.models import MemoryNote
    from memory_app.services import note_create, note_update

    note_create(space=note.space, title="Other", body="x", user=personas["bob"][0])
    note_update(note=note, version=1, body="Changed.", user=personas["bob"][0])
    refused = alice.post(f"/memory/notes/{note.pk}/pin/", {"version": 1, "pinned": "1"})
    assert refused.status_code == 409 and refused.content.decode().count("Not done") == 1
    assert not MemoryNote.objects.get(pk=note.pk).pinned
