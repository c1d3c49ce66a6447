"""``hangar pipeline run`` reports a run another process took over once it settles (``hangar.cli.pipeline``): any
process that sees the event a suspended step waits for may take the run and resume it, and the command, which
then skipped it, must not report the ``running`` of that moment as the outcome."""

from __future__ import annotations

from typing import Any

import pytest

from hangar.cli import pipeline as cli


class FakeControl:
    def __init__(self, elsewhere: list[bool]) -> None:
        self.elsewhere = elsewhere

    async def driven_elsewhere(self, run_id: str) -> bool:
        return self.elsewhere.pop(0)


class FakeEngine:
    """A run whose snapshots and drivers are given in turn."""

    def __init__(self, statuses: list[str], elsewhere: list[bool]) -> None:
        self.statuses = statuses
        self.control = FakeControl(elsewhere)
        self.looks = 0

    async def snapshot(self, ws: str, run_id: str) -> dict[str, Any]:
        self.looks += 1
        status = self.statuses.pop(0)
        if status == "dropped":  # the workspace's records are gone (its schema dropped on PostgreSQL)
            raise RuntimeError('relation "pipeline_runs" does not exist')
        return {"runId": run_id, "status": status}


class FakeIdentity:
    def __init__(self, deleted: bool) -> None:
        self.deleted = deleted

    async def workspace_deleted(self, workspace_id: str) -> bool:
        return self.deleted


class FakeContext:
    def __init__(self, deleted: bool = False) -> None:
        self.identity = FakeIdentity(deleted)

    def service(self, _cls: type) -> FakeIdentity:
        return self.identity


async def settled(engine: FakeEngine, ctx: FakeContext | None = None) -> str:
    snap = await cli._settled(ctx or FakeContext(), engine, "w1", "r1")  # type: ignore[arg-type]
    return str(snap["status"])


async def test_a_run_driven_elsewhere_is_reported_as_it_ends_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "SETTLE_POLL_S", 0)
    engine = FakeEngine(["running", "running", "failed"], [True, True])
    assert await settled(engine) == "failed" and engine.looks == 3


async def test_a_run_nobody_drives_or_not_running_is_reported_at_once() -> None:
    # Running with no driver anywhere (its driver died): as it stands; the command exits 3 and resume drives it.
    assert await settled(FakeEngine(["running"], [False])) == "running"
    for status in ("suspended", "completed", "failed", "cancelled"):
        engine = FakeEngine([status], [])
        assert await settled(engine) == status and engine.looks == 1


async def test_a_run_whose_workspace_was_deleted_under_it_is_reported_cancelled() -> None:
    """Deleting a workspace stops its runs, then drops its records: the command says the run was cancelled. Any
    other failure to read the run is raised as it is."""
    assert await settled(FakeEngine(["dropped"], []), FakeContext(deleted=True)) == "cancelled"
    with pytest.raises(RuntimeError, match="pipeline_runs"):
        await settled(FakeEngine(["dropped"], []), FakeContext(deleted=False))
