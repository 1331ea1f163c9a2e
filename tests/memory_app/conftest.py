from __future__ import annotations

import pytest


@pytest.fixture
def space(personas):
    from memory_app.services import space_create

    return space_create(user=personas["alice"][0], team=personas["acme"], name="conventions")


@pytest.fixture
def note(space, personas):
    from memory_app.services import note_create

    return note_create(
        space=space, title="Style", body="Use tabs.\nNo semicolons.\n", user=personas["alice"][0]
    )


@pytest.fixture
def personal(personas):
    from memory_app.services import space_create

    return space_create(
        user=personas["alice"][0], team=personas["acme"], name="alice-only", scope="personal"
    )
