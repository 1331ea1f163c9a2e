"""The wires' HTTP/1.1 transport (`harness.providers.http11`) against real loopback servers that
write their answers byte by byte as given: kept connections, every body framing, interim
answers, TLS, the connect check, and httpx's error for every way a server breaks HTTP."""

from __future__ import annotations

import asyncio
import ssl

import httpx
import pytest

from harness.providers import http11
from harness.providers.guard import CheckedBackend, ConnectRefused, checked_client
from harness.providers.http11 import Http11Transport
from tests.harness.test_streams import certificate, port_of, request_of, run, serve


def client(context: ssl.SSLContext | None = None, check=None, timeout: float = 10.0):
    transport = Http11Transport(
        CheckedBackend(check or (lambda host, address: None)),
        context or ssl.create_default_context(),
    )
    return httpx.AsyncClient(transport=transport, timeout=timeout)


class Server:
    """A loopback server answering each request with the next of `answers` (raw bytes),
    recording each connection's requests (head and body, chunked bodies decoded)."""

    def __init__(self, *answers: bytes, close_after: bool = False) -> None:
        self.answers = list(answers)
        self.connections: list[list[tuple[bytes, bytes]]] = []
        self.close_after = close_after

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen: list[tuple[bytes, bytes]] = []
        self.connections.append(seen)
        try:
            while self.answers:
                head, body = await request_of(reader)
                if b"transfer-encoding: chunked" in head.lower():
                    body = await chunked_body(reader)
                seen.append((head, body))
                writer.write(self.answers.pop(0))
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    async def start(self, tls: ssl.SSLContext | None = None) -> str:
        self.server = await serve(self.handle, tls)
        scheme = "https" if tls else "http"
        return f"{scheme}://127.0.0.1:{port_of(self.server)}"


async def chunked_body(reader: asyncio.StreamReader) -> bytes:
    body = b""
    while True:
        size = int((await reader.readuntil(b"\r\n")).strip(), 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return body
        body += await reader.readexactly(size)
        await reader.readexactly(2)


def sized(body: bytes, *headers: bytes) -> bytes:
    extra = b"".join(h + b"\r\n" for h in headers)
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n%s" % (len(body), extra, body)


def test_a_kept_connection_serves_every_request_and_bodies_arrive_whole():
    server = Server(sized(b"one"), sized(b"two" * 50_000), sized(b""))

    async def main():
        url = await server.start()
        async with client() as http:
            first = await http.post(url + "/a?x=1", content=b"hello", headers={"X-Key": "k"})
            second = await http.get(url + "/b")
            third = await http.delete(url + "/c")
        assert (first.status_code, first.content, first.http_version) == (200, b"one", "HTTP/1.1")
        assert second.content == b"two" * 50_000 and third.content == b""
        [requests] = server.connections  # one connection for all three
        head, body = requests[0]
        assert head.startswith(b"POST /a?x=1 HTTP/1.1\r\n") and body == b"hello"
        assert b"\r\nx-key: k\r\n" in head.lower() and b"\r\nhost: 127.0.0.1:" in head.lower()
        assert [h.split(b" ")[0] for h, _ in requests] == [b"POST", b"GET", b"DELETE"]

    run(main())


def test_chunked_and_close_delimited_bodies_interim_answers_and_bodiless_statuses():
    chunked = (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        b"5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\ntrailer: x\r\n\r\n"
    )
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" + sized(b"after")
    no_content = b"HTTP/1.1 204 No Content\r\ncontent-length: 7\r\n\r\n"
    to_the_end = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nall of it, to the end"
    server = Server(chunked, interim, no_content, sized(b"", b"x-head: 1"), to_the_end)

    async def main():
        url = await server.start()
        async with client() as http:
            assert (await http.get(url)).content == b"hello world"
            assert (await http.get(url)).content == b"after"
            assert (await http.get(url)).status_code == 204
            assert (await http.head(url)).headers["x-head"] == "1"
            assert (await http.get(url)).content == b"all of it, to the end"
        assert [len(c) for c in server.connections] == [5]  # kept all along

    run(main())


def test_a_body_without_a_length_goes_chunked():
    server = Server(sized(b"ok"))

    async def parts():
        for part in (b"first ", b"", b"second"):
            yield part

    async def main():
        url = await server.start()
        async with client() as http:
            assert (await http.post(url, content=parts())).content == b"ok"
        [[(head, body)]] = server.connections
        assert b"transfer-encoding: chunked" in head.lower() and body == b"first second"

    run(main())


def test_a_connection_not_to_be_kept_is_not_reused():
    answers = [
        sized(b"a", b"connection: close"),
        b"HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\nb",
        sized(b"c"),
        sized(b"d"),
    ]
    closing = Server(*answers[:2])
    leaving = Server(*answers[2:], close_after=True)  # closes each connection once answered

    async def main():
        async with client() as http:
            url = await closing.start()
            assert [(await http.get(url)).content for _ in range(2)] == [b"a", b"b"]
            url = await leaving.start()
            first = await http.get(url)
            [[kept]] = http._transport.idle.values()
            while not kept.stream.get_extra_info("is_readable"):  # until the close arrives
                await asyncio.sleep(0)
            assert (first.content, (await http.get(url)).content) == (b"c", b"d")
        assert [len(c) for c in closing.connections] == [1, 1]
        assert [len(c) for c in leaving.connections] == [1, 1]

    run(main())


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (b"HTTP/2 200 OK\r\n\r\n", "status line"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", "status line"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "header line"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab", "one number"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n", "one number"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n-1\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabXX", "CRLF"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\ncut", "mid-body"),
        (b"HTTP/1.1 200 OK\r\nx: " + b"y" * (http11.HEAD_LIMIT + 10), "head is longer"),
        (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + b"1" * 5000,
            "size line is longer",
        ),
        (b"", "closed the connection before the response head ended"),
    ],
)
def test_a_reply_that_breaks_http_is_a_protocol_error_and_its_connection_is_dropped(reply, said):
    server = Server(reply, sized(b"fine"), close_after=True)

    async def main():
        url = await server.start()
        async with client() as http:
            with pytest.raises(httpx.RemoteProtocolError, match=said):
                await http.get(url)
            assert (await http.get(url)).content == b"fine"  # on a new connection
        assert len(server.connections) == 2

    run(main())


