"""Where model calls may go and which environment variables a card may read.

Checked when a card is saved (422), again when a call is built (`wiring.card_config`), after
DNS resolution, and for every address the provider's client connects to (`guard`).
"""

from __future__ import annotations

import ipaddress

import pytest

from horsie_site import outbound, wiring
from sessions_app.models import ModelCard

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fake_dns(monkeypatch):
    """No real DNS in unit tests: names resolve from this table, literals to themselves."""
    table = {"localhost": "127.0.0.1", "api.openai.com": "162.159.140.245"}

    def resolve(host):
        literal = outbound._literal(host)
        if literal is not None:
            return [literal]
        return [ipaddress.ip_address(table[host])] if host in table else []

    monkeypatch.setattr(outbound, "resolve_host", resolve)
    return table


@pytest.fixture
def allow(settings):
    def set_horsie(**values):
        settings.HORSIE = {**settings.HORSIE, **values}

    return set_horsie


LOCAL = "http://127.0.0.1:9/v1"


def card_body(**fields):
    return {"name": "c", "wire": "openai_chat", "model": "m", **fields}


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "ftp://example.com/v1",
        "http:///v1",
        "http://169.254.169.254/latest/meta-data",
        "http://169.254.10.1:8080/v1",
        "http://[fe80::1]/v1",
        "http://[::ffff:169.254.169.254]/v1",
        "http://2852039166/v1",
        "http://0xa9.254.169.254/v1",
        "http://[fd00:ec2::254]/v1",
        "http://100.100.100.200/v1",
        "http://metadata.google.internal/computeMetadata/v1",
        "http://METADATA.google.internal./v1",
    ],
)
def test_refused_base_urls_are_422_at_create_and_patch(api_for, url):
    alice = api_for("alice")
    r = alice.post("/models", card_body(base_url=url))
    assert r.status_code == 422, (url, r.content)
    assert "base_url" in str(r.json()["detail"])
    card = alice.post("/models", card_body(base_url="http://127.0.0.1:9/v1")).json()
    assert alice.patch(f"/models/{card['id']}", {"base_url": url}).status_code == 422
    assert ModelCard.objects.get(pk=card["id"]).base_url == "http://127.0.0.1:9/v1"


def test_loopback_and_public_hosts_are_allowed(api_for):
    alice = api_for("alice")
    for url in (
        "http://127.0.0.1:8080/v1",
        "http://localhost:1234/v1",
        "https://api.openai.com/v1",
    ):
        assert alice.post("/models", card_body(base_url=url)).status_code == 201, url


def test_a_name_resolving_to_link_local_is_refused_at_call_time(fake_dns, personas):
    fake_dns["sneaky.example"] = "169.254.169.254"
    outbound.check_url("http://sneaky.example/v1")  # the name alone passes when saved
    card = ModelCard.objects.create(
        team=personas["acme"], name="c", wire="openai_chat", model="m",
        base_url="http://sneaky.example/v1",
    )  # fmt: skip
    with pytest.raises(outbound.OutboundRefused, match="metadata"):
        wiring.card_config(card)
    card.base_url = "http://nowhere.invalid/v1"
    with pytest.raises(outbound.OutboundRefused, match="does not resolve"):
        wiring.card_config(card)


def test_a_card_saved_around_the_api_is_refused_at_call_time(personas):
    card = ModelCard.objects.create(
        team=personas["acme"], name="c", wire="openai_chat", model="m",
        base_url="http://169.254.169.254/v1",
    )  # fmt: skip
    with pytest.raises(outbound.OutboundRefused):
        wiring.card_config(card)
    card.base_url = "http://127.0.0.1:9/v1"
    assert wiring.card_config(card).base_url == "http://127.0.0.1:9/v1"


def test_outbound_allow_narrows_to_listed_hosts_and_cidrs(api_for, allow, personas):
    allow(OUTBOUND_ALLOW=["api.openai.com", "10.0.0.0/8"])
    alice = api_for("alice")
    assert alice.post("/models", card_body(base_url="http://127.0.0.1:9/v1")).status_code == 422
    assert alice.post("/models", card_body(base_url="http://192.168.1.5/v1")).status_code == 422
    assert alice.post("/models", card_body(base_url="https://api.openai.com/v1")).status_code == 201
    assert alice.post("/models", card_body(base_url="http://10.1.2.3:8000/v1")).status_code == 201
    card = ModelCard.objects.create(
        team=personas["acme"], name="c", wire="openai_chat", model="m",
        base_url="http://127.0.0.1:9/v1",
    )  # fmt: skip
    with pytest.raises(outbound.OutboundRefused, match="HORSIE_OUTBOUND_ALLOW"):
        wiring.card_config(card)
    card.base_url = None  # the SDK's default host is checked too
    allow(OUTBOUND_ALLOW=["10.0.0.0/8"])
    with pytest.raises(outbound.OutboundRefused, match="api.openai.com is not in"):
        wiring.card_config(card)


