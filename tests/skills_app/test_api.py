"""Skills, bundles, slash commands and subagent types through `/api/v1`: CRUD, the team
wall (another team's object is 404, everywhere), and the names the agent types."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

KINDS = [
    ("/skills", {"name": "git-bisect", "description": "Find the commit that broke it.",
                 "body": "Run `git bisect`."}, {"body": "Run it twice."}),
    ("/bundles", {"name": "Git", "description": "Git skills."}, {"description": "All of git."}),
    ("/commands", {"name": "explain", "description": "Explain code.",
                   "template": "Explain $ARGUMENTS simply."}, {"template": "Explain $ARGUMENTS."}),
    ("/subagent-types", {"name": "tester", "description": "Runs the tests.",
                         "system_prompt": "You run tests.", "tools": ["todo_write"]},
     {"tools": []}),
]  # fmt: skip


@pytest.mark.parametrize(("path", "body", "change"), KINDS)
def test_crud_and_the_team_wall(api_for, path, body, change):
    alice, bob, charlie = api_for("alice"), api_for("bob"), api_for("charlie")
    made = alice.post(path, body)
    assert made.status_code == 201, made.content
    item = made.json()
    assert {k: item[k] for k in body} == body and item["team"] == "acme"
    url = f"{path}/{item['id']}"
    assert bob.get(url).json() == item
    assert [row["id"] for row in bob.get(path).json()] == [item["id"]]

    assert charlie.get(url).status_code == 404
    assert charlie.patch(url, change).status_code == 404
    assert charlie.delete(url).status_code == 404
    assert charlie.get(path).json() == []
    assert charlie.post(path, {**body, "team": "acme"}).status_code == 404

    patched = bob.patch(url, change)
    assert patched.status_code == 200, patched.content
    assert {k: patched.json()[k] for k in change} == change
    assert alice.post(path, body).status_code == 409  # the name is taken in the team
    assert charlie.post(path, body).status_code == 201  # but not in another team

    assert bob.delete(url).status_code == 204
    assert alice.get(url).status_code == 404


def test_skill_search_and_bundle_membership(api_for):
    alice = api_for("alice")
    one = alice.post("/skills", {"name": "one", "description": "First.", "body": "zebra"}).json()
    two = alice.post("/skills", {"name": "two", "description": "Second about zebra."}).json()
    alice.post("/skills", {"name": "three", "description": "Third."})
    assert [s["name"] for s in alice.get("/skills?q=zebra").json()] == ["one", "two"]

    bundle = alice.post("/bundles", {"name": "B", "skills": [one["id"], two["id"]]}).json()
    assert bundle["skills"] == sorted([one["id"], two["id"]])
    assert alice.get(f"/skills/{one['id']}").json()["bundle"] == bundle["id"]
    patched = alice.patch(f"/bundles/{bundle['id']}", {"skills": [two["id"]]}).json()
    assert patched["skills"] == [two["id"]]
    assert alice.get(f"/skills/{one['id']}").json()["bundle"] is None
    assert alice.patch(f"/skills/{one['id']}", {"bundle": bundle["id"]}).json()["bundle"]
    assert alice.delete(f"/bundles/{bundle['id']}").status_code == 204
    assert alice.get(f"/skills/{one['id']}").json()["bundle"] is None  # the skills stay


def test_another_teams_bundle_or_card_cannot_be_used(api_for, card):
    alice, charlie = api_for("alice"), api_for("charlie")
    theirs = charlie.post("/skills", {"name": "x", "description": "X."}).json()
    bundle = charlie.post("/bundles", {"name": "Theirs"}).json()
    assert alice.post("/skills", {"name": "y", "description": "Y.",
                                  "bundle": bundle["id"]}).status_code == 400  # fmt: skip
    assert alice.post("/bundles", {"name": "B", "skills": [theirs["id"]]}).status_code == 400
    made = charlie.post("/subagent-types", {"name": "s", "description": "S.", "model": card.pk})
    assert made.status_code == 400 and str(card.pk) in made.json()["detail"]


@pytest.mark.parametrize("name", ["help", "compact", "summary-n-fork", "handoff", "rewind"])
def test_a_command_cannot_take_a_built_in_name(api_for, command, name):
    alice = api_for("alice")
    made = alice.post("/commands", {"name": name, "template": "x"})
    assert made.status_code == 400 and "built-in" in made.json()["detail"]
    patched = alice.patch(f"/commands/{command.pk}", {"name": name})
    assert patched.status_code == 400 and "built-in" in patched.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [
        {"name": "Has Spaces", "description": "d"},
        {"name": "../up", "description": "d"},
        {"name": "ok", "description": "two\nlines"},
        {"name": "ok", "description": "d", "files": {"../x": "t"}},
        {"name": "ok", "description": "d", "meta": {"name": "other"}},
    ],
)
def test_bad_skills_are_refused_and_say_why(api_for, body):
    made = api_for("alice").post("/skills", body)
    assert made.status_code == 400, made.content
    assert made.json()["detail"]


def test_a_skill_keeps_its_files_and_lists_them(api_for):
    alice = api_for("alice")
    files = {"scripts/fill.py": "print(1)\n", "REFERENCE.md": "# Ref\n"}
    made = alice.post("/skills", {"name": "f", "description": "F.", "files": files}).json()
    assert made["files"] == ["REFERENCE.md", "scripts/fill.py"]
    assert alice.get(f"/skills/{made['id']}/files").json()["files"] == files
