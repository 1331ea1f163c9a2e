"""The compaction UI's pages through the real URLconf: boundary cards, summary edits, forks,
rewinds and handoffs, the context view, the chart and the arming line.

alice and bob (acme) may use all of it; charlie (globex) gets 404 and stores nothing.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse
from django.utils import timezone

from sessions_app import services, views
from sessions_app.models import Entry, ModelCard, Session
from sessions_app.waiting import wait_settled

pytestmark = pytest.mark.django_db(transaction=True)

HX = {"HX-Request": "true"}
SUMMARY = "## Summary\n- The repo is **/srv/app**\n- Ship on Friday"
CARRIED = {
    "tasks": [{"text": "Ship <it>", "status": "in_progress"}],
    "timers": [
        {"id": "t-1", "message": "Check CI", "seconds": 60, "due_at": "2999-01-01T00:00:00+00:00"}
    ],  # fmt: skip
    "questions": [{"id": "q-1", "question": "Which branch?", "options": []}],
    "subagents": [],
    "loaded_skills": [],
}


@pytest.fixture
def browser(client, personas):
    def login(name):
        client.force_login(personas[name][0])
        return client

    return login


def append(session, kind, content="", **data):
    return services.entry_append(session_id=session.pk, kind=kind, content=content, data=data)


def compacted(session, *, trigger="manual", summary=SUMMARY, **extra):
    """Four entries, then a boundary that keeps #3 on: #1 and #2 leave the model's context."""
    append(session, "user", "Plan the release")
    append(session, "assistant", "Planned.", usage={"input_tokens": 1500, "output_tokens": 9})
    append(session, "user", "Now ship it")
    append(session, "assistant", "Shipping.", usage={"input_tokens": 2400, "output_tokens": 9})
    return append(
        session,
        "boundary",
        summary,
        first_kept_seq=3,
        carried=CARRIED,
        trigger=trigger,
        instructions="keep the paths",
        tokens_before=5000,
        tokens_after=1200,
        covers=[1, 2],
        usage={"input_tokens": 4800, "output_tokens": 120, "cached_tokens": 4000},
        summariser={"model": "scripted", "duration_ms": 1500, "cache_read_tokens": 4000},
        **extra,
    )


def page_of(client, session):
    response = client.get(reverse("sessions:detail", args=[session.pk]))
    assert response.status_code == 200
    return response.content.decode()


def article(html, seq):
    """The opening tag of entry `seq`'s article."""
    return re.search(rf'<article class="([^"]*)"\s+data-seq="{seq}"', html).group(1)


def card_of(html, seq):
    start = html.index(f'aria-label="Compaction boundary #{seq}"')
    return html[start : html.index("</section>", start)]


def settled(session_id):
    return async_to_sync(wait_settled)(session_id, 10)


# The boundary card ---------------------------------------------------------------------


def test_a_boundary_card_shows_what_the_compaction_did(browser, session):
    compacted(session)
    html = page_of(browser("bob"), session)
    card = card_of(html, 5)
    assert "Compacted by /compact" in card and ">manual</span>" in card
    assert "5,000 → 1,200 tokens" in card
    assert "<strong>/srv/app</strong>" in card  # the summary, as safe markdown
    assert '<details class="boundary-summary">' in card  # collapsible, closed at first
    assert "Entries before #3 stay in the log" in card and "#1–#2" in card
    assert "keep the paths" in card
    assert "Ship &lt;it&gt;" in card and "Check CI" in card and "Which branch?" in card
    assert "1,500 ms" in card and "4,000 cached" in card
    assert "Edit summary" in card and "Ship on Friday</textarea>" in card
    for seq in (1, 2):
        assert "out-of-context" in article(html, seq)
    for seq in (3, 4, 5):
        assert "out-of-context" not in article(html, seq)
    assert "Entries before #3 are no longer sent to the model." in html
    assert 'data-cut="3"' in html and 'data-latest="5"' in html


def test_a_clear_boundary_says_old_tool_outputs_were_cleared(browser, session):
    compacted(session, trigger="clear", cleared_before=3)
    card = card_of(page_of(browser("alice"), session), 5)
    assert "Old tool outputs cleared before #3" in card and ">clear</span>" in card


