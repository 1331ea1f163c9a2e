"""The Agent presets page and the new-session form's preset, through the real URLconf.

A preset made on the page is checked like one made through the API: the same schema bounds
and the same selection check, in the same words, and a refused form writes nothing. Another
team's preset is 404 on every page; a session made from a preset keeps its values when the
preset goes.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def login(client, personas):
    def make(name):
        client.force_login(personas[name][0])
        return client

    return make


@pytest.fixture
def picks(personas):
    """acme's space, skill, bundle and subagent type; and globex's space and skill."""
    from memory_app.services import space_create
    from skills_app import services as skills

    alice, charlie = personas["alice"][0], personas["charlie"][0]
    acme, globex = personas["acme"], personas["globex"]
    skill = skills.skill_create(user=alice, team=acme,
                                fields={"name": "deploy", "description": "How we ship"})  # fmt: skip
    return {
        "space": space_create(user=alice, team=acme, name="conventions"),
        "skill": skill,
        "bundle": skills.bundle_create(user=alice, team=acme,
                                       fields={"name": "ops", "skills": [skill.pk]}),  # fmt: skip
        "type": skills.subagent_type_create(user=alice, team=acme, fields={
            "name": "researcher", "description": "Reads widely", "system_prompt": "Read."}),
        "their_space": space_create(user=charlie, team=globex, name="secrets"),
        "their_skill": skills.skill_create(user=charlie, team=globex,
                                           fields={"name": "theirs", "description": "x"}),
    }  # fmt: skip


def form_data(card, picks, **extra):
    data = {
        "name": "Reviewer",
        "model": card.pk,
        "system_prompt": "You review code.",
        "max_steps": 12,
        "auto_compact": "on",
        "compact_at": "0.6",
        f"memory_{picks['space'].pk}": "write",
        "skills": [picks["skill"].pk],
        "bundles": [picks["bundle"].pk],
        "subagent_types": [picks["type"].pk],
    }
    data.update(extra)
    return {k: v for k, v in data.items() if v is not None}


@pytest.fixture
def preset(personas, card, picks):
    from sessions_app.models import AgentPreset

    return AgentPreset.objects.create(
        team=personas["acme"], name="Reviewer", model=card, system_prompt="You review code.",
        max_steps=12, compact_at=0.6, memory=[{"space": picks["space"].pk, "mode": "write"}],
        skills=[picks["skill"].pk],
    )  # fmt: skip


def test_a_preset_is_made_on_the_page_with_every_field(login, card, picks):
    from sessions_app.models import AgentPreset

    alice = login("alice")
    page = alice.get("/presets/new/").content.decode()
    assert f'name="memory_{picks["space"].pk}"' in page and "researcher" in page
    assert "theirs" not in page and "secrets" not in page
    made = alice.post("/presets/new/", form_data(card, picks))
    preset = AgentPreset.objects.get()
    assert made.status_code == 302 and made["Location"] == f"/presets/{preset.pk}/"
    assert (preset.name, preset.model) == ("Reviewer", card)
    assert preset.system_prompt == "You review code."
    assert (preset.max_steps, preset.auto_compact, preset.compact_at) == (12, True, 0.6)
    assert preset.memory == [{"space": picks["space"].pk, "mode": "write"}]
    assert preset.skills == [picks["skill"].pk] and preset.bundles == [picks["bundle"].pk]
    assert preset.subagent_types == [picks["type"].pk]
    listed = alice.get("/presets/").content.decode()
    assert "Reviewer" in listed and "conventions" in listed and "researcher" in listed
    # the API reads what the page wrote
    got = alice.get(f"/api/v1/presets/{preset.pk}").json()
    assert got["memory"] == preset.memory and got["compact_at"] == 0.6


def test_a_teammate_edits_a_preset(login, card, picks, preset):
    bob = login("bob")
    page = bob.get(f"/presets/{preset.pk}/").content.decode()
    assert 'value="You review code."' in page or "You review code." in page
    assert '<option value="write" selected>' in page
    changed = form_data(card, picks, name="Reviewer 2", compact_at="50000", model="",
                        auto_compact=None, skills=[], bundles=[], subagent_types=[],
                        **{f"memory_{picks['space'].pk}": ""})  # fmt: skip
    assert bob.post(f"/presets/{preset.pk}/", changed).status_code == 302
    preset.refresh_from_db()
    assert (preset.name, preset.model, preset.compact_at, preset.auto_compact) == (
        "Reviewer 2", None, 50000.0, False)  # fmt: skip
    assert preset.memory == [] and preset.skills == [] and preset.subagent_types == []


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("compact_at", "0", "greater than 0"),
        ("compact_at", "-1", "greater than 0"),
        ("compact_at", "inf", "Enter a number"),
        ("compact_at", "nan", "Enter a number"),
        ("compact_at", "1e12", "less than or equal to 10000000"),
        ("max_steps", "0", "greater than or equal to 1"),
        ("max_steps", "1001", "less than or equal to 1000"),
        ("name", "", "This field is required"),
    ],
)
def test_bad_numbers_are_refused_on_the_form(login, card, picks, preset, field, value, says):
    alice = login("alice")
    before = (preset.name, preset.compact_at, preset.max_steps)
    for url in ("/presets/new/", f"/presets/{preset.pk}/"):
        response = alice.post(url, form_data(card, picks, **{field: value}))
        assert response.status_code == 400, url
        assert says in response.content.decode(), url
    preset.refresh_from_db()
    assert (preset.name, preset.compact_at, preset.max_steps) == before


def test_another_teams_space_or_skill_is_refused_with_the_apis_words(login, card, picks, preset):
    from sessions_app.models import AgentPreset

    alice = login("alice")
    theirs = picks["their_space"].pk
    cases = [
        ({f"memory_{theirs}": "read"}, f"No such memory space: {theirs}."),
        ({"skills": [picks["their_skill"].pk]}, f"No such skill: {picks['their_skill'].pk}."),
        ({"subagent_types": [999999]}, "No such subagent type: 999999."),
    ]
    for extra, message in cases:
        for url in ("/presets/new/", f"/presets/{preset.pk}/"):
            response = alice.post(url, form_data(card, picks, name="Changed", **extra))
            assert response.status_code == 400, (url, extra)
            assert message in response.content.decode(), (url, extra)
    # the API says the same
    api = alice.post("/api/v1/presets", {"name": "x", "memory": [{"space": theirs}]},
                     content_type="application/json")  # fmt: skip
    assert api.status_code == 400 and api.json()["detail"] == f"No such memory space: {theirs}."
    # nothing half-saved
    assert AgentPreset.objects.count() == 1
    preset.refresh_from_db()
    assert preset.name == "Reviewer" and preset.skills == [picks["skill"].pk]


def test_another_teams_model_card_cannot_be_chosen(login, card, picks, personas):
    from sessions_app.models import AgentPreset, ModelCard

    theirs = ModelCard.objects.create(team=personas["globex"], name="G", wire="local", model="m")
    response = login("alice").post("/presets/new/", form_data(card, picks, model=theirs.pk))
    assert response.status_code == 400 and not AgentPreset.objects.exists()


def test_charlie_gets_404_for_acmes_preset_everywhere(login, preset):
    from sessions_app.models import AgentPreset

    charlie = login("charlie")
    assert "Reviewer" not in charlie.get("/presets/").content.decode()
    assert charlie.get(f"/presets/{preset.pk}/").status_code == 404
    assert charlie.post(f"/presets/{preset.pk}/", {"name": "mine"}).status_code == 404
    assert charlie.post(f"/presets/{preset.pk}/delete/").status_code == 404
    assert charlie.get(f"/sessions/new/?preset={preset.pk}").status_code == 404
    assert charlie.get("/sessions/new/?preset=abc").status_code == 404
    assert AgentPreset.objects.filter(pk=preset.pk, name="Reviewer").exists()


def test_deleting_a_preset_leaves_its_sessions_as_they_are(login, preset, picks):
    from sessions_app.models import AgentPreset, Session

    alice = login("alice")
    made = alice.post("/sessions/new/", {"preset": preset.pk, "model": preset.model_id,
                                         "system_prompt": "You review code.",
                                         f"memory_{picks['space'].pk}": "write"})  # fmt: skip
    session = Session.objects.get()
    assert made.status_code == 302 and session.preset == preset
    page = alice.get(f"/presets/{preset.pk}/").content.decode()
    assert "1 session made from it keeps its own settings" in page
    gone = alice.post(f"/presets/{preset.pk}/delete/", headers={"HX-Request": "true"})
    assert gone.status_code == 200 and gone["HX-Redirect"] == "/presets/"
    assert not AgentPreset.objects.exists()
    session.refresh_from_db()
    assert session.preset is None and session.max_steps == 12 and session.compact_at == 0.6
    assert session.memory == [{"space": picks["space"].pk, "mode": "write"}]
    assert "Preset “Reviewer” deleted." in alice.get("/presets/").content.decode()


def test_the_new_session_form_fills_from_a_preset_and_explicit_fields_win(
    login, preset, picks, card
):
    from sessions_app.models import Session

    alice = login("alice")
    blank = alice.get("/sessions/new/").content.decode()
    assert 'name="preset"' in blank and "Reviewer" in blank
    filled = alice.get(f"/sessions/new/?preset={preset.pk}", headers={"HX-Request": "true"})
    page = filled.content.decode()
    assert page.lstrip().startswith("<form") and 'id="session-form"' in page  # the partial
    assert f'<input type="hidden" name="preset" value="{preset.pk}">' in page
    assert "You review code." in page and '<option value="write" selected>' in page
    assert f'value="{picks["skill"].pk}" id="id_skills_0" checked' in page
    assert "Memory in every call" in page  # the cost of the preset's selection
    made = alice.post("/sessions/new/", {
        "preset": preset.pk, "title": "From preset", "model": card.pk,
        "system_prompt": "Mine instead.", f"memory_{picks['space'].pk}": "read",
        "skills": [picks["skill"].pk],
    })  # fmt: skip
    assert made.status_code == 302
    session = Session.objects.get()
    assert session.preset == preset and session.system_prompt == "Mine instead."
    assert session.memory == [{"space": picks["space"].pk, "mode": "read"}]
    assert (session.max_steps, session.compact_at, session.auto_compact) == (12, 0.6, False)
    assert session.skills == [picks["skill"].pk]


def test_the_new_session_form_refuses_another_teams_preset_and_skill(login, personas, card, picks):
    from sessions_app.models import AgentPreset, Session

    theirs = AgentPreset.objects.create(team=personas["globex"], name="Theirs")
    alice = login("alice")
    refused = alice.post("/sessions/new/", {"preset": theirs.pk, "model": card.pk})
    assert "Select a valid choice" in refused.content.decode()
    refused = alice.post("/sessions/new/", {"model": card.pk, "skills": [picks["their_skill"].pk]})
    assert f"No such skill: {picks['their_skill'].pk}." in refused.content.decode()
    assert not Session.objects.exists()
