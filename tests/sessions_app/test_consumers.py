"""The live websocket through the real ASGI application: catch-up, live events, walls."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from horsie_site.asgi import application
from sessions_app import services

pytestmark = pytest.mark.django_db(transaction=True)


def watcher(session_id, token, after=None):
    query = f"token={token}" + (f"&after={after}" if after is not None else "")
    return WebsocketCommunicator(
        application,
        f"/ws/v1/sessions/{session_id}/?{query}",
        headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")],
    )


async def until_settled(communicator, limit=200):
    """Collect events until a status that is not `running` arrives after one that is."""
    events, seen_running = [], False
    for _ in range(limit):
        event = await communicator.receive_json_from(timeout=10)
        events.append(event)
        if event["type"] == "status":
            if event["status"] == "running":
                seen_running = True
            elif seen_running:
                return events
    raise AssertionError(f"never settled: {events}")


async def post(session, user, text):
    return await sync_to_async(services.message_post)(session=session, user=user, text=text)


async def test_two_teammates_watch_the_same_stream(personas, session, scripted):
    alice, alice_token = personas["alice"]
    watchers = [watcher(session.pk, alice_token), watcher(session.pk, personas["bob"][1])]
    for w in watchers:
        assert (await w.connect())[0]
        assert await w.receive_json_from(timeout=5) == {"type": "status", "status": "idle"}
    await post(session, alice, "Stream to both of us")
    seen = [await until_settled(w) for w in watchers]
    for events in seen:
        entries = [e["entry"] for e in events if e["type"] == "entry"]
        assert [(e["seq"], e["kind"]) for e in entries] == [(1, "user"), (2, "assistant")]
        deltas = "".join(e["text"] for e in events if e["type"] == "delta")
        assert deltas == entries[1]["content"] == "Scripted reply."
    for w in watchers:
        await w.disconnect()


async def test_catch_up_from_after_then_live_without_duplicates(personas, session, scripted):
    alice, token = personas["alice"]
    await sync_to_async(services.entry_append)(session_id=session.pk, kind="user", content="a")
    await sync_to_async(services.entry_append)(session_id=session.pk, kind="user", content="b")
    w = watcher(session.pk, token, after=1)
    assert (await w.connect())[0]
    first = await w.receive_json_from(timeout=5)
    assert (first["type"], first["entry"]["seq"], first["entry"]["content"]) == ("entry", 2, "b")
    assert (await w.receive_json_from(timeout=5))["type"] == "status"
    await post(session, alice, "c")
    events = await until_settled(w)
    seqs = [e["entry"]["seq"] for e in events if e["type"] == "entry"]
    assert seqs == [3, 4]
    await w.disconnect()


async def close_code(communicator):
    """A refused socket is accepted, then closed: the code says why."""
    connected, _ = await communicator.connect()
    assert connected, "refused at the handshake instead of accepted and closed"
    message = await communicator.receive_output(timeout=5)
    assert message["type"] == "websocket.close", message
    return message["code"]


async def test_refused_sockets_are_accepted_then_closed(personas, session):
    assert await close_code(watcher(session.pk, personas["charlie"][1])) == 4404
    assert await close_code(watcher(999999, personas["alice"][1])) == 4404
    assert await close_code(watcher(session.pk, "hrs_not-a-token")) == 4401
    anonymous = WebsocketCommunicator(
        application, f"/ws/v1/sessions/{session.pk}/", headers=[(b"origin", b"http://127.0.0.1")]
    )
    assert await close_code(anonymous) == 4401
    unrouted = WebsocketCommunicator(application, "/ws/v1/nothing-here/")
    assert await close_code(unrouted) == 4404


async def test_inbound_frames_are_validated(personas, session):
    w = watcher(session.pk, personas["alice"][1])
    assert (await w.connect())[0]
    assert (await w.receive_json_from(timeout=5))["type"] == "status"
    assert (await w.receive_json_from(timeout=5))["type"] == "state"
    await w.send_to(text_data="not json")
    assert (await w.receive_json_from(timeout=5))["type"] == "error"
    await w.send_json_to({"type": "ping"})
    assert await w.receive_json_from(timeout=5) == {"type": "pong"}
    await w.disconnect()
