"""Shared by the workspace and agents tests: a real server with the workspace and agents parts, and waits."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from hangar.core.part import Part
from hangar.server.parts import all_parts
from tests.support.rpc import RpcClient, Watch
from tests.support.server import RunningServer, running_server


def server_parts() -> list[Part]:
    """The server's own parts (the workspace and agents parts among them)."""
    parts = all_parts()
    assert {"workspace", "agents", "pipelines"} <= {p.name for p in parts}
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


@contextlib.asynccontextmanager
async def pipelines_server(tmp_path: Path) -> AsyncIterator[tuple[RunningServer, RpcClient, str, PipelineHarness]]:
    """``workspace_server`` whose pipeline engine (the server's own) is at hand to run templates."""
    from hangar.pipelines.engine import PipelineEngine

    async with workspace_server(tmp_path) as (srv, client, ws):
        yield srv, client, ws, PipelineHarness(srv.ctx.service(PipelineEngine), ws)


class PipelineHarness:
    def __init__(self, engine: Any, ws: str) -> None:
        self.engine = engine
        self.ws = ws

    async def run(
        self, raw: dict[str, Any], payload: dict[str, Any] | None = None, *, dry_run: bool = False, timeout: float = 20
    ) -> dict[str, Any]:
        """Run a template to its end; returns the snapshot (``runId``, ``status``, ``state``, ``steps``)."""
        from hangar.pipelines import template as tpl

        loaded = tpl.load(raw, self.engine.bodies)
        run_id = await self.engine.start_run(self.ws, loaded.template, payload=payload or {}, dry_run=dry_run)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            snap: dict[str, Any] = await self.engine.snapshot(self.ws, run_id)
            if snap["status"] in ("completed", "failed", "cancelled"):
                return snap
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"pipeline run did not end: {snap}")
            await asyncio.sleep(0.02)


def template(*steps: dict[str, Any], tid: str = "t") -> dict[str, Any]:
    """A chain: a trigger, the given steps each listening to the one before, and a terminal."""
    chain: list[dict[str, Any]] = [{"id": "start", "kind": "trigger", "body": "pipeline.trigger"}]
    for s in steps:
        chain.append({"kind": "listen", "trigger": {"sourceStepIds": [chain[-1]["id"]]}, **s})
    chain.append({"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": [chain[-1]["id"]]}})
    return {"id": tid, "name": tid, "steps": chain, "edges": []}


def ask_agent_template(tid: str, agent_id: str, prompt: str, **config: Any) -> dict[str, Any]:
    """A pipeline that opens a space and prompts one agent in it (``config`` adds to the prompt step's)."""
    return {
        "id": tid,
        "steps": [
            {"id": "start", "kind": "trigger", "body": "pipeline.trigger"},
            {
                "id": "open",
                "kind": "listen",
                "body": "messaging.createSpace",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"outputKey": "space_id"},
            },
            {
                "id": "ask",
                "kind": "listen",
                "body": "conversation.promptAgent",
                "trigger": {"sourceStepIds": ["open"]},
                "config": {"agentId": agent_id, "prompt": prompt, **config},
            },
            {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["ask"]}},
        ],
    }


async def insert_running_run(srv: RunningServer, ws: str, run_id: str, agent: str, space: str, owner: str) -> None:
    """Record an agent run as ``running`` and driven by ``owner`` (``<pid>:<start ticks>``), as another process
    would have left it."""
    from hangar.agents import AgentRunner

    await srv.ctx.service(AgentRunner).store.insert(
        ws,
        id=run_id,
        agent_id=agent,
        space_id=space,
        status="running",
        prompt="elsewhere",
        has_output=False,
        turns=1,
        dispatched_by="test",
        created_at=srv.ctx.clock.now(),
        owner=owner,
    )