def test_api_key_env_reads_only_allowed_variables(api_for, allow, personas, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-openai")
    monkeypatch.setenv("ACME_KEY", "sk-env-acme")
    alice, charlie = api_for("alice"), api_for("charlie")
    for name in ("OPENAI_API_KEY", "DJANGO_SECRET_KEY", "DATABASE_URL"):
        assert alice.post("/models", card_body(api_key_env=name)).status_code == 422, name
    allow(PROVIDER_ENV=["OPENAI_API_KEY", "acme:ACME_KEY"])
    made = alice.post("/models", card_body(api_key_env="OPENAI_API_KEY", base_url=LOCAL))
    assert made.status_code == 201
    assert alice.post("/models", card_body(api_key_env="ACME_KEY")).status_code == 201
    assert charlie.post("/models", card_body(api_key_env="ACME_KEY")).status_code == 422
    assert charlie.post("/models", card_body(api_key_env="OPENAI_API_KEY")).status_code == 201
    card = ModelCard.objects.get(pk=made.json()["id"])
    assert wiring.card_config(card).api_key == "sk-env-openai"
    allow(PROVIDER_ENV=[])
    with pytest.raises(outbound.OutboundRefused, match="HORSIE_PROVIDER_ENV"):
        wiring.card_config(card)


def test_endpoint_changes_are_admin_only_and_recorded(api_for, personas):
    alice, bob = api_for("alice"), api_for("bob")
    card = alice.post("/models", card_body(base_url="http://127.0.0.1:9/v1")).json()
    assert card["endpoint_changed_by"] == "alice" and card["endpoint_changed_at"]
    assert (
        bob.patch(f"/models/{card['id']}", {"base_url": "http://127.0.0.1:7/v1"}).status_code == 403
    )
    assert bob.patch(f"/models/{card['id']}", {"api_key_env": "X"}).status_code == 403
    assert bob.patch(f"/models/{card['id']}", {"base_url": None}).status_code == 403
    assert bob.post("/models", card_body(base_url="http://127.0.0.1:7/v1")).status_code == 403
    same = bob.patch(f"/models/{card['id']}", {"name": "renamed", "context_window": 4096})
    assert same.status_code == 200, "other fields are any member's"
    unchanged = bob.patch(f"/models/{card['id']}", {"base_url": "http://127.0.0.1:9/v1"})
    assert unchanged.status_code == 200, "sending the same value changes nothing"
    assert api_for("charlie").patch(f"/models/{card['id']}", {"base_url": None}).status_code == 404
    r = alice.patch(f"/models/{card['id']}", {"base_url": "http://127.0.0.1:7/v1"})
    assert r.status_code == 200 and r.json()["endpoint_changed_at"] >= card["endpoint_changed_at"]
    assert ModelCard.objects.get(pk=card["id"]).endpoint_changed_by == personas["alice"][0]


def test_prices_and_reasoning_replay_are_validated_and_stored(api_for):
    alice = api_for("alice")
    card = alice.post("/models", card_body()).json()
    assert (card["reasoning_replay"], card["prices"], card["key"]) == ("never", None, None)
    prices = {"input": 2.5, "cached_input": 1.25, "output": 10}
    r = alice.patch(f"/models/{card['id']}", {"prices": prices, "reasoning_replay": "tool_turns"})
    assert r.status_code == 200, r.content
    assert r.json()["prices"] == {"input": 2.5, "cached_input": 1.25, "output": 10.0}
    assert r.json()["reasoning_replay"] == "tool_turns"
    for bad in (
        {**prices, "input": -1},
        {"input": 1},
        '{"input": Infinity, "cached_input": 0, "output": 0}',
    ):
        body = bad if isinstance(bad, dict) else None
        raw = None if body else '{"prices": ' + bad + "}"
        r = alice.patch(f"/models/{card['id']}", body and {"prices": body} or raw)
        assert r.status_code == 422, (bad, r.content)
    assert (
        alice.patch(f"/models/{card['id']}", {"reasoning_replay": "sometimes"}).status_code == 422
    )


# At connection time: the provider's own client checks every address it connects to -------


class Recorder:
    """Stands for the network: records each connection asked of it and makes none."""

    def __init__(self):
        self.connects = []
        self.tls_names = []

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        import httpcore

        self.connects.append((host, port))
        recorder = self

        class Stream(httpcore.AsyncNetworkStream):
            async def start_tls(self, ssl_context, server_hostname=None, timeout=None):
                recorder.tls_names.append(server_hostname)
                raise httpcore.ConnectError("recorded, not connected")

            async def aclose(self):
                pass

        if port == 443:
            return Stream()
        raise httpcore.ConnectError("recorded, not connected")


@pytest.fixture
def network(monkeypatch):
    from harness.providers.base import RetryPolicy
    from harness.providers.streams import AsyncioBackend

    recorder = Recorder()
    options = {**wiring.provider_options(), "retry": RetryPolicy(attempts=1)}
    monkeypatch.setattr(wiring, "provider_options", lambda: options)
    monkeypatch.setattr(
        AsyncioBackend, "connect_tcp", lambda self, *a, **kw: recorder.connect_tcp(*a, **kw)
    )
    wiring.cached_provider.cache_clear()
    yield recorder
    wiring.cached_provider.cache_clear()


@pytest.fixture
def rebinding(monkeypatch, fake_dns):
    """`rebind.example` answers 127.0.0.1 to the check before the call and `answers` to
    the provider's client when it connects."""
    from harness.providers import guard

    fake_dns["rebind.example"] = "127.0.0.1"
    answers = ["169.254.169.254"]

    async def resolve(host, port):
        return list(answers) if host == "rebind.example" else [host]

    monkeypatch.setattr(guard, "resolve", resolve)
    return answers


def call(provider):
    import asyncio

    from harness.messages import ModelRequest, UserMessage

    async def run():
        async for _ in provider.stream(ModelRequest(messages=(UserMessage(text="hi"),))):
            pass

    asyncio.run(run())


def attack_card(personas, url):
    return ModelCard.objects.create(
        team=personas["acme"], name="rebind", wire="openai_chat", model="m", base_url=url
    )


@pytest.mark.parametrize("refused", ["169.254.169.254", "fe80::1", "::ffff:169.254.1.1"])
def test_a_name_rebound_after_the_check_is_refused_at_connect(
    personas, network, rebinding, refused
):
    from harness.providers.base import ProviderError

    rebinding[:] = ["127.0.0.1", refused]
    card = attack_card(personas, "http://rebind.example:8080/v1")
    outbound.check_call(card.base_url)  # the check before the call passes: 127.0.0.1
    with pytest.raises(ProviderError, match="link-local|metadata") as refusal:
        call(wiring.provider_for(card))
    assert not refusal.value.retryable
    assert network.connects == [], "no connection at all, not even to the allowed address"


def test_a_plain_refused_address_is_refused_at_connect(network):
    """Past every earlier check (a config built by hand): the client itself still refuses."""
    from harness.providers import build_provider
    from harness.providers.base import CardConfig, ProviderError

    config = CardConfig(wire="openai_chat", model="m", base_url="http://169.254.169.254/v1")
    with pytest.raises(ProviderError, match="metadata"):
        call(build_provider(config, wiring.provider_options()))
    assert network.connects == []


def test_the_client_connects_to_the_vetted_address_and_verifies_the_name(
    personas, network, rebinding, allow
):
    rebinding[:] = ["127.0.0.1"]
    with pytest.raises(Exception, match="Connection error"):
        call(wiring.provider_for(attack_card(personas, "http://rebind.example:8080/v1")))
    assert network.connects == [("127.0.0.1", 8080)], "the address checked, not the name"
    wiring.cached_provider.cache_clear()
    with pytest.raises(Exception, match="Connection error"):
        call(wiring.provider_for(attack_card(personas, "https://rebind.example/v1")))
    assert network.connects[-1] == ("127.0.0.1", 443)
    assert network.tls_names == ["rebind.example"], "TLS still checks the host name"
    allow(OUTBOUND_ALLOW=["10.0.0.0/8"])
    with pytest.raises(outbound.OutboundRefused):
        outbound.check_connect("rebind.example", "127.0.0.1")
