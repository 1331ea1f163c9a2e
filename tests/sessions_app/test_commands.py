"""The management commands a user types: tokens and the first start."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from sessions_app.models import ModelCard

pytestmark = pytest.mark.django_db


def test_horsie_token_makes_user_and_team_and_prints_a_working_token(client):
    out = io.StringIO()
    call_command("horsie_token", "dora", "--team", "initech", stdout=out)
    token = out.getvalue().strip().split("\n")[-1]
    r = client.post(
        "/api/v1/models",
        data={"name": "c", "wire": "local", "model": "m"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 201
    assert r.json()["team"] == "initech"
    call_command("horsie_token", "dora", "--team", "initech", stdout=io.StringIO())


def test_bootstrap_prints_the_same_login_each_time(settings, tmp_path, client):
    settings.VAR_DIR = tmp_path
    first, second = io.StringIO(), io.StringIO()
    call_command("horsie_bootstrap", stdout=first)
    call_command("horsie_bootstrap", stdout=second)
    login = first.getvalue().strip().split("\n")[-1]
    assert login == second.getvalue().strip().split("\n")[-1]
    username, password = login.rsplit(" as ", 1)[1].split(" / ")
    assert client.login(username=username, password=password)
    assert ModelCard.objects.filter(team__name="default", wire="local").count() == 1


def test_a_body_beyond_the_upload_limit_is_413(api_for, session):
    r = api_for("alice").post(f"/sessions/{session.pk}/messages", {"text": "y" * 3_000_000})
    assert r.status_code == 413
    assert r.json()["detail"]
