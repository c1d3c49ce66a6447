"""What runs for a workspace stops when it is deleted: a pipeline run another process drives (its script ends,
its folders go), a rig on a real enclosure (closed, its home gone), an agent run waiting on its model
(interrupted) and the chat connection (its socket to the provider closed)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from hangar.agents.runner import AgentRunner
from hangar.chat.service import ChatService
from hangar.pipelines.layout import control_dir, run_dir
from hangar.rigs.lifecycle.manager import RigManager
from tests.integration.rigs_enclosure_env import ready_pack
from tests.integration.rigs_env import rigs_parts
from tests.integration.test_pipelines_cancel_elsewhere import assert_script_gone, driving, finished
from tests.support.chat import PROVIDER, until, world
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.unit.agents.fake_openai import Reply


async def test_deleting_cancels_a_pipeline_run_another_process_drives(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with running_server(data) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        ws = (await c.call("workspaces.create", name="cli"))["id"]
        with driving(tmp_path, data, "--workspace", "cli") as (proc, marks, run_id):
            assert run_dir(data, run_id).exists()
            done = await c.call("workspaces.delete", workspace_id=ws, confirm="cli")
            assert done["state"] == "deleted"
            code, out = finished(proc)
            assert (code, out["status"]) == (1, "cancelled")
            assert_script_gone(marks)
        assert not run_dir(data, run_id).exists() and not control_dir(data, run_id).exists()
        assert not (data / ws).exists()


@pytest.mark.packs("terminal")
async def test_deleting_closes_the_workspaces_rigs(tmp_path: Path) -> None:
    await ready_pack()
    with tempfile.TemporaryDirectory(prefix="hr-", dir="/tmp") as short:
        data = Path(short)
        async with running_server(data, parts=rigs_parts()) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
            ws = (await c.call("workspaces.create", name="rigged"))["id"]
            kept = (await c.call("workspaces.create", name="kept"))["id"]
            rigs = []
            for w in (ws, kept):
                space = (await c.call("spaces.create", workspace_id=w, title="s"))["id"]
                opened = await c.call("rig.open", workspace_id=w, space_id=space, surface="terminal")
                rigs.append(opened["rigId"])
            manager = srv.ctx.service(RigManager)
            assert {r.ws for r in manager.rigs.all()} == {ws, kept}
            await c.call("workspaces.delete", workspace_id=ws, confirm="rigged")
            assert [r.ws for r in manager.rigs.all()] == [kept]
            assert not (data / "rigs" / "homes" / rigs[0]).exists()
            assert not (data / ws).exists()


async def test_deleting_interrupts_agent_runs_and_ends_the_chat_connection(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.model.script("m", Reply(text="never finished", stall_seconds=60))
        space = await w.client.call("spaces.create", workspace_id=w.ws, title="s")
        await w.client.call("agents.run", workspace_id=w.ws, agent_id=w.agent_id, space_id=space["id"], prompt="go")
        runner = w.srv.ctx.service(AgentRunner)
        await until(lambda: runner.busy and w.model.requests)  # the run is waiting on its model
        assert len(w.slack.links) == 1
        chat = w.srv.ctx.service(ChatService)
        assert chat.registry.get(w.ws, PROVIDER) is not None
        await w.client.call("workspaces.delete", workspace_id=w.ws, confirm="acme")
        assert not runner.busy
        assert chat.registry.get(w.ws, PROVIDER) is None
        await until(lambda: not w.slack.links)  # the socket to the chat provider is closed
        assert not (w.srv.data_dir / w.ws).exists()  # chat credentials included