def test_a_server_that_never_answers_is_a_read_timeout_and_a_refused_address_never_connects():
    connected = []

    async def silent(reader, writer):
        connected.append(True)
        await asyncio.sleep(30)

    def refuse(host, address):
        raise ValueError(f"{address} is not allowed")

    async def main():
        server = await serve(silent)
        url = f"http://127.0.0.1:{port_of(server)}/"
        async with client(timeout=0.3) as http:
            with pytest.raises(httpx.ReadTimeout):
                await http.get(url)
        async with client(check=refuse) as http:
            with pytest.raises(ConnectRefused, match="is not allowed"):
                await http.get(url)
        assert connected == [True]  # the refused call never reached the server
        server.close()

    run(main())


def test_tls_is_spoken_and_the_certificate_checked(tmp_path):
    cert, key = certificate(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    server = Server(sized(b"secret"), sized(b"again"), sized(b"never"))

    async def main():
        url = await server.start(server_context)
        async with client(trusting) as http:
            assert (await http.post(url, content=b"x" * 100_000)).content == b"secret"
            assert (await http.get(url)).content == b"again"
        async with client(ssl.create_default_context()) as untrusting:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await untrusting.get(url)
        assert server.connections[0][0][1] == b"x" * 100_000 and len(server.connections[0]) == 2

    run(main())


def test_idle_connections_are_kept_up_to_the_limit(monkeypatch):
    monkeypatch.setattr(http11, "IDLE_KEPT", 2)
    server = Server(*[sized(b"x")] * 8)

    async def main():
        url = await server.start()
        async with client() as http:
            await asyncio.gather(*(http.get(url) for _ in range(4)))  # four at once
            transport = http._transport
            assert sum(len(c) for c in transport.idle.values()) == 2
            await asyncio.gather(*(http.get(url) for _ in range(2)))
        assert len(server.connections) == 4  # the two kept were used again

    run(main())


def test_a_response_left_unread_closes_its_connection():
    server = Server(sized(b"y" * 200_000), sized(b"next"))

    async def main():
        url = await server.start()
        async with client() as http:
            async with http.stream("GET", url) as response:
                async for _ in response.aiter_raw(10):
                    break  # the caller stops reading
            assert (await http.get(url)).content == b"next"
        assert len(server.connections) == 2

    run(main())


def test_the_guarded_client_speaks_through_this_transport():
    client = checked_client(lambda host, address: None, 5.0)
    assert isinstance(client._transport, Http11Transport)
