"""Who may reach what: every route, every persona, enumerated from the configuration.

The routes are read from Django's URL resolver (pages), the API's OpenAPI document (every
operation, with its method) and `sessions_app.routing` (websockets), so a new endpoint is in
this matrix the moment it is routed, with no one remembering to add it. Path parameters are
filled with real ids of team acme's objects; a parameter this file does not know fails the
run with a message saying where to add it.

Each case is checked against `EXPECTED[persona][kind]`. Team administration answers by role:
every route under `ROLE_PREFIXES` must be classified in `ROLES` (admin-only, any member's, or
public by token) or the run fails, so a new administration route cannot slip in unchecked. A
call that takes a `team` names acme there, so the outsider's answer is acme's 404, not a
success in their own team. The card fields that send secrets somewhere (`ENDPOINT_WRITES`)
are role-checked per field, so they are listed as extra cases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.conf import settings
from django.shortcuts import resolve_url
from django.urls import URLPattern, URLResolver, get_resolver

from horsie_site.api import api
from sessions_app.routing import websocket_urlpatterns

MARK = "ACME-PRIVATE"  # in every acme object's name: an outsider's answer must not hold it

# persona -> the user it logs in as (None: anonymous)
PERSONAS: dict[str, str | None] = {
    "anonymous": None,
    "outsider": "charlie",
    "member": "bob",
    "admin": "alice",
}

# persona -> kind of route -> expected outcome. "object" routes name an acme object (a path
# parameter, or a form field in OBJECT_FORMS); "collection" routes name none.
EXPECTED: dict[str, dict[str, str]] = {
    "anonymous": {"page": "login", "api": "401", "ws": "4401"},
    "outsider": {"page": "404", "api": "404", "ws": "4404", "collection": "ok"},
    "member": {"page": "ok", "api": "ok", "ws": "open", "collection": "ok", "admin-only": "403"},
    "admin": {"page": "ok", "api": "ok", "ws": "open", "collection": "ok"},
}

# Routes anyone may reach: only "no server error" is asked of them.
PUBLIC_PAGES = {"login", "logout"}
PUBLIC_API = {"openapi-json", "openapi-view", "api-root"}
PUBLIC_OPERATIONS = {"GET /api/v1/health"}  # a readiness probe's: it names nothing of a team

# Team administration: every page (by name) and API operation ("METHOD path") under these
# prefixes is classified here: "admin" (a member gets 403), "member" (any member's), or
# "public" (reached by an invitation token, logged in or not).
ROLE_PREFIXES = ("/teams/", "/api/v1/team/", "/api/v1/provider-keys", "/models/", "/presets/")
ROLES = {
    "teams:detail": "member",
    "teams:switch": "member",
    "teams:member-role": "admin",
    "teams:member-remove": "admin",
    "teams:invite": "admin",
    "teams:key-new": "admin",
    "teams:key-remove": "admin",
    "teams:join": "public",
    # Any member manages the team's model cards; where a card's calls go (base URL, key) is
    # checked per field, for admins only (ENDPOINT_WRITES, and the Models page's own tests).
    "sessions:models": "member",
    "sessions:model-new": "member",
    "sessions:model": "member",
    "sessions:model-test": "member",
    "sessions:model-delete": "member",
    # Any member manages the team's agent presets: API.md gives presets no role rule.
    "sessions:presets": "member",
    "sessions:preset-new": "member",
    "sessions:preset": "member",
    "sessions:preset-delete": "member",
    "GET /api/v1/team/usage": "member",
    "GET /api/v1/team/members": "member",
    "POST /api/v1/team/members": "admin",
    "PATCH /api/v1/team/members/{user_id}": "admin",
    "DELETE /api/v1/team/members/{user_id}": "admin",
    "POST /api/v1/team/invitations": "admin",
    "GET /api/v1/provider-keys": "admin",
    "POST /api/v1/provider-keys": "admin",
    "DELETE /api/v1/provider-keys/{key_id}": "admin",
}
# Form fields for page routes that take a body; those naming an object are in OBJECT_FORMS.
OBJECT_FORMS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "teams:switch": lambda ids: {"team": ids["team"]},
}
FORMS: dict[str, dict[str, Any]] = {
    "teams:member-role": {"role": "member"},
    "teams:invite": {"role": "member"},
    "teams:key-new": {"name": "matrix key", "value": "sk-matrix-value-0001"},
}
LOCAL = "http://127.0.0.1:9/v1"
# (method, path, body): writes of a card's endpoint fields, admin-only by field.
ENDPOINT_WRITES: list[tuple[str, str, Callable[[dict[str, Any]], dict[str, Any]]]] = [
    ("POST", "/api/v1/models", lambda ids: {**new_card(ids), "base_url": LOCAL}),
    ("POST", "/api/v1/models", lambda ids: {**new_card(ids), "key": ids["key_id"]}),
    ("POST", "/api/v1/models", lambda ids: {**new_card(ids), "api_key_env": "ACME_KEY"}),
    ("PATCH", "/api/v1/models/{card_id}", lambda ids: {"base_url": LOCAL}),
    ("PATCH", "/api/v1/models/{card_id}", lambda ids: {"key": ids["key_id"]}),
    ("PATCH", "/api/v1/models/{card_id}", lambda ids: {"api_key_env": "ACME_KEY"}),
]


def new_card(ids: dict[str, Any]) -> dict[str, Any]:
    return {"name": "endpoint", "wire": "openai_chat", "model": "m", "team": ids["team_name"]}


def object_ids(objects: dict[str, Any]) -> dict[str, Any]:
    """Path parameter -> the acme object's id. A new parameter name needs a line here."""
    return {
        "card_id": objects["card"].pk,
        "preset_id": objects["preset"].pk,
        "session_id": objects["session"].pk,
        "seq": 1,
        "team": objects["team"].pk,
        "team_name": objects["team"].name,
        "user_id": objects["member"].pk,
        "key_id": objects["key"].pk,
        "token": objects["invitation"],
        "space_id": objects["space"].pk,
        "note_id": objects["note"].pk,
        "rev": 1,
        "skill_id": objects["skill"].pk,
        "bundle_id": objects["bundle"].pk,
        "command_id": objects["command"].pk,
        "type_id": objects["subagent_type"].pk,
    }


