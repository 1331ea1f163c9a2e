"""Agent presets in a real Chromium: a preset made on the page with a memory space starts a
session from the new-session form (the form fills itself from the preset over htmx), and the
session's side panel shows that space with the preset's mode."""

from __future__ import annotations

import pytest

from .conftest import logged_in

pytestmark = pytest.mark.e2e

SCRIPT = [{"text": "Ready.", "repeat": True}]


def test_a_preset_with_a_memory_space_starts_a_session_that_selects_it(browser, horsie):
    from playwright.sync_api import expect

    space = horsie.api("POST", "/memory-spaces", "alice",
                       {"name": "glossary", "description": "Words we use"})  # fmt: skip
    page = logged_in(browser, horsie, "alice")
    page.get_by_role("link", name="Agent presets").click()
    expect(page.get_by_role("heading", name="Agent presets")).to_be_visible()
    page.get_by_role("link", name="+ New preset").click()
    page.get_by_label("Name").fill("Glossary keeper")
    page.get_by_label("Model card").select_option(label="Scripted")
    page.get_by_label("System prompt").fill("Keep the glossary.")
    page.get_by_label("Max steps").fill("7")
    page.get_by_label("Compact at").fill("0.5")
    page.get_by_label("glossary", exact=True).select_option("write")
    page.get_by_role("button", name="Add preset").click()
    expect(page.get_by_role("status")).to_contain_text("Preset “Glossary keeper” added.")
    preset = horsie.api("GET", "/presets", "alice")[0]
    assert preset["memory"] == [{"space": space["id"], "mode": "write"}]
    assert (preset["max_steps"], preset["compact_at"]) == (7, 0.5)

    page.goto(f"{horsie.url}/sessions/new/")
    memory = page.get_by_label("glossary", exact=True)
    expect(memory).to_have_value("")
    page.get_by_label("Agent preset").select_option(label="Glossary keeper")
    expect(memory).to_have_value("write")
    expect(page.get_by_label("System prompt")).to_have_value("Keep the glossary.")
    expect(page.locator("#memory-cost")).to_contain_text("Memory in every call")
    assert page.url.endswith(f"/sessions/new/?preset={preset['id']}")
    page.get_by_label("Title").fill("Words")
    page.get_by_role("button", name="Create session").click()

    panel = page.locator("#memory-panel")
    selected = panel.locator(f'.memory-selected[data-space="{space["id"]}"]')
    expect(selected).to_have_attribute("data-mode", "write")
    expect(selected.locator(".memory-selected-name")).to_have_text("glossary")
    session_id = int(page.url.rstrip("/").rsplit("/", 1)[-1])
    session = horsie.api("GET", f"/sessions/{session_id}", "alice")
    assert session["memory"] == [{"space": space["id"], "mode": "write"}]
    assert session["compact_at"] == 0.5
    page.context.close()
