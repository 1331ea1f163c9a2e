"""The slash-command registry: parsing, templates, /help and completion from one list."""

from __future__ import annotations

from harness.commands import (
    BUILTINS,
    Parsed,
    Registry,
    Template,
    bounded_int,
    expand,
    parse,
    rewind_args,
)


def test_parse_takes_the_name_and_the_rest():
    assert parse("/compact keep the plan") == Parsed(name="compact", args="keep the plan")
    assert parse("/handoff") == Parsed(name="handoff", args="")
    assert parse("/review\n42 and more ") == Parsed(name="review", args="42 and more")
    assert parse("/ not a command") is None
    assert parse("hello /compact") is None
    assert parse("/") is None


def test_rewind_args_are_bounded():
    assert rewind_args("12 try again", 100) == (12, "try again")
    assert rewind_args("12", 100) == (12, None)
    for bad in ("0", "-1", "+3", "1e3", "١٢", "101", "", "x"):
        assert rewind_args(bad, 100) is None, bad
    assert bounded_int("99", low=1, high=99) == 99


def test_templates_expand_arguments_and_never_shadow_builtins():
    registry = Registry.of(
        [
            Template(name="review", description="Review a PR", template="Review $ARGUMENTS now"),
            Template(name="compact", description="shadow", template="no"),
            Template(name="standup", description="Daily notes", template="Write the standup."),
        ]
    )
    review = registry.get("review")
    assert review is not None and review.kind == "template"
    assert expand(review.template, "PR 7") == "Review PR 7 now"
    assert registry.get("compact") == BUILTINS[1]
    assert [c["name"] for c in registry.completions()][-2:] == ["review", "standup"]
    assert registry.get("standup").usage == "/standup"  # type: ignore[union-attr]
    help_text = registry.help_text()
    assert "/review [arguments] — Review a PR" in help_text and "shadow" not in help_text
    assert help_text.index("/help") < help_text.index("Your team's commands:")


def test_an_unknown_command_is_not_in_the_registry():
    registry = Registry.of()
    assert registry.get("nope") is None
    assert registry.unknown_text("nope") == "Unknown command /nope. Type /help for the list."
    assert [c.name for c in registry.commands] == [
        "help", "compact", "summary-n-fork", "rewind", "handoff",
    ]  # fmt: skip
