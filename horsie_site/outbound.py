"""What may leave the server on a model call: to which address, with which credential.

One module for both rules, checked twice: when a model card is saved (a 422 names the
problem) and again when the call is built (the card may predate a rule, or have been written
around the API, and a name may resolve elsewhere today). Refused everywhere: non-http(s)
URLs, link-local addresses (169.254.0.0/16, fe80::/10) and cloud metadata endpoints, by
name or by any address the name resolves to. `HORSIE_OUTBOUND_ALLOW` (hosts or CIDRs)
narrows it further. Loopback stays allowed: local model servers live there.

The check before the call resolves the name once; the provider's client resolves it again,
so the same rules are applied a third time to every address it connects to (`check_connect`,
handed to the core by `wiring` as `connect_check`): a name that changes its answer between
the two lookups (DNS rebinding) gains nothing.

`api_key_env` reads only variables listed in `HORSIE_PROVIDER_ENV` (`VAR`, or `team:VAR`
for one team), so a card can never turn the server's own environment into its bearer key.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

LINK_LOCAL = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"))
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})


class OutboundRefused(ValueError):
    """A destination or credential the operator's rules do not allow."""


def env_allowed(name: str, team_name: str) -> bool:
    for item in settings.HORSIE["PROVIDER_ENV"]:
        team, _, var = item.rpartition(":")
        if var == name and team in ("", team_name):
            return True
    return False


def check_env(name: str, team_name: str) -> None:
    if not env_allowed(name, team_name):
        raise OutboundRefused(
            f"api_key_env {name} is not a variable the operator allows (HORSIE_PROVIDER_ENV); "
            "store the key as a provider key instead."
        )


def check_url(url: str) -> str:
    """The URL's host, if its form is allowed; for saving a card (no DNS lookup)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise OutboundRefused("base_url must be an http:// or https:// URL.")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise OutboundRefused("base_url must name a host.")
    if host in METADATA_NAMES:
        raise OutboundRefused(f"base_url host {host} is a cloud metadata endpoint.")
    literal = _literal(host)
    if literal is not None:
        _check_address(literal, host)
    _check_allow_list(host, [literal] if literal is not None else None)
    return host


def check_call(url: str, resolve: Callable[[str], list[Address]] | None = None) -> None:
    """Before a model call: the form again, then every address the host resolves to."""
    host = check_url(url)
    addresses = (resolve or resolve_host)(host)
    if not addresses:
        raise OutboundRefused(f"base_url host {host} does not resolve.")
    for address in addresses:
        _check_address(address, host)
    _check_allow_list(host, addresses)


def check_connect(host: str, address: str) -> None:
    """At connection time, for each address the provider's client is about to connect to
    (`harness.providers.guard`): the same rules, so a name that resolved to an allowed
    address when the call was checked and to a refused one now is still refused."""
    parsed = ipaddress.ip_address(address.split("%")[0])
    _check_address(parsed, host)
    _check_allow_list(host, [parsed])


def resolve_host(host: str) -> list[Address]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return []
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


def _literal(host: str) -> Address | None:
    """An address written as the host, in any form a resolver would accept (`2852039166`,
    `0xa9.254.169.254` and `169.254.43518` are all 169.254.169.254)."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def _check_address(address: Address, host: str) -> None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address in METADATA_ADDRESSES:
        raise OutboundRefused(f"base_url host {host} is a cloud metadata address.")
    if any(address in network for network in LINK_LOCAL):
        raise OutboundRefused(f"base_url host {host} is a link-local address.")


def _check_allow_list(host: str, addresses: list[Address] | None) -> None:
    """`addresses` is None for a name not yet resolved: it may still land in a listed CIDR,
    which the check before the call decides."""
    allowed = settings.HORSIE["OUTBOUND_ALLOW"]
    if not allowed:
        return
    names = {item.lower().rstrip(".") for item in allowed if _network(item) is None}
    networks = [net for item in allowed if (net := _network(item)) is not None]
    if host in names or (addresses is None and networks):
        return
    if addresses and all(any(a in net for net in networks) for a in addresses):
        return
    raise OutboundRefused(f"base_url host {host} is not in HORSIE_OUTBOUND_ALLOW.")


def _network(item: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(item.strip(), strict=False)
    except ValueError:
        return None
