"""The ``command`` adapter end to end: a real subprocess in the space's working folder."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import httpx
import pytest

from hangar.rigs.egress.rules import GATE_ADDRESS, GatePorts
from tests.support.confined import CLI_AGENT, host_pids, host_processes_named, trust_host
from tests.support.mcp import mcp_session, payload
from tests.support.records import stored_text
from tests.support.rpc import RpcClient, RpcError
from tests.unit.agents.support import collect_until, wait_run, workspace_server

SCRIPT = str(Path(__file__).parent.parent / "unit" / "agents" / "scripts" / "cli_agent.py")
SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "schemaType": {"type": "string"}},
    "required": ["n"],
}


async def _agent(client: RpcClient, ws: str, prompt_via: str) -> tuple[str, str]:
    space = await client.call("spaces.create", workspace_id=ws, title="cli")
    agent = await client.call(
        "agents.create",
        workspace_id=ws,
        name="Cli",
        adapter={"type": "command", "argv": [*CLI_AGENT], "promptVia": prompt_via},
    )
    return space["id"], agent["id"]


@pytest.mark.packs("terminal")
@pytest.mark.parametrize("prompt_via", ["stdin", "arg"])
async def test_command_output_is_streamed_and_posted(tmp_path: Path, prompt_via: str) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space_id, agent_id = await _agent(client, ws, prompt_via)
        watch = await client.watch("spaces.watch", workspace_id=ws, space_id=space_id)
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="echo hello there"
        )
        frames = await collect_until(watch, "agents.runFinished")
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "ok" and run["turns"] == 1
        streamed = "".join(f["payload"]["text"] for f in frames if f["type"] == "agents.textDelta")
        assert streamed == "cwd=/home/rig/worktree\nyou said: echo hello there\n"  # the folder, mounted
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        assert msgs[-1]["author"]["kind"] == "agent" and msgs[-1]["content"] == streamed.strip()


@pytest.mark.packs("terminal")
async def test_command_agent_reads_its_context_file(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space_id, agent_id = await _agent(client, ws, "stdin")
        await client.call("agents.update", workspace_id=ws, agent_id=agent_id, systemPrompt="Be brief.")
        await client.call("messages.post", workspace_id=ws, space_id=space_id, content="hello agent")
        first = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="echo hi")
        await wait_run(client, ws, first["runId"])
        second = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="context please"
        )
        await wait_run(client, ws, second["runId"])
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        seen = json.loads(msgs[-1]["content"])
        assert seen["mode"] in ("0o600", "0o644") and seen["prompt"] == "context please"
        assert seen["agent"] == {"id": agent_id, "name": "Cli", "role": "member", "systemPrompt": "Be brief."}
        assert seen["turns"][0] == "Server owner: hello agent"
        assert seen["turns"][-1].startswith("me: cwd=")
        folder = Path((await client.call("spaces.get", workspace_id=ws, space_id=space_id))["folder"])
        assert not list(folder.glob(".hangar-context-*"))  # removed when the run ended


@pytest.mark.packs("terminal")
async def test_command_failure_reports_exit_status_and_stderr(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space_id, agent_id = await _agent(client, ws, "stdin")
        started = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="fail")
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "failed"
        assert run["error"] == "the command exited with status 3: boom: the tool broke"


@pytest.mark.packs("terminal")
async def test_command_that_cannot_start(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space = await client.call("spaces.create", workspace_id=ws, title="cli")
        agent = await client.call(
            "agents.create", workspace_id=ws, name="Nope", adapter={"type": "command", "argv": ["/no/such/program"]}
        )
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent["id"], space_id=space["id"], prompt="x"
        )
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "failed" and "'/no/such/program' cannot be started" in run["error"]


@pytest.mark.packs("terminal")
@pytest.mark.parametrize(
    ("prompt", "output", "error"),
    [
        ("file", {"n": 1, "schemaType": "object"}, None),
        ("lastline", {"n": 2, "schemaType": "object"}, None),
        ("bad", None, "$.n: expected integer, got string"),
        ("echo no json", None, "the agent did not call submit_output"),
    ],
)
async def test_command_output_harvest(tmp_path: Path, prompt: str, output: object, error: str | None) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space_id, agent_id = await _agent(client, ws, "stdin")
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt=prompt, outputSchema=SCHEMA
        )
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "ok"
        assert run["output"] == output and run["hasOutput"] is (output is not None)
        assert run["outputError"] == error


@pytest.mark.packs("terminal")
async def test_interrupt_kills_the_process_group(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space_id, agent_id = await _agent(client, ws, "arg")
        watch = await client.watch("spaces.watch", workspace_id=ws, space_id=space_id)
        started = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="sleep")
        await collect_until(watch, "agents.textDelta")
        folder = Path((await client.call("spaces.get", workspace_id=ws, space_id=space_id))["folder"])
        child = int((folder / "child.pid").read_text())  # its pid inside the enclosure
        assert host_pids(child, "sleep")  # the grandchild is alive before the interrupt
        run = await client.call("runs.interrupt", workspace_id=ws, runId=started["runId"])
        assert run["outcome"] == "interrupted"
        for _ in range(100):
            if not host_pids(child, "sleep"):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the command's child process survived the interrupt")


@pytest.mark.packs("terminal")
async def test_command_timeout_stops_it(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space = await client.call("spaces.create", workspace_id=ws, title="cli")
        adapter = {"type": "command", "argv": [*CLI_AGENT], "timeoutSeconds": 0.5}
        agent = await client.call("agents.create", workspace_id=ws, name="Slow", adapter=adapter)
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent["id"], space_id=space["id"], prompt="sleep"
        )
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "failed"
        assert run["error"] == "the command did not finish within 0.5 s and was stopped"


SECRET_SHA = hashlib.sha256(b"tok-s3cret").hexdigest()[:12]


@pytest.mark.packs("terminal")
@pytest.mark.sqlite_only("reads the secrets file, which PostgreSQL installs keep as sealed rows")
async def test_secret_environment_is_write_only(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (srv, client, ws):
        space = await client.call("spaces.create", workspace_id=ws, title="cli")
        adapter = {
            "type": "command",
            "argv": [*CLI_AGENT],
            "env": {"PLAIN": "visible"},
            "secretEnv": {"AGENT_TOKEN": "tok-s3cret"},
        }
        agent = await client.call("agents.create", workspace_id=ws, name="Env", adapter=adapter)
        assert agent["adapter"]["secretEnvNames"] == ["AGENT_TOKEN"] and "secretEnv" not in agent["adapter"]
        assert "tok-s3cret" not in str(await client.call("agents.list", workspace_id=ws))
        assert b"tok-s3cret" not in stored_text(srv.data_dir, ws)

        async def run_env() -> str:
            started = await client.call(
                "agents.run", workspace_id=ws, agent_id=agent["id"], space_id=space["id"], prompt="env"
            )
            await wait_run(client, ws, started["runId"])
            msgs = (await client.call("messages.list", workspace_id=ws, space_id=space["id"]))["messages"]
            return str(msgs[-1]["content"])

        assert await run_env() == f"token=[redacted] sha={SECRET_SHA} plain=visible"
        # Editing the adapter without secretEnv keeps the secret; an empty value removes it.
        kept = {k: v for k, v in adapter.items() if k != "secretEnv"}
        await client.call("agents.update", workspace_id=ws, agent_id=agent["id"], adapter=kept)
        assert await run_env() == f"token=[redacted] sha={SECRET_SHA} plain=visible"
        updated = await client.call(
            "agents.update", workspace_id=ws, agent_id=agent["id"], adapter={**kept, "secretEnv": {"AGENT_TOKEN": ""}}
        )
        assert updated["adapter"]["secretEnvNames"] == []
        assert await run_env() == "token=- plain=visible"
        with pytest.raises(RpcError) as err:
            bad = {**kept, "secretEnv": {"NOT-A-NAME": "x"}}
            await client.call("agents.update", workspace_id=ws, agent_id=agent["id"], adapter=bad)
        assert err.value.code == "invalid_args" and "adapter.secretEnv" in err.value.message
        await client.call("agents.update", workspace_id=ws, agent_id=agent["id"], adapter=adapter)
        assert "tok-s3cret" in (srv.data_dir / "secrets.json").read_text()
        await client.call("agents.delete", workspace_id=ws, agent_id=agent["id"])
        assert "tok-s3cret" not in (srv.data_dir / "secrets.json").read_text()


async def _wait_file(path: Path, timeout: float = 60.0) -> dict[str, str]:
    for _ in range(int(timeout / 0.05)):
        if path.exists():
            return dict(json.loads(path.read_text()))
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path.name} never appeared")


@pytest.mark.packs("terminal")
async def test_command_agent_calls_back_over_mcp_with_a_credential_for_its_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with workspace_server(tmp_path) as (srv, client, ws):
        space_id = (await client.call("spaces.create", workspace_id=ws, title="cli"))["id"]
        other_space = (await client.call("spaces.create", workspace_id=ws, title="not the run's"))["id"]
        await client.call("messages.post", workspace_id=ws, space_id=other_space, content="said elsewhere")
        tools = ["spaces.list", "spaces.get", "messages.list", "messages.post", "tickets.create"]
        adapter = {"type": "command", "argv": [*CLI_AGENT], "productTools": tools}
        agent_id = (await client.call("agents.create", workspace_id=ws, name="Caller", adapter=adapter))["id"]
        other_ws = (await client.call("workspaces.create", name="elsewhere"))["id"]
        folder = Path((await client.call("spaces.get", workspace_id=ws, space_id=space_id))["folder"])
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt=f"mcp {other_space}"
        )
        got = await _wait_file(folder / "mcp.json")
        # Inside the enclosure the endpoint is the gate's server door; the program called it with urllib.
        assert got["HANGAR_MCP_URL"] == f"http://{GATE_ADDRESS}:{GatePorts().server_door}/mcp"
        assert got["HANGAR_MCP_UNAVAILABLE"] is None
        assert set(tools) <= set(got["tools"])
        # The credential is limited to the run's space: the workspace's spaces list shows that one, its messages
        # are read, another space's are refused, and so is a post there.
        assert got["spaces"] == [space_id]
        assert [m["content"] for m in got["own"]["messages"]] == ["mcp " + other_space]
        limit = f"forbidden: this credential is limited to space {space_id}"
        assert got["elsewhere"] == {
            "messages.list": {"error": f"{limit}; messages.list names space {other_space}"},
            "messages.post": {"error": f"{limit}; messages.post names space {other_space}"},
        }
        assert got["unauthenticated"] == {"status": 401}  # the door adds no authority: the server checks
        # The rest of the server's listener stays out of reach (§6), refused by the gate saying why.
        for path in ("/rpc", "/auth/pair", "/healthz", "/mcpx"):
            status, text = got["other"][path]
            assert status == 403 and f"{path} is not reachable from this rig" in text, (path, status, text)
        token = got["HANGAR_MCP_TOKEN"]
        # During the run: the agent's voice, its workspace, its tools.
        async with mcp_session(srv, token) as session:
            listed = payload(await session.call_tool("spaces.list", {"workspace_id": ws}))
            assert space_id in [s["id"] for s in listed["spaces"]]
            filed = payload(await session.call_tool("tickets.create", {"workspace_id": ws, "title": "from the CLI"}))
            elsewhere = await session.call_tool("spaces.list", {"workspace_id": other_ws})
            assert elsewhere.is_error and "limited to workspace" in elsewhere.content[0].text
            other = await session.call_tool("spaces.get", {"workspace_id": ws, "spaceId": other_space})
            assert other.is_error and other.content[0].text == f"{limit}; spaces.get names space {other_space}"
            own = payload(await session.call_tool("spaces.get", {"workspace_id": ws, "spaceId": space_id}))
            assert own["id"] == space_id
            invite = await session.call_tool("members.invite", {"workspace_id": ws, "role": "guest"})
            assert invite.is_error and "not among the tools" in invite.content[0].text
        rows = [r for r in await client.call("audit.list", workspace_id=ws) if r["action"] == "tickets.create"]
        assert [(r["principal"], r["target"], r["door"]) for r in rows] == [
            (f"agent:{agent_id}", f"ticket:{filed['id']}", "mcp")
        ]
        (folder / "go").write_text("")
        run = await wait_run(client, ws, started["runId"], timeout=60)
        assert run["outcome"] == "ok", run
        # After the run, however it ended, the credential is dead.
        async with httpx.AsyncClient() as http:
            after = await http.post(
                f"{srv.url}/mcp",
                headers={"authorization": f"Bearer {token}", "accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
        assert after.status_code == 401
        # ... also through the door, which a later run of the agent opens again with its own credential.
        again = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt=f"mcp-again {token}"
        )
        assert (await wait_run(client, ws, again["runId"], timeout=60))["outcome"] == "ok"
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        assert msgs[-1]["content"] == "old credential: 401"
        assert token not in json.dumps(msgs[:-2])  # the first run's reply does not show it
        said = (await client.call("messages.list", workspace_id=ws, space_id=other_space))["messages"]
        assert [m["content"] for m in said] == ["said elsewhere"]  # nothing was posted there
        refused = [r.getMessage() for r in caplog.records if r.name == "hangar.rigs.egress"]
        assert any(" egress server /auth/pair denied: not the MCP endpoint" in line for line in refused)


async def test_under_trusted_host_execution_the_agent_calls_the_servers_own_listener(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (srv, client, ws):
        await trust_host(srv.ctx)
        space_id = (await client.call("spaces.create", workspace_id=ws, title="cli"))["id"]
        adapter = {"type": "command", "argv": [*CLI_AGENT], "productTools": ["spaces.list"]}
        agent_id = (await client.call("agents.create", workspace_id=ws, name="Host", adapter=adapter))["id"]
        folder = Path((await client.call("spaces.get", workspace_id=ws, space_id=space_id))["folder"])
        started = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="mcp")
        got = await _wait_file(folder / "mcp.json")
        assert got["HANGAR_MCP_URL"] == f"{srv.url}/mcp" and space_id in got["spaces"]
        (folder / "go").write_text("")
        assert (await wait_run(client, ws, started["runId"], timeout=60))["outcome"] == "ok"


async def test_under_trusted_host_execution_the_output_is_read_back_and_nothing_is_left(tmp_path: Path) -> None:
    mark = f"hangar-left-{hashlib.sha256(str(tmp_path).encode()).hexdigest()[:8]}"
    async with workspace_server(tmp_path) as (srv, client, ws):
        await trust_host(srv.ctx)
        space_id = (await client.call("spaces.create", workspace_id=ws, title="cli"))["id"]
        folder = Path((await client.call("spaces.get", workspace_id=ws, space_id=space_id))["folder"])
        script = (
            f"(exec -a {mark} sleep 300) & "  # left running in the program's process group
            'test -s "$HANGAR_CONTEXT_FILE" && echo \'{"n": 5}\' > "$HANGAR_OUTPUT_FILE"; echo wrote'
        )
        adapter = {"type": "command", "argv": ["bash", "-c", script]}
        agent_id = (await client.call("agents.create", workspace_id=ws, name="Host", adapter=adapter))["id"]
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="go", outputSchema=SCHEMA
        )
        run = await wait_run(client, ws, started["runId"], timeout=60)
        assert run["outcome"] == "ok" and run["output"] == {"n": 5}, run
        assert not list(folder.glob(".hangar-*"))  # the context and output files went with the run
        for _ in range(100):
            if not host_processes_named(mark):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("what the program left running in its process group outlived it")
