"""The reply text in flight: kept chunk by chunk, read back whole by a watcher who joins late.

Both places it is kept are tested: this process (the embedded default) and Redis (when
`REDIS_URL` names a server, as in deployment).
"""

from __future__ import annotations

import os
import uuid

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from horsie_site.asgi import application
from sessions_app import events, streams
from sessions_app.leases import lease_release, lease_take

BACKENDS = ["local"] + (["redis"] if os.environ.get("REDIS_URL") else [])


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    if request.param == "local":
        made: streams.Streams = streams.LocalStreams()
    else:
        made = streams.RedisStreams(os.environ["REDIS_URL"], f"hz-test-{uuid.uuid4().hex[:8]}")
    monkeypatch.setattr(streams, "_streams", made)
    return made


async def test_a_late_reader_gets_every_chunk_so_far_exactly_once(backend):
    sink = events.ChannelEvents()
    await sink.stream_start(7)
    pieces = [f"piece {n} é✓ " for n in range(300)]
    for n, piece in enumerate(pieces):
        await sink.delta(7, piece)
        if n in (0, 149):
            flight = await events.stream_in_flight(7)
            assert flight == {"stream": sink.stream, "text": "".join(pieces[: n + 1])}
    assert (await events.stream_in_flight(7))["text"] == "".join(pieces)
    await sink.stream_end(7)
    assert await events.stream_in_flight(7) is None


async def test_a_new_stream_replaces_the_last_and_a_forgotten_one_takes_no_chunks(backend):
    sink = events.ChannelEvents()
    await sink.stream_start(8)
    await sink.delta(8, "old text")
    await sink.stream_start(8)
    await sink.delta(8, "new")
    assert await events.stream_in_flight(8) == {"stream": sink.stream, "text": "new"}
    events.stream_forget(8)  # a takeover: the dead runner's text is gone ...
    await sink.delta(8, " late")  # ... and a straggling chunk does not bring it back
    assert await events.stream_in_flight(8) is None


@pytest.mark.django_db(transaction=True)
async def test_a_watcher_joining_mid_reply_reads_the_text_then_the_live_deltas(
    backend, personas, session
):
    lease = await sync_to_async(lease_take)(session.pk)  # the session is running
    sink = events.ChannelEvents()
    await sink.stream_start(session.pk)
    await sink.delta(session.pk, "Hel")
    await sink.delta(session.pk, "lo ")
    watcher = WebsocketCommunicator(
        application,
        f"/ws/v1/sessions/{session.pk}/?token={personas['bob'][1]}",
        headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")],
    )
    assert (await watcher.connect())[0]
    seen = [await watcher.receive_json_from(timeout=5) for _ in range(3)]
    assert [e["type"] for e in seen] == ["status", "state", "delta"]
    assert seen[2] == {"type": "delta", "text": "Hello ", "offset": 0, "stream": sink.stream}
    await sink.delta(session.pk, "world")
    live = await watcher.receive_json_from(timeout=5)
    assert live == {"type": "delta", "text": "world", "offset": 6, "stream": sink.stream}
    await sink.stream_end(session.pk)
    await watcher.disconnect()
    await sync_to_async(lease_release)(session.pk, lease)


async def test_a_runner_that_lost_its_stream_neither_writes_into_nor_ends_the_next(backend):
    old, new = events.ChannelEvents(), events.ChannelEvents()
    await old.stream_start(9)
    await old.delta(9, "stale ")
    await new.stream_start(9)  # a takeover: the successor's reply begins
    await new.delta(9, "fresh")
    await old.delta(9, "straggler")
    await old.stream_end(9)
    assert await events.stream_in_flight(9) == {"stream": new.stream, "text": "fresh"}
    await new.stream_end(9)
    assert await events.stream_in_flight(9) is None
