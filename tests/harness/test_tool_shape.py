"""A tool is one class: its pydantic `Args` give the schema the model reads and the validation."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from harness.tools import builtin_tools
from harness.tools.base import Text, ToolContext, ToolOutcome, TypedTool
from harness.tools.memory import Memory

NAMES = ["todo_write", "set_timer", "cancel_timer", "ask_user", "search_history", "read_entry"]


class Note(BaseModel):
    title: Text
    tags: list[str] = Field(default_factory=list, max_length=3)


class PinArgs(BaseModel):
    note: Note
    times: int = Field(default=1, ge=1, le=5, description="How often.")
    why: str | None = None


class Pin(TypedTool[PinArgs]):
    name = "pin"
    description = "Pin a note."
    Args = PinArgs

    async def call(self, args: PinArgs, context: ToolContext) -> ToolOutcome:
        return ToolOutcome(text=f"{args.note.title} x{args.times}")


def test_the_builtin_tools_keep_their_names_and_memory_is_offered_on_request():
    assert list(builtin_tools()) == NAMES
    assert list(builtin_tools(memory=True)) == [*NAMES, "memory"]


def test_the_schema_comes_from_the_model_tidied_for_providers():
    assert Pin().spec.parameters == {
        "type": "object",
        "properties": {
            "note": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["title"],
            },
            "times": {"type": "integer", "description": "How often."},
            "why": {"type": "string"},
        },
        "required": ["note"],
    }


def test_every_builtin_schema_is_a_plain_object_with_no_refs():
    for tool in builtin_tools(memory=True).values():
        params = tool.spec.parameters
        text = json.dumps(params)
        assert params["type"] == "object", tool.spec.name
        assert "$ref" not in text and "$defs" not in text and '"title"' not in text
        assert set(params["required"]) <= set(params["properties"])


def test_a_tagged_union_is_offered_as_one_object_whose_tag_says_what_each_takes():
    params = Memory().spec.parameters
    command = params["properties"]["command"]
    assert params["required"] == ["command"]
    assert command["enum"] == ["view", "create", "str_replace", "insert", "delete", "rename"]
    assert "str_replace (path, old_str, new_str)" in command["description"]
    assert "view (path, view_range?)" in command["description"]
    assert {"path", "file_text", "old_path", "new_path", "insert_line"} <= set(params["properties"])


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({}, "note is required"),
        ({"note": {}}, "note.title is required: a non-empty string"),
        ({"note": {"title": "   "}}, "note.title must be a non-empty string"),
        ({"note": {"title": "a", "tags": ["x", 1]}}, "note.tags[1] must be a string"),
        ({"note": {"title": "a", "tags": ["x"] * 4}}, "note.tags must hold at most 3 items"),
        ({"note": {"title": "a"}, "times": "2"}, "times must be an integer"),
        ({"note": {"title": "a"}, "times": True}, "times must be an integer"),
        ({"note": {"title": "a"}, "times": 9}, "times must be at most 5"),
        ({"note": {"title": "a"}, "times": 0}, "times must be at least 1"),
        ({"note": "a"}, "note must be an object"),
    ],
)
async def test_a_validation_failure_is_an_error_result_naming_the_field(arguments, says):
    outcome = await Pin().run(arguments, ToolContext(session_id=1))
    assert outcome.is_error
    assert outcome.text.startswith("Invalid arguments: ") and says in outcome.text, outcome.text


async def test_several_bad_fields_are_all_named_and_null_means_left_out():
    outcome = await Pin().run({"note": {"title": ""}, "times": 99}, ToolContext(session_id=1))
    assert "note.title must be a non-empty string" in outcome.text
    assert "times must be at most 5" in outcome.text
    fine = await Pin().run({"note": {"title": " a "}, "why": None}, ToolContext(session_id=1))
    assert (fine.is_error, fine.text) == (False, "a x1")


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        (
            "todo_write",
            {"tasks": [{"text": "x", "status": "later"}]},
            "tasks[0].status must be one of",
        ),
        (
            "todo_write",
            {"tasks": [{"text": " ", "status": "done"}]},
            "tasks[0].text must be a non-empty",
        ),
        ("set_timer", {"seconds": float("inf"), "message": "x"}, "seconds must be a finite number"),
        ("ask_user", {"question": "?", "options": ["a"] * 11}, "options must hold at most 10"),
        ("ask_user", {"question": "?", "options": ["x" * 201]}, "options[0] must be at most 200"),
        ("read_entry", {"seq": 0}, "seq must be at least 1"),
        ("read_entry", {"seq": 2**53}, "seq must be at most 9007199254740991"),
        ("read_entry", {"seq": 3, "offset": -1}, "offset must be at least 0"),
        ("search_history", {"query": "x" * 501}, "query must be at most 500 characters"),
        (
            "memory",
            {"command": "create", "path": "/memories/a/b.md"},
            'file_text is required: a string (for command "create")',
        ),
        ("memory", {"command": "zap"}, "command must be one of 'view', 'create'"),
        ("memory", {"path": "/memories"}, "command is required"),
    ],
)
async def test_builtin_tools_name_the_bad_field(name, arguments, says):
    tool = builtin_tools(memory=True)[name]
    outcome = await tool.run(arguments, ToolContext(session_id=1))
    assert outcome.is_error and says in outcome.text, outcome.text