# Enumeration --------------------------------------------------------------------------


def url_patterns(
    patterns: list[Any] | None = None, prefix: str = "", namespace: str | None = None
) -> Iterator[tuple[str, str | None, str | None]]:
    """(route, namespace, name) for every URL pattern Django serves."""
    for pattern in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(pattern, URLResolver):
            inner = pattern.namespace or namespace
            yield from url_patterns(pattern.url_patterns, prefix + str(pattern.pattern), inner)
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), namespace, pattern.name


def page_routes() -> list[tuple[str, str]]:
    return [
        (f"{namespace}:{name}" if namespace else str(name), "/" + route)
        for route, namespace, name in url_patterns()
        if namespace not in ("api", "admin")
    ]


def api_operations() -> list[tuple[str, str, dict[str, Any]]]:
    schema = api.get_openapi_schema()
    return [
        (method.upper(), path, operation)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
    ]


def params_of(route: str) -> list[str]:
    return re.findall(r"[<{](?:\w+:)?(\w+)[>}]", route)


def filled(route: str, ids: dict[str, Any]) -> str:
    unknown = [name for name in params_of(route) if name not in ids]
    assert not unknown, f"{route}: give {unknown} a value in object_ids() of {__file__}"
    return re.sub(r"[<{](?:\w+:)?(\w+)[>}]", lambda m: str(ids[m[1]]), route)


# Outcomes -----------------------------------------------------------------------------


def outcome(response: Any) -> str:
    status = response.status_code
    location = response.get("Location", "") if status in (301, 302) else ""
    if location.startswith(resolve_url(settings.LOGIN_URL)):
        return "login"
    if status in (401, 403, 404, 405) or status >= 500:
        return str(status)
    return "ok"


def role_of(key: str, route: str) -> str | None:
    """A route's class in ROLES; one under ROLE_PREFIXES must have one."""
    if key in PUBLIC_OPERATIONS:
        return "public"
    if not route.startswith(ROLE_PREFIXES):
        return None
    assert key in ROLES, f"{key}: classify it in ROLES of {__file__} (admin, member or public)"
    return ROLES[key]


def expected(persona: str, kind: str, names_object: bool, role: str | None = None) -> str:
    column = EXPECTED[persona]
    if role == "public":
        return "ok"
    if role == "admin" and "admin-only" in column:
        return column["admin-only"]
    return column[kind] if names_object or "collection" not in column else column["collection"]


