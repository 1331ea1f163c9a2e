"""`GET /api/v1/health`: 200 once the process's start-up work is done and the database
answers, else 503 with what it still does; no token needed, and nothing of any team in it."""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError

from horsie_site import readiness


@pytest.mark.django_db
def test_ready_without_a_token_when_nothing_is_starting(client):
    answer = client.get("/api/v1/health")
    assert answer.status_code == 200
    assert answer.json() == {"ready": True, "starting": [], "database": "ok"}


@pytest.mark.django_db
def test_not_ready_while_start_up_work_runs_then_ready(client):
    release, began = threading.Event(), threading.Event()

    def work() -> None:
        began.set()
        release.wait(30)

    timer = readiness.soon("provider SDKs", work, delay=0)
    try:
        assert began.wait(30)
        answer = client.get("/api/v1/health")
        assert answer.status_code == 503
        assert answer.json() == {"ready": False, "starting": ["provider SDKs"], "database": "ok"}
    finally:
        release.set()
        timer.join(30)
    assert client.get("/api/v1/health").status_code == 200


def test_failed_start_up_work_is_logged_and_no_longer_starting(caplog):
    def work() -> None:
        raise RuntimeError("no SDK today")

    readiness.soon("hot queries", work, delay=0).join(30)
    assert readiness.starting() == []
    assert "hot queries: the start-up work failed" in caplog.text


@pytest.mark.django_db
def test_a_database_that_does_not_answer_is_503(client, monkeypatch):
    from django.db.backends.utils import CursorWrapper

    def refused(self, sql, params=None):
        raise OperationalError("connection refused")

    monkeypatch.setattr(CursorWrapper, "execute", refused)
    answer = client.get("/api/v1/health")
    assert answer.status_code == 503
    assert answer.json() == {"ready": False, "starting": [], "database": "unreachable"}