def test_entries_before_the_cut_are_not_marked_without_a_boundary(browser, session):
    append(session, "user", "hello")
    append(session, "notice", "note", code="help")
    html = page_of(browser("alice"), session)
    assert "out-of-context" not in article(html, 1) and "out-of-context" not in article(html, 2)
    assert "Everything in the log is in context." in html


# Editing a summary ---------------------------------------------------------------------


def edit(client, session, boundary, summary, htmx=True):
    url = reverse("sessions:summary", args=[session.pk])
    data = {"boundary": boundary, "summary": summary}
    return client.post(url, data, headers=HX if htmx else {})


def test_an_edited_summary_is_a_new_boundary_with_a_diff(browser, session, personas):
    compacted(session)
    client = browser("bob")
    edited = "## Summary\r\n- The repo is **/srv/app**\r\n- Ship on Monday <script>x</script>"
    r = edit(client, session, 5, edited)
    assert r.status_code == 200 and r.content.decode().strip().startswith('<div class="form-error"')
    boundary = Entry.objects.get(session=session, seq=6)
    assert boundary.kind == "boundary" and boundary.author == personas["bob"][0]
    assert boundary.data["trigger"] == "edit" and boundary.data["edited_from"] == 5
    assert boundary.content == edited.replace("\r\n", "\n")
    assert Entry.objects.get(session=session, seq=5).content == SUMMARY  # every version stays

    html = page_of(client, session)
    assert "superseded" in article(html, 5) and "superseded" not in article(html, 6)
    card = card_of(html, 6)
    assert "Summary edited" in card and "Changes from #5" in card
    assert re.search(r'<li class="diff-removed">.*- Ship on Friday</li>', card)
    assert re.search(
        r'<li class="diff-added">.*- Ship on Monday &lt;script&gt;x&lt;/script&gt;</li>', card
    )
    assert re.search(r'<li class="diff-same">.*/srv/app\*\*</li>', card)
    assert "<script>x" not in html
    one = client.get(reverse("sessions:entry", args=[session.pk, 6])).content.decode()
    assert 'class="diff-added"' in one and "Edit summary" in one


def test_an_edit_without_htmx_redirects_back(browser, session):
    compacted(session)
    r = edit(browser("alice"), session, 5, "Shorter.", htmx=False)
    assert r.status_code == 302 and r["Location"] == f"/sessions/{session.pk}/"
    assert Entry.objects.filter(session=session, kind="boundary").count() == 2


@pytest.mark.parametrize(
    ("boundary", "summary", "status", "message"),
    [
        (5, "   ", 400, "The summary is empty."),
        (5, "x" * 200_001, 413, "the limit is 200000"),
        (4, "Not a boundary", 409, "A newer summary exists"),
        ("", "Which?", 400, "must be an entry&#x27;s seq"),
    ],
)
def test_a_refused_edit_says_why_where_it_was_typed(
    browser, session, boundary, summary, status, message
):
    compacted(session)
    client = browser("alice")
    r = edit(client, session, boundary, summary)
    body = r.content.decode()
    assert r.status_code == status and message in body
    assert body.strip().startswith('<div class="form-error" role="alert">')
    full = edit(client, session, boundary, summary, htmx=False)
    page = full.content.decode()
    assert full.status_code == status and "<!doctype html>" in page and message in page
    assert Entry.objects.filter(session=session).count() == 5


def test_a_stale_edit_is_a_conflict(browser, session):
    compacted(session)
    client = browser("alice")
    assert edit(client, session, 5, "First edit").status_code == 200
    r = edit(client, session, 5, "Second edit, from a stale page")
    assert r.status_code == 409 and "A newer summary exists" in r.content.decode()
    assert [e.content for e in Entry.objects.filter(session=session, kind="boundary")] == [
        SUMMARY,
        "First edit",
    ]


# Handoff, fork, rewind -----------------------------------------------------------------

DOCUMENT = "## Goal\nShip /srv/app\n## Next steps\nTag the release"


def handoff(session):
    append(session, "user", "Plan the release")
    return append(session, "notice", DOCUMENT, code="handoff")


