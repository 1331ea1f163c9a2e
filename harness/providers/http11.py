"""HTTP/1.1 for the wires' SDK clients: httpx's client and the SDK above it, this transport below.

httpx's own transport hands each request to httpcore's connection pool, which frames it with
h11: a request costs ~0.3 ms of pure Python there (header normalisation and validation,
event objects, pool bookkeeping, locks), about a third of what a model call costs Horsie
before the model answers. This transport frames HTTP/1.1 itself over the same network
backend (`guard.CheckedBackend`: every address vetted where it connects; TLS on the same
connection with the host's name), keeps connections alive per origin as httpcore does
(20 idle at most, 5 s each; a kept connection the server closed or wrote to while idle is
never reused), and raises httpx's exceptions for every failure, so the SDKs see what they
saw: a timeout is a `ConnectTimeout`, `ReadTimeout` or `WriteTimeout`, a broken connection a
`ConnectError`, `ReadError` or `WriteError`, and a reply that is not HTTP/1.1 as framed
here a `RemoteProtocolError`.

What it reads is bounded: a response head past `HEAD_LIMIT` bytes or a chunk-size line past
`LINE_LIMIT` is a protocol error, not memory spent. Bodies are framed by `Content-Length`,
by chunks, or by the connection's end, as RFC 9112 says; the server's interim `1xx`
answers are skipped. Request bodies go with their `Content-Length`, or chunked when httpx
says so.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpcore
import httpx

HEAD_LIMIT = 64 * 1024
LINE_LIMIT = 4 * 1024
READ_SIZE = 64 * 1024
IDLE_KEPT = 20
IDLE_SECONDS = 5.0
NO_BODY_STATUS = frozenset({204, 304})
ERRORS: dict[type[Exception], type[httpx.TransportError]] = {
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
}

Origin = tuple[bytes, bytes, int]


@contextlib.contextmanager
def as_httpx() -> Iterator[None]:
    """The network backend's httpcore errors as the httpx errors an SDK expects."""
    try:
        yield
    except tuple(ERRORS) as error:
        kind = next(ERRORS[k] for k in type(error).__mro__ if k in ERRORS)
        raise kind(str(error)) from error


class Connection:
    """One HTTP/1.1 connection: bytes read but not yet used are kept for the next read."""

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self.stream = stream
        self.buffer = bytearray()
        self.idle_since = 0.0

    async def fill(self, timeout: float | None) -> bool:
        """Read more into the buffer; False at the end of the stream."""
        data = await self.stream.read(READ_SIZE, timeout)
        self.buffer += data
        return bool(data)

    async def until(self, end: bytes, limit: int, what: str, timeout: float | None) -> bytes:
        """The bytes before the next `end` (taken with it), `what` at most `limit` long."""
        start = 0
        while True:
            found = self.buffer.find(end, start)
            if found > limit or (found < 0 and len(self.buffer) > limit):
                raise httpcore.RemoteProtocolError(f"the {what} is longer than {limit} bytes")
            if found >= 0:
                data = bytes(self.buffer[:found])
                del self.buffer[: found + len(end)]
                return data
            start = max(0, len(self.buffer) - len(end) + 1)
            if not await self.fill(timeout):
                raise httpcore.RemoteProtocolError(
                    f"the server closed the connection before the {what} ended"
                )

    async def exactly(self, size: int, timeout: float | None) -> bytes:
        while len(self.buffer) < size:
            if not await self.fill(timeout):
                raise httpcore.RemoteProtocolError("the server closed the connection mid-body")
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def usable(self, now: float) -> bool:
        """Idle and kept: not expired, and nothing arrived meanwhile (bytes or the end)."""
        if self.buffer or now - self.idle_since > IDLE_SECONDS:
            return False
        return not self.stream.get_extra_info("is_readable")

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.stream.aclose()


