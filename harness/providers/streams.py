"""httpcore's network streams on asyncio's own transports, not through anyio.

Every wire's SDK speaks HTTP through httpx and httpcore; httpcore's default backend reaches
the socket through anyio, whose streams wrap each read and write in cancel scopes and whose
`is_readable` (asked before every request on a kept connection) polls the socket with a
system call. Under the interpreter lock each of those hops costs: together about 0.6 ms of a
turn's 12. Here a stream is an `asyncio.Protocol` and its transport: a read returns what the
event loop already received, a write hands the bytes to the transport (waiting only when it
is paused for flow control), and a kept connection is known to be closed by its peer from the
EOF the loop already saw, without asking the socket. TLS is asyncio's `start_tls` on the same
connection, with the caller's context and server name, so certificates are checked as before.

httpcore's errors keep their meaning: a timeout is a `ConnectTimeout`, `ReadTimeout` or
`WriteTimeout`, a failed connection a `ConnectError`, a broken one a `ReadError` or
`WriteError`; a read at the end of the stream returns `b""`.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore


class _Protocol(asyncio.Protocol):
    """What the loop received for one connection, and whether the peer is gone."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.ended = False  # EOF from the peer, or the connection lost
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.paused: asyncio.Future[None] | None = None  # set while writes are paused

    def data_received(self, data: bytes) -> None:
        # Unbounded but for the reply's size: the SDK reads a stream as it arrives.
        self.received += data
        self._wake()

    def take(self, max_bytes: int) -> bytes:
        if len(self.received) <= max_bytes:
            data = bytes(self.received)
            self.received.clear()
        else:
            data = bytes(self.received[:max_bytes])
            del self.received[:max_bytes]
        return data

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # close the transport: an HTTP/1.1 client has nothing more to send

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self._wake()
        if self.paused is not None and not self.paused.done():
            self.paused.set_result(None)

    def pause_writing(self) -> None:
        self.paused = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.paused is not None and not self.paused.done():
            self.paused.set_result(None)
        self.paused = None

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


class AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        protocol = self._protocol
        if not protocol.received and not protocol.ended:
            protocol.waiter = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(timeout):
                    await protocol.waiter
            except TimeoutError:
                raise httpcore.ReadTimeout("timed out reading from the server") from None
            finally:
                protocol.waiter = None
        if protocol.received:
            return protocol.take(max_bytes)
        if protocol.error is not None:
            raise httpcore.ReadError(str(protocol.error)) from protocol.error
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        self._transport.write(buffer)
        paused = self._protocol.paused
        if paused is not None:
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(paused)
            except TimeoutError:
                raise httpcore.WriteTimeout("timed out writing to the server") from None
        if self._protocol.error is not None:
            raise httpcore.WriteError(str(self._protocol.error)) from self._protocol.error

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            transport = await loop.start_tls(
                self._transport,
                self._protocol,
                ssl_context,
                server_hostname=server_hostname,
                ssl_handshake_timeout=timeout,
            )
        except TimeoutError as error:
            self._transport.close()
            raise httpcore.ConnectTimeout(str(error) or "TLS handshake timed out") from error
        except (OSError, ssl.SSLError, ConnectionError) as error:
            self._transport.close()
            raise httpcore.ConnectError(str(error)) from error
        if transport is None:  # the connection closed during the handshake
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        return AsyncioStream(transport, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # Idle, a kept connection has nothing to read; anything there (bytes or EOF)
            # means the server closed it or broke HTTP. The loop has already read it.
            return bool(self._protocol.received) or self._protocol.ended
        name = {
            "ssl_object": "ssl_object",
            "client_addr": "sockname",
            "server_addr": "peername",
            "socket": "socket",
        }.get(info)
        return None if name is None else self._transport.get_extra_info(name)


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        protocol = _Protocol()
        local = (local_address, 0) if local_address else None
        try:
            async with asyncio.timeout(timeout):
                transport, _ = await loop.create_connection(
                    lambda: protocol, host, port, local_addr=local
                )
        except TimeoutError as error:
            raise httpcore.ConnectTimeout(f"timed out connecting to {host}:{port}") from error
        except OSError as error:
            raise httpcore.ConnectError(str(error)) from error
        raw: socket.socket = transport.get_extra_info("socket")
        for option in socket_options or ():  # asyncio has set TCP_NODELAY already
            raw.setsockopt(*option)
        return AsyncioStream(transport, protocol)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not an outbound destination")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