def fork(client, session, htmx=True, **data):
    url = reverse("sessions:fork", args=[session.pk])
    return client.post(url, data, headers=HX if htmx else {})


def test_a_handoff_shows_its_document_and_starts_a_new_session(browser, session, personas):
    notice = handoff(session)
    client = browser("bob")
    html = page_of(client, session)
    assert "<h2>Goal</h2>" in html and "Start a new session from this" in html
    assert "Tag the release</textarea>" in html and 'name="document"' in html
    one = client.get(reverse("sessions:entry", args=[session.pk, notice.seq])).content.decode()
    assert "Handoff document" in one and 'name="document"' in one

    before = Entry.objects.filter(session=session).count()
    r = fork(client, session, document=DOCUMENT + "\r\n## Pitfalls\r\nSmall disk", notice=2)
    child = Session.objects.get(parent=session)
    assert r.status_code == 200 and r["HX-Redirect"] == f"/sessions/{child.pk}/"
    assert (child.kind, child.parent_seq, child.created_by) == ("fork", 2, personas["bob"][0])
    (boundary,) = Entry.objects.filter(session=child)
    assert boundary.content == DOCUMENT + "\n## Pitfalls\nSmall disk"
    assert boundary.data["handoff"] is True and boundary.data["trigger"] == "fork"
    assert Entry.objects.filter(session=session).count() == before  # the original as it was

    page = page_of(client, child)
    assert re.search(
        rf'forked from <a href="/sessions/{session.pk}/">Acme work</a> at entry 2', page
    )
    assert "Started from a handoff document" in page


def test_a_handoff_without_htmx_redirects_to_the_new_session(browser, session):
    handoff(session)
    r = fork(browser("alice"), session, htmx=False, document="Go on.", notice=2)
    child = Session.objects.get(parent=session)
    assert r.status_code == 302 and r["Location"] == f"/sessions/{child.pk}/"


@pytest.mark.parametrize(
    ("document", "status", "message"),
    [(" \r\n ", 400, "The handoff document is empty."), ("x" * 200_001, 413, "the limit")],
)
def test_a_refused_handoff_starts_nothing(browser, session, document, status, message):
    handoff(session)
    client = browser("alice")
    r = fork(client, session, document=document, notice=2)
    assert r.status_code == status and message in r.content.decode()
    full = fork(client, session, htmx=False, document=document, notice=2)
    page = full.content.decode()
    assert full.status_code == status and message in page
    assert not Session.objects.filter(parent=session).exists()


def test_fork_with_summary_goes_to_the_new_session(browser, session, scripted):
    from harness.testing import reply

    append(session, "user", "Plan the release")
    scripted.steps = [reply("Forked summary.")]
    html = page_of(browser("alice"), session)
    assert "Fork with summary" in html
    r = fork(browser("alice"), session)
    child = Session.objects.get(parent=session)
    assert r["HX-Redirect"] == f"/sessions/{child.pk}/"
    assert settled(child.pk) == "idle"
    assert Entry.objects.get(session=child, kind="boundary").content == "Forked summary."
    assert list(Entry.objects.filter(session=session).values_list("kind", flat=True)) == ["user"]


def rewind(client, session, seq, text="", htmx=True):
    url = reverse("sessions:rewind", args=[session.pk])
    return client.post(url, {"seq": seq, "text": text}, headers=HX if htmx else {})


def test_rewind_to_here_is_offered_on_user_and_assistant_entries(browser, session):
    compacted(session)
    html = page_of(browser("alice"), session)
    for seq in (1, 2, 3, 4):
        start = html.index(f'data-seq="{seq}"')
        entry = html[start : html.index("</article>", start)]
        assert "Rewind to here" in entry and f'name="seq" value="{seq}"' in entry
    assert "Rewind to here" not in card_of(html, 5)
    assert "<template" not in html  # live entries come rendered by the server


