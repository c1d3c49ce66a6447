"""A server stopped mid-run resumes the run when it starts again: completed steps stay completed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.integration.test_pipelines_rpc import wait_status
from tests.support.confined import trust_host_dir
from tests.support.rpc import RpcClient
from tests.support.server import running_server


async def test_server_restart_resumes_unfinished_runs(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    trust_host_dir(tmp_path / "data")  # the scripts mark host files
    raw = {
        "id": "restart",
        "steps": [
            {"id": "start", "kind": "trigger"},
            {
                "id": "first",
                "kind": "listen",
                "body": "shell.run",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"script": f"echo run >> {marks}/first; echo one", "outputKey": "first"},
            },
            {
                "id": "slow",
                "kind": "listen",
                "body": "shell.run",
                "trigger": {"sourceStepIds": ["first"]},
                "config": {
                    "script": f"echo run >> {marks}/slow; touch {marks}/slow_started; "
                    f"while [ ! -e {marks}/go ]; do sleep 0.05; done; echo two",
                    "outputKey": "slow",
                },
            },
        ],
    }
    data = tmp_path / "data"
    async with running_server(data) as srv:
        ws = await srv.new_workspace("pipes")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
            run_id = (await c.call("pipelines.runs.start", workspace_id=ws, templateId="restart"))["runId"]
            for _ in range(400):
                if (marks / "slow_started").exists():
                    break
                await asyncio.sleep(0.05)
            assert (marks / "slow_started").exists()
    (marks / "go").touch()
    async with running_server(data) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        run = await wait_status(c, ws, run_id, "completed")
    assert run["state"]["first"] == "one" and run["state"]["slow"] == "two"
    assert (marks / "first").read_text().count("run") == 1
    assert (marks / "slow").read_text().count("run") == 2


@pytest.mark.packs("terminal")
async def test_events_recorded_while_down_are_replayed_at_start(tmp_path: Path) -> None:
    from hangar.config import Settings
    from hangar.identity.part import IDENTITY_PART
    from hangar.oversight import OVERSIGHT_PART
    from hangar.pipelines.part import PIPELINES_CLI_PART
    from hangar.server.context_factory import open_context

    data = tmp_path / "data"
    raw = {
        "id": "on-event",
        "steps": [
            {"id": "start", "kind": "trigger"},
            {
                "id": "say",
                "kind": "listen",
                "body": "shell.run",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"script": "echo got {{n}}", "outputKey": "said"},
            },
        ],
    }
    async with running_server(data) as srv:
        ws = await srv.new_workspace("pipes")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
            await c.call(
                "pipelines.triggers.create",
                workspace_id=ws,
                templateId="on-event",
                kind="event",
                eventType="door.opened",
            )
    # Another process records the event while the server is down, and does nothing about it.
    async with open_context(Settings(data_dir=data), parts=[OVERSIGHT_PART, IDENTITY_PART, PIPELINES_CLI_PART]) as ctx:
        await ctx.bus.publish_raw(ws, "door.opened", {"n": 7})
    async with running_server(data) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        for _ in range(200):
            runs = (await c.call("pipelines.runs.list", workspace_id=ws))["runs"]
            if runs and runs[0]["status"] == "completed":
                break
            await asyncio.sleep(0.05)
        (run,) = runs
        assert run["trigger"]["kind"] == "event"
        detail = await c.call("pipelines.runs.get", workspace_id=ws, runId=run["runId"])
        assert detail["state"]["said"] == "got 7"
    # A third start replays nothing new and starts nothing more.
    async with running_server(data) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        await asyncio.sleep(0.3)
        assert len((await c.call("pipelines.runs.list", workspace_id=ws))["runs"]) == 1


@pytest.mark.packs("terminal")
async def test_events_recorded_by_another_process_reach_a_running_server(tmp_path: Path) -> None:
    from hangar.config import Settings
    from hangar.core.clock import FakeClock
    from hangar.identity.part import IDENTITY_PART
    from hangar.oversight import OVERSIGHT_PART
    from hangar.pipelines.part import PIPELINES_CLI_PART
    from hangar.server.context_factory import open_context

    data = tmp_path / "data"
    clock = FakeClock()
    raw = {
        "id": "on-bell",
        "steps": [
            {"id": "start", "kind": "trigger"},
            {
                "id": "say",
                "kind": "listen",
                "body": "shell.run",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"script": "echo rang {{n}}", "outputKey": "said"},
            },
        ],
    }
    async with running_server(data, clock=clock) as srv:
        ws = await srv.new_workspace("pipes")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
            await c.call(
                "pipelines.triggers.create", workspace_id=ws, templateId="on-bell", kind="event", eventType="bell.rang"
            )
            async with open_context(
                Settings(data_dir=data), clock=clock, parts=[OVERSIGHT_PART, IDENTITY_PART, PIPELINES_CLI_PART]
            ) as other:
                await other.bus.publish_raw(ws, "bell.rang", {"n": 3})
            # No scheduler pass (the clock stands still): the server's event tail delivers it.
            for _ in range(200):
                runs = (await c.call("pipelines.runs.list", workspace_id=ws))["runs"]
                if runs and runs[0]["status"] == "completed":
                    break
                await asyncio.sleep(0.05)
            (run,) = runs
            detail = await c.call("pipelines.runs.get", workspace_id=ws, runId=run["runId"])
            assert detail["state"]["said"] == "rang 3"
