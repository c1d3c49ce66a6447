"""A template names agents, teams, spaces, repos and other templates by id; each is looked up in the caller's
workspace when the template is validated, created or updated, and one the workspace does not hold is refused at
its step and field (it used to be accepted, and the run failed later: "agent analyst does not exist").
Real server, real socket."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_workspace_repos import make_repo
from tests.support.rpc import RpcClient, RpcError
from tests.unit.agents.support import workspace_server

COMMAND = {"type": "command", "argv": ["cat"], "promptVia": "stdin"}


def template(tid: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"id": tid, "steps": [{"id": "start", "kind": "trigger", "body": "pipeline.trigger"}, *steps]}


def step(sid: str, body: str, **config: Any) -> dict[str, Any]:
    return {"id": sid, "kind": "listen", "body": body, "trigger": {"sourceStepIds": ["start"]}, "config": config}


def ask(agent_id: str, **config: Any) -> dict[str, Any]:
    return step("ask", "conversation.promptAgent", agentId=agent_id, prompt="hello", **config)


async def refusal(client: RpcClient, ws: str, raw: dict[str, Any]) -> str:
    with pytest.raises(RpcError) as info:
        await client.call("pipelines.templates.create", workspace_id=ws, template=raw)
    assert info.value.code == "invalid_args", info.value.message
    return info.value.message


async def test_an_unknown_agent_is_refused_at_its_step_and_field(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        agent = await client.call("agents.create", workspace_id=ws, name="analyst", adapter=COMMAND)
        by_name = template("by-name", ask("analyst"))
        message = await refusal(client, ws, by_name)
        assert message.startswith("invalid template: step ask: config.agentId: no agent with the id 'analyst'")
        assert f"the agent named 'analyst' has the id {agent['id']}" in message
        checked = await client.call("pipelines.templates.validate", workspace_id=ws, template=by_name)
        assert checked["valid"] is False
        assert checked["problems"] == [
            "step ask: config.agentId: no agent with the id 'analyst' in this workspace "
            f"(the agent named 'analyst' has the id {agent['id']}; a template names it by id)"
        ]
        assert (await client.call("pipelines.templates.list", workspace_id=ws))["templates"] == []

        good = template("good", ask(agent["id"]))
        assert (await client.call("pipelines.templates.validate", workspace_id=ws, template=good))["valid"] is True
        assert (await client.call("pipelines.templates.create", workspace_id=ws, template=good))["id"] == "good"
        # An update is checked the same way, and the stored template stays as it was.
        with pytest.raises(RpcError) as info:
            await client.call(
                "pipelines.templates.update", workspace_id=ws, templateId="good", template=template("good", ask("x"))
            )
        assert info.value.code == "invalid_args"
        assert "step ask: config.agentId: no agent with the id 'x'" in info.value.message
        stored = await client.call("pipelines.templates.get", workspace_id=ws, templateId="good")
        assert stored["template"]["steps"][1]["config"]["agentId"] == agent["id"]


async def test_every_kind_of_reference_is_checked_and_all_problems_are_listed(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        agent = await client.call("agents.create", workspace_id=ws, name="analyst", adapter=COMMAND)
        team = await client.call("teams.create", workspace_id=ws, name="Crew", memberIds=[agent["id"]])
        space = await client.call("spaces.create", workspace_id=ws, title="room")
        repo = await client.call("repos.register", workspace_id=ws, path=str(make_repo(tmp_path / "src", "api")))
        child = template("child", step("hello", "shell.run", script="true"))
        await client.call("pipelines.templates.create", workspace_id=ws, template=child)

        bad = template(
            "bad",
            step("ask", "conversation.promptAgent", agentId="ghost", prompt="p", extras={"spaceId": "nowhere"}),
            step("crew", "team.dispatch", teamId="no-team", prompt="p"),
            # A repo by id or by its name exactly, as the space's checkout finds it.
            step("open", "messaging.createSpace", repoIds=[repo["id"], "missing@main", "api#3", "API"]),
            step("sub", "pipeline.subPipeline", extras={"templateId": "no-such-template"}),
            # A setting its body does not read is not a reference: shell.run ignores agentId.
            step("shell", "shell.run", script="true", agentId="whatever"),
        )
        checked = await client.call("pipelines.templates.validate", workspace_id=ws, template=bad)
        assert checked["problems"] == [
            "step ask: config.agentId: no agent with the id 'ghost' in this workspace",
            "step ask: config.extras.spaceId: no space 'nowhere' in this workspace that you can see",
            "step crew: config.teamId: no team with the id 'no-team' in this workspace",
            "step open: config.repoIds: 'missing@main' names no repo registered in this workspace",
            "step open: config.repoIds: 'API' names no repo registered in this workspace",
            "step sub: config.extras.templateId: no pipeline template with the id 'no-such-template' in this workspace",
        ]
        message = await refusal(client, ws, bad)
        assert message.startswith("invalid template: step ask: config.agentId: ") and "(and 5 more)" in message

        fine = template(
            "fine",
            step("ask", "conversation.promptAgent", agentId=agent["id"], prompt="p", extras={"spaceId": space["id"]}),
            step("crew", "team.dispatch", teamId=team["id"], prompt="p"),
            step("open", "messaging.createSpace", repoIds=[repo["id"], "api@main", "api#3"]),
            step("sub", "pipeline.subPipeline", extras={"templateId": "child"}),
            # Filled in at run time: nothing to look up now.
            step("later", "conversation.promptAgent", agentId="{{chosen_agent}}", prompt="p"),
        )
        assert (await client.call("pipelines.templates.validate", workspace_id=ws, template=fine))["problems"] == []
        await client.call("pipelines.templates.create", workspace_id=ws, template=fine)


async def test_a_record_of_another_workspace_is_unknown_here(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (srv, client, ws):
        other = (await client.call("workspaces.create", name="elsewhere"))["id"]
        theirs = await client.call("agents.create", workspace_id=other, name="theirs", adapter=COMMAND)
        their_space = await client.call("spaces.create", workspace_id=other, title="theirs")
        raw = template("cross", ask(theirs["id"], extras={"spaceId": their_space["id"]}))
        message = await refusal(client, ws, raw)
        assert f"step ask: config.agentId: no agent with the id '{theirs['id']}' in this workspace" in message
        # A member reads as themselves: they name only what they can see.
        member = await srv.new_user_token(ws, "member", name="meg")
        async with RpcClient(srv.ws_url, member) as m:
            checked = await m.call("pipelines.templates.validate", workspace_id=ws, template=raw)
            assert len(checked["problems"]) == 2