def test_rewind_starts_a_new_session_from_an_entry(browser, session):
    compacted(session)
    client = browser("alice")
    r = rewind(client, session, 2)
    child = Session.objects.get(parent=session)
    assert r.status_code == 200 and r["HX-Redirect"] == f"/sessions/{child.pk}/"
    assert child.parent_seq == 2
    assert list(Entry.objects.filter(session=child).values_list("content", flat=True)) == [
        "Plan the release",
        "Planned.",
    ]
    assert Entry.objects.filter(session=session).count() == 5
    plain = rewind(client, session, 1, htmx=False)
    assert plain.status_code == 302 and plain["Location"].startswith("/sessions/")


def test_rewind_with_a_new_message_sends_it(browser, session, scripted):
    append(session, "user", "first")
    append(session, "assistant", "one")
    rewind(browser("alice"), session, 1, "Take the other road\r\nplease")
    child = Session.objects.get(parent=session)
    assert settled(child.pk) == "idle"
    kinds = list(Entry.objects.filter(session=child).values_list("kind", "content"))
    assert kinds == [
        ("user", "first"),
        ("user", "Take the other road\nplease"),
        ("assistant", "Scripted reply."),
    ]


@pytest.mark.parametrize(
    ("seq", "text", "status", "message"),
    [
        (9, "", 400, "has no entry 9"),
        ("x", "", 400, "must be an entry&#x27;s seq"),
        (1, "x" * 200_001, 413, "the limit"),
    ],
)
def test_a_refused_rewind_starts_nothing(browser, session, seq, text, status, message):
    append(session, "user", "first")
    client = browser("alice")
    r = rewind(client, session, seq, text)
    assert r.status_code == status and message in r.content.decode()
    full = rewind(client, session, seq, text, htmx=False)
    assert full.status_code == status and message in full.content.decode()
    assert not Session.objects.filter(parent=session).exists()


# The composer's branching commands go to the new session -------------------------------


def send(client, session, text, htmx=True):
    url = reverse("sessions:send", args=[session.pk])
    return client.post(url, {"text": text}, headers=HX if htmx else {})


def test_slash_rewind_in_the_composer_goes_to_the_new_session(browser, session):
    append(session, "user", "first")
    client = browser("alice")
    r = send(client, session, "/rewind 1")
    child = Session.objects.get(parent=session)
    assert r.status_code == 200 and r["HX-Redirect"] == f"/sessions/{child.pk}/"
    plain = send(client, session, "/rewind 1", htmx=False)
    newest = Session.objects.filter(parent=session).latest("id")
    assert plain.status_code == 302 and plain["Location"] == f"/sessions/{newest.pk}/"
    assert list(Entry.objects.filter(session=session).values_list("kind", flat=True)) == ["user"]


def test_slash_summary_n_fork_in_the_composer_goes_to_the_new_session(browser, session, scripted):
    append(session, "user", "first")
    r = send(browser("alice"), session, "/summary-n-fork")
    child = Session.objects.get(parent=session)
    assert r["HX-Redirect"] == f"/sessions/{child.pk}/"
    settled(child.pk)
    assert Entry.objects.filter(session=session).count() == 1


# Arming, the status, the context view and the chart ------------------------------------


def test_the_meter_says_when_auto_compaction_runs(browser, session):
    html = page_of(browser("alice"), session)
    assert re.search(r'id="arming" data-armed="true">\s*compacts at 6,400 tokens', html)
    assert 'class="meter-trigger" style="left: 80%"' in html
    meter = browser("alice").get(reverse("sessions:meter", args=[session.pk])).content.decode()
    assert "compacts at 6,400 tokens" in meter


def test_the_meter_says_why_auto_compaction_is_not_armed(browser, session, personas):
    session.auto_compact = False
    session.save()
    html = page_of(browser("alice"), session)
    assert "not armed: auto-compaction is off for this session" in html
    assert 'class="meter-trigger"' not in html

    card = ModelCard.objects.create(
        team=personas["acme"], name="No window", wire="openai_chat", model="m"
    )
    other = services.session_create(
        user=personas["alice"][0], team=personas["acme"], fields={"model": card}
    )
    html = page_of(browser("alice"), other)
    assert "not armed: the model card declares no context window" in html
    assert 'class="meter-trigger"' not in html and 'class="chart-trigger"' not in html


