"""Shared by the workspace and agents tests: a real server with the workspace and agents parts, and waits."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from hangar.agents.part import AGENTS_PART
from hangar.core.part import Part
from hangar.server.parts import all_parts
from hangar.workspace.part import WORKSPACE_PART
from tests.support.rpc import RpcClient, Watch
from tests.support.server import RunningServer, running_server


def server_parts() -> list[Part]:
    parts = list(all_parts())
    names = {p.name for p in parts}
    parts += [p for p in (WORKSPACE_PART, AGENTS_PART) if p.name not in names]
    return parts


@contextlib.asynccontextmanager
async def workspace_server(tmp_path: Path) -> AsyncIterator[tuple[RunningServer, RpcClient, str]]:
    """A running server, an RPC client of the server owner, and a fresh workspace id."""
    async with running_server(tmp_path / "data", parts=server_parts()) as srv:
        ws = await srv.new_workspace("agents")
        async with RpcClient(srv.ws_url, srv.owner_token) as client:
            yield srv, client, ws


async def wait_run(client: RpcClient, ws: str, run_id: str, timeout: float = 20.0) -> dict[str, Any]:
    """Poll ``runs.get`` until the run has finished."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        run = await client.call("runs.get", workspace_id=ws, runId=run_id)
        if run["status"] == "finished":
            return dict(run)
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"run {run_id} did not finish: {run}")
        await asyncio.sleep(0.02)


async def collect_until(watch: Watch, event_type: str, timeout: float = 20.0) -> list[dict[str, Any]]:
    """Watch frames up to and including the first of ``event_type``."""
    frames: list[dict[str, Any]] = []
    while True:
        frame = await watch.next(timeout)
        frames.append(frame)
        if frame["type"] == event_type:
            return frames
