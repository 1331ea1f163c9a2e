"""Warming the SDKs at process start: the first turn's one-time costs, paid without a network."""

from __future__ import annotations

import asyncio
import socket
import sys

from harness.providers import guard, warm


def test_warm_pays_the_lazy_imports_and_the_tls_context_without_connecting(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("warming must not connect anywhere")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    guard.tls_context.cache_clear()
    asyncio.run(warm.warm_all())
    assert "openai.resources.chat.completions.completions" in sys.modules
    assert "openai.resources.responses.responses" in sys.modules
    assert guard.tls_context.cache_info().currsize == 1
    assert guard.tls_context() is guard.tls_context()


def test_clients_share_the_one_tls_context():
    first = guard.checked_client(lambda host, address: None, 5.0)
    second = guard.checked_client(lambda host, address: None, 5.0)
    transports = [client._transport for client in (first, second)]  # type: ignore[attr-defined]
    assert transports[0].ssl_context is transports[1].ssl_context is guard.tls_context()


def test_warming_freezes_what_it_loaded_out_of_full_collections():
    import gc

    gc.unfreeze()
    try:
        warm.warm_then_freeze()
        assert gc.get_freeze_count() > 10_000  # the modules and what they built
    finally:
        gc.unfreeze()


def test_a_serving_process_freezes_what_it_loaded_before_serving():
    import os
    import subprocess
    from pathlib import Path

    code = "import gc, horsie_site.asgi; print(gc.get_freeze_count())"
    env = {**os.environ, "HORSIE_WARM": "0", "HORSIE_SCHEDULER": "0"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) > 100_000


def test_warming_goes_through_the_wires_transport(monkeypatch):
    """A turn's request passes the wires' HTTP/1.1 transport; warming takes the same path."""
    from harness.providers import http11

    hosts = []
    handle = http11.Http11Transport.handle_async_request

    async def counted(self, request):
        hosts.append(request.url.host)
        return await handle(self, request)

    monkeypatch.setattr(http11.Http11Transport, "handle_async_request", counted)
    asyncio.run(warm.warm_all())
    assert hosts == [warm.WARM_HOST]
