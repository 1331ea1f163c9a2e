"""Sessions and presets select memory spaces: checked when chosen, cleaned up when a space
goes, and every change a notice in the session's log."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def notices(session, code):
    from sessions_app.models import Entry

    return list(Entry.objects.filter(session=session, kind="notice", data__code=code))


def test_selection_is_checked(api_for, card, space, personal, personas):
    from memory_app.services import space_create

    globex_space = space_create(user=personas["charlie"][0], team=personas["globex"], name="g")
    alice, bob = api_for("alice"), api_for("bob")
    ok = alice.post(
        "/sessions", {"model": card.pk, "memory": [{"space": space.pk, "mode": "write"}]}
    )
    assert ok.status_code == 201, ok.content
    assert ok.json()["memory"] == [{"space": space.pk, "mode": "write"}]
    for memory, words in [
        ([{"space": 999999}], "No such memory space: 999999"),
        ([{"space": globex_space.pk}], f"No such memory space: {globex_space.pk}"),
        ([{"space": space.pk}, {"space": space.pk, "mode": "write"}], "selected twice"),
    ]:
        refused = alice.post("/sessions", {"model": card.pk, "memory": memory})
        assert refused.status_code == 400 and words in refused.json()["detail"], refused.json()
    # alice's personal space: hers to select, not bob's
    assert (
        alice.post("/sessions", {"model": card.pk, "memory": [{"space": personal.pk}]}).status_code
        == 201
    )
    refused = bob.post("/sessions", {"model": card.pk, "memory": [{"space": personal.pk}]})
    assert refused.status_code == 400 and str(personal.pk) in refused.json()["detail"]
    preset = alice.post("/presets", {"name": "P", "memory": [{"space": space.pk, "mode": "read"}]})
    assert preset.status_code == 201 and preset.json()["memory"] == [
        {"space": space.pk, "mode": "read"}
    ]
    bad = alice.patch(f"/presets/{preset.json()['id']}", {"memory": [{"space": 424242}]})
    assert bad.status_code == 400


def test_switching_a_space_off_is_a_notice(api_for, session, space, personal):
    alice, bob = api_for("alice"), api_for("bob")
    on = alice.patch(f"/sessions/{session.pk}", {"memory": [{"space": personal.pk, "mode": "read"},
                                                           {"space": space.pk, "mode": "write"}]})  # fmt: skip
    assert on.status_code == 200, on.content
    # bob keeps alice's personal space (already selected) while switching the team one off
    off = bob.patch(f"/sessions/{session.pk}", {"memory": [{"space": personal.pk, "mode": "read"}]})
    assert off.status_code == 200, off.content
    changed = notices(session, "memory_changed")
    assert len(changed) == 2
    assert (
        changed[1].data["removed"] == [space.pk]
        and "switched off `conventions`" in changed[1].content
    )
    unchanged = alice.patch(f"/sessions/{session.pk}", {"title": "Renamed"})
    assert unchanged.status_code == 200 and len(notices(session, "memory_changed")) == 2


def test_deleting_a_space_removes_it_everywhere(api_for, card, space, personas):
    from memory_app.services import space_create
    from sessions_app.models import AgentPreset, Session

    other = space_create(user=personas["alice"][0], team=personas["acme"], name="other")
    alice = api_for("alice")
    both = [{"space": space.pk, "mode": "read"}, {"space": other.pk, "mode": "write"}]
    with_it = alice.post("/sessions", {"model": card.pk, "memory": both}).json()["id"]
    without_it = alice.post("/sessions", {"model": card.pk, "memory": both[1:]}).json()["id"]
    preset = alice.post("/presets", {"name": "P", "memory": both}).json()["id"]

    assert api_for("charlie").delete(f"/memory-spaces/{space.pk}").status_code == 404
    assert api_for("bob").delete(f"/memory-spaces/{space.pk}").status_code == 204

    assert Session.objects.get(pk=with_it).memory == both[1:]
    assert AgentPreset.objects.get(pk=preset).memory == both[1:]
    (notice,) = notices(Session.objects.get(pk=with_it), "memory_space_removed")
    assert notice.data["name"] == "conventions" and "`conventions` was deleted" in notice.content
    assert notices(Session.objects.get(pk=without_it), "memory_space_removed") == []
