"""The API fuzzed from its own OpenAPI document: no input makes it answer 500.

schemathesis generates requests for every operation in `/api/v1/openapi.json` (valid and
invalid bodies, query strings, path parameters) and sends them in-process to the Django WSGI
application as a member of team acme. Path parameters point at acme's real objects (except
for DELETE, which gets what was generated, so the objects live through the run), so handlers
run on real rows and not only on 404s. Responses must not be server errors, and must match the
documented status codes, content types and schemas. Runs on whichever database the suite
runs on: CI runs it on PostgreSQL and on SQLite. Bounded (`MAX_EXAMPLES` per operation,
derandomised) so it stays well under a minute.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

MAX_EXAMPLES = 25
RUN: dict[str, int] = {"cases": 0}


def loaded_schema() -> schemathesis.schemas.BaseSchema:
    """The document as the API builds it, bound to the WSGI application for calls."""
    from django.core.wsgi import get_wsgi_application

    from horsie_site.api import api

    loaded = schemathesis.openapi.from_dict(api.get_openapi_schema())
    loaded.app = get_wsgi_application()
    return loaded


schema = loaded_schema()


@pytest.fixture(scope="module", autouse=True)
def cases_counted():
    yield
    print(
        f"\nAPI fuzz: {RUN['cases']} cases over {len(list(schema.get_all_operations()))} operations"
    )


@pytest.fixture
def acme(db, personas, card, monkeypatch):
    """acme's objects, and a token of its member bob; turns are recorded, not run."""
    from memory_app import services as memory
    from sessions_app import api as session_api
    from sessions_app import dispatcher, services
    from sessions_app.models import AgentPreset

    def settled_at_once(session_id, seconds):
        return "idle"

    monkeypatch.setattr(dispatcher, "turn_dispatch", lambda session_id, lease: None)
    monkeypatch.setattr(session_api, "settled_status", settled_at_once)
    preset = AgentPreset.objects.create(team=personas["acme"], name="Preset", model=card)
    session = services.session_create(
        user=personas["alice"][0], team=personas["acme"], fields={"model": card}
    )
    services.entry_append(session_id=session.pk, kind="user", content="hello")
    space = memory.space_create(user=personas["alice"][0], team=personas["acme"], name="Space")
    note = memory.note_create(space=space, title="Note", body="text", user=personas["alice"][0])
    ids = {"card_id": card.pk, "preset_id": preset.pk, "session_id": session.pk,
           "space_id": space.pk, "note_id": note.pk, "rev": 1, **skills_ids(personas, card)}  # fmt: skip
    # As Django's test client does: a request must not close the test's connection.
    signals = (request_started, request_finished)
    for signal in signals:
        signal.disconnect(close_old_connections)
    yield {"ids": ids, "token": personas["bob"][1]}
    for signal in signals:
        signal.connect(close_old_connections)


def skills_ids(personas, card):
    """A skill with a file in a bundle, a slash command and a subagent type of acme's."""
    from skills_app import services as skills

    alice, acme = personas["alice"][0], personas["acme"]
    skill = skills.skill_create(
        user=alice,
        team=acme,
        fields={"name": "skill", "description": "A skill.", "body": "text", "files": {"a.md": "a"}},
    )
    bundle = skills.bundle_create(user=alice, team=acme, fields={"name": "B", "skills": [skill.pk]})
    command = skills.command_create(
        user=alice, team=acme, fields={"name": "cmd", "template": "Do $ARGUMENTS"}
    )
    kind = skills.subagent_type_create(
        user=alice, team=acme, fields={"name": "kind", "description": "A type.", "model": card}
    )
    return {"skill_id": skill.pk, "bundle_id": bundle.pk, "command_id": command.pk,
            "type_id": kind.pk}  # fmt: skip


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_input_makes_the_api_fail(case, acme):
    if case.path_parameters and case.method.upper() != "DELETE":
        case.path_parameters = {
            name: acme["ids"].get(name, value) for name, value in case.path_parameters.items()
        }
    RUN["cases"] += 1
    case.call_and_validate(
        headers={"Authorization": f"Bearer {acme['token']}"},
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
        ],
    )
