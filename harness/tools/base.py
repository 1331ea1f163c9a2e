"""The shape of a tool: one class whose arguments are declared once, as a pydantic model.

The turn loop knows a tool only as `Tool`: a `spec` the model reads and one async `run` over
the raw arguments. A built-in tool subclasses `TypedTool[Args]`: it names itself, describes
itself, and declares `Args`, a pydantic model that gives both the JSON schema in its
`ToolSpec.parameters` and the validation, so the two can never disagree. `run` validates
(strictly: no "5" for 5, no true for 1, no infinities; a null means the argument was left
out) and hands `call` a typed value. Arguments that do not validate never reach `call` and
never raise: they come back as an error result that names each bad field in words the model
can act on ("seconds must be more than 0", "tasks[2].status must be one of …").

The schema is the model's, tidied for providers: no `title`s, `$ref`s inlined, an optional
argument shown as its own type. The model is sent types, enums, required fields and
descriptions; bounds (lengths, counts, minimums) are enforced by the validation and named in
the error when crossed, but not sent, since they would cost tokens on every call. An `Args`
that is a union tagged by a field (the `memory` tool's `{"command": ...}`) is offered as one
object, since providers want an object at the top: the tag is an enum whose description says
what each value takes.

A tool returns a `ToolOutcome`; an exception inside `run` is caught by the turn loop and
becomes an error result, so a failing tool never leaves a call without its result. A tool
that changes durable state says what changed in `data` (stored on the `tool_result` entry,
where `harness.state` folds it from), and `ends_turn` stops the turn after this step (a
question for the user). The context hands a tool the state as of its call and the time.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, StringConstraints, ValidationError
from pydantic_core import ErrorDetails

from harness.memory import MemorySource
from harness.messages import LogEntry, ToolSpec
from harness.skills import SkillSource
from harness.state import SessionState
from harness.subagents import SubagentLauncher, SubagentLimits

MAX_PROBLEMS = 5  # named in one error result; the model fixes these first
BOUNDS = (  # enforced by validation and named when crossed, never sent: tokens on every call
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "default",
)

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""A non-empty string, surrounding whitespace removed."""


class LogReader(Protocol):
    """Reading the whole log, both sides of every boundary (for `search_history`)."""

    async def search(self, session_id: int, query: str, limit: int) -> Sequence[LogEntry]: ...

    async def read(self, session_id: int, seq: int) -> LogEntry | None: ...


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """What a tool is handed besides its arguments.

    `call_seq` is the seq of the `assistant` entry that made the call (what a memory write's
    revision names); `state.seq` is that entry only for the first call of a step.
    """

    session_id: int
    state: SessionState = field(default_factory=SessionState)
    now: datetime | None = None
    log: LogReader | None = None
    memory: MemorySource | None = None
    call_seq: int | None = None
    skills: SkillSource | None = None
    subagents: SubagentLauncher | None = None
    subagent_limits: SubagentLimits = field(default_factory=SubagentLimits)


@dataclass(frozen=True, kw_only=True)
class ToolOutcome:
    text: str
    is_error: bool = False
    data: Mapping[str, Any] = field(default_factory=dict)
    ends_turn: bool = False


def refused(text: str) -> ToolOutcome:
    return ToolOutcome(text=text, is_error=True)


class Tool(Protocol):
    """What the turn loop runs: a spec for the model and `run` over the raw arguments."""

    spec: ToolSpec

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome: ...


ArgsT = TypeVar("ArgsT", bound=BaseModel)


class TypedTool(Generic[ArgsT]):
    """A built-in tool: `name`, `description`, `Args` (a pydantic model) and `call`."""

    name: ClassVar[str]
    description: ClassVar[str]
    Args: type[ArgsT]

    def __init__(self) -> None:
        self.schema, sent = schemas_of(self.Args)
        self.spec = ToolSpec(name=self.name, description=self.description, parameters=sent)

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        given = {k: v for k, v in arguments.items() if v is not None}
        try:
            args = self.Args.model_validate(given, strict=True)
        except ValidationError as error:
            return refused(invalid(error, self.schema, tag=tag_of(self.Args)))
        return await self.call(args, context)

    async def call(self, args: ArgsT, context: ToolContext) -> ToolOutcome:
        raise NotImplementedError


# The schema ------------------------------------------------------------------------------


