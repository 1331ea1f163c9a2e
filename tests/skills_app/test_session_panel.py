"""Skills and bundles chosen in the session's side panel: the page shows the team's, checked
when selected; a change is checked like the API's PATCH, leaves a notice naming what was added
and removed, and reaches the next call's system block; another team's skill, an unknown id or
a session of another team changes nothing. PATCH /sessions/{id} leaves the same notice."""

from __future__ import annotations

import pytest

from sessions_app.models import Entry, Session
from skills_app import services
from skills_app.selectors import skills_selected

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def lint(personas):
    return services.skill_create(
        user=personas["alice"][0], team=personas["acme"],
        fields={"name": "lint-fix", "description": "Fix lint errors.", "body": "Run ruff."},
    )  # fmt: skip


def notices(session):
    return list(Entry.objects.filter(session=session, kind="notice").order_by("seq"))


def panel_post(client, session, **ids):
    data = {"skill": [str(pk) for pk in ids.get("skill", [])],
            "bundle": [str(pk) for pk in ids.get("bundle", [])]}  # fmt: skip
    return client.post(f"/skills/sessions/{session.pk}/", data, **HTMX)


def test_the_panel_lists_the_teams_skills_and_bundles_checked_when_selected(
    client, personas, session, skill, bundle, lint
):
    session.skills = [lint.pk]
    session.save(update_fields=["skills"])
    services.skill_create(user=personas["charlie"][0], team=personas["globex"],
                          fields={"name": "globex-secret", "description": "Theirs."})  # fmt: skip
    client.force_login(personas["bob"][0])
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert 'id="skills-panel"' in page
    assert f'name="skill" value="{lint.pk}" checked' in page
    assert f'name="skill" value="{skill.pk}">' in page
    assert f'name="bundle" value="{bundle.pk}">' in page
    assert "globex-secret" not in page


def test_a_change_is_a_notice_naming_what_was_added_and_removed(
    client, personas, session, skill, bundle, lint
):
    session.skills = [lint.pk]
    session.save(update_fields=["skills"])
    client.force_login(personas["bob"][0])
    response = panel_post(client, session, skill=[skill.pk], bundle=[bundle.pk])
    assert response.status_code == 200, response.content
    body = response.content.decode()
    assert 'id="skills-panel"' in body and f'value="{skill.pk}" checked' in body
    session.refresh_from_db()
    assert (session.skills, session.bundles) == ([skill.pk], [bundle.pk])
    (notice,) = notices(session)
    assert notice.content == (
        "Skills changed: added skill `pdf-forms`; removed skill `lint-fix`; added bundle "
        "`Documents`. It applies from the next model call."
    )
    assert notice.data["skills"] == {"added": [skill.pk], "removed": [lint.pk]}
    assert notice.data["bundles"] == {"added": [bundle.pk], "removed": []}
    assert notice.author_id == personas["bob"][0].pk
    assert [s.name for s in skills_selected(session)] == ["pdf-forms"]

    panel_post(client, session, skill=[skill.pk], bundle=[bundle.pk])
    assert len(notices(session)) == 1, "no change, no notice"


@pytest.mark.parametrize("bad", ["theirs", "missing", "not-a-number"])
def test_another_teams_or_an_unknown_skill_changes_nothing(
    client, personas, session, skill, lint, bad
):
    theirs = services.skill_create(user=personas["charlie"][0], team=personas["globex"],
                                   fields={"name": "t", "description": "T."})  # fmt: skip
    wrong = {"theirs": theirs.pk, "missing": 987654, "not-a-number": "x1"}[bad]
    session.skills = [lint.pk]
    session.save(update_fields=["skills"])
    client.force_login(personas["alice"][0])
    response = client.post(
        f"/skills/sessions/{session.pk}/", {"skill": [str(skill.pk), str(wrong)]}, **HTMX
    )
    assert response.status_code == 400
    body = response.content.decode()
    words = {"theirs": f"No such skill: {theirs.pk}.", "missing": "No such skill: 987654.",
             "not-a-number": "No such skill: &#x27;x1&#x27;."}[bad]  # fmt: skip
    assert words in body and 'role="alert"' in body
    session.refresh_from_db()
    assert session.skills == [lint.pk] and notices(session) == []


def test_another_teams_session_is_a_404(client, personas, session, skill):
    client.force_login(personas["charlie"][0])
    assert panel_post(client, session, skill=[skill.pk]).status_code == 404
    assert Session.objects.get(pk=session.pk).skills == []


def test_without_htmx_the_form_goes_back_to_the_session(client, personas, session, skill):
    client.force_login(personas["alice"][0])
    response = client.post(f"/skills/sessions/{session.pk}/", {"skill": [str(skill.pk)]})
    assert response.status_code == 302 and response["Location"] == f"/sessions/{session.pk}/"


def test_the_api_patch_leaves_the_same_notice(api_for, session, skill, bundle, lint):
    api = api_for("alice")
    r = api.patch(f"/sessions/{session.pk}", {"skills": [skill.pk, lint.pk]})
    assert r.status_code == 200 and r.json()["skills"] == [skill.pk, lint.pk]
    r = api.patch(f"/sessions/{session.pk}", {"skills": [lint.pk], "bundles": [bundle.pk]})
    assert r.status_code == 200
    first, second = notices(session)
    assert first.data["skills"] == {"added": [skill.pk, lint.pk], "removed": []}
    assert "removed skill `pdf-forms`" in second.content
    assert "added bundle `Documents`" in second.content
    assert api.patch(f"/sessions/{session.pk}", {"title": "renamed"}).status_code == 200
    assert len(notices(session)) == 2
