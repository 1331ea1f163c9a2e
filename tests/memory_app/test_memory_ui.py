"""Memory in the pages around a session: the side panel (what the selection costs, what it
leaves out, switching a space off or on), the new-session form's cost before the session
starts, and the space page's budget and live agent writes. charlie sees none of it (404)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


@pytest.fixture
def login(client, personas):
    def as_(name):
        client.force_login(personas[name][0])
        return client

    return as_


@pytest.fixture
def tight(personas):
    """A space whose 40-token budget holds its newest note and leaves two out."""
    from memory_app.services import note_create, space_create

    alice = personas["alice"][0]
    space = space_create(user=alice, team=personas["acme"], name="tight", budget_tokens=40)
    for title in ("Old rule", "Older rule", "Newest rule"):
        note_create(space=space, title=title, body="word " * 20, user=alice)
    return space


@pytest.fixture
def selected(session, space, note, tight):
    from memory_app.services import session_memory_set

    memory = [{"space": space.pk, "mode": "write"}, {"space": tight.pk, "mode": "read"}]
    return session_memory_set(session=session, memory=memory, user=session.created_by)


def memory_notices(session):
    from sessions_app.models import Entry

    return list(Entry.objects.filter(session=session, kind="notice", data__code="memory_changed"))


def panel_of(html):
    return html.split('id="memory-panel"', 1)[1].split("</section>", 1)[0]


# The side panel ---------------------------------------------------------------------------


def test_the_panel_shows_each_space_with_its_cost_and_what_it_leaves_out(login, selected, tight):
    for name in ("alice", "bob"):
        panel = panel_of(login(name).get(f"/sessions/{selected.pk}/").content.decode())
        assert "conventions" in panel and "tight" in panel
        assert '<option value="write" selected>read and write</option>' in panel
        assert " / 2,000</span> tokens" in panel and " / 40</span> tokens" in panel
        assert "2 notes of <code>tight</code> left out" in panel
        assert "Older rule, Old rule" in panel
    # The meter's refresh brings the panel too, out of band.
    refresh = login("alice").get(f"/sessions/{selected.pk}/meter/", headers=HTMX).content.decode()
    assert 'id="memory-panel"' in refresh and 'hx-swap-oob="true"' in refresh


def test_the_panel_switches_spaces_through_the_service(login, selected, space, tight, personas):
    from memory_app.services import space_create

    other = space_create(user=personas["bob"][0], team=personas["acme"], name="decisions")
    bob = login("bob")
    url = f"/sessions/{selected.pk}/memory/"
    off = bob.post(url, {f"mode_{space.pk}": "read", f"mode_{tight.pk}": ""}, headers=HTMX)
    assert off.status_code == 200
    selected.refresh_from_db()
    assert selected.memory == [{"space": space.pk, "mode": "read"}]
    (notice,) = memory_notices(selected)[-1:]
    assert (
        "switched off `tight`" in notice.content and "`conventions` is now read" in notice.content
    )
    assert "tight" not in panel_of(off.content.decode()).split("Add a space")[0]

    added = bob.post(url, {f"mode_{space.pk}": "read", "add": other.pk, "add_mode": "write"})
    assert added.status_code == 302
    selected.refresh_from_db()
    assert selected.memory[-1] == {"space": other.pk, "mode": "write"}
    assert "added `decisions` (write)" in memory_notices(selected)[-1].content


def test_the_panel_refuses_what_the_api_refuses(login, selected, personal, personas):
    from memory_app.services import space_create

    theirs = space_create(user=personas["charlie"][0], team=personas["globex"], name="g")
    bob = login("bob")
    before = list(selected.memory)
    count = len(memory_notices(selected))
    for bad in (personal.pk, theirs.pk, "x1", 999999):
        refused = bob.post(f"/sessions/{selected.pk}/memory/", {"add": bad}, headers=HTMX)
        assert refused.status_code == 400 and "No such memory space" in refused.content.decode()
    # bob does not see alice's personal space, so it is not offered to him either
    assert "alice-only" not in panel_of(bob.get(f"/sessions/{selected.pk}/").content.decode())
    selected.refresh_from_db()
    assert selected.memory == before and len(memory_notices(selected)) == count


def test_charlie_gets_404_on_the_panel(login, selected, space):
    charlie = login("charlie")
    assert charlie.get(f"/sessions/{selected.pk}/").status_code == 404
    assert charlie.get(f"/sessions/{selected.pk}/meter/").status_code == 404
    assert (
        charlie.post(f"/sessions/{selected.pk}/memory/", {f"mode_{space.pk}": ""}).status_code
        == 404
    )
    selected.refresh_from_db()
    assert len(selected.memory) == 2


# The new-session form -----------------------------------------------------------------------


def test_the_new_session_form_shows_the_cost_of_its_selection(login, card, space, note, tight):
    alice = login("alice")
    page = alice.get("/sessions/new/").content.decode()
    assert 'id="memory-cost"' in page and "No memory selected" in page
    assert 'hx-get="/sessions/new/memory-cost/"' in page
    query = {"model": card.pk, f"memory_{space.pk}": "read", f"memory_{tight.pk}": "write"}
    cost = alice.get("/sessions/new/memory-cost/", query, headers=HTMX).content.decode()
    assert "Memory in every call" in cost and "of 8,000" in cost and "Test card" in cost
    assert "Would be left out: 2 notes of <code>tight</code>" in cost
    assert "Older rule, Old rule" in cost
    only = alice.get("/sessions/new/memory-cost/", {"model": card.pk, f"memory_{space.pk}": "read"})
    assert "Every note of the selected spaces fits its budget" in only.content.decode()


def test_the_cost_names_only_what_the_user_may_see(login, card, space, tight, personal):
    query = {"model": card.pk, f"memory_{tight.pk}": "read", f"memory_{personal.pk}": "read"}
    bob = login("bob").get("/sessions/new/memory-cost/", query).content.decode()
    assert "tight" in bob and "alice-only" not in bob
    charlie = login("charlie").get("/sessions/new/memory-cost/", query).content.decode()
    assert "No memory selected" in charlie and "tight" not in charlie and "Test card" not in charlie


# The space page ---------------------------------------------------------------------------


def test_the_space_page_names_what_its_budget_leaves_out(login, tight):
    page = login("bob").get(f"/memory/{tight.pk}/").content.decode()
    assert "Outside its budget: 2 notes of <code>tight</code>" in page
    assert "Older rule, Old rule" in page
    assert page.count("left out of context</span>") == 2
    assert "In context: " in page and "1 note</p>" in page


def test_agent_writes_appear_live_marked_with_their_session(login, selected, space, note):
    from memory_app.services import note_write

    bob = login("bob")
    page = bob.get(f"/memory/{space.pk}/").content.decode()
    stamp = page.split("live/?rev=", 1)[1].split('"', 1)[0]
    live = f"/memory/{space.pk}/live/?rev={stamp}"
    assert 'hx-trigger="every 3s' in page
    assert bob.get(live, headers=HTMX).status_code == 204  # nothing changed: nothing swapped
    note_write(space=space, title="Agent note", body="Learned: CI needs Redis.", version=None,
               by_session=selected.pk, seq=7)  # fmt: skip
    fresh = bob.get(live, headers=HTMX)
    html = fresh.content.decode()
    assert fresh.status_code == 200 and "Learned: CI needs Redis." in html
    assert f'href="/sessions/{selected.pk}/"' in html and f"session #{selected.pk}</a>" in html
    assert "(entry 7)" in html and 'id="note-list" class="memory-notes" hx-swap-oob="true"' in html
    assert 'id="notes-poll"' in html and f"rev={stamp}" not in html
    searched = bob.get(live + "&q=semicolons", headers=HTMX).content.decode()
    assert "Style" in searched and "Agent note" not in searched
    assert login("charlie").get(live).status_code == 404
