"""The wire form of the workspace records: camelCase keys, RFC 3339 timestamps, server paths omitted for guests."""

from __future__ import annotations

from datetime import UTC, datetime

from hangar.agents import Team
from hangar.agents.results import TeamView
from hangar.rpc.registry import to_wire
from hangar.workspace import Space, Worktree
from hangar.workspace.results import SpaceDetail, SpaceRepo, SpaceView, WorktreeView

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
SPACE = Space("s1", "standard", "chat", "Plans", False, "user:u1", "failed", "clone", "no network", AT, AT, None)
WORKTREE = Worktree("w1", "r1", "main", "hangar/space-s1", "/data/w1", "s1", None, None, AT)


def test_a_space_in_wire_form() -> None:
    assert to_wire(SpaceView.of(SPACE)) == {
        "id": "s1",
        "kind": "standard",
        "mode": "chat",
        "title": "Plans",
        "hidden": False,
        "createdBy": "user:u1",
        "provisioning": {"state": "failed", "step": "clone", "error": "no network"},
        "createdAt": "2026-01-02T03:04:05Z",
        "updatedAt": "2026-01-02T03:04:05Z",
        "archivedAt": None,
    }


def test_server_paths_are_left_out_not_nulled() -> None:
    assert to_wire(WorktreeView.of(WORKTREE))["path"] == "/data/w1"
    assert "path" not in to_wire(WorktreeView.of(WORKTREE, show_path=False))
    repo = SpaceRepo.of(WORKTREE, show_path=False, repo_name="app")
    guest = to_wire(SpaceDetail.of(SPACE, folder=None, repos=[repo]))
    assert "folder" not in guest and "path" not in guest["repos"][0]
    assert guest["repos"][0]["repoName"] == "app"
    member = to_wire(SpaceDetail.of(SPACE, folder="/data/s1", repos=[]))
    assert member["folder"] == "/data/s1"


def test_a_team_names_its_leader_leader_id() -> None:
    team = Team("t1", "Crew", "a1", "manager", ("a1", "a2"), AT, AT)
    wire = to_wire(TeamView.of(team))
    assert wire["leaderId"] == "a1" and wire["memberIds"] == ["a1", "a2"] and wire["dispatchMode"] == "manager"
