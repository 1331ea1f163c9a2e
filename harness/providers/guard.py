"""Outbound calls are checked where they connect, not only before.

A name checked before a call can resolve elsewhere a moment later (DNS rebinding), so an HTTP
wire gets a client whose network backend resolves the host itself, asks the caller's
`ConnectCheck` about every address, and connects to the vetted address. TLS still runs
against the host name (httpcore takes SNI and certificate checks from the request's origin,
not from the address connected to). The rules are the application's: the core receives them
as a callable in the provider options (`options["connect_check"]`) and knows none of them.

Environment proxies are ignored by this client: through a proxy the proxy resolves the name,
which no check here could see. Loading the trusted certificates costs ~50 ms, so every client
of the process shares one TLS context (an `SSLContext` is safe to share across threads).
"""

from __future__ import annotations

import asyncio
import functools
import socket
import ssl
import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import httpcore
import httpx

from harness.providers.base import ProviderError
from harness.providers.http11 import Http11Transport
from harness.providers.streams import AsyncioBackend

# (host, address) -> None, or raises ValueError saying why the address is refused.
ConnectCheck = Callable[[str, str], None]


class ConnectRefused(ProviderError):
    """The destination broke an outbound rule at connection time; nothing was sent."""

    def __init__(self, message: str):
        super().__init__(message, code="connection", retryable=False)


async def resolve(host: str, port: int) -> list[str]:
    """Every address the host has, in the resolver's order. Tests replace this."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class CheckedBackend(AsyncioBackend):
    """asyncio's network backend (`streams`), but every TCP connection goes to an address
    `check` allowed."""

    def __init__(self, check: ConnectCheck):
        self.check = check

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self._vetted(host, port)
        error: Exception | None = None
        for address in addresses:
            try:
                return await super().connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as failed:  # the next address may answer
                error = failed
        raise error or httpcore.ConnectError(f"{host} has no address")

    async def _vetted(self, host: str, port: int) -> list[str]:
        try:
            addresses = await resolve(host, port)
        except (OSError, UnicodeError) as error:
            raise httpcore.ConnectError(f"{host} does not resolve: {error}") from error
        for address in addresses:
            try:
                self.check(host, address)
            except ValueError as refused:
                raise ConnectRefused(str(refused)) from None
        return addresses

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise ConnectRefused("unix sockets are not an outbound destination")


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's one TLS context, with httpx's defaults (certifi's trusted roots)."""
    return httpx.create_ssl_context()


class NoCookies(httpx.Cookies):
    """An empty jar that keeps nothing a response sets."""

    def extract_cookies(self, response: httpx.Response) -> None:
        pass


class ApiClient(httpx.AsyncClient):
    """An httpx client without a cookie jar. A model API is called with its key; a cookie
    set by whatever a card's URL points at would otherwise go back on every later call
    through the same client (a card's client serves all its sessions). It also spares
    every response httpx's cookie parse, about 0.1 ms of a call."""

    @property
    def cookies(self) -> httpx.Cookies:
        return NoCookies()  # a new empty one each time: nothing set on it lasts

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        pass


class UrlsOnce:
    """Mixed into an SDK's client class (openai's, anthropic's): each call's path is merged
    with the base URL once, not parsed and merged anew on every call (httpx's URL parser:
    about 2% of a turn). httpx's URLs are immutable; a new base URL starts afresh."""

    _base_url: httpx.URL
    KEPT = 64

    def _prepare_url(self, url: str) -> httpx.URL:
        kept: tuple[httpx.URL, dict[str, httpx.URL]] | None = self.__dict__.get("_urls_merged")
        if kept is None or kept[0] is not self._base_url or len(kept[1]) >= self.KEPT:
            kept = self.__dict__["_urls_merged"] = (self._base_url, {})
        found = kept[1].get(url)
        if found is None:
            found = kept[1][url] = super()._prepare_url(url)  # type: ignore[misc]
        return found


def checked_client(check: ConnectCheck, timeout: float) -> httpx.AsyncClient:
    """An httpx client for an SDK (`http_client=`), connecting only where `check` allows."""
    transport = Http11Transport(CheckedBackend(check), tls_context())
    return ApiClient(transport=transport, timeout=timeout, trust_env=False, follow_redirects=True)


def guarded(check: ConnectCheck | None, timeout: float) -> httpx.AsyncClient | None:
    """The `http_client=` of a wire: the checked one when the wiring gave a check."""
    return None if check is None else checked_client(check, timeout)


C = TypeVar("C")


def client_of_loop(
    clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, C], make: Callable[[], C]
) -> C:
    """One SDK client per event loop: pooled connections must not cross loops."""
    loop = asyncio.get_running_loop()
    client = clients.get(loop)
    if client is None:
        client = clients[loop] = make()
    return client
