"""What the session page says about a failed turn, a meter past the window, a running
compaction and a pinned summary, through the real URLconf.

alice and bob (acme) see it all; charlie (globex) gets 404 from the meter.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from sessions_app import services
from sessions_app.events import compacting_key
from sessions_app.models import Entry

pytestmark = pytest.mark.django_db(transaction=True)

HX = {"HX-Request": "true"}
OVERFLOW = "Requested tokens (3799) exceed context window of 2048"


@pytest.fixture
def browser(client, personas):
    def login(name):
        client.force_login(personas[name][0])
        return client

    return login


def append(session, kind, content="", **data):
    return services.entry_append(session_id=session.pk, kind=kind, content=content, data=data)


def page_of(client, session):
    response = client.get(reverse("sessions:detail", args=[session.pk]))
    assert response.status_code == 200
    return response.content.decode()


def meter_of(client, session):
    response = client.get(reverse("sessions:meter", args=[session.pk]), headers=HX)
    assert response.status_code == 200
    return response.content.decode()


def banner(html):
    """The failure banner's section, empty and hidden when nothing failed."""
    start = html.index('<section class="failure" id="failure"')
    return html[start : html.index("</section>", start)]


def failed_turn(session):
    """A good turn (#1, #2), then a turn that ends in a provider error (#3, #4)."""
    append(session, "user", "hello")
    append(session, "assistant", "Hi.")
    append(session, "user", "2026-05-01,14:00:05,station 0,crate 4400\n" * 90)
    return append(session, "notice", f"The model call failed: {OVERFLOW}", code="provider_error")


# The failure banner --------------------------------------------------------------------


def test_no_banner_while_nothing_failed(browser, session):
    append(session, "user", "hello")
    append(session, "assistant", "Hi.")
    for html in (page_of(browser("alice"), session), meter_of(browser("alice"), session)):
        section = banner(html)
        assert " hidden" in section.split(">", 1)[0]
        assert "The last turn failed" not in section


def test_a_failed_turn_shows_a_banner_with_the_ways_out(browser, session):
    notice = failed_turn(session)
    section = banner(page_of(browser("bob"), session))
    assert " hidden" not in section.split(">", 1)[0]
    assert f'data-seq="{notice.seq}"' in section
    assert "The last turn failed" in section and "provider_error" in section
    assert OVERFLOW in section
    assert f'action="{reverse("sessions:fork", args=[session.pk])}"' in section
    assert "Fork with summary" in section
    # Rewind goes back to the last good reply, before the turn that failed.
    assert f'action="{reverse("sessions:rewind", args=[session.pk])}"' in section
    assert re.search(r'name="seq" value="2"', section)
    assert "Rewind to #2, the last good reply" in section
    assert "Raise the window" in section and "declares 8,000 tokens" in section


def test_the_banner_comes_with_the_meter_and_leaves_after_a_good_reply(browser, session):
    failed_turn(session)
    meter = meter_of(browser("alice"), session)
    assert 'id="context-meter"' in meter
    section = banner(meter)
    assert 'hx-swap-oob="true"' in section and "The last turn failed" in section

    append(session, "user", "try again")
    append(session, "assistant", "Done.")
    section = banner(meter_of(browser("alice"), session))
    assert 'hx-swap-oob="true"' in section and "The last turn failed" not in section


def test_the_banner_cuts_a_long_error(browser, session):
    append(session, "user", "hello")
    append(session, "notice", "x" * 900, code="compaction_failed")
    section = banner(page_of(browser("alice"), session))
    assert "x" * 399 + "…" in section and "x" * 401 not in section
    assert "Rewind to" not in section  # no good reply to go back to


def test_the_banner_names_both_windows_once_the_server_was_found_smaller(browser, session):
    failed_turn(session)
    append(session, "notice", "The server accepts 6,000 tokens.", code="window_learned",
           effective_window=6000, declared_window=8000)  # fmt: skip
    append(session, "notice", f"The model call failed: {OVERFLOW}", code="provider_error")
    section = banner(page_of(browser("alice"), session))
    assert "the server accepts 6,000 tokens; the card “Test card” says 8,000" in section


def test_charlie_gets_no_meter_and_no_banner(browser, session):
    failed_turn(session)
    response = browser("charlie").get(reverse("sessions:meter", args=[session.pk]), headers=HX)
    assert response.status_code == 404
    assert OVERFLOW not in response.content.decode()


# The meter ----------------------------------------------------------------------------


def meter_section(html):
    start = html.index('id="context-meter"')
    return html[html.rindex("<div", 0, start) : html.index('id="arming"', start)]


