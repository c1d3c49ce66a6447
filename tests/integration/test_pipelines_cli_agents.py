"""`hangar pipeline run` drives agent steps in-process: the agent run finishes there and resumes its step."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.confined import CLI_AGENT
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.unit.agents.fake_openai import call, running_fake_openai, text
from tests.unit.agents.support import ask_agent_template

pytestmark = pytest.mark.packs("terminal")

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


def _run_cli(path: Path, data: Path) -> subprocess.CompletedProcess[str]:
    argv = [HANGAR, "pipeline", "run", str(path), "--data-dir", str(data), "--workspace", "cli", "--json"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


async def test_agents_in_a_command_call_product_tools_or_hear_why_not(tmp_path: Path) -> None:
    """The command builds its dispatcher as the server does: an ``openai`` agent's product tools work there; a
    command agent learns that no MCP endpoint is served there instead of finding nothing."""
    data = tmp_path / "data"
    async with running_fake_openai() as fake:
        async with running_server(data) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
            ws = (await c.call("workspaces.create", name="cli"))["id"]
            chat = {"type": "openai", "baseUrl": fake.url, "model": "cli", "productTools": ["spaces.get"]}
            chatty = (await c.call("agents.create", workspace_id=ws, name="Chat", adapter=chat))["id"]
            command = {"type": "command", "argv": [*CLI_AGENT]}
            caller = (await c.call("agents.create", workspace_id=ws, name="Cmd", adapter=command))["id"]
        fake.script("cli", call("spaces__get", {}), text("done"))
        path = tmp_path / "chat.json"
        path.write_text(json.dumps(ask_agent_template("ask-chat", chatty, "look around")))
        r = await asyncio.to_thread(_run_cli, path, data)  # the model server answers in this loop meanwhile
        assert r.returncode == 0, r.stderr + r.stdout
        (tool_result,) = [m["content"] for m in fake.bodies_for("cli")[-1]["messages"] if m["role"] == "tool"]
        assert json.loads(tool_result)["id"] == json.loads(r.stdout)["state"]["space_id"]

        path.write_text(json.dumps(ask_agent_template("ask-cmd", caller, "mcp")))
        r = await asyncio.to_thread(_run_cli, path, data)
        assert r.returncode == 0, r.stderr + r.stdout
        async with running_server(data) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
            space = json.loads(r.stdout)["state"]["space_id"]
            msgs = (await c.call("messages.list", workspace_id=ws, space_id=space))["messages"]
        assert msgs[-1]["content"].startswith("no way back: this run is driven by a command (hangar pipeline run)")
