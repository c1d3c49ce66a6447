"""Awaiting pipeline runs in tests, and saying in full why one did not complete.

A run dict is long (every step's state and output), so an assertion that prints it is cut short by pytest before
the failed step's error shows. These helpers put each failed step's error first and whole, so a run that fails only
on a loaded host explains itself the first time it does.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.rpc import RpcClient

ENDED = ("completed", "failed", "cancelled")


def explain(run: dict[str, Any]) -> str:
    """The run's status, every step that did not complete with its error in full, then the whole run."""
    lines = [f"run {run.get('id', run.get('runId', '?'))} ended {run.get('status')!r}"]
    for s in run.get("steps", []):
        if s.get("status") not in ("completed", "skipped", "pending"):
            lines.append(f"step {s.get('stepId')!r} {s.get('status')!r}: {s.get('error')}")
    lines.append(f"the whole run: {run}")
    return "\n".join(lines)


def assert_completed(run: dict[str, Any]) -> dict[str, Any]:
    """``run`` itself when it completed; otherwise fail naming each failed step's error, untruncated."""
    if run["status"] != "completed":
        raise AssertionError(explain(run))
    return run


async def finished(c: RpcClient, ws: str, run_id: str, timeout: float = 120) -> dict[str, Any]:
    """Poll ``pipelines.runs.get`` until the run ends; a run that failed has its steps' errors printed (pytest shows
    a failing test's output whole), so even an assertion on a failed run that says little explains it."""
    run: dict[str, Any] = {}
    for _ in range(int(timeout / 0.1)):
        run = dict(await c.call("pipelines.runs.get", workspace_id=ws, runId=run_id))
        if run["status"] in ENDED:
            if run["status"] != "completed":
                print(explain(run))
            return run
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} did not finish:\n{explain(run)}")
