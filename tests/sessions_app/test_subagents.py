"""Subagents through the real stack, turns in-process: a child is its own session, its answer
is its own `subagent_result` entry in the parent that starts a parent turn, three children
run at once, a failing child reports failure, and another team sees no child."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from asgiref.sync import async_to_sync

from harness.messages import ModelRequest, SystemMessage, ToolResultMessage
from harness.providers.base import ProviderError
from harness.testing import ScriptedProvider, reply
from horsie_site import wiring
from sessions_app.models import Entry, Session
from sessions_app.waiting import wait_settled
from skills_app.models import SubagentType

pytestmark = pytest.mark.django_db(transaction=True)
CHILD_PROMPT = "You are a CHILD researcher."


def spawn(call_id: str, task: str, type_name: str = "researcher") -> tuple[str, str, str]:
    return (call_id, "spawn_subagent", json.dumps({"type": type_name, "task": task}))


def system_of(request: ModelRequest) -> str:
    first = request.messages[0]
    return first.text if isinstance(first, SystemMessage) else ""


def results_in(request: ModelRequest) -> int:
    return sum("[subagent researcher result]" in getattr(m, "text", "") for m in request.messages)


class Family:
    """One provider for parent and children, told apart by the system prompt.

    The parent plays `parent` in order, then answers "Noted."; it sets `done` once a call
    sees `expect` results. Each child waits at `barrier` (when set) and then plays `child`.
    """

    def __init__(self, parent, child, expect: int, barrier: int = 0) -> None:
        self.parent = ScriptedProvider(parent, default=reply("Noted."))
        self.child = child
        self.expect = expect
        self.parties = barrier
        self.barrier: asyncio.Barrier | None = None
        self.done = threading.Event()
        self.spans: list[tuple[float, float]] = []
        self.capabilities = self.parent.capabilities
        self.counter = self.parent.counter
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest):
        self.requests.append(request)
        if CHILD_PROMPT not in system_of(request):
            if results_in(request) >= self.expect:
                self.done.set()  # this call's reply is the parent's last
            async for event in self.parent.stream(request):
                yield event
            return
        started = time.monotonic()
        if self.parties:
            self.barrier = self.barrier or asyncio.Barrier(self.parties)
            async with asyncio.timeout(10):
                await self.barrier.wait()
        step = self.child(request)
        if isinstance(step, ProviderError):
            raise step
        self.spans.append((started, time.monotonic()))
        async for event in ScriptedProvider([step]).stream(request):
            yield event


@pytest.fixture
def family(monkeypatch, settings):
    settings.HORSIE = {**settings.HORSIE, "DISPATCH": "inprocess"}

    def use(provider: Family) -> Family:
        monkeypatch.setattr(wiring, "provider_for", lambda card: provider)
        return provider

    return use


@pytest.fixture
def researcher(session, personas):
    kind = SubagentType.objects.create(
        team=personas["acme"],
        name="researcher",
        description="Reads widely and reports back briefly",
        system_prompt=CHILD_PROMPT,
    )
    session.subagent_types = [kind.pk]
    session.save(update_fields=["subagent_types"])
    return kind


def settle(provider: Family, session_id: int) -> list[Entry]:
    if not provider.done.wait(15):
        seen = Entry.objects.order_by("session", "seq").values_list("session", "kind", "content")
        raise AssertionError(f"the parent never saw every subagent's result: {list(seen)}")
    assert async_to_sync(wait_settled)(session_id, 10) == "idle"
    return list(Entry.objects.filter(session_id=session_id).order_by("seq"))


def test_a_subagent_s_answer_is_its_own_entry_and_starts_a_parent_turn(
    api_for, session, researcher, family
):
    provider = family(
        Family([reply("", spawn("c1", "Find the spec")), reply("Asked.")],
               lambda r: reply("The spec says 42."), expect=1)
    )  # fmt: skip
    api = api_for("alice")
    r = api.post(f"/sessions/{session.pk}/messages?wait=10", {"text": "Delegate it."})
    assert r.status_code in (200, 201, 202), r.content
    entries = settle(provider, session.pk)

    child = Session.objects.get(parent=session)
    assert (child.kind, child.team_id, child.system_prompt) == (
        "subagent",
        session.team_id,
        CHILD_PROMPT,
    )
    spawned = next(e for e in entries if e.kind == "tool_result")
    assert not spawned.data["is_error"] and f"session {child.pk}" in spawned.content
    assert "42" not in spawned.content, "never the child's answer inside a tool result"
    (result,) = [e for e in entries if e.kind == "subagent_result"]
    assert result.content == "The spec says 42."
    assert result.data == {"subagent": child.pk, "type": "researcher", "failed": False}
    assert result.seq > spawned.seq
    assert entries[-1].kind == "assistant" and entries[-1].content == "Noted."
    assert "ask_user" not in wiring.tools_for(child)

    state = api.get(f"/sessions/{session.pk}/state").json()
    assert state["subagents"] == []
    child_log = api.get(f"/sessions/{child.pk}/entries").json()["entries"]
    assert [e["kind"] for e in child_log] == ["user", "assistant"]
    assert child_log[0]["content"] == "Find the spec"
    body = api.get(f"/sessions/{child.pk}").json()
    assert (body["kind"], body["parent"]) == ("subagent", session.pk)


def test_three_spawned_in_one_reply_run_at_once(api_for, session, researcher, family):
    calls = [spawn(f"c{i}", f"Part {i}") for i in range(3)]
    provider = family(
        Family([reply("", *calls), reply("Three asked.")],
               lambda r: reply("Part done."), expect=3, barrier=3)
    )  # fmt: skip
    api_for("alice").post(f"/sessions/{session.pk}/messages", {"text": "Split it three ways."})
    entries = settle(provider, session.pk)

    assert len([e for e in entries if e.kind == "subagent_result"]) == 3
    assert len(provider.spans) == 3
    assert max(s for s, _ in provider.spans) < min(e for _, e in provider.spans)
    children = Session.objects.filter(parent=session)
    turns = [
        (
            Entry.objects.get(session=c, seq=1).created_at,
            Entry.objects.get(session=c, seq=2).created_at,
        )
        for c in children
    ]
    assert max(start for start, _ in turns) < min(end for _, end in turns), "they overlap"


def test_a_failing_child_reports_failure_and_the_parent_goes_on(
    api_for, session, researcher, family
):
    failure = ProviderError("upstream exploded", code="server_error")
    provider = family(
        Family([reply("", spawn("c1", "Try it")), reply("Asked.")], lambda r: failure, expect=1)
    )
    api_for("alice").post(f"/sessions/{session.pk}/messages", {"text": "Delegate it."})
    entries = settle(provider, session.pk)
    (result,) = [e for e in entries if e.kind == "subagent_result"]
    assert result.data["failed"] is True
    assert (
        result.content.startswith("The subagent failed:") and "upstream exploded" in result.content
    )
    assert entries[-1].kind == "assistant" and entries[-1].content == "Noted."


def test_charlie_cannot_see_a_child(api_for, session, researcher, family, client, personas):
    provider = family(
        Family([reply("", spawn("c1", "Secret work")), reply("Asked.")],
               lambda r: reply("Secret."), expect=1)
    )  # fmt: skip
    api_for("alice").post(f"/sessions/{session.pk}/messages", {"text": "Delegate it."})
    settle(provider, session.pk)
    child = Session.objects.get(parent=session)
    charlie = api_for("charlie")
    assert charlie.get(f"/sessions/{child.pk}").status_code == 404
    assert charlie.get(f"/sessions/{child.pk}/entries").status_code == 404
    client.force_login(personas["charlie"][0])
    assert client.get(f"/sessions/{child.pk}/").status_code == 404


def test_the_pages_link_parent_and_child(api_for, session, researcher, family, client, personas):
    provider = family(
        Family([reply("", spawn("c1", "Look it up")), reply("Asked.")],
               lambda r: reply("Found **it**."), expect=1)
    )  # fmt: skip
    api_for("alice").post(f"/sessions/{session.pk}/messages", {"text": "Delegate it."})
    settle(provider, session.pk)
    child = Session.objects.get(parent=session)
    client.force_login(personas["bob"][0])
    parent_page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert 'class="subagent-result"' in parent_page
    assert f'href="/sessions/{child.pk}/"' in parent_page
    assert "<strong>it</strong>" in parent_page
    child_page = client.get(f"/sessions/{child.pk}/").content.decode()
    assert "subagent <code>researcher</code> of" in child_page
    assert f'href="/sessions/{session.pk}/"' in child_page


def test_a_depth_limit_of_one_refuses_a_grandchild_and_the_child_goes_on(
    api_for, session, researcher, family, settings
):
    settings.HORSIE = {**settings.HORSIE, "SUBAGENT_MAX_DEPTH": 1}

    def child(request: ModelRequest):
        refusals = [
            m for m in request.messages
            if isinstance(m, ToolResultMessage) and m.is_error and "may not spawn" in m.text
        ]  # fmt: skip
        return reply("Did it myself.") if refusals else reply("", spawn("g1", "Go deeper"))

    provider = family(Family([reply("", spawn("c1", "Find it")), reply("Asked.")], child, expect=1))
    api_for("alice").post(f"/sessions/{session.pk}/messages", {"text": "Delegate it."})
    entries = settle(provider, session.pk)

    (kid,) = Session.objects.filter(parent=session)
    assert not Session.objects.filter(parent=kid).exists(), "no grandchild"
    refusal = Entry.objects.get(session=kid, kind="tool_result")
    assert refusal.data["is_error"] and "at most 1 deep" in refusal.content
    (result,) = [e for e in entries if e.kind == "subagent_result"]
    assert result.content == "Did it myself." and result.data["failed"] is False
    assert entries[-1].kind == "assistant" and entries[-1].content == "Noted."


def test_the_subagent_limits_are_read_from_the_settings(session, settings):
    settings.HORSIE = {**settings.HORSIE, "SUBAGENT_MAX_DEPTH": 3, "SUBAGENT_MAX_RUNNING": 7}
    limits = wiring.turn_config(session).subagent_limits
    assert (limits.max_depth, limits.max_running) == (3, 7)


@pytest.mark.parametrize("value", ["0", "11", "two"])
def test_a_bad_depth_limit_stops_the_start(monkeypatch, value):
    from horsie_site import env

    monkeypatch.setenv("HORSIE_SUBAGENT_MAX_DEPTH", value)
    with pytest.raises(env.SettingError, match="HORSIE_SUBAGENT_MAX_DEPTH"):
        env.integer("HORSIE_SUBAGENT_MAX_DEPTH", 2, minimum=1, maximum=10)
