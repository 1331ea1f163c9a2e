from __future__ import annotations

import pytest


@pytest.fixture
def skill(personas):
    from skills_app.services import skill_create

    return skill_create(
        user=personas["alice"][0], team=personas["acme"],
        fields={"name": "pdf-forms", "description": "Fill PDF forms.", "body": "# Steps\n1. Read."},
    )  # fmt: skip


@pytest.fixture
def bundle(personas, skill):
    from skills_app.services import bundle_create

    return bundle_create(
        user=personas["alice"][0], team=personas["acme"],
        fields={"name": "Documents", "description": "Office files.", "skills": [skill.pk]},
    )  # fmt: skip


@pytest.fixture
def command(personas):
    from skills_app.services import command_create

    return command_create(
        user=personas["alice"][0], team=personas["acme"],
        fields={"name": "review", "description": "Review a diff.", "template": "Review $ARGUMENTS"},
    )  # fmt: skip


@pytest.fixture
def subagent_type(personas, card):
    from skills_app.services import subagent_type_create

    return subagent_type_create(
        user=personas["alice"][0], team=personas["acme"],
        fields={"name": "researcher", "description": "Searches widely.", "model": card,
                "tools": ["search_history"]},
    )  # fmt: skip
