"""A rig host credential's limits as minted: the maximum budget on both sides of its range, the workspaces named
(at most 100, each known), the defaults of a row from before the limits, and whom a credential serves."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hangar.cli.righost import DEFAULT_BUDGET_MB
from hangar.core.hostcreds import HostCredential
from hangar.errors import InvalidArgs
from hangar.rigs.hosts import creds
from hangar.rigs.hosts.tables import DEFAULT_MAX_BUDGET_MB, rig_host_credentials

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_maximum_budget_range_and_default() -> None:
    assert creds.limits(512, [], [])["max_budget_mb"] == 512
    assert creds.limits(1024 * 1024, [], [])["max_budget_mb"] == 1024 * 1024
    for wrong in (511, 1024 * 1024 + 1):
        with pytest.raises(InvalidArgs, match="maximum budget is 512 to 1048576 MB"):
            creds.limits(wrong, [], [])
    # The default maximum is the budget a rig host says by default, and what rows from before it hold.
    assert DEFAULT_BUDGET_MB == DEFAULT_MAX_BUDGET_MB
    assert str(rig_host_credentials.c.max_budget_mb.server_default.arg) == str(DEFAULT_MAX_BUDGET_MB)  # type: ignore[union-attr]


def test_the_workspaces_named() -> None:
    known = [f"w{i}" for i in range(101)]
    assert creds.limits(512, [], known)["workspace_ids"] is None
    assert creds.limits(512, known[:100], known)["workspace_ids"] == known[:100]
    with pytest.raises(InvalidArgs, match="at most 100 workspaces"):
        creds.limits(512, known, known)
    with pytest.raises(InvalidArgs, match="no workspace 'nope'"):
        creds.limits(512, ["w1", "nope"], known)


def test_whom_a_credential_serves() -> None:
    old = HostCredential("c", "old", NOW, None, {"max_budget_mb": DEFAULT_MAX_BUDGET_MB, "workspace_ids": None})
    assert creds.serves(old, "any") and creds.max_budget_mb(old) == DEFAULT_MAX_BUDGET_MB
    assert creds.describe(old) == "at most 12288 MB; every workspace"
    named = HostCredential("c", "n", NOW, None, {"max_budget_mb": 512, "workspace_ids": ["a", "b"]})
    assert creds.serves(named, "a") and not creds.serves(named, "c")
    assert creds.describe(named) == "at most 512 MB; workspaces a, b"
