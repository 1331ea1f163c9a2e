"""Roles and invitations: the first member is admin, only admins manage, a team keeps one."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from teams_app.models import Invitation, Membership

pytestmark = pytest.mark.django_db


def role(user, team):
    return Membership.objects.get(user=user, team=team).role


def test_the_first_member_of_a_team_is_its_admin(personas):
    assert role(personas["alice"][0], personas["acme"]) == "admin"
    assert role(personas["bob"][0], personas["acme"]) == "member"
    assert role(personas["charlie"][0], personas["globex"]) == "admin"


def test_members_are_listed_to_the_team_only(api_for, personas):
    listed = api_for("bob").get("/team/members").json()
    assert [(m["username"], m["role"]) for m in listed] == [("alice", "admin"), ("bob", "member")]
    assert api_for("charlie").get("/team/members?team=acme").status_code == 404


def test_an_admin_changes_roles_and_a_member_gets_403(api_for, personas):
    alice, bob, charlie = api_for("alice"), api_for("bob"), api_for("charlie")
    bob_id, alice_id = personas["bob"][0].pk, personas["alice"][0].pk
    assert bob.patch(f"/team/members/{alice_id}", {"role": "member"}).status_code == 403
    assert bob.delete(f"/team/members/{alice_id}").status_code == 403
    assert bob.post("/team/members", {"username": "dave"}).status_code == 403
    assert bob.post("/team/invitations", {}).status_code == 403
    assert charlie.patch(f"/team/members/{bob_id}?team=acme", {"role": "admin"}).status_code == 404
    assert charlie.patch(f"/team/members/{bob_id}", {"role": "admin"}).status_code == 404
    r = alice.patch(f"/team/members/{bob_id}", {"role": "admin"})
    assert r.status_code == 200 and r.json()["role"] == "admin"
    assert alice.patch(f"/team/members/{bob_id}", {"role": "owner"}).status_code == 422
    assert role(personas["alice"][0], personas["acme"]) == "admin"


def test_a_team_never_ends_with_no_admin(api_for, personas):
    alice = api_for("alice")
    alice_id, bob_id = personas["alice"][0].pk, personas["bob"][0].pk
    assert alice.patch(f"/team/members/{alice_id}", {"role": "member"}).status_code == 409
    assert alice.delete(f"/team/members/{alice_id}").status_code == 409
    assert alice.patch(f"/team/members/{bob_id}", {"role": "admin"}).status_code == 200
    assert alice.patch(f"/team/members/{alice_id}", {"role": "member"}).status_code == 200
    assert api_for("bob").delete(f"/team/members/{alice_id}").status_code == 204
    assert list(
        Membership.objects.filter(team=personas["acme"]).values_list("role", flat=True)
    ) == ["admin"]


def test_an_admin_adds_an_account_with_a_one_time_password(api_for, client, personas):
    r = api_for("alice").post("/team/members", {"username": "dave"})
    assert r.status_code == 201, r.content
    body = r.json()
    assert (body["username"], body["role"], body["team"]) == ("dave", "member", "acme")
    assert client.login(username="dave", password=body["password"])
    assert api_for("alice").post("/team/members", {"username": "charlie"}).status_code == 409


def invite(api, **body):
    r = api.post("/team/invitations", body)
    assert r.status_code == 201, r.content
    return r.json()


def path_of(url):
    return url.split("testserver", 1)[1]


def test_an_invitation_makes_an_account_once(api_for, client, personas):
    made = invite(api_for("alice"))
    assert made["expires_at"] > timezone.now().isoformat()
    token = made["url"].rstrip("/").rsplit("/", 1)[1]
    assert not Invitation.objects.filter(digest__contains=token).exists()
    path = path_of(made["url"])
    assert client.get(path).status_code == 200
    form = {"username": "erin", "password1": "erin-pass-123", "password2": "erin-pass-123"}
    r = client.post(path, form)
    assert r.status_code == 302
    assert role(Membership.objects.get(user__username="erin").user, personas["acme"]) == "member"
    client.logout()
    assert client.get(path).status_code == 404, "single use"
    form = {**form, "username": "frank"}
    assert client.post(path, form).status_code == 404
    assert not Membership.objects.filter(user__username="frank").exists()
    assert client.login(username="erin", password="erin-pass-123")


def test_an_existing_user_joins_with_a_click(api_for, client, personas):
    made = invite(api_for("alice"), role="admin")
    client.force_login(personas["charlie"][0])
    path = path_of(made["url"])
    assert b"Join as charlie" in client.get(path).content
    assert client.post(path).status_code == 302
    assert role(personas["charlie"][0], personas["acme"]) == "admin"
    assert personas["acme"].name in [
        t["team"] for t in api_for("charlie").get("/team/members?team=acme").json()
    ]


def test_an_expired_invitation_is_refused(api_for, client):
    made = invite(api_for("alice"))
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    form = {"username": "gina", "password1": "gina-pass-123", "password2": "gina-pass-123"}
    assert client.post(path_of(made["url"]), form).status_code == 404
    assert not Membership.objects.filter(user__username="gina").exists()


def test_horsie_user_makes_a_login_and_prints_the_password_last(client, db):
    out = io.StringIO()
    call_command("horsie_user", "hana", "--team", "newteam", stdout=out)
    password = out.getvalue().strip().splitlines()[-1]
    assert client.login(username="hana", password=password)
    assert Membership.objects.get(user__username="hana").role == "admin", "first member"
    out = io.StringIO()
    call_command("horsie_user", "ivan", "--team", "newteam", stdout=out)
    assert Membership.objects.get(user__username="ivan").role == "member"
    out = io.StringIO()
    call_command("horsie_user", "jo", "--team", "newteam", "--admin", stdout=out)
    assert Membership.objects.get(user__username="jo").role == "admin"
    r = client.post(
        "/login/", {"username": "jo", "password": out.getvalue().strip().splitlines()[-1]}
    )
    assert r.status_code == 302 and r.url == "/"


def test_horsie_token_makes_the_first_member_admin(db):
    out = io.StringIO()
    call_command("horsie_token", "kim", "--team", "fresh", stdout=out)
    assert out.getvalue().strip().splitlines()[-1].startswith("hrs_")
    call_command("horsie_token", "lee", "--team", "fresh", stdout=io.StringIO())
    roles = dict(Membership.objects.values_list("user__username", "role"))
    assert roles == {"kim": "admin", "lee": "member"}


def test_the_team_page_lets_admins_manage_and_members_read(client, personas):
    bob = personas["bob"][0]
    client.force_login(personas["alice"][0])
    page = client.get("/teams/").content.decode()
    assert "Create invitation link" in page and "bob" in page
    r = client.post(
        f"/teams/members/{bob.pk}/role/", {"role": "admin"}, headers={"HX-Request": "true"}
    )
    assert r.status_code == 200 and 'id="members"' in r.content.decode()
    assert role(bob, personas["acme"]) == "admin"
    r = client.post("/teams/invitations/", {"role": "member"}, headers={"HX-Request": "true"})
    assert "/teams/join/inv_" in r.content.decode()
    client.force_login(personas["charlie"][0])
    assert client.post(f"/teams/members/{bob.pk}/remove/").status_code == 404
    client.force_login(bob)
    Membership.objects.filter(user=bob).update(role="member")
    page = client.get("/teams/").content.decode()
    assert "Create invitation link" not in page and "alice" in page
    alice_id = personas["alice"][0].pk
    assert client.post(f"/teams/members/{alice_id}/remove/").status_code == 403
    assert client.post("/teams/invitations/", {"role": "admin"}).status_code == 403
    assert role(personas["alice"][0], personas["acme"]) == "admin"
