"""The roles migration: each existing team's earliest member becomes its admin."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("teams_app", "0001_initial")]
AFTER = [("teams_app", "0002_roles_invitations_provider_keys")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_the_earliest_member_of_each_team_becomes_admin():
    old = migrate(BEFORE)
    User = old.get_model("auth", "User")
    Team = old.get_model("teams_app", "Team")
    Membership = old.get_model("teams_app", "Membership")
    users = [User.objects.create(username=name) for name in ("ann", "ben", "cat")]
    acme, globex = Team.objects.create(name="acme"), Team.objects.create(name="globex")
    for team, members in ((acme, users), (globex, users[::-1])):
        for user in members:
            Membership.objects.create(team=team, user=user)
    try:
        new = migrate(AFTER)
        roles = new.get_model("teams_app", "Membership").objects.values_list(
            "team__name", "user__username", "role"
        )
        admins = sorted((team, user) for team, user, role in roles if role == "admin")
        assert admins == [("acme", "ann"), ("globex", "cat")]
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
