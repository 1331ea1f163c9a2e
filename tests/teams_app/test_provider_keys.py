"""Provider keys: encrypted at rest, write-only, an admin's to manage, a card's to name."""

from __future__ import annotations

import pytest
from django.db import connection

from teams_app.models import ProviderKey

pytestmark = pytest.mark.django_db

SECRET = "sk-live-acme-0123456789abcdef"


def add_key(api, name="openai", value=SECRET, **extra):
    return api.post("/provider-keys", {"name": name, "value": value, **extra})


def test_the_database_never_holds_the_plaintext(api_for):
    r = add_key(api_for("alice"))
    assert r.status_code == 201, r.content
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM teams_app_providerkey")
        rows = cursor.fetchall()
    assert len(rows) == 1
    assert not any(SECRET in str(column) for column in rows[0])
    assert not any("0123456789abcdef" in str(column) for column in rows[0])
    from teams_app.vault import decrypt

    assert decrypt(ProviderKey.objects.get().ciphertext) == SECRET


def test_the_value_is_never_returned(api_for):
    alice = api_for("alice")
    created = add_key(alice).json()
    assert set(created) == {"id", "name", "last4", "created_by", "created_at", "team"}
    assert (created["name"], created["last4"], created["created_by"]) == ("openai", "cdef", "alice")
    listed = alice.get("/provider-keys")
    assert listed.status_code == 200
    assert SECRET not in listed.content.decode()
    assert [k["id"] for k in listed.json()] == [created["id"]]
    assert SECRET not in alice.get("/openapi.json").content.decode()


def test_a_short_key_shows_no_last_four(api_for):
    assert add_key(api_for("alice"), value="abcd1234").json()["last4"] == ""


def test_members_get_403_and_another_team_404(api_for, personas):
    key = add_key(api_for("alice")).json()
    bob, charlie = api_for("bob"), api_for("charlie")
    assert bob.get("/provider-keys").status_code == 403
    assert add_key(bob, name="mine").status_code == 403
    assert bob.delete(f"/provider-keys/{key['id']}").status_code == 403
    assert charlie.delete(f"/provider-keys/{key['id']}").status_code == 404
    assert charlie.get("/provider-keys?team=acme").status_code == 404
    assert add_key(charlie, team="acme").status_code == 404
    assert [k["name"] for k in charlie.get("/provider-keys").json()] == []
    assert ProviderKey.objects.count() == 1


def test_names_are_unique_and_values_must_be_printable(api_for):
    alice = api_for("alice")
    assert add_key(alice).status_code == 201
    assert add_key(alice).status_code == 409
    assert add_key(alice, name="spaced", value="sk with spaces").status_code == 422
    assert add_key(alice, name="empty", value="").status_code == 422


def test_a_key_in_use_cannot_be_deleted_until_the_card_lets_go(api_for):
    alice = api_for("alice")
    key = add_key(alice).json()
    card = alice.post(
        "/models", {"name": "GPT", "wire": "openai_chat", "model": "gpt-x", "key": key["id"]}
    ).json()
    assert card["key"] == key["id"]
    assert alice.delete(f"/provider-keys/{key['id']}").status_code == 409
    assert alice.patch(f"/models/{card['id']}", {"key": None}).json()["key"] is None
    assert alice.delete(f"/provider-keys/{key['id']}").status_code == 204
    assert not ProviderKey.objects.exists()


def test_a_card_names_only_a_key_of_its_own_team(api_for, personas):
    from teams_app.services import member_ensure

    globex_key = add_key(api_for("charlie"), name="globex-key").json()
    alice = api_for("alice")
    body = {"name": "GPT", "wire": "openai_chat", "model": "gpt-x", "key": globex_key["id"]}
    assert alice.post("/models", body).status_code == 404, "alice cannot see globex's key"
    member_ensure(username="alice", team_name="globex")
    r = alice.post("/models", {**body, "team": "acme"})
    assert r.status_code == 400, "a key of another of her teams is still refused"
    assert "another team" in r.json()["detail"]


def test_the_page_stores_a_key_and_never_renders_it(client, personas):
    client.force_login(personas["alice"][0])
    r = client.post(
        "/teams/keys/", {"name": "openai", "value": SECRET}, headers={"HX-Request": "true"}
    )
    assert r.status_code == 200
    page = client.get("/teams/").content.decode()
    assert "openai" in page and "…cdef" in page
    assert SECRET not in page and SECRET not in r.content.decode()
    r = client.post("/teams/keys/", {"name": "openai", "value": "x y"})
    assert r.status_code == 400 and "x y" not in r.content.decode()
    client.force_login(personas["bob"][0])
    assert client.post("/teams/keys/", {"name": "b", "value": SECRET + "b"}).status_code == 403
    assert "openai" not in client.get("/teams/").content.decode()
    key = ProviderKey.objects.get()
    assert client.post(f"/teams/keys/{key.pk}/remove/").status_code == 403
    client.force_login(personas["charlie"][0])
    assert client.post(f"/teams/keys/{key.pk}/remove/").status_code == 404
    assert ProviderKey.objects.count() == 1
