"""Teams belong to the agents part: its ops, its service and its tables (created by the workspace part's first
migration, which existing databases carry)."""

from __future__ import annotations

from hangar.agents import tables as agent_tables
from hangar.agents.part import AGENTS_PART
from hangar.rpc.registry import spec_of
from hangar.workspace import tables as workspace_tables
from hangar.workspace.part import WORKSPACE_PART

TEAM_OPS = {"teams.create", "teams.list", "teams.get", "teams.update", "teams.delete", "teams.dispatch"}


def test_team_ops_and_tables_are_the_agents_parts() -> None:
    assert {spec_of(fn).name for fn in AGENTS_PART.ops} >= TEAM_OPS
    assert not TEAM_OPS & {spec_of(fn).name for fn in WORKSPACE_PART.ops}
    assert {"teams", "team_members"} <= set(agent_tables.metadata.tables)
    assert not {"teams", "team_members"} & set(workspace_tables.metadata.tables)
