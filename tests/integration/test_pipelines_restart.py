"""A server stopped mid-run resumes the run when it starts again: completed steps stay completed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.integration.test_pipelines_rpc import wait_status
from tests.support.rpc import RpcClient
from tests.support.server import running_server


async def test_server_restart_resumes_unfinished_runs(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
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
