"""Compaction in a real Chromium against a real server: `/compact` typed in the composer
folds the early turns into a boundary card while the page watches, the entries it folded are
marked as no longer in the model's context, an edited summary arrives as a new boundary with
its diff, and the context view shows the summary and the carried state as the model gets
them. Then a handoff document and a rewind each start a new session the browser goes to.

The first test takes `docs/compaction.png`: a compacted session, a boundary card open, the
prompt-tokens chart beside it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import logged_in, watching

pytestmark = pytest.mark.e2e

# A 4,000-token window: compaction is armed at 3,200 tokens (80%), and `/compact` keeps the
# most recent 800 tokens (20%) verbatim, so the long early turns have something to fold.
WINDOW = 4000
TASKS = [
    {"text": "Hire riders for every leg", "status": "done"},
    {"text": "Stock the Sierra stations", "status": "in_progress"},
]
FILLER = (
    "Every station keeps fresh horses, water and a keeper; riders change mounts in two "
    "minutes and hand the mochila on without stopping. "
)  # about 35 tokens
SUMMARY = (
    "## Summary\n"
    "- Route: St. Joseph to Sacramento, 190 stations\n"
    "- Riders hired for every leg\n"
    "- Next: stock the Sierra stations"
)
EDITED_LINE = "- Next: stock the Sierra stations before the snow"
HANDOFF = "## Goal\nRun the relay to Sacramento\n## Next steps\nStock the Sierra stations"


def usage(prompt):
    return {"prompt_tokens": prompt, "completion_tokens": 40, "total_tokens": prompt + 40}


def call(call_id, name, arguments):
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


# The model server plays these in order, one per model call, as the tests below run.
SCRIPT = [
    # Three long turns, the first of which writes the task list.
    {"tool_calls": [call("c-todo", "todo_write", {"tasks": TASKS})], "usage": usage(600)},
    {"text": "The route is planned.", "usage": usage(900)},
    {"text": "The Sierra leg is set.", "usage": usage(1400)},
    {"text": "The desert leg is set.", "usage": usage(1900)},
    # `/compact`: the summariser's answer.
    {"text": SUMMARY, "usage": usage(2000)},
    # One turn after the compaction: the chart drops.
    {"text": "Carrying on from the summary.", "usage": usage(700)},
    # The handoff test: one turn, then the document `/handoff` asks for.
    {"text": "Noted: the relay leaves at dawn.", "usage": usage(300)},
    {"text": HANDOFF, "usage": usage(400)},
]
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "compaction.png"


@pytest.fixture(scope="module")
def small_card(horsie, model_server):
    card = {"name": "Scripted, small window", "wire": "openai_chat", "model": "scripted",
            "base_url": model_server, "context_window": WINDOW, "max_output_tokens": 256}  # fmt: skip
    return horsie.api("POST", "/models", "alice", card)["id"]


def say(horsie, session_id, text):
    done = horsie.api("POST", f"/sessions/{session_id}/messages?wait=30", "alice", {"text": text})
    assert done["status"] == "idle", done
    return done["entries"]


def boundary_card(page, seq):
    return page.locator(f'article.entry-boundary[data-seq="{seq}"]')


def test_compact_edit_and_the_context_view(browser, horsie, small_card):
    from playwright.sync_api import expect

    session = horsie.api(
        "POST", "/sessions", "alice", {"title": "Pony Express: the long ride", "model": small_card}
    )
    sid = session["id"]
    # Two long turns (about 400 and 900 tokens) and a short one: seqs 1-8. The short one
    # fits the recent budget and the long one before it does not, so the cut falls at #7.
    say(horsie, sid, "Plan the relay from St. Joseph to Sacramento. " + FILLER * 12)
    say(horsie, sid, "Now the Sierra leg. " + FILLER * 26)
    say(horsie, sid, "And the desert leg: the same, in short.")

    page = logged_in(browser, horsie, "alice", {"width": 1440, "height": 1000})
    page.goto(f"{horsie.url}/sessions/{sid}/")
    watching(page)
    expect(page.locator("#arming")).to_have_text("compacts at 3,200 tokens")
    expect(page.locator("#entries > .entry.out-of-context")).to_have_count(0)

    page.get_by_label("Message").fill("/compact keep the station names")
    page.get_by_label("Message").press("Enter")

    card = boundary_card(page, 10)
    expect(card.locator(".boundary-title")).to_have_text("Compacted by /compact")
    expect(card.locator(".badge.trigger")).to_have_text("manual")
    expect(card.locator(".boundary-tokens")).to_have_text(re.compile(r"^[\d,]+ → [\d,]+ tokens$"))
    expect(card.locator(".boundary-note")).to_contain_text("keep the station names")
    expect(card.locator(".carried-tasks li")).to_have_count(2)
    expect(card.locator(".carried-tasks")).to_contain_text("Stock the Sierra stations")
    # Folded while the page watched: the first two turns leave the model's context.
    for seq in range(1, 7):
        entry = page.locator(f'#entries > .entry[data-seq="{seq}"]')
        expect(entry).to_have_class(re.compile(r"\bout-of-context\b"))
        expect(entry.locator(".context-mark")).to_be_visible()
    for seq in (7, 8, 9, 10):
        expect(page.locator(f'#entries > .entry[data-seq="{seq}"]')).not_to_have_class(
            re.compile(r"\bout-of-context\b")
        )
    expect(page.locator(".view-note")).to_have_text(
        "Entries before #7 are no longer sent to the model."
    )

    # The summary is collapsed until asked for, and rendered as markdown.
    summary = card.locator(".boundary-summary .markdown")
    expect(summary).to_be_hidden()
    card.locator(".boundary-summary > summary").click()
    expect(summary.locator("h2")).to_have_text("Summary")
    expect(summary.locator("li")).to_have_count(3)

    # Edit it: a new `edit` boundary arrives with the diff; the old one can't be edited.
    card.get_by_text("Edit summary").click()
    textarea = card.get_by_label("Summary")
    expect(textarea).to_have_value(SUMMARY)
    textarea.fill(SUMMARY.replace("- Next: stock the Sierra stations", EDITED_LINE))
    card.get_by_role("button", name="Save summary").click()
    edited = boundary_card(page, 11)
    expect(edited.locator(".boundary-title")).to_have_text("Summary edited")
    expect(edited.locator(".badge.trigger")).to_have_text("edit")
    expect(edited.locator(".diff-removed")).to_have_text(
        re.compile(r"- Next: stock the Sierra stations$")
    )
    expect(edited.locator(".diff-added")).to_have_text(re.compile(re.escape(EDITED_LINE) + "$"))
    expect(card.locator(".summary-edit")).to_be_hidden()
    expect(edited.locator(".summary-edit > summary")).to_be_visible()
    expect(page.locator("#entries > .entry.out-of-context")).to_have_count(6)

    # The context view: what the model is sent next, block by block.
    page.get_by_role("tab", name="Context view").click()
    expect(page.locator("#transcript")).to_be_hidden()
    blocks = page.locator("#context-view .block")
    expect(blocks.first).to_be_visible()
    kinds = page.locator("#context-view .block .block-kind").all_text_contents()
    assert kinds[:4] == ["system", "system", "summary", "state"], kinds
    expect(page.locator("#context-view .block-summary .block-text")).to_contain_text(EDITED_LINE)
    expect(page.locator("#context-view .block-summary .seq")).to_have_text("#11")
    expect(page.locator("#context-view .block-state .block-text")).to_contain_text(
        "[in_progress] Stock the Sierra stations"
    )
    entry_seqs = page.locator("#context-view .block-entry").evaluate_all(
        "blocks => blocks.map(b => +b.dataset.seq)"
    )
    assert entry_seqs and min(entry_seqs) == 7, entry_seqs
    expect(page.locator("#context-view .context-total")).to_contain_text("compacts at 3,200")
    page.get_by_role("tab", name="Full transcript").click()
    expect(page.locator("#transcript")).to_be_visible()

    # One more turn: the chart shows the prompt falling after the compactions.
    say(horsie, sid, "Carry on.")
    expect(page.locator("article.entry-assistant .markdown").last).to_have_text(
        "Carrying on from the summary."
    )
    chart = page.locator("#prompt-chart")
    expect(chart.locator(".chart-line")).to_be_visible()
    expect(chart.locator(".state-count")).to_have_text("5")
    expect(chart.locator(".chart-marker")).to_have_count(2)
    expect(chart.locator(".chart-trigger")).to_have_count(1)

    # A reload renders the same marks on the server.
    page.reload()
    watching(page)
    expect(page.locator("#entries > .entry.out-of-context")).to_have_count(6)
    expect(boundary_card(page, 10)).to_have_class(re.compile(r"\bsuperseded\b"))
    latest = boundary_card(page, 11)
    latest.locator(".boundary-summary > summary").click()
    expect(latest.locator(".boundary-summary .markdown li").last).to_have_text(
        EDITED_LINE.removeprefix("- ")
    )
    # The picture: the end of the folded turns, the kept one, the boundary card open.
    boundary_card(page, 10).locator(".boundary-summary > summary").click()
    page.locator('#entries > .entry[data-seq="6"]').evaluate(
        "entry => { entry.scrollIntoView({block: 'start'}); entry.parentElement.parentElement"
        ".scrollTop -= 16; }"
    )
    SCREENSHOT.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))
    page.context.close()


def test_a_handoff_and_a_rewind_each_start_a_new_session(browser, horsie):
    from playwright.sync_api import expect

    title = "Pony Express: hand over"
    sid = horsie.api("POST", "/sessions", "alice", {"title": title})["id"]
    say(horsie, sid, "The relay leaves at dawn.")  # seqs 1 and 2

    page = logged_in(browser, horsie, "bob")
    page.goto(f"{horsie.url}/sessions/{sid}/")
    watching(page)
    expect(page.locator("#arming")).to_have_text("compacts at 6,400 tokens")
    page.get_by_label("Message").fill("/handoff")
    page.get_by_label("Message").press("Enter")

    document = page.locator("article.entry-handoff")
    expect(document.locator(".markdown h2").first).to_have_text("Goal")
    document.get_by_text("Start a new session from this").click()
    text = document.get_by_label("Handoff document")
    expect(text).to_have_value(HANDOFF)
    text.fill("   ")
    document.get_by_role("button", name="Start the new session").click()
    expect(document.locator(".form-error")).to_have_text("The handoff document is empty.")
    text.fill(HANDOFF + "\n## Pitfalls\nThe snow comes early.")
    document.get_by_role("button", name="Start the new session").click()

    expect(page.locator(".lineage")).to_have_text(f"forked from {title} at entry 4")
    child_url = page.url
    assert re.search(r"/sessions/\d+/$", child_url) and child_url != f"{horsie.url}/sessions/{sid}/"
    card = page.locator("article.entry-boundary")
    expect(card.locator(".boundary-note")).to_contain_text("Started from a handoff document")
    card.locator(".boundary-summary > summary").click()
    expect(card.locator(".boundary-summary .markdown")).to_contain_text("The snow comes early.")

    page.locator(".lineage a").click()
    expect(page.get_by_role("heading", name=title)).to_be_visible()
    first = page.locator('#entries > .entry-user[data-seq="1"]')
    first.hover()
    first.get_by_text("Rewind to here").click()
    first.get_by_role("button", name="Start the new session").click()
    expect(page.locator(".lineage")).to_have_text(f"forked from {title} at entry 1")
    expect(page.locator("#entries > .entry")).to_have_count(1)
    expect(page.locator("#entries .entry-user .body")).to_have_text("The relay leaves at dawn.")
    page.context.close()
