"""Access on a live socket: re-checked at most once a second, one query per user and session
for all of a process's sockets, and a member removed from the team is cut off."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from horsie_site.asgi import application
from sessions_app import watching
from teams_app.models import Membership

pytestmark = pytest.mark.django_db(transaction=True)


def watcher(session_id, token):
    return WebsocketCommunicator(
        application,
        f"/ws/v1/sessions/{session_id}/?token={token}",
        headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")],
    )


async def test_sockets_of_one_user_share_one_check(personas, session, monkeypatch):
    checks = []
    access = watching.access_session
    monkeypatch.setattr(watching, "access_session", lambda *a: checks.append(a) or access(*a))
    bob, charlie = personas["bob"][0], personas["charlie"][0]
    answers = await asyncio.gather(*(watching.still_allowed(bob, session.pk) for _ in range(20)))
    assert answers == [True] * 20
    assert not await watching.still_allowed(charlie, session.pk)
    assert len(checks) == 2  # one per user, shared by the sockets asking at once


async def test_a_removed_member_stops_receiving(personas, session, monkeypatch):
    monkeypatch.setattr(watching, "RECHECK_SECONDS", 0.0)
    socket = watcher(session.pk, personas["bob"][1])
    assert (await socket.connect())[0]
    assert (await socket.receive_json_from(timeout=5))["type"] == "status"
    assert (await socket.receive_json_from(timeout=5))["type"] == "state"
    await sync_to_async(Membership.objects.filter(user=personas["bob"][0]).delete)()
    await socket.send_input(
        {"type": "session.event", "event": {"type": "status", "status": "running"}}
    )
    closed = await socket.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 4404}


async def test_a_check_that_failed_is_asked_again_not_shared(personas, session, monkeypatch):
    access, failures = watching.access_session, [RuntimeError("the database went away")]

    def flaky(*args):
        if failures:
            raise failures.pop()
        return access(*args)

    monkeypatch.setattr(watching, "access_session", flaky)
    bob = personas["bob"][0]
    with pytest.raises(RuntimeError):
        await watching.still_allowed(bob, session.pk)
    assert await watching.still_allowed(bob, session.pk)  # within the second: asked again
