"""A workspace database whose agents were recorded before who configured their endpoint was (revision a0004) is
upgraded in place: every agent keeps its record and is taken as a workspace admin's (who configured it is not
known; the owner's own keep working once the owner saves them again or names their model host), and the agents'
change counter still counts changes."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa

from hangar.agents import tables as agent_tables
from hangar.core import tables as core_tables
from hangar.core.migrating import apply_migrations
from hangar.workspace import tables as workspace_tables
from tests.unit.sso.test_scim_migration import upgrade_to


def test_agents_recorded_before_are_a_workspace_admins(tmp_path: Path) -> None:
    path = tmp_path / "workspace.db"
    sets = [core_tables.MIGRATIONS, workspace_tables.MIGRATIONS]  # teams live in the workspace part's chain
    apply_migrations(path, sets)
    upgrade_to(path, agent_tables.MIGRATIONS, "a0004")
    adapter = {"type": "openai", "baseUrl": "http://127.0.0.1:11434/v1", "model": "llama"}
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO agents (id, name, role, system_prompt, adapter, created_at, updated_at) "
                    "VALUES ('a1', 'Local', 'member', '', :adapter, '2026-01-01 00:00:00', '2026-01-01 00:00:00')"
                ),
                {"adapter": json.dumps(adapter)},
            )
    finally:
        engine.dispose()

    apply_migrations(path, [*sets, agent_tables.MIGRATIONS])
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            row = conn.execute(sa.text("SELECT name, adapter, endpoint_by_owner FROM agents")).one()
            assert (row[0], json.loads(row[1]), row[2]) == ("Local", adapter, 0)
            before = conn.execute(sa.text("SELECT value FROM change_counters WHERE name = 'agents'")).scalar()
            conn.execute(sa.text("UPDATE agents SET endpoint_by_owner = 1"))
            after = conn.execute(sa.text("SELECT value FROM change_counters WHERE name = 'agents'")).scalar()
        assert after == before + 1
    finally:
        engine.dispose()
