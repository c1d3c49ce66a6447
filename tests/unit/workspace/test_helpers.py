"""Pure helpers of the workspace part: titles, repo specs, team targets, cleanup summaries."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hangar.agents import Team, check_dispatch_mode
from hangar.core.types import rfc3339_or_none
from hangar.core.wire import require_text
from hangar.errors import InvalidArgs
from hangar.workspace import CleanupReport, RepoSpec, check_mode, clip_title, parse_repo_spec
from hangar.workspace.worktrees import pr_key


def test_titles() -> None:
    assert clip_title("short") == "short"
    assert clip_title("  many   spaces\nand lines ") == "many spaces and lines"
    long = clip_title("word " * 30)
    assert len(long) == 48 and long.endswith("…")
    assert require_text("  x  ", "title", limit=5) == "x"
    with pytest.raises(InvalidArgs) as err:
        require_text("   ", "title", limit=5)
    assert err.value.field == "title"
    with pytest.raises(InvalidArgs, match="limit is 5"):
        require_text("toolong", "title", limit=5)


def test_repo_specs() -> None:
    assert parse_repo_spec("abc") == RepoSpec("abc", None, None)
    assert parse_repo_spec("abc@feature/x") == RepoSpec("abc", "feature/x", None)
    assert parse_repo_spec(" abc#7 ") == RepoSpec("abc", None, 7)
    # The first @ ends the reference: a branch may contain '#', and is never read as a pull request.
    assert parse_repo_spec("abc@fix#12") == RepoSpec("abc", "fix#12", None)
    for bad in ("", "@main", "abc@", "#7", "abc#7@main"):
        with pytest.raises(InvalidArgs, match="must be <repoId>, <repoId>@<branch> or <repoId>#") as err:
            parse_repo_spec(bad)
        assert err.value.field == "repoIds"
    for number in ("", "0", "-3", "x1", "1.5", "7 8", "١٢", "1000000000", "7; rm -rf /"):
        with pytest.raises(InvalidArgs, match="pull request number") as err:
            parse_repo_spec(f"abc#{number}", "repo")
        assert err.value.field == "repo"
    assert pr_key("acme/app", 12) == "acme/app#12"


def test_modes_and_team_targets() -> None:
    assert check_mode("review") == "review"
    with pytest.raises(InvalidArgs):
        check_mode("party")
    with pytest.raises(InvalidArgs):
        check_dispatch_mode("roundRobin")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    team = Team("t", "Crew", "b", "allParallel", ("a", "b", "c"), now, now)
    assert team.dispatch_targets() == ["a", "b", "c"]
    assert team.dispatch_targets("manager") == ["b"]
    assert Team("t", "Crew", None, "manager", ("a", "b"), now, now).dispatch_targets() == ["a"]


def test_cleanup_summary_and_timestamps() -> None:
    report = CleanupReport("space", dry_run=True, worktrees=["/w/a"], folders=["/w"])
    assert report.summary == "space: would release 1 worktree(s), would remove 1 folder(s) (dry run)"
    assert report.to_wire()["dryRun"] is True
    assert CleanupReport("sweep", dry_run=False).summary == "sweep: released 0 worktree(s), removed 0 folder(s)"
    assert rfc3339_or_none(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z"
    assert rfc3339_or_none(None) is None