def test_the_meter_is_never_blank_and_says_how_it_counted(browser, session):
    html = meter_of(browser("alice"), session)
    numbers = re.search(r'class="meter-numbers"[^>]*>\s*([^<]+?)\s*<', html).group(1)
    assert re.fullmatch(r"[\d,]+ / 8,000", numbers), numbers
    assert "—" not in numbers
    assert re.search(r'class="meter-counted">[^<]*(estimate|tokenizer)', html)
    assert re.search(r'class="meter-numbers" title="Tokens [^"]+"', html)


def test_the_meter_turns_red_over_the_effective_window(browser, session):
    for _ in range(5):  # about 500 tokens each by the estimate
        append(session, "user", "word " * 400)
    html = meter_of(browser("alice"), session)
    assert 'class="meter over"' not in meter_section(html)
    assert "server accepts" not in html

    append(session, "notice", "The server accepts 2,000 tokens.", code="window_learned",
           effective_window=2000, declared_window=8000)  # fmt: skip
    html = meter_of(browser("alice"), session)
    section = meter_section(html)
    assert section.startswith('<div class="meter over"')
    assert re.search(r"[\d,]+ / 2,000", section)
    assert "server accepts 2,000; card says 8,000" in section
    assert "Over the window" in section
    assert 'class="meter over"' in page_of(browser("alice"), session)


# Compaction in progress ---------------------------------------------------------------


def test_a_running_compaction_shows_on_a_page_opened_midway(browser, session):
    html = page_of(browser("alice"), session)
    assert re.search(
        r'<div class="compacting" id="compacting"[^>]*data-since=""[^>]* hidden>', html
    )

    since = (timezone.now() - timedelta(seconds=12)).isoformat()
    cache.set(compacting_key(session.pk), since)
    try:
        html = page_of(browser("alice"), session)
    finally:
        cache.delete(compacting_key(session.pk))
    tag = re.search(r'<div class="compacting" id="compacting"[^>]*>', html).group(0)
    assert f'data-since="{since}"' in tag and "hidden" not in tag
    assert re.search(r'<span data-field="elapsed">1[2-9]</span> s', html)


# The pinned summary -------------------------------------------------------------------


def boundary(session, content, **data):
    append(session, "user", "one")
    append(session, "assistant", "two")
    carried = {"tasks": [], "timers": [], "questions": [], "subagents": [], "loaded_skills": []}
    return append(
        session, "boundary", content, first_kept_seq=2, trigger="auto", carried=carried, **data
    )


def card_of(html, seq):
    start = html.index(f'aria-label="Compaction boundary #{seq}"')
    return html[start : html.index("</section>", start)]


def test_a_pinned_part_is_shown_as_kept_verbatim(browser, session):
    pinned = "The repo is **/srv/app**."
    entry = boundary(session, f"{pinned}\n\n- Shipped on Friday", pinned=pinned)
    card = card_of(page_of(browser("bob"), session), entry.seq)
    start = card.index('class="boundary-pinned"')
    pinned_part = card[start : card.index("</div>", card.index('class="markdown"', start))]
    assert 'Summary <span class="pinned-tag">part pinned</span>' in card
    assert "Kept verbatim (pinned by a person)" in pinned_part
    assert "<strong>/srv/app</strong>" in pinned_part
    assert "Written by the summariser" in card
    written = card[card.index("Written by the summariser") :]
    assert "Shipped on Friday" in written and "/srv/app" not in written.split("</details>")[0]


def test_an_unpinned_summary_has_no_pinned_part(browser, session):
    entry = boundary(session, "- Shipped on Friday")
    card = card_of(page_of(browser("alice"), session), entry.seq)
    assert "boundary-pinned" not in card and "part pinned" not in card
    assert "<summary>Summary</summary>" in card


def test_the_edit_form_pins_by_default_and_says_what_unpinning_does(browser, session):
    entry = boundary(session, "- Shipped on Friday")
    card = card_of(page_of(browser("alice"), session), entry.seq)
    assert re.search(r'<input type="checkbox" name="pin" checked>', card)
    assert "Unchecked, the next compaction may rewrite it." in card


@pytest.mark.parametrize(("posted", "pinned"), [({"pin": "on"}, "- Shipped"), ({}, None)])
def test_the_pin_checkbox_decides_what_the_edit_pins(browser, session, posted, pinned):
    entry = boundary(session, "- Shipped on Friday")
    url = reverse("sessions:summary", args=[session.pk])
    data = {"boundary": entry.seq, "summary": "- Shipped", **posted}
    assert browser("alice").post(url, data, headers=HX).status_code == 200
    edited = Entry.objects.filter(session=session, kind="boundary").latest("seq")
    assert edited.data["trigger"] == "edit" and edited.data.get("pinned") == pinned