@pytest.fixture
def objects(personas, card, monkeypatch, settings):
    """acme's objects, made by alice; no turn runs (dispatching is recorded, not done)."""
    from memory_app import services as memory
    from sessions_app import dispatcher, probe, services
    from sessions_app.models import AgentPreset
    from teams_app import services as teams

    settings.HORSIE = {**settings.HORSIE, "PROVIDER_ENV": ["acme:ACME_KEY"]}
    alice = personas["alice"][0]
    key = teams.provider_key_create(
        team=personas["acme"], user=alice, name=f"{MARK} key", value="sk-acme-value-0001"
    )
    _, invitation = teams.invitation_create(team=personas["acme"], user=alice)

    monkeypatch.setattr(dispatcher, "turn_dispatch", lambda session_id, lease: None)
    monkeypatch.setattr(probe, "card_probe", lambda card: probe.ProbeResult(ok=True, answer="hi"))
    card.name = f"{MARK} card"
    card.save()
    preset = AgentPreset.objects.create(team=personas["acme"], name=f"{MARK} preset", model=card)
    session = services.session_create(
        user=personas["alice"][0],
        team=personas["acme"],
        fields={"title": f"{MARK} session", "model": card},
    )
    services.entry_append(session_id=session.pk, kind="user", content=f"{MARK} hello")
    alice = personas["alice"][0]
    space = memory.space_create(user=alice, team=personas["acme"], name=f"{MARK} space")
    note = memory.note_create(space=space, title=f"{MARK} note", body=MARK, user=alice)
    return {
        **skills_objects(alice, personas["acme"]),
        "card": card,
        "preset": preset,
        "session": session,
        "team": personas["acme"],
        "member": personas["bob"][0],
        "key": key,
        "invitation": invitation,
        "space": space,
        "note": note,
    }


def skills_objects(alice: Any, team: Any) -> dict[str, Any]:
    """A skill in a bundle, a slash command and a subagent type of acme's (slug names: the
    mark is in their descriptions)."""
    from skills_app import services as skills

    skill = skills.skill_create(user=alice, team=team,
                                fields={"name": "acme-skill", "description": f"{MARK} skill"})  # fmt: skip
    return {
        "skill": skill,
        "bundle": skills.bundle_create(user=alice, team=team, fields={
            "name": f"{MARK} bundle", "description": MARK, "skills": [skill.pk]}),
        "command": skills.command_create(user=alice, team=team, fields={
            "name": "acme-command", "description": MARK, "template": f"{MARK} $ARGUMENTS"}),
        "subagent_type": skills.subagent_type_create(user=alice, team=team, fields={
            "name": "acme-type", "description": MARK, "system_prompt": MARK}),
    }  # fmt: skip


def as_persona(client, personas, persona: str):
    name = PERSONAS[persona]
    if name is not None:
        client.force_login(personas[name][0])
    return client


# Pages --------------------------------------------------------------------------------


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize(("name", "route"), page_routes())
def test_pages(client, personas, objects, name, route, persona):
    role = role_of(name, route)
    ids = object_ids(objects)
    url = filled(route, ids)
    browser = as_persona(client, personas, persona)
    form = OBJECT_FORMS[name](ids) if name in OBJECT_FORMS else FORMS.get(name, {})
    response = browser.get(url)
    if response.status_code == 405:
        response = browser.post(url, form)
    got = outcome(response)
    if name in PUBLIC_PAGES:
        assert got not in ("500",), (url, persona, response.status_code)
        return
    want = expected(persona, "page", bool(params_of(route)) or name in OBJECT_FORMS, role)
    assert got == want, (url, persona, response.status_code)
    if persona == "outsider":
        assert MARK not in response.content.decode(errors="replace"), (url, "leaks acme's data")


# API ----------------------------------------------------------------------------------


def example(schema: dict[str, Any], components: dict[str, Any]) -> Any:
    """A small valid value for a JSON schema: only required properties, minimal values."""
    if "$ref" in schema:
        return example(components[schema["$ref"].rsplit("/", 1)[-1]], components)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return example(next(o for o in options if o.get("type") != "null"), components)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        required = schema.get("required", [])
        props = schema.get("properties", {})
        return {name: example(props[name], components) for name in required}
    values = {"integer": max(1, schema.get("minimum", 1)), "number": 0.5, "boolean": False,
              "string": "x" * max(1, schema.get("minLength", 1)), "array": []}  # fmt: skip
    return values.get(kind)


def request_body(operation: dict[str, Any]) -> Any:
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        return None
    components = api.get_openapi_schema()["components"]["schemas"]
    return example(content["schema"], components)


