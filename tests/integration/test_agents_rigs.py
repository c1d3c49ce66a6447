"""An ``openai`` agent drives a real terminal rig through its product tools: ``rig.exec`` runs in the enclosure as
the agent, its output comes back to the model as the tool's result, and the rig's log and the audit name the agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.core.guestacl import RIG_UID
from tests.integration.rigs_env import rigs_server
from tests.unit.agents.fake_openai import call, running_fake_openai, text
from tests.unit.agents.support import wait_run

pytestmark = pytest.mark.packs("terminal")


async def test_an_openai_agent_runs_a_command_in_its_spaces_rig(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, rigs_server(tmp_path) as env:
        agent = await env.call(
            "agents.create", name="Rigger", adapter={"type": "openai", "baseUrl": fake.url, "model": "rig"}
        )
        rig_id = await env.open()  # a person opened a terminal in the space the agent is dispatched into
        other_space = await env.new_space()
        elsewhere = await env.open(other_space)
        fake.script(
            "rig",
            call("rig__exec", {"rigId": rig_id, "command": "id -u; echo hi-from-rig"}),
            call("rig__exec", {"rigId": elsewhere, "command": "echo should-not-run"}),
            call("rig_list", {}),  # the rigs of its space only
            call("rig_close", {"rigId": rig_id}),
            text("done"),
        )
        started = await env.call("agents.run", agent_id=agent["id"], space_id=env.space, prompt="run it")
        run = await wait_run(env.client, env.ws, started["runId"], timeout=120)
        assert run["outcome"] == "ok", run

        results = [m["content"] for m in fake.bodies_for("rig")[-1]["messages"] if m["role"] == "tool"]
        ran = json.loads(results[0])
        assert ran["exitCode"] == 0 and ran["stdout"].split() == [str(RIG_UID), "hi-from-rig"], ran
        assert (
            results[1]
            == f"forbidden: this credential is limited to space {env.space}; rig.exec: rig {elsewhere} is in space "
            f"{other_space}"
        )
        assert [r["rigId"] for r in json.loads(results[2])] == [rig_id]
        assert json.loads(results[3])["rigId"] == rig_id

        who = f"agent:{agent['id']}"
        log = await env.call("rig.actionLog", rigId=rig_id)
        assert [(e["principal"], e["verb"]) for e in log if e["verb"] == "exec"] == [(who, "exec")]
        assert not [e for e in await env.call("rig.actionLog", rigId=elsewhere) if e["verb"] == "exec"]
        closed = [r for r in await env.call("audit.list") if r["action"] == "rig.close"]
        assert [(r["principal"], r["target"], r["door"]) for r in closed] == [(who, f"rig:{rig_id}", "agent")]
        assert (await env.status(rig_id))["status"] == "closed"
