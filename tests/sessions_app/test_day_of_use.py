"""What a team notices in a day of use: where a session came from and who started it, times
on every entry, the slash-command list, and the team switcher following the session viewed."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from sessions_app import branching, services

pytestmark = pytest.mark.django_db


def test_the_sidebar_and_the_list_say_how_each_session_came_to_be_and_who_started_it(
    client, personas, session
):
    alice = personas["alice"][0]
    services.entry_append(session_id=session.pk, kind="user", content="First", author=alice)
    bob = personas["bob"][0]
    session.refresh_from_db()
    rewound = branching.session_rewind(parent=session, user=bob, seq=1, text=None)
    handed = branching.session_fork(parent=session, user=alice, document="# Handoff\nGo on.")
    client.force_login(personas["bob"][0])
    for url in (reverse("sessions:list"), reverse("sessions:detail", args=[rewound.pk])):
        page = client.get(url).content.decode()
        assert "rewind of Acme work at #1</span> · by bob" in page
        assert "handoff from Acme work</span> · by alice" in page
        assert "new session</span> · by alice" in page
    rewound.refresh_from_db()
    handed.refresh_from_db()
    assert (rewound.branch, handed.branch) == ("rewind", "handoff")


def test_every_entry_has_its_time_with_the_absolute_time_on_hover(client, personas, session):
    entry = services.entry_append(session_id=session.pk, kind="user", content="Hi")
    client.force_login(personas["alice"][0])
    page = client.get(reverse("sessions:detail", args=[session.pk])).content.decode()
    stamp = entry.created_at.strftime("%Y-%m-%d %H:%M:%S")
    assert re.search(
        rf'<time class="when" datetime="[^"]+" data-local="time" title="{stamp} UTC">', page
    )


def test_opening_another_of_my_teams_sessions_switches_the_team(client, personas, card):
    from teams_app.models import Membership

    alice, globex = personas["alice"][0], personas["globex"]
    Membership.objects.create(team=globex, user=alice)
    theirs = services.session_create(
        user=personas["charlie"][0], team=globex, fields={"title": "Globex work", "model": card}
    )
    client.force_login(alice)
    assert "Team acme" in client.get(reverse("sessions:list")).content.decode()
    page = client.get(reverse("sessions:detail", args=[theirs.pk])).content.decode()
    assert re.search(rf'<option value="{globex.pk}" selected>globex</option>', page)
    assert "Team globex" in client.get(reverse("sessions:list")).content.decode()


def test_slash_commands_are_listed_by_the_server_while_the_text_is_a_bare_name(
    client, personas, session
):
    client.force_login(personas["alice"][0])
    url = reverse("sessions:complete", args=[session.pk])
    listed = client.get(url, {"text": "/re"}).content.decode()
    assert re.findall(r'data-name="([^"]+)"', listed) == ["rewind"]
    assert 'role="option"' in listed and " hidden" not in listed.split(">")[0]
    assert 'data-name="' not in client.get(url, {"text": "/rewind 3"}).content.decode()
    client.force_login(personas["charlie"][0])
    assert client.get(url, {"text": "/"}).status_code == 404
