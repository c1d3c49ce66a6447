"""Teams (with dispatch) and tickets over the RPC socket."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.support.confined import CLI_AGENT
from tests.support.rpc import RpcClient, RpcError
from tests.unit.agents.support import wait_run, workspace_server

SCRIPT = str(Path(__file__).parent.parent / "unit" / "agents" / "scripts" / "cli_agent.py")


@pytest.mark.packs("terminal")
async def test_teams_crud_and_dispatch(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        adapter = {"type": "command", "argv": [*CLI_AGENT]}
        ids = [
            (await client.call("agents.create", workspace_id=ws, name=n, adapter=adapter))["id"]
            for n in ("Ann", "Bob", "Cy")
        ]
        assert (await client.call("agents.frontDoor", workspace_id=ws))["agent"]["id"] == ids[0]
        await client.call("agents.update", workspace_id=ws, agent_id=ids[1], role="chiefExecutive")
        assert (await client.call("agents.frontDoor", workspace_id=ws))["agent"]["id"] == ids[1]
        with pytest.raises(RpcError) as err:
            await client.call("agents.update", workspace_id=ws, agent_id=ids[2], role="chiefExecutive")
        assert err.value.code == "conflict" and "Bob is already the workspace's chief-executive" in err.value.message
        team = await client.call("teams.create", workspace_id=ws, name="Crew", memberIds=ids[:2])
        assert team["leaderId"] == ids[0] and team["dispatchMode"] == "allParallel"
        with pytest.raises(RpcError) as err:
            await client.call("teams.create", workspace_id=ws, name="X", memberIds=[ids[0], "ghost"])
        assert err.value.code == "not_found" and "ghost" in err.value.message
        with pytest.raises(RpcError) as err:
            await client.call("teams.create", workspace_id=ws, name="X", memberIds=ids, leaderId="zed")
        assert err.value.code == "invalid_args" and err.value.message.startswith("leaderId")
        with pytest.raises(RpcError) as err:
            await client.call("teams.create", workspace_id=ws, name="X", memberIds=ids, dispatchMode="chaos")
        assert err.value.code == "invalid_args" and "dispatchMode" in err.value.message

        team = await client.call(
            "teams.update", workspace_id=ws, team_id=team["id"], memberIds=ids, leaderId=ids[2], dispatchMode="manager"
        )
        assert team["memberIds"] == ids and team["leaderId"] == ids[2]

        space = await client.call("spaces.create", workspace_id=ws, title="team work")
        out = await client.call(
            "teams.dispatch", workspace_id=ws, team_id=team["id"], space_id=space["id"], prompt="echo hi"
        )
        assert out["dispatchMode"] == "manager" and len(out["runIds"]) == 1
        assert (await wait_run(client, ws, out["runIds"][0]))["agentId"] == ids[2]
        out = await client.call(
            "teams.dispatch",
            workspace_id=ws,
            team_id=team["id"],
            space_id=space["id"],
            prompt="echo all",
            dispatchMode="allParallel",
        )
        runs = [await wait_run(client, ws, r) for r in out["runIds"]]
        assert sorted(r["agentId"] for r in runs) == sorted(ids) and {r["outcome"] for r in runs} == {"ok"}
        # The prompt is posted once; each member answers it.
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space["id"]))["messages"]
        assert [m["content"] for m in msgs].count("echo all") == 1
        assert sum(1 for m in msgs if m["author"]["kind"] == "agent" and "you said: echo all" in m["content"]) == 3

        with pytest.raises(RpcError) as err:
            await client.call("teams.get", workspace_id=ws, team_id="nope")
        assert err.value.code == "not_found"
        with pytest.raises(RpcError) as err:
            await client.call("agents.delete", workspace_id=ws, agent_id=ids[0])
        assert err.value.code == "conflict" and "member of 1 team" in err.value.message
        await client.call("teams.delete", workspace_id=ws, team_id=team["id"])
        await client.call("agents.delete", workspace_id=ws, agent_id=ids[0])
        assert len((await client.call("agents.list", workspace_id=ws))["agents"]) == 2
        assert (await client.call("teams.list", workspace_id=ws))["teams"] == []


async def test_tickets_tree(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (srv, client, ws):
        parent = await client.call("tickets.create", workspace_id=ws, title="Ship v2", description="All of it")
        assert parent["status"] == "open" and parent["reporter"] == f"user:{srv.owner_id}"
        child = await client.call("tickets.create", workspace_id=ws, title="Docs", parentId=parent["id"])
        grandchild = await client.call("tickets.create", workspace_id=ws, title="Index", parentId=child["id"])
        got = await client.call("tickets.get", workspace_id=ws, ticket_id=parent["id"])
        assert [s["id"] for s in got["subTickets"]] == [child["id"]]
        roots = await client.call("tickets.list", workspace_id=ws, rootsOnly=True)
        assert [t["id"] for t in roots["tickets"]] == [parent["id"]]

        with pytest.raises(RpcError) as err:
            await client.call("tickets.update", workspace_id=ws, ticket_id=parent["id"], parentId=grandchild["id"])
        assert err.value.code == "invalid_args" and "own ancestor" in err.value.message
        with pytest.raises(RpcError) as err:
            await client.call("tickets.update", workspace_id=ws, ticket_id=child["id"], status="finished")
        assert err.value.code == "invalid_args" and "status must be one of" in err.value.message
        with pytest.raises(RpcError) as err:
            await client.call("tickets.create", workspace_id=ws, title="orphan", parentId="nope")
        assert err.value.code == "not_found" and err.value.message.startswith("parentId")

        done = await client.call("tickets.update", workspace_id=ws, ticket_id=child["id"], status="done")
        assert done["status"] == "done"
        assert [t["id"] for t in (await client.call("tickets.list", workspace_id=ws, status="done"))["tickets"]] == [
            child["id"]
        ]
        changes = await srv.ctx.bus.replay(ws, types=["workspace.ticketChanged"])
        assert [e.payload["status"] for e in changes] == ["open", "open", "open", "done"]
        moved = await client.call("tickets.update", workspace_id=ws, ticket_id=grandchild["id"], detach=True)
        assert moved["parentId"] is None
        assert (await client.call("tickets.delete", workspace_id=ws, ticket_id=parent["id"]))["deleted"] == 2
        remaining = (await client.call("tickets.list", workspace_id=ws))["tickets"]
        assert [t["id"] for t in remaining] == [grandchild["id"]]


CHIEF_ROUNDS = 10


async def test_two_agents_made_chief_executive_at_once_leave_one(tmp_path: Path) -> None:
    """The single-chief rule is checked and written in one serialized transaction: two callers naming different
    agents at the same moment leave one chief-executive, and the other is told who it is."""
    async with workspace_server(tmp_path) as (srv, client, ws):
        adapter = {"type": "command", "argv": [*CLI_AGENT]}
        async with RpcClient(srv.ws_url, srv.owner_token) as other:
            for n in range(CHIEF_ROUNDS):
                a, b = [
                    (await client.call("agents.create", workspace_id=ws, name=f"{x}{n}", adapter=adapter))["id"]
                    for x in ("Ann", "Bob")
                ]

                async def chief(c: RpcClient, agent_id: str) -> str:
                    try:
                        await c.call("agents.update", workspace_id=ws, agent_id=agent_id, role="chiefExecutive")
                    except RpcError as err:
                        assert err.code == "conflict" and "already the workspace's chief-executive" in err.message
                        return "refused"
                    return "ok"

                assert sorted(await asyncio.gather(chief(client, a), chief(other, b))) == ["ok", "refused"]
                agents = (await client.call("agents.list", workspace_id=ws))["agents"]
                assert [x["role"] for x in agents].count("chiefExecutive") == 1
                for agent in agents:
                    await client.call("agents.delete", workspace_id=ws, agent_id=agent["id"])
            # Two creates naming a chief-executive at once: one of them is refused too.
            made = await asyncio.gather(
                *(
                    c.request("agents.create", {"workspace_id": ws, "name": x, "adapter": adapter,
                                                "role": "chiefExecutive"})
                    for c, x in ((client, "Cy"), (other, "Di"))
                ),
            )  # fmt: skip
            assert sorted(m["ok"] for m in made) == [False, True]