def takes_team(operation: dict[str, Any]) -> tuple[bool, bool]:
    """Whether the operation names its team in the query, and in the body."""
    in_query = any(p["name"] == "team" for p in operation.get("parameters", []))
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    schema = content["schema"] if content else {}
    if "$ref" in schema:
        components = api.get_openapi_schema()["components"]["schemas"]
        schema = components[schema["$ref"].rsplit("/", 1)[-1]]
    return in_query, "team" in schema.get("properties", {})


def call_api(client, personas, persona: str, method: str, url: str, body: Any):
    import json

    name = PERSONAS[persona]
    headers = {"Authorization": f"Bearer {personas[name][1]}"} if name else {}
    return getattr(client, method.lower())(
        url,
        data=json.dumps(body) if body is not None else None,
        content_type="application/json",
        headers=headers,
    )


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize(
    ("method", "path", "operation"),
    api_operations(),
    ids=[f"{m} {p}" for m, p, _ in api_operations()],
)
def test_api(client, personas, objects, method, path, operation, persona):
    role = role_of(f"{method} {path}", path)
    ids = object_ids(objects)
    url = filled(path, ids)
    body = request_body(operation)
    in_query, in_body = takes_team(operation)
    if in_query:
        url += f"?team={ids['team_name']}"
    if in_body and isinstance(body, dict):
        body["team"] = ids["team_name"]
    response = call_api(client, personas, persona, method, url, body)
    names_object = bool(params_of(path)) or in_query or in_body
    want = expected(persona, "api", names_object, role)
    assert outcome(response) == want, (
        method,
        url,
        persona,
        response.status_code,
        response.content[:300],
    )
    if persona == "outsider":
        assert MARK not in response.content.decode(errors="replace"), (url, "leaks acme's data")


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize(
    ("method", "path", "body"),
    ENDPOINT_WRITES,
    ids=[f"{m} {p} {i}" for i, (m, p, _) in enumerate(ENDPOINT_WRITES)],
)
def test_card_endpoint_writes(client, personas, objects, method, path, body, persona):
    """Where a card sends the team's secrets is the admin's to say."""
    ids = object_ids(objects)
    response = call_api(client, personas, persona, method, filled(path, ids), body(ids))
    want = expected(persona, "api", True, "admin")
    assert outcome(response) == want, (method, path, persona, response.content[:300])


@pytest.mark.parametrize("persona", PERSONAS)
def test_an_unknown_invitation_token_is_404(client, personas, objects, persona):
    browser = as_persona(client, personas, persona)
    assert browser.get("/teams/join/inv_unknown/").status_code == 404
    assert browser.post("/teams/join/inv_unknown/", {}).status_code == 404


def test_public_api_routes_answer_anyone(client):
    for route, namespace, name in url_patterns():
        if namespace == "api" and name in PUBLIC_API:
            assert client.get("/" + route).status_code < 500, route


def test_every_route_is_in_the_matrix():
    """Every URL pattern is a page above, an API operation in the OpenAPI document, a public
    API route, or Django's admin (staff only, checked below)."""
    documented = {re.sub(r"{(\w+)}", r"<\1>", path) for _, path, _ in api_operations()}
    for route, namespace, name in url_patterns():
        if namespace == "api":
            assert "/" + route in documented or name in PUBLIC_API, route
    assert len(page_routes()) >= 10 and len(api_operations()) >= 20
    assert {str(p.pattern) for p in websocket_urlpatterns}


@pytest.mark.parametrize("persona", PERSONAS)
def test_the_admin_is_for_staff_only(client, personas, persona):
    response = as_persona(client, personas, persona).get("/admin/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


# Websockets ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("route", [str(p.pattern) for p in websocket_urlpatterns])
async def test_websockets(personas, objects, route, persona):
    from channels.testing import WebsocketCommunicator

    from horsie_site.asgi import application

    url = "/" + filled(route, object_ids(objects))
    name = PERSONAS[persona]
    query = f"?token={personas[name][1]}" if name else ""
    socket = WebsocketCommunicator(application, url + query)
    connected, _ = await socket.connect()
    assert connected, f"{url}: refused at the handshake; refusals are accepted, then closed"
    message = await socket.receive_output(timeout=5)
    got = "open" if message["type"] == "websocket.send" else str(message.get("code"))
    assert got == expected(persona, "ws", bool(params_of(route))), (url, persona, message)
    await socket.disconnect()
