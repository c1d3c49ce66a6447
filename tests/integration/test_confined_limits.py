"""Aggregate limits on confined user code, driven over the real socket of the real server by a plain member.

Every enclosure a pipeline run's shell steps hold counts in the rigs' memory budget at its ceiling: six running
runs fill a budget of six ceilings exactly (``rigs.status`` lists them), and a seventh run's step is refused
naming the budget and what holds it. A workspace runs at most ``pipelines.maxRunningRuns`` runs at once: the
runs past it wait for a slot and start, in order, as running ones end.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hangar.identity import IdentityService
from hangar.rigs.model import LIMITS, Surface
from tests.integration.test_confined_user_code import finished, member_session, step, template
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer

# Confined code runs in enclosures booted from the terminal image pack.
pytestmark = pytest.mark.packs("terminal")

CEILING = LIMITS[Surface.terminal].memory_mb
# A step that holds its enclosure until the test drops a file named `go` into the run's directory.
HOLD = "touch started; while [ ! -e go ]; do sleep 0.1; done; echo released"


def holding(tid: str) -> dict[str, Any]:
    return template(tid, ("hold", HOLD, {}))


def run_dir(srv: RunningServer, run_id: str) -> Path:
    return srv.data_dir / "pipelines" / run_id


async def start(c: RpcClient, ws: str, tid: str) -> str:
    return str((await c.call("pipelines.runs.start", workspace_id=ws, templateId=tid))["runId"])


async def until_started(srv: RunningServer, run_ids: list[str], timeout: float = 120) -> None:
    for _ in range(int(timeout / 0.1)):
        if all((run_dir(srv, r) / "started").exists() for r in run_ids):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"not every run's step started: {run_ids}")


def release(srv: RunningServer, run_ids: list[str]) -> None:
    for r in run_ids:
        (run_dir(srv, r) / "go").write_text("")


async def test_every_enclosure_counts_in_the_memory_budget_and_one_past_it_is_refused(tmp_path: Path) -> None:
    async with member_session(tmp_path) as (srv, c, ws), RpcClient(srv.ws_url, srv.owner_token) as owner:
        await owner.call("rigs.setMemoryBudget", memoryBudgetMb=6 * CEILING)
        await c.call("pipelines.templates.create", workspace_id=ws, template=holding("hold"))
        held = [await start(c, ws, "hold") for _ in range(6)]
        await until_started(srv, held)
        status = await owner.call("rigs.status")
        # Six enclosures fill the budget exactly: at the limit, all were admitted.
        assert status["heldMb"] == status["memoryBudgetMb"] == 6 * CEILING, status
        assert sorted(e["scope"] for e in status["enclosures"]) == sorted(f"pipelineRun:{r}" for r in held)
        assert all(e["busy"] and e["memoryMb"] == CEILING and e["workspaceId"] == ws for e in status["enclosures"])
        assert status["residentMb"] > 0
        # One past it: the seventh run's step is refused, naming the budget and what holds it.
        seventh = await finished(c, ws, await start(c, ws, "hold"))
        assert seventh["status"] == "failed", seventh
        error = step(seventh, "hold")["error"]
        assert f"rigs.memoryBudgetMb, {6 * CEILING} MB" in error and "6 enclosures" in error, error
        assert f"pipeline run {held[0]}" in error, error
        assert not (run_dir(srv, seventh["runId"]) / "started").exists()
        release(srv, held)
        for r in held:
            assert (await finished(c, ws, r))["status"] == "completed"
        for _ in range(100):
            status = await owner.call("rigs.status")
            if not status["enclosures"]:
                break
            await asyncio.sleep(0.1)
        assert status["enclosures"] == [] and status["heldMb"] == 0, status


async def test_runs_past_the_workspace_cap_wait_for_a_slot_and_start_in_order(tmp_path: Path) -> None:
    async with member_session(tmp_path) as (srv, c, ws):
        await srv.ctx.service(IdentityService).set_setting("pipelines.maxRunningRuns", 2)
        await c.call("pipelines.templates.create", workspace_id=ws, template=holding("hold"))
        first = [await start(c, ws, "hold") for _ in range(2)]
        await until_started(srv, first)  # at the cap: both run
        waiting = [await start(c, ws, "hold") for _ in range(2)]
        await asyncio.sleep(1)
        for r in waiting:  # past the cap: stored and running, but no step has started
            run = await c.call("pipelines.runs.get", workspace_id=ws, runId=r)
            assert run["status"] == "running" and step(run, "hold")["status"] == "pending", run
            assert not (run_dir(srv, r) / "started").exists()
        release(srv, first[:1])
        await until_started(srv, waiting[:1])  # one ended: the oldest waiting run takes its slot
        assert not (run_dir(srv, waiting[1]) / "started").exists()
        # A waiting run can be cancelled at once; it never starts.
        cancelled = await c.call("pipelines.runs.cancel", workspace_id=ws, runId=waiting[1])
        assert cancelled["status"] == "cancelled"
        assert not (run_dir(srv, waiting[1]) / "started").exists()
        release(srv, [first[1], waiting[0]])
        for r in (*first, waiting[0]):
            assert (await finished(c, ws, r))["status"] == "completed"