class Head:
    def __init__(self, status: int, reason: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        self.status, self.reason, self.headers = status, reason, headers
        lowered = [(name.lower(), value) for name, value in headers]
        self.tokens = {
            token.strip().lower()
            for name, value in lowered
            if name == b"connection"
            for token in value.split(b",")
        }
        encodings = [
            value.strip().lower() for name, value in lowered if name == b"transfer-encoding"
        ]
        lengths = {value.strip() for name, value in lowered if name == b"content-length"}
        self.chunked = bool(encodings) and encodings[-1].endswith(b"chunked")
        self.length: int | None = None  # with neither: read to the connection's end
        if not encodings and lengths:
            if len(lengths) > 1 or not all(v.isdigit() for v in lengths):
                raise httpcore.RemoteProtocolError("the Content-Length is not one number")
            self.length = int(lengths.pop())


async def head_of(connection: Connection, timeout: float | None) -> Head:
    """The response's head, past any interim 1xx answers."""
    while True:
        head = parsed_head(
            await connection.until(b"\r\n\r\n", HEAD_LIMIT, "response head", timeout)
        )
        if not 100 <= head.status < 200 or head.status == 101:
            return head


def parsed_head(raw: bytes) -> Head:
    lines = raw.split(b"\r\n")
    version, _, rest = lines[0].partition(b" ")
    code, _, reason = rest.partition(b" ")
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit():
        raise httpcore.RemoteProtocolError(f"not an HTTP/1.1 status line: {lines[0][:100]!r}")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip() or b" " in name:
            raise httpcore.RemoteProtocolError(f"not a header line: {line[:100]!r}")
        headers.append((name, value.strip(b" \t")))
    head = Head(int(code), reason, headers)
    if version == b"HTTP/1.0" and b"keep-alive" not in head.tokens:
        head.tokens.add(b"close")
    return head


class Body(httpx.AsyncByteStream):
    """A response's body as it arrives; read to its end, its connection goes back to the pool."""

    def __init__(
        self, transport: Http11Transport, origin: Origin, connection: Connection, head: Head,
        timeout: float | None, method: bytes,
    ) -> None:  # fmt: skip
        self.transport, self.origin, self.connection = transport, origin, connection
        self.head, self.timeout = head, timeout
        self.complete = False
        self.empty = method == b"HEAD" or head.status in NO_BODY_STATUS or head.length == 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with as_httpx():
            if self.empty:
                pass
            elif self.head.chunked:
                async for part in self.chunks():
                    yield part
            elif self.head.length is not None:
                async for part in self.sized(self.head.length):
                    yield part
            else:
                async for part in self.to_the_end():
                    yield part
        self.complete = True

    async def sized(self, left: int) -> AsyncIterator[bytes]:
        connection = self.connection
        while left:
            if not connection.buffer and not await connection.fill(self.timeout):
                raise httpcore.RemoteProtocolError("the server closed the connection mid-body")
            part = bytes(connection.buffer[:left])
            del connection.buffer[: len(part)]
            left -= len(part)
            yield part

    async def chunks(self) -> AsyncIterator[bytes]:
        connection = self.connection
        while True:
            line = await connection.until(b"\r\n", LINE_LIMIT, "chunk size line", self.timeout)
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise httpcore.RemoteProtocolError(f"not a chunk size: {line[:100]!r}") from None
            if size < 0 or not size_text or size_text.startswith((b"-", b"+", b"0x", b"0X")):
                raise httpcore.RemoteProtocolError(f"not a chunk size: {line[:100]!r}")
            if size == 0:
                while await connection.until(b"\r\n", HEAD_LIMIT, "trailer", self.timeout):
                    pass
                return
            async for part in self.sized(size):
                yield part
            if await connection.exactly(2, self.timeout) != b"\r\n":
                raise httpcore.RemoteProtocolError("a chunk does not end in CRLF")

    async def to_the_end(self) -> AsyncIterator[bytes]:
        connection = self.connection
        self.head.tokens.add(b"close")  # framed by the end: nothing can follow
        if connection.buffer:
            yield bytes(connection.buffer)
            connection.buffer.clear()
        while await connection.fill(self.timeout):
            yield bytes(connection.buffer)
            connection.buffer.clear()

    async def aclose(self) -> None:
        if self.complete and b"close" not in self.head.tokens:
            await self.transport.give_back(self.origin, self.connection)
        else:
            await self.connection.close()


class Http11Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over `backend`'s streams, TLS with `ssl_context`; one instance per event loop
    (an SDK client is made per loop: `guard.client_of_loop`)."""

    def __init__(self, backend: httpcore.AsyncNetworkBackend, ssl_context: Any) -> None:
        self.backend, self.ssl_context = backend, ssl_context
        self.idle: dict[Origin, list[Connection]] = {}

    async def give_back(self, origin: Origin, connection: Connection) -> None:
        if sum(len(connections) for connections in self.idle.values()) >= IDLE_KEPT:
            await connection.close()
            return
        connection.idle_since = time.monotonic()
        self.idle.setdefault(origin, []).append(connection)

    async def kept(self, origin: Origin) -> Connection | None:
        connections = self.idle.get(origin)
        now = time.monotonic()
        while connections:
            connection = connections.pop()
            if connection.usable(now):
                return connection
            await connection.close()
        return None

    async def connect(self, origin: Origin, timeout: float | None) -> Connection:
        scheme, host, port = origin
        name = host.decode("ascii")
        with as_httpx():
            stream = await self.backend.connect_tcp(name, port, timeout=timeout)
            if scheme == b"https":
                stream = await stream.start_tls(self.ssl_context, name, timeout)
        return Connection(stream)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        scheme = url.raw_scheme
        if scheme not in (b"http", b"https"):
            raise httpx.UnsupportedProtocol(f"{url.scheme!r} is not spoken here")
        port = url.port or (443 if scheme == b"https" else 80)
        origin: Origin = (scheme, url.raw_host, port)
        timeouts = request.extensions.get("timeout", {})
        connection = await self.kept(origin) or await self.connect(origin, timeouts.get("connect"))
        try:
            with as_httpx():
                await self.send(connection, request, timeouts.get("write"))
                head = await head_of(connection, timeouts.get("read"))
        except BaseException:
            await connection.close()
            raise
        body = Body(self, origin, connection, head, timeouts.get("read"), request.method.encode())
        return httpx.Response(
            head.status,
            headers=head.headers,
            stream=body,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": head.reason},
        )

    async def send(
        self, connection: Connection, request: httpx.Request, timeout: float | None
    ) -> None:
        target = request.url.raw_path or b"/"
        lines = [request.method.encode("ascii") + b" " + target + b" HTTP/1.1"]
        chunked = False
        for name, value in request.headers.raw:
            if b"\r" in name or b"\n" in name or b"\r" in value or b"\n" in value:
                raise httpx.LocalProtocolError("a header holds a line break")
            if name.lower() == b"transfer-encoding" and value.strip().lower() == b"chunked":
                chunked = True
            lines.append(name + b": " + value)
        head = b"\r\n".join(lines) + b"\r\n\r\n"
        stream = request.stream
        if isinstance(stream, httpx.ByteStream) and not chunked:  # the common case: one write
            await connection.stream.write(
                b"".join([head, *[part async for part in stream]]), timeout
            )
            return
        await connection.stream.write(head, timeout)
        async for part in stream:  # type: ignore[union-attr]
            if chunked:
                if part:
                    await connection.stream.write(b"%x\r\n%s\r\n" % (len(part), part), timeout)
            else:
                await connection.stream.write(part, timeout)
        if chunked:
            await connection.stream.write(b"0\r\n\r\n", timeout)

    async def aclose(self) -> None:
        idle, self.idle = self.idle, {}
        for connections in idle.values():
            for connection in connections:
                await connection.close()
