"""Sessions and presets select skills, bundles and subagent types by id: each must exist, be
visible and be the team's (400 naming the bad id); the core reads the selection through
`skills_selected`, `subagent_types_selected` and `commands_of`."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def theirs(personas):
    from skills_app import services

    charlie, globex = personas["charlie"][0], personas["globex"]
    skill = services.skill_create(
        user=charlie, team=globex, fields={"name": "t", "description": "T."}
    )
    return {
        "skills": skill.pk,
        "bundles": services.bundle_create(user=charlie, team=globex, fields={"name": "T"}).pk,
        "subagent_types": services.subagent_type_create(
            user=charlie, team=globex, fields={"name": "t", "description": "T."}
        ).pk,
    }


@pytest.mark.parametrize("field", ["skills", "bundles", "subagent_types"])
@pytest.mark.parametrize("path", ["/sessions", "/presets"])
def test_selections_are_checked_like_memory(
    api_for, skill, bundle, subagent_type, theirs, field, path
):
    alice = api_for("alice")
    ours = {"skills": skill.pk, "bundles": bundle.pk, "subagent_types": subagent_type.pk}[field]
    extra = {"name": "p"} if path == "/presets" else {}
    made = alice.post(path, {**extra, field: [ours]})
    assert made.status_code == 201, made.content
    assert made.json()[field] == [ours]
    url = f"{path}/{made.json()['id']}"

    for bad in (theirs[field], 987654):
        refused = alice.post(path, {**extra, field: [ours, bad]})
        assert refused.status_code == 400 and str(bad) in refused.json()["detail"]
        refused = alice.patch(url, {field: [bad]})
        assert refused.status_code == 400 and str(bad) in refused.json()["detail"]
    assert alice.patch(url, {field: [ours, ours]}).status_code == 400
    assert alice.get(url).json()[field] == [ours]
    assert alice.patch(url, {field: []}).json()[field] == []


def test_skills_selected_adds_bundles_once_by_name(personas, session, skill, bundle):
    from skills_app import services
    from skills_app.selectors import skills_selected

    alice, acme = personas["alice"][0], personas["acme"]
    extra = services.skill_create(
        user=alice, team=acme, fields={"name": "alpha", "description": "A."}
    )
    services.skill_create(user=alice, team=acme, fields={"name": "unselected", "description": "U."})
    session.skills, session.bundles = [skill.pk, extra.pk], [bundle.pk]
    assert [s.name for s in skills_selected(session)] == ["alpha", "pdf-forms"]
    session.skills = []
    assert [s.name for s in skills_selected(session)] == ["pdf-forms"]


def test_commands_and_subagent_types_of_the_team(personas, session, command, subagent_type):
    from skills_app.selectors import commands_of, subagent_types_selected

    assert [c.name for c in commands_of(personas["acme"])] == ["review"]
    assert commands_of(personas["globex"]) == []
    session.subagent_types = [subagent_type.pk]
    assert [t.name for t in subagent_types_selected(session)] == ["researcher"]


def test_deleting_takes_it_out_of_selections_with_a_notice(api_for, personas, skill):
    from sessions_app.models import Entry, Session

    alice = api_for("alice")
    made = alice.post("/sessions", {"skills": [skill.pk]}).json()
    preset = alice.post("/presets", {"name": "p", "skills": [skill.pk]}).json()
    assert alice.delete(f"/skills/{skill.pk}").status_code == 204
    assert Session.objects.get(pk=made["id"]).skills == []
    assert alice.get(f"/presets/{preset['id']}").json()["skills"] == []
    notice = Entry.objects.filter(session_id=made["id"], kind="notice").last()
    assert notice.data["code"] == "selection_removed" and "pdf-forms" in notice.content
