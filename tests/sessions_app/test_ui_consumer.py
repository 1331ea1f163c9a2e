"""The page's UI socket through the real ASGI application: HTML fragments out of band, the
same catch-up and walls as the JSON socket, and access re-checked on every event."""

from __future__ import annotations

import json
import re

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
        f"/ws/v1/sessions/{session_id}/ui/?{query}",
        headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")],
    )


def oob_ids(frame):
    return re.findall(r'<[a-z]+ [^>]*?id="([\w-]+)"[^>]*hx-swap-oob="([\w]+)"', frame)


async def frames_until_idle(communicator, limit=100):
    """Frames until a status badge that says idle follows one that says running."""
    frames, running = [], False
    for _ in range(limit):
        frame = await communicator.receive_from(timeout=10)
        frames.append(frame)
        if 'id="status-badge"' in frame:
            running = running or ">running<" in frame
            if running and ">idle<" in frame:
                return frames
    raise AssertionError(f"never settled: {frames}")


def entry_seqs(frames):
    return [int(seq) for f in frames for seq in re.findall(r'<article [^>]*\bid="entry-(\d+)"', f)]


async def test_opening_frames_are_the_page_partials_out_of_band(personas, session):
    w = watcher(session.pk, personas["bob"][1])
    assert (await w.connect())[0]
    status = await w.receive_from(timeout=5)
    assert ("status-badge", "true") in oob_ids(status) and ">idle<" in status
    assert ("stream-ended", "true") in oob_ids(status)  # not running: no reply streams
    state = await w.receive_from(timeout=5)
    ids = dict(oob_ids(state))
    assert {"questions-section", "tasks-section", "timers-section", "pending-compact"} <= set(ids)
    await w.disconnect()


async def test_a_turn_arrives_as_entries_panels_and_json_deltas(personas, session, scripted):
    alice, token = personas["alice"]
    w = watcher(session.pk, token)
    assert (await w.connect())[0]
    for _ in range(2):
        await w.receive_from(timeout=5)  # status, state
    await sync_to_async(services.message_post)(session=session, user=alice, text="Hello <b>x</b>")
    frames = await frames_until_idle(w)
    assert entry_seqs(frames) == [1, 2]
    user = next(f for f in frames if 'id="entry-1"' in f)
    assert '<div id="entries" hx-swap-oob="beforeend">' in user
    assert "Hello &lt;b&gt;x&lt;/b&gt;" in user  # escaped like the page
    reply = next(f for f in frames if 'id="entry-2"' in f)
    ids = dict(oob_ids(reply))
    assert {"context-meter", "failure", "memory-panel", "prompt-chart", "stream-ended"} <= set(ids)
    deltas = [json.loads(f) for f in frames if f.startswith("{")]
    assert "".join(d["text"] for d in deltas) == "Scripted reply."
    assert re.search(rf'data-stream="{deltas[0]["stream"]}"', reply)  # that stream has ended
    await w.disconnect()


async def test_catch_up_from_after_sends_each_entry_once(personas, session, scripted):
    alice, token = personas["alice"]
    for text in ("a", "b", "c"):
        await sync_to_async(services.entry_append)(session_id=session.pk, kind="user", content=text)
    w = watcher(session.pk, token, after=1)
    assert (await w.connect())[0]
    first = await w.receive_from(timeout=5)
    assert entry_seqs([first]) == [2, 3]
    await w.receive_from(timeout=5)  # status
    await w.receive_from(timeout=5)  # state
    await w.receive_from(timeout=5)  # the panels: the catch-up brought entries
    await sync_to_async(services.message_post)(session=session, user=alice, text="d")
    assert entry_seqs(await frames_until_idle(w)) == [4, 5]
    await w.disconnect()


async def test_refused_like_the_json_socket(personas, session):
    for token, code in ((personas["charlie"][1], 4404), ("hrs_nope", 4401)):
        w = watcher(session.pk, token)
        assert (await w.connect())[0]
        message = await w.receive_output(timeout=5)
        assert (message["type"], message["code"]) == ("websocket.close", code)


async def test_a_member_removed_from_the_team_is_cut_off_at_the_next_event(personas, session):
    from teams_app.models import Membership

    bob = personas["bob"][0]
    w = watcher(session.pk, personas["bob"][1])
    assert (await w.connect())[0]
    for _ in range(2):
        await w.receive_from(timeout=5)
    await sync_to_async(Membership.objects.filter(user=bob).delete)()
    await sync_to_async(services.entry_append)(session_id=session.pk, kind="user", content="x")
    message = await w.receive_output(timeout=5)
    assert (message["type"], message.get("code")) == ("websocket.close", 4404), message


async def test_a_running_child_is_followed_inline_until_it_is_idle(personas, session):
    from sessions_app.events import send_now
    from sessions_app.leases import lease_release, lease_take
    from sessions_app.models import Session

    alice = personas["alice"][0]
    child = await sync_to_async(Session.objects.create)(
        team=session.team, kind="subagent", parent=session, model=session.model, created_by=alice
    )
    lease = await sync_to_async(lease_take)(child.pk)  # the child runs
    w = watcher(session.pk, personas["bob"][1])
    assert (await w.connect())[0]
    frames = [await w.receive_from(timeout=5) for _ in range(3)]  # status, state, the child
    assert (f"subagent-progress-{child.pk}", "true") in oob_ids(frames[2])
    assert ">running<" in frames[2]
    await sync_to_async(services.entry_append)(
        session_id=child.pk, kind="assistant", content="Found <the> pass."
    )
    frame = await w.receive_from(timeout=5)
    assert "Found &lt;the&gt; pass." in frame and ">running<" in frame
    await sync_to_async(lease_release)(child.pk, lease)
    await sync_to_async(send_now)(child.pk, {"type": "status", "status": "idle"})
    frame = await w.receive_from(timeout=5)
    assert ">idle<" in frame and f"subagent-progress-{child.pk}" in frame
    await sync_to_async(services.entry_append)(session_id=child.pk, kind="assistant", content="z")
    assert await w.receive_nothing(timeout=0.5)  # an idle child is no longer followed
    await w.disconnect()