@functools.cache
def schemas_of(model: type[BaseModel]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An `Args` model's schema and the schema the model is sent, built once per process:
    tools are built for every run, and pydantic's schema generation is milliseconds a tool.
    Shared, so never changed in place (wires copy what they send)."""
    schema = parameters(model)
    return schema, unbounded(schema)


def parameters(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    tidy = {k: v for k, v in tidied(schema, defs).items() if k != "description"}
    return flattened(tidy, schema["discriminator"]["propertyName"]) if "oneOf" in tidy else tidy


def unbounded(node: Any, *, names: bool = False) -> Any:
    """The schema the model reads: types, enums, required fields and descriptions."""
    if isinstance(node, list):
        return [unbounded(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: unbounded(value, names=key == "properties" and not names)
        for key, value in node.items()
        if names or key not in BOUNDS
    }


def tag_of(model: type[BaseModel]) -> str | None:
    """The field a tagged-union `Args` is told apart by (`command`), else None."""
    discriminator = model.model_json_schema().get("discriminator")
    return str(discriminator["propertyName"]) if discriminator else None


def tidied(node: Any, defs: Mapping[str, Any], *, names: bool = False) -> Any:
    """`node` with `$ref`s inlined, `title`s dropped and `X | None = None` shown as `X`."""
    if isinstance(node, list):
        return [tidied(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return tidied(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if not names and "anyOf" in node and node.get("default", ...) is None:
        (kept,) = [s for s in node["anyOf"] if s != {"type": "null"}]
        rest = {k: v for k, v in node.items() if k not in ("anyOf", "default")}
        return tidied({**kept, **rest}, defs)
    return {
        key: tidied(value, defs, names=key == "properties" and not names)
        for key, value in node.items()
        if names or key not in ("title", "discriminator")
    }


def flattened(schema: Mapping[str, Any], tag: str) -> dict[str, Any]:
    """A tagged union as one object: the tag an enum, the other fields optional."""
    variants = schema["oneOf"]
    properties: dict[str, Any] = {}
    for variant in variants:
        for name, prop in variant["properties"].items():
            if name != tag:
                properties.setdefault(name, prop)
    values = [v["properties"][tag]["const"] for v in variants]
    takes = "; ".join(usage(v, tag) for v in variants)
    return {
        "type": "object",
        "properties": {
            tag: {"type": "string", "enum": values, "description": takes},
            **properties,
        },
        "required": [tag],
    }


def usage(variant: Mapping[str, Any], tag: str) -> str:
    required = variant.get("required", [])
    fields = [
        name if name in required else f"{name}?" for name in variant["properties"] if name != tag
    ]
    said = f"{variant['properties'][tag]['const']} ({', '.join(fields)})"
    return f"{said}: {variant['description']}" if variant.get("description") else said


# Validation errors, in words the model can act on -------------------------------------------

TYPES = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def invalid(error: ValidationError, schema: Mapping[str, Any], *, tag: str | None = None) -> str:
    """One sentence naming each bad field (at most `MAX_PROBLEMS` of them)."""
    problems = [problem(d, schema, tag) for d in error.errors(include_url=False)]
    more = len(problems) - MAX_PROBLEMS
    listed = problems[:MAX_PROBLEMS] + ([f"({more} more)"] if more > 0 else [])
    return "Invalid arguments: " + "; ".join(listed) + "."


def problem(detail: ErrorDetails, schema: Mapping[str, Any], tag: str | None) -> str:
    loc = list(detail["loc"])
    tagged = f' (for {tag} "{loc.pop(0)}")' if tag and loc else ""
    if detail["type"] == "missing":
        return f"{where(loc)} is required{expected(schema, loc)}{tagged}"
    return f"{where(loc) or tag or 'the arguments'} {said(detail)}{tagged}"


def where(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def expected(schema: Mapping[str, Any], loc: Sequence[int | str]) -> str:
    """What a missing field takes, from the schema the model was shown: ": a non-empty string"."""
    node: Any = schema
    for part in loc:
        node = node.get("items" if isinstance(part, int) else "properties", {})
        node = node if isinstance(part, int) else node.get(part, {})
    kind = node.get("type")
    if kind == "string" and node.get("minLength"):
        return ": a non-empty string"
    names = {"string": "a string", "integer": "an integer", "number": "a number"}
    return f": {names[kind]}" if kind in names else ""


def said(detail: ErrorDetails) -> str:
    kind, ctx = detail["type"], detail.get("ctx", {})
    if kind in TYPES:
        return f"must be {TYPES[kind]}"
    match kind:
        case "union_tag_not_found":
            return "is required"
        case "union_tag_invalid":
            return f"must be one of {ctx['expected_tags']}, not {ctx['tag']!r}"
        case "literal_error":
            return f"must be one of {ctx['expected'].replace(' or ', ', ')}"
        case "greater_than":
            return f"must be more than {ctx['gt']}"
        case "greater_than_equal":
            return f"must be at least {ctx['ge']}"
        case "less_than_equal":
            return f"must be at most {ctx['le']}"
        case "finite_number":
            return "must be a finite number"
        case "string_too_short":
            return "must be a non-empty string"
        case "string_too_long":
            return f"must be at most {ctx['max_length']} characters"
        case "too_long":
            return f"must hold at most {ctx['max_length']} items"
        case "too_short":
            return f"must hold at least {ctx['min_length']} items"
        case "value_error" | "assertion_error":
            return str(ctx.get("error", detail["msg"]))
    return detail["msg"][:1].lower() + detail["msg"][1:]
