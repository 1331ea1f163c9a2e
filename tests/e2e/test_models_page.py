"""The Models page in a real Chromium: add a card through the form pointing at a scripted
OpenAI-compatible server, test its connection (the answer and the latency), and start a
session on it whose reply shows its usage and cost."""

from __future__ import annotations

import re

import pytest

from .conftest import logged_in, watching

pytestmark = pytest.mark.e2e

SCRIPT = [
    {"text": "Ready", "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13}},
    {
        "text": "Hello from the model you just added.",
        "usage": {
            "prompt_tokens": 400,
            "completion_tokens": 9,
            "total_tokens": 409,
            "prompt_tokens_details": {"cached_tokens": 300},
        },
    },
]


def test_add_a_card_test_it_and_start_a_session_on_it(browser, horsie, model_server):
    from playwright.sync_api import expect

    page = logged_in(browser, horsie, "alice")
    page.get_by_role("link", name="Models", exact=True).click()
    expect(page.get_by_role("heading", name="Models")).to_be_visible()
    page.get_by_role("link", name="OpenAI chat completions", exact=True).click()
    expect(page.get_by_role("heading", name="New model card")).to_be_visible()

    page.get_by_label("Name").fill("Scripted through the form")
    page.get_by_label("Model id").fill("scripted")
    page.get_by_label("Base URL").fill(model_server)
    page.get_by_label("Context window").fill("8000")
    page.get_by_label("Output limit").fill("256")
    page.get_by_label("Input", exact=True).fill("3")
    page.get_by_label("Cached input").fill("0.3")
    page.get_by_label("Output", exact=True).fill("15")
    page.get_by_label("Reasoning replay").select_option("tool_turns")
    page.get_by_role("button", name="Add model card").click()

    expect(page.get_by_role("heading", name="Scripted through the form")).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="added")).to_be_visible()
    page.get_by_role("button", name="Test connection").click()
    result = page.locator("#probe-result")
    expect(result).to_contain_text("Connected")
    expect(result.locator("[data-field=answer]")).to_have_text("Ready")
    expect(result.locator("[data-field=latency]")).to_have_text(re.compile(r"^[\d,]+ ms$"))
    expect(result).to_contain_text("The server lists scripted")

    page.get_by_role("link", name="+ New session").click()
    page.get_by_label("Title").fill("On the new card")
    page.get_by_label("Model card").select_option(label="Scripted through the form")
    page.get_by_role("button", name="Create session").click()
    expect(page.get_by_role("heading", name="On the new card")).to_be_visible()
    watching(page)
    page.get_by_label("Message").fill("Hello?")
    page.get_by_label("Message").press("Enter")
    reply = page.locator(".entry-assistant:not(.streaming)").last
    expect(reply).to_contain_text("Hello from the model you just added.")
    expect(reply.locator(".entry-head .seq")).to_contain_text("300 cached")
    expect(reply.locator(".entry-head .seq")).to_contain_text("$")
    expect(page.locator("#usage-line")).to_contain_text("agent 400 in / 9 out")
    expect(page.locator("#usage-line")).to_contain_text("75% cached")
