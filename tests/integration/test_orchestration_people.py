"""Who decides about an orchestration's plan, on a running server with agents on a scripted model: the planner's
proposal is checked as a person's edit is (an agent it names must be one of this workspace), and approving or
editing a plan is for people only: an agent is refused over its own credential (RPC and the MCP endpoint) and
through its in-process tools, so it never approves its own plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from hangar.identity import IdentityService
from hangar.identity.models import DeviceScope
from hangar.rpc.mcp.tools import description
from hangar.rpc.registry import OpRegistry
from hangar.server.parts import all_parts
from tests.integration.test_orchestration import agent, mcp, mcp_opened, planned, refused
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.unit.agents.fake_openai import call, running_fake_openai, text
from tests.unit.agents.support import wait_run, workspace_server

PEOPLE_ONLY = "is for people only: an agent cannot call it"


def plan_naming(agent_id: str) -> Any:
    subs = [{"key": "a", "title": "Do a", "description": "the a part", "agentId": agent_id}]
    return call("submit_output", {"subTickets": subs})


async def test_a_planner_naming_an_unknown_or_another_workspaces_agent_fails_the_planning(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, client, ws):
        other = (await client.call("workspaces.create", name="elsewhere"))["id"]
        foreign = await agent(client, other, fake.url, "foreign")
        for title, named in (("unknown", "0b6c5a4e-0000-4000-8000-000000000000"), ("foreign", foreign)):
            orch = await planned(client, ws, fake, fake.url, title, plan_naming(named))
            assert orch["status"] == "failed", orch
            assert orch["error"] == (
                f"the planner's DAG was refused: subTickets[0].agentId: agent {named} does not exist in this workspace"
            )
            assert orch["nodes"] == []
        # An agent of this workspace is taken, as a person's edit takes it.
        own = await agent(client, ws, fake.url, "own")
        orch = await planned(client, ws, fake, fake.url, "own", plan_naming(own))
        assert orch["status"] == "planned" and orch["nodes"][0]["agentId"] == own


async def test_an_agents_credential_cannot_approve_or_edit_a_plan_over_rpc_or_mcp(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (srv, client, ws):
        orch = await planned(client, ws, fake, fake.url, "cred", plan_naming_none())
        oid, planner = orch["id"], orch["plannerAgentId"]
        tools = frozenset({"orchestration.approve", "orchestration.editDag", "orchestration.get"})
        scope = DeviceScope(workspace_id=ws, agent_id=planner, tools=tools)
        token = await srv.ctx.service(IdentityService).issue_device(srv.owner_id, "planner run", scope=scope)
        async with RpcClient(srv.ws_url, token) as as_agent:
            assert (await as_agent.call("orchestration.get", workspace_id=ws, orchestrationId=oid))["id"] == oid
            message = await refused(
                as_agent, "forbidden", "orchestration.approve", workspace_id=ws, orchestrationId=oid, all=True
            )
            assert message == f"orchestration.approve {PEOPLE_ONLY}"
            nodes = [{"key": "z", "title": "Z"}]
            message = await refused(
                as_agent, "forbidden", "orchestration.editDag", workspace_id=ws, orchestrationId=oid, nodes=nodes
            )
            assert message == f"orchestration.editDag {PEOPLE_ONLY}"
        async with httpx.AsyncClient(base_url=srv.url, timeout=30) as http:
            headers = await mcp_opened(http, token)
            args = {"workspace_id": ws, "orchestrationId": oid, "all": True}
            done = await mcp(http, headers, "tools/call", {"name": "orchestration.approve", "arguments": args})
            assert done.get("isError") and PEOPLE_ONLY in json.dumps(done), done
        after = await client.call("orchestration.get", workspace_id=ws, orchestrationId=oid)
        assert after["status"] == "planned" and not any(n["approved"] for n in after["nodes"])
        assert [n["key"] for n in after["nodes"]] == ["a"]
        # A person may.
        done = await client.call("orchestration.approve", workspace_id=ws, orchestrationId=oid, all=True)
        assert done["status"] != "planned"


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


def plan_naming_none() -> Any:
    return call("submit_output", {"subTickets": [{"key": "a", "title": "Do a", "description": "the a part"}]})


async def test_an_agent_cannot_approve_a_plan_through_its_in_process_tools(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, client, ws):
        orch = await planned(client, ws, fake, fake.url, "tool", plan_naming_none())
        oid = orch["id"]
        adapter = {
            "type": "openai",
            "baseUrl": fake.url,
            "model": "approver",
            "productTools": ["orchestration.approve"],
        }
        approver = await client.call("agents.create", workspace_id=ws, name="Approver", adapter=adapter)
        space = await client.call("spaces.create", workspace_id=ws, title="tools")
        fake.script(
            "approver", call("orchestration__approve", {"orchestrationId": oid, "all": True}), text("approved it")
        )
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=approver["id"], space_id=space["id"], prompt="approve the plan"
        )
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "ok", run
        results = [m["content"] for m in fake.bodies_for("approver")[-1]["messages"] if m["role"] == "tool"]
        # Named among its tools, the op is still not offered to the agent (and the dispatcher would refuse it).
        assert "orchestration__approve" not in tool_names(fake.bodies_for("approver")[-1])
        assert results == ["there is no tool named 'orchestration__approve'"]
        after = await client.call("orchestration.get", workspace_id=ws, orchestrationId=oid)
        assert after["status"] == "planned" and not any(n["approved"] for n in after["nodes"])


async def test_every_people_only_op_refuses_an_agents_credential(tmp_path: Path) -> None:
    """The ops a person alone decides (``people_only``), each refused to an agent's credential that names it among
    its tools, with the one message; the MCP catalogue says so."""
    async with running_server(tmp_path / "data") as srv:
        ws = await srv.new_workspace("people")
        registry = OpRegistry(o for p in all_parts() for o in p.ops)
        people_only = sorted(s.name for s in registry.specs.values() if s.people_only)
        assert people_only == [
            "chat.beginUserLink",
            "meetings.profiles.create",  # a voice profile is given by the person whose voice it is
            "meetings.profiles.fromSpeaker",  # so is one kept from a diarised speaker's voiceprint
            "orchestration.approve",
            "orchestration.editDag",
            "workspaces.export",
        ]
        scope = DeviceScope(workspace_id=ws, agent_id="a1", tools=frozenset(people_only))
        token = await srv.ctx.service(IdentityService).issue_device(srv.owner_id, "agent run", scope=scope)
        async with RpcClient(srv.ws_url, token) as as_agent:
            for name in people_only:
                message = await refused(as_agent, "forbidden", name, workspace_id=ws)
                assert message == f"{name} {PEOPLE_ONLY}"
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            # A person is not refused by it (the op's own rules answer instead).
            assert (await owner.call("workspaces.export", workspace_id=ws))["url"]
        approve = registry.get("orchestration.approve")
        assert approve is not None and "people only, never an agent" in description(approve)
