"""The wires' network streams (`harness.providers.streams`) against real loopback servers:
plain and TLS, kept connections the server closed, bodies larger than the buffers on both
sides, a server that never answers, and httpcore's errors for each failure."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpcore
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from harness.providers.guard import CheckedBackend, checked_client
from harness.providers.streams import AsyncioBackend

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def client(verify: ssl.SSLContext | None = None, timeout: float = 10.0) -> httpx.AsyncClient:
    context = verify or ssl.create_default_context()
    transport = httpx.AsyncHTTPTransport()
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=context, network_backend=CheckedBackend(lambda host, address: None)
    )
    return httpx.AsyncClient(transport=transport, timeout=timeout)


async def serve(handler: Handler, tls: ssl.SSLContext | None = None) -> asyncio.Server:
    return await asyncio.start_server(handler, "127.0.0.1", 0, ssl=tls)


def port_of(server: asyncio.Server) -> int:
    return int(server.sockets[0].getsockname()[1])


async def request_of(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head, await reader.readexactly(length)


def answer(body: bytes, keep: bool = True) -> bytes:
    connection = b"keep-alive" if keep else b"close"
    return (
        b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\nconnection: %s\r\n\r\n" % (len(body), connection)
        + body
    )


def run(coroutine: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coroutine, 60))  # type: ignore[arg-type]


def test_a_kept_connection_serves_request_after_request():
    connections = []

    async def handler(reader, writer):
        connections.append(writer)
        while True:
            try:
                _, body = await request_of(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(answer(b"echo:" + body))
            await writer.drain()

    async def main():
        server = await serve(handler)
        async with client() as http:
            for n in range(5):
                response = await http.post(
                    f"http://127.0.0.1:{port_of(server)}/", content=b"%d" % n
                )
                assert response.content == b"echo:%d" % n
        assert len(connections) == 1
        server.close()

    run(main())


def test_a_connection_the_server_closed_is_not_reused():
    """Idle in the pool, a connection whose server hung up is seen closed and replaced;
    the request never goes out on it."""
    served = []

    async def handler(reader, writer):
        _, body = await request_of(reader)
        served.append(body)
        writer.write(answer(b"ok"))
        await writer.drain()
        writer.close()  # keep-alive promised, then hung up

    async def main():
        server = await serve(handler)
        url = f"http://127.0.0.1:{port_of(server)}/"
        async with client() as http:
            assert (await http.post(url, content=b"one")).content == b"ok"
            kept = http._transport._pool.connections  # type: ignore[attr-defined]
            while not all(c.has_expired() for c in kept):  # the loop reads the FIN while idle
                await asyncio.sleep(0)
            assert (await http.post(url, content=b"two")).content == b"ok"
        assert served == [b"one", b"two"]
        server.close()

    run(main())


def test_bodies_larger_than_the_buffers_arrive_whole():
    """A request body the server reads slowly (the transport pauses writing) and a response
    of several socket reads arrive byte for byte, handed on in httpcore's pieces."""
    big = bytes(range(256)) * (4 * 1024 * 1024 // 256 + 7)

    async def handler(reader, writer):
        head, _ = await request_of_slowly(reader)
        writer.write(answer(big))
        await writer.drain()

    async def request_of_slowly(reader):
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        body = b""
        while len(body) < length:
            body += await reader.read(65536)
            await asyncio.sleep(0)
        assert body == big
        return head, body

    async def main():
        server = await serve(handler)
        async with client() as http:
            url = f"http://127.0.0.1:{port_of(server)}/"
            async with http.stream("POST", url, content=big) as response:
                chunks = [chunk async for chunk in response.aiter_raw()]
        assert b"".join(chunks) == big
        assert max(map(len, chunks)) <= 65536, "read in pieces, not buffered whole"
        server.close()

    run(main())


def test_a_server_that_never_answers_is_a_read_timeout():
    async def handler(reader, writer):
        await request_of(reader)
        await asyncio.sleep(30)

    async def main():
        server = await serve(handler)
        async with client(timeout=0.2) as http:
            with pytest.raises(httpx.ReadTimeout):
                await http.post(f"http://127.0.0.1:{port_of(server)}/", content=b"x")
        server.close()

    run(main())


def test_a_closed_port_is_a_connect_error_and_a_cut_reply_a_read_error():
    async def cut(reader, writer):
        await request_of(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nhalf")
        await writer.drain()
        writer.transport.abort()

    async def main():
        server = await serve(cut)
        async with client() as http:
            with pytest.raises(httpx.RemoteProtocolError):
                await http.post(f"http://127.0.0.1:{port_of(server)}/", content=b"x")
            port = port_of(server)
            server.close()
            await server.wait_closed()
            with pytest.raises(httpx.ConnectError):
                await http.get(f"http://127.0.0.1:{port}/")

    run(main())


# TLS: a certificate of our own for 127.0.0.1 and the name `horsie.test`.


def certificate(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "horsie.test")])
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.DNSName("horsie.test"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def tls(tmp_path):
    cert, key = certificate(tmp_path)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    return server, trusting


def test_tls_is_spoken_and_the_certificate_checked(tls):
    server_context, trusting = tls

    async def handler(reader, writer):
        while True:
            try:
                _, body = await request_of(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            writer.write(answer(b"secret:" + body))
            await writer.drain()

    async def main():
        server = await serve(handler, server_context)
        url = f"https://127.0.0.1:{port_of(server)}/"
        async with client(trusting) as http:
            response = await http.post(url, content=b"x" * 100_000)
            assert response.content == b"secret:" + b"x" * 100_000
            assert (await http.post(url, content=b"again")).content == b"secret:again"
        async with client(ssl.create_default_context()) as untrusting:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await untrusting.post(url, content=b"x")
        server.close()

    run(main())


def test_a_cookie_a_server_sets_never_goes_back():
    heads = []

    async def handler(reader, writer):
        while True:
            try:
                head, _ = await request_of(reader)
            except asyncio.IncompleteReadError:
                return
            heads.append(head.lower())
            writer.write(
                b"HTTP/1.1 200 OK\r\nset-cookie: track=me; Path=/\r\ncontent-length: 2\r\n\r\nok"
            )
            await writer.drain()

    async def main():
        server = await serve(handler)
        url = f"http://127.0.0.1:{port_of(server)}/"
        http = checked_client(lambda host, address: None, 10.0)
        async with http:
            for _ in range(2):
                assert (await http.post(url, content=b"x")).content == b"ok"
            http.cookies.set("planted", "1")
            http.cookies.update({"planted": "2"})
            http.cookies = {"planted": "1"}
            assert (await http.post(url, content=b"x")).content == b"ok"
        assert len(heads) == 3 and not any(b"cookie:" in head for head in heads)
        server.close()

    run(main())


def test_a_backend_refuses_unix_sockets():
    async def main():
        with pytest.raises(httpcore.ConnectError):
            await AsyncioBackend().connect_unix_socket("/run/anything.sock")

    run(main())


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_an_sdk_client_merges_each_path_with_its_base_url_once(wire):
    from openai import AsyncOpenAI

    from harness.providers.anthropic import AnthropicClient
    from harness.providers.openai_chat import OpenAIClient

    make = OpenAIClient if wire == "openai" else AnthropicClient
    client = make(api_key="k", base_url="http://models.example/v1")
    plain = AsyncOpenAI(api_key="k", base_url="http://models.example/v1")
    first = client._prepare_url("/chat/completions")
    assert first == plain._prepare_url("/chat/completions")
    assert str(first) == "http://models.example/v1/chat/completions"
    assert client._prepare_url("/chat/completions") is first  # merged once
    assert str(client._prepare_url("https://elsewhere.example/x")) == "https://elsewhere.example/x"
    client.base_url = "http://other.example/api"  # a new base URL: merged anew
    assert (
        str(client._prepare_url("/chat/completions")) == "http://other.example/api/chat/completions"
    )
    for n in range(100):  # never more than a few dozen kept
        client._prepare_url(f"/responses/{n}")
    assert len(client.__dict__["_urls_merged"][1]) <= client.KEPT