def test_a_dead_runners_session_shows_idle(browser, session):
    Session.objects.filter(pk=session.pk).update(
        status="running",
        lease_owner="gone",
        lease_expires_at=timezone.now() - timedelta(minutes=5),
    )
    client = browser("alice")
    html = page_of(client, session)
    assert re.search(r'id="status-badge">idle<', html)
    listing = client.get(reverse("sessions:list")).content.decode()
    rows = listing[listing.index('<ul class="session-list">') :]
    assert 'class="badge status-idle">idle<' in rows and "status-running" not in rows


def test_the_context_view_shows_each_block_the_model_is_sent(browser, session):
    compacted(session, summary="Summary with <b>tags</b>")
    r = browser("bob").get(reverse("sessions:context", args=[session.pk]), headers=HX)
    body = r.content.decode()
    assert r.status_code == 200 and body.lstrip().startswith('<div class="context-blocks"')
    kinds = re.findall(r'<li class="block block-(\w+)" data-kind="\w+" data-seq="(\d*)"', body)
    assert [k for k, _ in kinds][:4] == ["system", "system", "summary", "state"]
    assert ("summary", "5") in kinds and ("entry", "3") in kinds and ("entry", "1") not in kinds
    assert "Summary with &lt;b&gt;tags&lt;/b&gt;" in body and "<b>tags" not in body
    assert "[in_progress] Ship &lt;it&gt;" in body
    assert re.search(r"\d[\d,]* tokens</span>", body) and "compacts at 6,400 tokens" in body


def test_the_chart_plots_prompt_tokens_and_marks_compactions(browser, session):
    compacted(session)
    append(session, "assistant", "After.", prompt_tokens_estimate=900)
    html = page_of(browser("alice"), session)
    chart = html[html.index('id="prompt-chart"') :]
    chart = chart[: chart.index("</section>")]
    points = re.search(r'<polyline class="chart-line" points="([^"]+)"', chart).group(1)
    assert len(points.split()) == 3  # 1,500 and 2,400 reported; 900 estimated
    assert 'class="chart-marker marker-manual" data-seq="5"' in chart
    assert 'class="chart-trigger"' in chart and "compacts at 6,400" in chart
    assert "peak 2,400" in chart and "1 compaction<" in chart
    partial = browser("alice").get(reverse("sessions:chart", args=[session.pk]))
    assert partial.content.decode().lstrip().startswith('<section class="state-section chart')


def test_the_chart_reads_only_the_last_calls(browser, session, monkeypatch):
    monkeypatch.setattr(views, "CHART_CALLS", 3)
    for n in range(1, 6):
        append(session, "assistant", f"reply {n}", usage={"input_tokens": 1000 * n})
    html = page_of(browser("alice"), session)
    assert "peak 5,000" in html and '<span class="state-count">3</span>' in html


def test_an_empty_chart_says_so(browser, session):
    assert "No model calls yet" in page_of(browser("alice"), session)


# Walls ---------------------------------------------------------------------------------


def test_another_team_gets_404_and_changes_nothing(browser, session):
    compacted(session)
    handoff_seq = append(session, "notice", DOCUMENT, code="handoff").seq
    charlie = browser("charlie")
    for name in ("context", "chart"):
        assert charlie.get(reverse(f"sessions:{name}", args=[session.pk])).status_code == 404
    assert edit(charlie, session, 5, "mine now").status_code == 404
    assert edit(charlie, session, 5, "mine now", htmx=False).status_code == 404
    assert fork(charlie, session).status_code == 404
    assert fork(charlie, session, document="mine", notice=handoff_seq).status_code == 404
    assert rewind(charlie, session, 2).status_code == 404
    assert Entry.objects.filter(session=session).count() == 6
    assert Session.objects.count() == 1


def test_the_new_views_need_a_post_and_a_login(client, browser, session):
    compacted(session)
    for name in ("summary", "fork", "rewind"):
        url = reverse(f"sessions:{name}", args=[session.pk])
        client.logout()
        r = client.post(url, {"seq": 1, "boundary": 5, "summary": "x"})
        assert r.status_code == 302 and r["Location"].startswith("/login/")
        assert browser("alice").get(url).status_code == 405
    assert Session.objects.count() == 1 and Entry.objects.count() == 5
