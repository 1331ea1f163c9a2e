"""Memory spaces and notes through the API: the contract in API.md, with bob and alice
editing one note, personal spaces that teammates cannot see, revisions and restore."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_create_and_list_spaces(api_for):
    alice = api_for("alice")
    made = alice.post("/memory-spaces", {"name": "conventions", "description": "House rules"})
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["scope"] == "team" and body["budget_tokens"] == 2000
    assert [s["name"] for s in api_for("bob").get("/memory-spaces").json()] == ["conventions"]
    assert api_for("charlie").get("/memory-spaces").json() == []
    assert api_for("charlie").get(f"/memory-spaces/{body['id']}").status_code == 404
    again = alice.post("/memory-spaces", {"name": "conventions"})
    assert again.status_code == 400 and "already exists" in again.json()["detail"]


def test_two_people_edit_one_note(api_for, note):
    alice, bob = api_for("alice"), api_for("bob")
    read_by_alice = alice.get(f"/memory-notes/{note.pk}").json()
    read_by_bob = bob.get(f"/memory-notes/{note.pk}").json()
    assert read_by_alice["version"] == read_by_bob["version"] == 1

    won = alice.patch(f"/memory-notes/{note.pk}", {"version": 1, "body": "Use spaces."})
    assert won.status_code == 200 and won.json()["version"] == 2

    lost = bob.patch(f"/memory-notes/{note.pk}", {"version": 1, "body": "Use tabs, always."})
    assert lost.status_code == 409
    conflict = lost.json()
    assert conflict["note"]["body"] == "Use spaces." and conflict["note"]["version"] == 2
    assert "version 2" in conflict["detail"] and "alice" in conflict["detail"]
    assert alice.get(f"/memory-notes/{note.pk}").json()["body"] == "Use spaces."

    merged = bob.patch(
        f"/memory-notes/{note.pk}", {"version": 2, "body": "Use spaces.\nUse tabs, always."}
    )
    assert merged.status_code == 200 and merged.json()["updated_by"] == "bob"

    stale_delete = alice.delete(f"/memory-notes/{note.pk}", body={"version": 2})
    assert stale_delete.status_code == 409 and stale_delete.json()["note"]["version"] == 3
    assert alice.delete(f"/memory-notes/{note.pk}", body="").status_code == 400
    assert alice.delete(f"/memory-notes/{note.pk}?version=3", body="").status_code == 204
    assert alice.get(f"/memory-notes/{note.pk}").status_code == 404


def test_personal_space_is_its_owners_alone(api_for, personal, personas):
    from memory_app.services import note_create

    secret = note_create(space=personal, title="Mine", body="secret", user=personas["alice"][0])
    alice = api_for("alice")
    assert alice.get(f"/memory-spaces/{personal.pk}").json()["owner"] == "alice"
    for name in ("bob", "charlie"):
        other = api_for(name)
        assert other.get(f"/memory-spaces/{personal.pk}").status_code == 404
        assert other.get(f"/memory-spaces/{personal.pk}/notes").status_code == 404
        assert other.get(f"/memory-notes/{secret.pk}").status_code == 404
        assert other.get(f"/memory-notes/{secret.pk}/revisions").status_code == 404
        assert other.patch(f"/memory-notes/{secret.pk}", {"version": 1}).status_code == 404
        assert other.delete(f"/memory-spaces/{personal.pk}").status_code == 404
        assert personal.pk not in [s["id"] for s in other.get("/memory-spaces").json()]
    # bob may have his own personal space with the same name: names never collide across owners
    made = api_for("bob").post("/memory-spaces", {"name": "alice-only", "scope": "personal"})
    assert made.status_code == 201


def test_revisions_and_restore(api_for, note):
    alice = api_for("alice")
    alice.patch(f"/memory-notes/{note.pk}", {"version": 1, "body": "Second."})
    alice.patch(f"/memory-notes/{note.pk}", {"version": 2, "title": "Formatting"})
    alice.patch(f"/memory-notes/{note.pk}", {"version": 3, "pinned": True})
    revisions = alice.get(f"/memory-notes/{note.pk}/revisions").json()
    assert [r["action"] for r in revisions] == ["pin", "rename", "update", "create"]
    assert (
        revisions[2]["body_before"].startswith("Use tabs")
        and revisions[2]["body_after"] == "Second."
    )
    assert revisions[1]["title_before"] == "Style" and revisions[1]["title_after"] == "Formatting"

    restored = alice.post(f"/memory-notes/{note.pk}/revisions/1/restore")
    assert restored.status_code == 200, restored.content
    assert restored.json()["body"].startswith("Use tabs") and restored.json()["title"] == "Style"
    assert restored.json()["version"] == 5
    latest = alice.get(f"/memory-notes/{note.pk}/revisions").json()[0]
    assert latest["action"] == "restore" and latest["restored_from"] == 1
    stale = alice.post(f"/memory-notes/{note.pk}/revisions/2/restore", {"version": 4})
    assert stale.status_code == 409
    assert alice.post(f"/memory-notes/{note.pk}/revisions/99/restore").status_code == 404


def test_bad_notes_are_refused_clearly(api_for, space, note):
    alice = api_for("alice")
    url = f"/memory-spaces/{space.pk}/notes"
    assert alice.post(url, {"title": "  ", "body": "x"}).status_code == 400
    slash = alice.post(url, {"title": "a/b", "body": "x"})
    assert slash.status_code == 400 and "slash" in slash.json()["detail"]
    duplicate = alice.post(url, {"title": "Style"})
    assert duplicate.status_code == 400 and "already exists" in duplicate.json()["detail"]
    big = alice.post(url, {"title": "Big", "body": "x" * 20_001})
    assert big.status_code == 413
    rename = alice.patch(f"/memory-notes/{note.pk}", {"version": 1, "title": "Style"})
    assert rename.status_code == 200 and rename.json()["version"] == 1  # nothing changed


def test_search_notes(api_for, space, note, personas):
    from memory_app.services import note_create

    note_create(space=space, title="Deploys", body="Friday: never.", user=personas["bob"][0])
    alice = api_for("alice")
    found = alice.get(f"/memory-spaces/{space.pk}/notes?q=friday").json()
    assert [n["title"] for n in found] == ["Deploys"]
    assert len(alice.get(f"/memory-spaces/{space.pk}/notes").json()) == 2


def test_agent_writes_name_their_session(session, space, api_for):
    from memory_app.services import note_write

    note = note_write(
        space=space, title="Learned", body="CI is slow.", by_session=session.pk, seq=7
    )
    body = api_for("bob").get(f"/memory-notes/{note.pk}").json()
    assert body["updated_by"] is None and body["updated_by_session"] == session.pk
    assert body["updated_by_seq"] == 7
    note_write(space=space, title="Learned", body="CI is fast now.", version=1,
               by_session=session.pk, seq=9)  # fmt: skip
    revisions = api_for("bob").get(f"/memory-notes/{note.pk}/revisions").json()
    assert [(r["session"], r["seq"]) for r in revisions] == [(session.pk, 9), (session.pk, 7)]
