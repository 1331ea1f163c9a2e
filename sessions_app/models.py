"""Model cards, agent presets, sessions and their append-only logs.

An `Entry` is written once and never changed: `save()` refuses an update and `delete()`
refuses outright. Seqs come from the session's `last_seq` counter, bumped inside the same
transaction as the insert, and `(session, seq)` is unique, so two writers can never share a
seq. Input that arrives mid-turn waits in `QueuedInput` (it is stored at once) and enters the
log at the next turn boundary. The turn lease (`lease_owner`, `lease_expires_at`) makes it one
turn at a time per session, in the database, across processes.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from teams_app.models import ProviderKey, Team

WIRES = [
    ("openai_chat", "OpenAI chat completions"),
    ("openai_responses", "OpenAI Responses API"),
    ("anthropic", "Anthropic messages"),
    ("local", "Bundled local model"),
]

# What the bundled card is, said wherever it is offered: it runs, but it is no real model.
LOCAL_NOTE = "a 135M demo model: it answers, it cannot summarise well"

REPLAY_RULES = [("never", "never"), ("tool_turns", "tool_turns"), ("always", "always")]


class ModelCard(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="model_cards")
    name = models.CharField(max_length=100)
    wire = models.CharField(max_length=20, choices=WIRES)
    model = models.CharField(max_length=200)
    base_url = models.URLField(max_length=500, null=True, blank=True)  # noqa: DJ001 API null
    api_key_env = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001 API null
    # The team's provider key the card sends; a key in use cannot be deleted.
    key = models.ForeignKey(
        ProviderKey, on_delete=models.PROTECT, null=True, blank=True, related_name="model_cards"
    )
    context_window = models.PositiveIntegerField(null=True, blank=True)
    max_output_tokens = models.PositiveIntegerField(default=1024)
    reasoning_replay = models.CharField(max_length=12, choices=REPLAY_RULES, default="never")
    # Anthropic extended thinking: the tokens a reply may think with; null: off.
    thinking_budget = models.PositiveIntegerField(null=True, blank=True)
    # Per million tokens: {"input", "cached_input", "output"}, or null when unknown.
    prices = models.JSONField(null=True, blank=True)
    # Who last set where the card's calls go and with which credential (base_url, key,
    # api_key_env): the changes that decide where a team's secrets and conversations go.
    endpoint_changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip
    endpoint_changed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.wire}: {self.model})"

    @property
    def note(self) -> str:
        """What a person should know before choosing the card."""
        return LOCAL_NOTE if self.wire == "local" else ""


def empty_list() -> list[Any]:
    return []


class Selections(models.Model):
    """What a preset or a session selects: memory spaces, skills and friends."""

    memory = models.JSONField(default=empty_list, blank=True)
    skills = models.JSONField(default=empty_list, blank=True)
    bundles = models.JSONField(default=empty_list, blank=True)
    subagent_types = models.JSONField(default=empty_list, blank=True)
    mcp_servers = models.JSONField(default=empty_list, blank=True)
    auto_compact = models.BooleanField(default=True)
    compact_at = models.FloatField(null=True, blank=True)
    # At the trigger, first replace old tool outputs with stubs; summarise only if not enough.
    clear_tool_results = models.BooleanField(default=False)

    class Meta:
        abstract = True


class AgentPreset(Selections):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="presets")
    name = models.CharField(max_length=100)
    model = models.ForeignKey(ModelCard, on_delete=models.PROTECT, null=True, blank=True)
    system_prompt = models.TextField(blank=True)
    max_steps = models.PositiveIntegerField(default=25)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Session(Selections):
    KINDS = [("main", "main"), ("fork", "fork"), ("subagent", "subagent")]
    STATUSES = [("idle", "idle"), ("running", "running"), ("waiting", "waiting")]
    BRANCHES = [("", "none"), ("summary", "summary"), ("handoff", "handoff"), ("rewind", "rewind")]

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="sessions")
    title = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=10, choices=KINDS, default="main")
    parent = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True)
    # A fork or rewind starts from the parent's log as it was at this seq.
    parent_seq = models.PositiveBigIntegerField(null=True, blank=True)
    # How a fork was made: from a summary, a handoff document, or a rewind to `parent_seq`.
    branch = models.CharField(max_length=10, choices=BRANCHES, blank=True, default="")
    preset = models.ForeignKey(AgentPreset, on_delete=models.SET_NULL, null=True, blank=True)
    model = models.ForeignKey(ModelCard, on_delete=models.PROTECT, related_name="sessions")
    system_prompt = models.TextField(blank=True)
    max_steps = models.PositiveIntegerField(default=25)
    # A subagent's type (its result names it) and the tool names it may use (empty: all).
    subagent_type = models.CharField(max_length=100, blank=True)
    tools = models.JSONField(default=empty_list, blank=True)
    status = models.CharField(max_length=10, choices=STATUSES, default="idle")
    last_seq = models.PositiveBigIntegerField(default=0)
    lease_owner = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001 free=NULL
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["team", "-created_at"])]

    def __str__(self) -> str:
        return self.title or f"Session {self.pk}"


class ImmutableEntry(Exception):
    pass


class Entry(models.Model):
    KINDS = [
        (k, k)
        for k in (
            "user",
            "command",
            "answer",
            "assistant",
            "tool_result",
            "subagent_result",
            "boundary",
            "notice",
            "timer",
        )
    ]

    session = models.ForeignKey(Session, on_delete=models.PROTECT, related_name="entries")
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=20, choices=KINDS)
    content = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)
    tokens = models.PositiveIntegerField(null=True, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="one_seq")]
        indexes = [models.Index(fields=["session", "kind", "seq"])]
        verbose_name_plural = "entries"

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.kind}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableEntry("log entries are never changed")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise ImmutableEntry("log entries are never deleted")


class QueuedInput(models.Model):
    """Input waiting for the turn boundary; it moves into the log, then this row goes.

    `kind` is what it becomes: a typed message (`user`, or `command` when it starts with
    `/`), an `answer` to a pending question, a fired `timer`, or a child's answer (`subagent`,
    a `subagent_result` entry).
    """

    KINDS = [("user", "user"), ("answer", "answer"), ("timer", "timer"), ("subagent", "subagent")]

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="queued")
    kind = models.CharField(max_length=10, choices=KINDS, default="user")
    text = models.TextField()
    data = models.JSONField(default=dict, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.text[:40]}"


class Snapshot(models.Model):
    """The session's state folded up to `seq`, serialised (`harness.state`, with `version`)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="snapshots")
    seq = models.PositiveBigIntegerField()
    version = models.PositiveIntegerField()
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="one_snapshot")]
        indexes = [models.Index(fields=["session", "-seq"])]

    def __str__(self) -> str:
        return f"{self.session_id}@{self.seq} v{self.version}"


class ArmedTimer(models.Model):
    """The scheduler's index of armed timers, kept beside the log as it is appended.

    The log stays the truth (the state fold arms and disarms timers); this table only lets
    every process find what is due with one indexed query. Firing deletes the row first, in
    the transaction that queues the `timer` input, so a timer fires once however many
    processes look.
    """

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="armed_timers")
    timer_id = models.CharField(max_length=40)
    message = models.TextField()
    due_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "timer_id"], name="one_armed_timer")
        ]

    def __str__(self) -> str:
        return f"{self.session_id}:{self.timer_id} at {self.due_at}"
