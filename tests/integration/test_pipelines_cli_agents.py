"""`hangar pipeline run` drives agent steps in-process: the agent run finishes there and resumes its step."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.confined import CLI_AGENT
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.unit.agents.support import ask_agent_template

HANGAR = str(Path(sys.executable).parent / "hangar")
SCRIPT = str(Path(__file__).parent.parent / "unit" / "agents" / "scripts" / "cli_agent.py")


async def test_run_with_an_agent_step_completes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with running_server(data) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        ws = (await c.call("workspaces.create", name="cli"))["id"]
        adapter = {"type": "command", "argv": [*CLI_AGENT]}
        agent = (await c.call("agents.create", workspace_id=ws, name="Echo", adapter=adapter))["id"]
    template = ask_agent_template("ask-echo", agent, "lastline {{topic}}", outputKey="answer")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(template))
    r = subprocess.run(
        [
            HANGAR,
            "pipeline",
            "run",
            str(path),
            "--data-dir",
            str(data),
            "--workspace",
            "cli",
            "--input",
            "topic=x",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr + r.stdout
    out = json.loads(r.stdout)
    assert out["status"] == "completed"
    assert out["steps"]["ask"]["status"] == "completed"
    assert out["state"]["answer"] is not None
