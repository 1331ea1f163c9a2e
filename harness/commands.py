"""Slash commands: one registry of the built-ins and a team's templates.

Everything about a `/name args` line is here: parsing it (`parse`), the built-in commands
with their descriptions and usage, a team's templates (`$ARGUMENTS` replaced by what follows
the name, `expand`), the `/help` text and the composer's completion list, both generated
from the same `Registry`, and the bounded parse of `/rewind SEQ [message]`. A built-in's
name always wins over a template of the same name. Pure: the apps give the templates.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

HELP = "help"
COMPACT = "compact"
FORK = "summary-n-fork"
REWIND = "rewind"
HANDOFF = "handoff"
ARGUMENTS = "$ARGUMENTS"
REWIND_USAGE = "Usage: /rewind SEQ [a new message] (SEQ is an entry's number)"

Kind = Literal["builtin", "template"]


@dataclass(frozen=True, kw_only=True)
class Command:
    name: str
    description: str
    usage: str
    kind: Kind = "builtin"
    template: str = ""

    def completion(self) -> dict[str, str]:
        return {"name": self.name, "description": self.description, "usage": self.usage}


BUILTINS: tuple[Command, ...] = (
    Command(name=HELP, description="Show this list (only to you).", usage="/help"),
    Command(
        name=COMPACT,
        description="Fold older history into the summary at the next turn boundary; the "
        "instructions say what the summary must keep.",
        usage="/compact [instructions]",
    ),
    Command(
        name=FORK,
        description="Start a new session from a summary of this one, which stays as it is.",
        usage="/summary-n-fork",
    ),
    Command(
        name=REWIND,
        description="Start a new session from this one's history up to entry SEQ.",
        usage="/rewind SEQ [message]",
    ),
    Command(
        name=HANDOFF,
        description="Have the agent write a handoff document you can edit and start a new "
        "session from.",
        usage="/handoff",
    ),
)


@dataclass(frozen=True, kw_only=True)
class Parsed:
    name: str
    args: str


def parse(text: str) -> Parsed | None:
    """`/name args`, or None when the text is not a command (a `/` then a space is text)."""
    if not text.startswith("/") or len(text) < 2 or text[1].isspace():
        return None
    parts = text[1:].split(maxsplit=1)
    return Parsed(name=parts[0], args=parts[1].strip() if len(parts) > 1 else "")


def bounded_int(text: str, *, low: int, high: int) -> int | None:
    """A plain decimal integer within [low, high], or None (no signs, no spaces, no `²`)."""
    if not text or len(text) > len(str(high)) or not all("0" <= c <= "9" for c in text):
        return None
    value = int(text)
    return value if low <= value <= high else None


def rewind_args(args: str, high: int) -> tuple[int, str | None] | None:
    """`/rewind SEQ [message]`: the seq and the message, or None when SEQ is not one."""
    word, _, rest = args.partition(" ")
    seq = bounded_int(word, low=1, high=high)
    return None if seq is None else (seq, rest.strip() or None)


@dataclass(frozen=True, kw_only=True)
class Template:
    name: str
    description: str
    template: str


def expand(template: str, args: str) -> str:
    return template.replace(ARGUMENTS, args)


@dataclass(frozen=True)
class Registry:
    commands: tuple[Command, ...]

    @classmethod
    def of(cls, templates: Iterable[Template] = ()) -> Registry:
        """The built-ins, then the team's templates by name (a built-in's name is taken)."""
        taken = {c.name for c in BUILTINS}
        team: dict[str, Command] = {}
        for t in templates:
            if t.name in taken or t.name in team or not valid_name(t.name):
                continue
            usage = f"/{t.name} [arguments]" if ARGUMENTS in t.template else f"/{t.name}"
            team[t.name] = Command(
                name=t.name,
                description=t.description,
                usage=usage,
                kind="template",
                template=t.template,
            )
        return cls((*BUILTINS, *sorted(team.values(), key=lambda c: c.name)))

    def get(self, name: str) -> Command | None:
        return next((c for c in self.commands if c.name == name), None)

    def help_text(self) -> str:
        lines = ["Slash commands:"]
        lines += [f"{c.usage} — {c.description}" for c in self.commands if c.kind == "builtin"]
        team = [c for c in self.commands if c.kind == "template"]
        if team:
            lines.append("Your team's commands:")
            lines += [f"{c.usage} — {c.description}" for c in team]
        return "\n".join(lines)

    def completions(self) -> list[dict[str, str]]:
        return [c.completion() for c in self.commands]

    def unknown_text(self, name: str) -> str:
        return f"Unknown command /{name}. Type /help for the list."


def valid_name(name: str) -> bool:
    return bool(name) and not any(c.isspace() or c == "/" for c in name)
