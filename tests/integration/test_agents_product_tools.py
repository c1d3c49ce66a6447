"""Hangar's own agents call the product's ops as tools (CONTRACTS.md sections 7 and 8), against the scripted model
server: what is offered, what is refused and why, what reaches the model, and who the audit says acted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hangar.agents.tools.catalogue import DEFAULT_PRODUCT_TOOLS
from hangar.rpc.mcp.tools import openai_name
from tests.support.rpc import RpcClient, RpcError
from tests.unit.agents.fake_openai import call, running_fake_openai, text
from tests.unit.agents.support import wait_run, workspace_server

BUILTINS = {"post_message", "list_files", "read_file"}


async def _agent(client: RpcClient, ws: str, url: str, model: str, **adapter: Any) -> tuple[str, str]:
    space = await client.call("spaces.create", workspace_id=ws, title="tools")
    agent = await client.call(
        "agents.create",
        workspace_id=ws,
        name="Tess",
        adapter={"type": "openai", "baseUrl": url, "model": model, **adapter},
    )
    return space["id"], agent["id"]


def _tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


async def test_only_the_named_tools_are_offered_and_every_refusal_reaches_the_model(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, client, ws):
        other_ws = (await client.call("workspaces.create", name="elsewhere"))["id"]
        tools = ["spaces.list", "messages.post", "members.invite", "agents.run", "tickets.create", "rig.open"]
        space_id, agent_id = await _agent(client, ws, fake.url, "p1", productTools=tools)
        # Its own space asks first before a rig is opened there (the person's agents.run declares no such class).
        await client.call("guardrails.set", workspace_id=ws, space_id=space_id, askFirst=["enclosureControl"])
        elsewhere = (await client.call("spaces.create", workspace_id=ws, title="elsewhere"))["id"]
        fake.script(
            "p1",
            call("spaces__list", {}),  # its own workspace, filled in
            call("spaces__list", {"workspace_id": other_ws}),  # outside its workspace
            call("rig__exec", {"rigId": "r", "command": "id"}),  # not among its tools: not offered, not callable
            call("members__invite", {"role": "guest"}),  # among its tools, above the member role it holds
            call("rig__open", {"surface": "terminal"}),  # an ask-first rule: nobody to ask
            call("agents__run", {"agent_id": agent_id, "space_id": elsewhere, "prompt": "again"}),  # another space
            call("messages__post", {"content": "posted through the product"}),
            call("tickets__create", {"title": "filed by an agent"}),
            text("done"),
        )
        started = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="go")
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "ok", run

        bodies = fake.bodies_for("p1")
        offered = {t["function"]["name"]: t["function"] for t in bodies[0]["tools"]}
        assert set(offered) == BUILTINS | {
            "spaces__list",
            "messages__post",
            "members__invite",
            "agents__run",
            "tickets__create",
            "rig__open",
        }
        # The MCP tool's schema and words, under a dot-free name.
        post = offered["messages__post"]
        assert post["parameters"]["required"] == ["workspace_id", "spaceId", "content"]
        assert "Who may call it: members with the member role" in post["description"]

        results = _tool_results(bodies[-1])
        listed = json.loads(results[0])
        assert [s["id"] for s in listed["spaces"]] == [space_id]  # the workspace's spaces, as far as it reaches
        assert (
            results[1]
            == f"forbidden: this credential is limited to workspace {ws}; spaces.list needs workspace {other_ws}"
        )
        assert results[2] == "there is no tool named 'rig__exec'"
        assert results[3] == "forbidden: members.invite needs the admin role; you are member"
        assert results[4].startswith("refused: rig.open refused: this space asks first for enclosureControl")
        assert results[5] == (
            f"forbidden: this credential is limited to space {space_id}; agents.run names space {elsewhere}"
        )
        assert json.loads(results[6])["id"]

        # The message the agent posted through the op is signed by the agent; the audit says who and how.
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        posted = next(m for m in msgs if m["content"] == "posted through the product")
        assert posted["author"] == {"kind": "agent", "id": agent_id, "name": "Tess"}
        assert len((await client.call("runs.list", workspace_id=ws, agent_id=agent_id))["runs"]) == 1
        assert len(await client.call("members.list", workspace_id=ws)) == 1  # nothing was invited
        rows = await client.call("audit.list", workspace_id=ws)
        assert not [r for r in rows if r["action"] == "members.invite"]
        filed = json.loads(results[7])
        (row,) = [r for r in rows if r["action"] == "tickets.create"]
        assert row["target"] == f"ticket:{filed['id']}" and row["principal"] == f"agent:{agent_id}"
        assert row["door"] == "agent"


async def test_the_default_tools_and_the_agents_own_space(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, client, ws):
        space_id, agent_id = await _agent(client, ws, fake.url, "p2")
        other_space = (await client.call("spaces.create", workspace_id=ws, title="not mine"))["id"]
        await client.call("messages.post", workspace_id=ws, space_id=space_id, content="hello from a person")
        await client.call("messages.post", workspace_id=ws, space_id=other_space, content="said elsewhere")
        await client.call("tickets.create", workspace_id=ws, title="a workspace ticket")
        fake.script(
            "p2",
            call("messages__list", {}),  # its own space, filled in
            call("rig__open", {"space_id": other_space, "surface": "terminal"}),  # a rig verb elsewhere
            call("spaces__get", {"space_id": other_space}),  # reads are held to its space too
            call("messages__list", {"spaceId": other_space}),
            call("spaces__list", {}),  # the workspace's spaces: its own
            call("tickets__list", {}),  # tickets are not about spaces
            text("done"),
        )
        started = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="go")
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "ok", run
        bodies = fake.bodies_for("p2")
        assert {t["function"]["name"] for t in bodies[0]["tools"]} == BUILTINS | {
            openai_name(n) for n in DEFAULT_PRODUCT_TOOLS
        }
        assert f"space_id {space_id}" in bodies[0]["messages"][0]["content"]
        results = _tool_results(bodies[-1])
        assert "hello from a person" in [m["content"] for m in json.loads(results[0])["messages"]]
        limit = f"forbidden: this credential is limited to space {space_id}"
        assert results[1] == f"{limit}; rig.open names space {other_space}"
        assert results[2] == f"{limit}; spaces.get names space {other_space}"
        assert results[3] == f"{limit}; messages.list names space {other_space}"
        assert [s["title"] for s in json.loads(results[4])["spaces"]] == ["tools"]
        assert [t["title"] for t in json.loads(results[5])["tickets"]] == ["a workspace ticket"]


async def test_product_tools_are_checked_against_the_registry(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        base = {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1", "model": "m"}
        with pytest.raises(RpcError) as unknown:
            await client.call(
                "agents.create", workspace_id=ws, name="x", adapter={**base, "productTools": ["spaces.list", "nope.op"]}
            )
        assert unknown.value.code == "invalid_args" and "'nope.op'" in unknown.value.message
        assert unknown.value.message.startswith("adapter.productTools: ")
        with pytest.raises(RpcError) as watch:
            command = {"type": "command", "argv": ["x"], "productTools": ["spaces.watch"]}
            await client.call("agents.create", workspace_id=ws, name="y", adapter=command)
        assert watch.value.code == "invalid_args" and "watch ops, which are not tools" in watch.value.message
        made = await client.call("agents.create", workspace_id=ws, name="z", adapter={**base, "productTools": []})
        assert made["adapter"]["productTools"] == []
