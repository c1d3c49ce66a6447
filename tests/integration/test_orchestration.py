"""Orchestrating a ticket on a running server, agents on a scripted model: the planner's DAG and its sub-tickets,
editing it before work starts, per-node approvals, the work in dependency order, failure sentinels, the
synthesis and the deliverable; and every refusal (roles, other workspaces, unknown nodes, late edits, limits)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from hangar.agents.orchestration.dag import MAX_NODES
from hangar.pipelines import PipelineEngine
from hangar.workspace.tickets import DESCRIPTION_MAX
from tests.support.rpc import RpcClient, RpcError
from tests.support.runs import assert_completed
from tests.unit.agents.fake_openai import FakeOpenAI, Reply, call, running_fake_openai, text
from tests.unit.agents.support import workspace_server


async def agent(client: RpcClient, ws: str, url: str, model: str) -> str:
    adapter = {"type": "openai", "baseUrl": url, "model": model}
    return str((await client.call("agents.create", workspace_id=ws, name=model, adapter=adapter))["id"])


async def until(
    client: RpcClient, ws: str, oid: str, ok: Callable[[dict[str, Any]], bool], timeout: float = 60
) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        orch: dict[str, Any] = await client.call("orchestration.get", workspace_id=ws, orchestrationId=oid)
        if ok(orch):
            return orch
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"orchestration did not get there: {orch}")
        await asyncio.sleep(0.05)


def states(orch: dict[str, Any]) -> dict[str, str]:
    return {n["key"]: n["state"] for n in orch["nodes"]}


def plan(*nodes: tuple[str, list[str]]) -> Reply:
    subs = [{"key": k, "title": f"Do {k}", "description": f"the {k} part", "dependsOn": d} for k, d in nodes]
    return call("submit_output", {"subTickets": subs})


async def refused(client: RpcClient, code: str, op: str, **args: Any) -> str:
    with pytest.raises(RpcError) as err:
        await client.call(op, **args)
    assert err.value.code == code, (op, err.value)
    return err.value.message


async def start(client: RpcClient, ws: str, ticket_id: str, agents: dict[str, str]) -> dict[str, Any]:
    """``orchestration.start`` with the agents by role: ``plan``, ``work`` and ``synth``."""
    orch: dict[str, Any] = await client.call(
        "orchestration.start",
        workspace_id=ws,
        ticketId=ticket_id,
        agentId=agents["work"],
        plannerAgentId=agents["plan"],
        synthesisAgentId=agents["synth"],
    )
    return orch


async def planned(client: RpcClient, ws: str, fake: FakeOpenAI, url: str, title: str, reply: Reply) -> dict[str, Any]:
    """A ticket, its agents (planner ``plan``, worker ``work``, synthesis ``synth``), and its orchestration once
    the planner's DAG is stored."""
    ticket = await client.call("tickets.create", workspace_id=ws, title=title, description="Ship the thing.")
    ids = {m: await agent(client, ws, url, f"{m}-{title}") for m in ("plan", "work", "synth")}
    fake.script(f"plan-{title}", reply)
    orch = await start(client, ws, ticket["id"], ids)
    assert orch["status"] == "planning" and orch["planRunId"]
    return await until(client, ws, orch["id"], lambda o: o["status"] != "planning")


async def test_orchestration_from_plan_to_deliverable(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (srv, client, ws):
        orch = await planned(client, ws, fake, fake.url, "t1", plan(("a", []), ("b", ["a"]), ("c", ["a"])))
        oid, ticket_id = orch["id"], orch["ticketId"]
        assert orch["status"] == "planned", orch
        assert states(orch) == {"a": "planned", "b": "planned", "c": "planned"}
        ticket = await client.call("tickets.get", workspace_id=ws, ticketId=ticket_id)
        assert sorted(s["title"] for s in ticket["subTickets"]) == ["Do a", "Do b", "Do c"]
        # A second orchestration of the same ticket is refused.
        assert "already orchestrated" in await refused(
            client, "conflict", "orchestration.start", workspace_id=ws, ticketId=ticket_id, agentId=orch["agentId"]
        )

        # Before work starts a person edits the DAG: c goes, d (after b) comes; a cycle is refused, naming it.
        nodes = [
            {"key": "a", "title": "Do a", "description": "the a part"},
            {"key": "b", "title": "Do b", "dependsOn": ["a"]},
            {"key": "d", "title": "Do d", "dependsOn": ["b"]},
        ]
        cyclic = [{**nodes[0], "dependsOn": ["d"]}, *nodes[1:]]
        edit = {"workspace_id": ws, "orchestrationId": oid}
        message = await refused(client, "invalid_args", "orchestration.editDag", **edit, nodes=cyclic)
        assert "the dependencies form a cycle: a → d → b → a" in message
        orch = await client.call("orchestration.editDag", workspace_id=ws, orchestrationId=oid, nodes=nodes)
        assert [n["key"] for n in orch["nodes"]] == ["a", "b", "d"]
        ticket = await client.call("tickets.get", workspace_id=ws, ticketId=ticket_id)
        assert sorted(s["title"] for s in ticket["subTickets"]) == ["Do a", "Do b", "Do d"]

        # An unknown node is refused; approving a starts the work, and only a runs.
        assert "no node 'zz'" in await refused(
            client, "invalid_args", "orchestration.approve", workspace_id=ws, orchestrationId=oid, nodeKeys=["zz"]
        )
        fake.script("work-t1", text("result of a"), text("result of b"), Reply(status=503))
        fake.script("synth-t1", text("The deliverable: a and b done, d missing."))
        orch = await client.call("orchestration.approve", workspace_id=ws, orchestrationId=oid, nodeKeys=["a"])
        assert orch["status"] == "running" and orch["workRunId"]
        orch = await until(client, ws, oid, lambda o: states(o)["b"] == "awaitingApproval")
        assert states(orch) == {"a": "done", "b": "awaitingApproval", "d": "waiting"}
        assert orch["nodes"][0]["output"] == "result of a"
        # The gate waiting for b's approval has no deadline: exempt from the 24-hour suspended-step timeout.
        _run, recs = await srv.ctx.service(PipelineEngine).store.load_run(ws, orch["workRunId"])
        assert recs["gate_b"].status.value == "suspended" and recs["gate_b"].deadline is None
        # Work started: the DAG is fixed.
        assert "can be edited only while it is planned" in await refused(
            client, "conflict", "orchestration.editDag", workspace_id=ws, orchestrationId=oid, nodes=nodes
        )

        # b approved alone; then all (d); d's model fails: a failure sentinel, and the synthesis goes on.
        await client.call("orchestration.approve", workspace_id=ws, orchestrationId=oid, nodeKeys=["b"])
        await until(client, ws, oid, lambda o: states(o)["d"] == "awaitingApproval")
        await client.call("orchestration.approve", workspace_id=ws, orchestrationId=oid, all=True)
        orch = await until(client, ws, oid, lambda o: o["status"] in ("completed", "failed"))
        assert_completed(orch)
        assert states(orch) == {"a": "done", "b": "done", "d": "failed"}
        assert orch["deliverable"] == "The deliverable: a and b done, d missing."
        # Each sub-ticket's agent reads what the ones it comes after produced (b: a's result).
        b_prompt = fake.bodies_for("work-t1")[1]["messages"][-1]["content"]
        assert "Sub-ticket: Do b" in b_prompt and "## Do a (a)\n\nresult of a" in b_prompt
        assert "comes after" not in fake.bodies_for("work-t1")[0]["messages"][-1]["content"]
        synth_prompt = fake.bodies_for("synth-t1")[0]["messages"][-1]["content"]
        assert "result of a" in synth_prompt and "result of b" in synth_prompt
        assert "FAILED: the run of agent 'work-t1' ended failed" in synth_prompt

        ticket = await client.call("tickets.get", workspace_id=ws, ticketId=ticket_id)
        assert ticket["status"] == "done"
        assert {s["title"]: s["status"] for s in ticket["subTickets"]} == {
            "Do a": "done",
            "Do b": "done",
            "Do d": "cancelled",
        }
        # The deliverable is posted in the orchestration's space.
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=orch["spaceId"]))["messages"]
        assert msgs[-1]["content"].endswith("The deliverable: a and b done, d missing.")
        # Each sub-ticket worked in a space of its own.
        run = await client.call("pipelines.runs.get", workspace_id=ws, runId=orch["workRunId"])
        assert len({run["state"][f"space_{k}"] for k in ("a", "b", "d")}) == 3
        assert "nothing left to approve" in await refused(
            client, "conflict", "orchestration.approve", workspace_id=ws, orchestrationId=oid, all=True
        )


async def test_the_plan_is_stored_when_the_planner_finishes_unread(tmp_path: Path) -> None:
    """The sub-tickets appear without anyone reading the orchestration: its plan run's end settles it."""
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, client, ws):
        ticket = await client.call("tickets.create", workspace_id=ws, title="Eager")
        planner = await agent(client, ws, fake.url, "eager")
        fake.script("eager", plan(("a", []), ("b", ["a"])))
        await client.call("orchestration.start", workspace_id=ws, ticketId=ticket["id"], agentId=planner)
        deadline = asyncio.get_running_loop().time() + 60
        # The sub-tickets are filed one after another (each a ticket of its own): wait for the whole plan.
        while len((await client.call("tickets.get", workspace_id=ws, ticketId=ticket["id"]))["subTickets"]) < 2:
            assert asyncio.get_running_loop().time() < deadline, "the plan was never stored"
            await asyncio.sleep(0.05)
        subs = (await client.call("tickets.get", workspace_id=ws, ticketId=ticket["id"]))["subTickets"]
        assert sorted(s["title"] for s in subs) == ["Do a", "Do b"]


async def test_deliverable_size_limit_both_sides(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, client, ws):
        for title, size in (("fits", DESCRIPTION_MAX), ("over", DESCRIPTION_MAX + 1)):
            orch = await planned(client, ws, fake, fake.url, title, plan(("a", [])))
            fake.script(f"work-{title}", text("done"))
            fake.script(f"synth-{title}", Reply(text="x" * size, chunk_size=4096))
            await client.call("orchestration.approve", workspace_id=ws, orchestrationId=orch["id"], all=True)
            orch = await until(client, ws, orch["id"], lambda o: o["status"] in ("completed", "failed"))
            ticket = await client.call("tickets.get", workspace_id=ws, ticketId=orch["ticketId"])
            run = await client.call("pipelines.runs.get", workspace_id=ws, runId=orch["workRunId"])
            if title == "fits":
                assert orch["status"] == "completed" and len(orch["deliverable"]) == size
                assert ticket["status"] == "done"
            else:
                assert orch["status"] == "failed" and orch["deliverable"] is None
                says = f"the deliverable is {size} characters; a ticket holds at most {DESCRIPTION_MAX}"
                assert says in orch["error"]
                # Nothing lost: the run keeps it, the ticket is as it was.
                assert len(run["state"]["deliverable"]) == size
                assert ticket["status"] == "inProgress"


async def test_dag_limits_and_refusals(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (srv, client, ws):
        orch = await planned(client, ws, fake, fake.url, "lim", plan(("a", [])))
        oid = orch["id"]
        at_limit = [{"key": f"n{i}", "title": f"N{i}"} for i in range(MAX_NODES)]
        orch = await client.call("orchestration.editDag", workspace_id=ws, orchestrationId=oid, nodes=at_limit)
        assert len(orch["nodes"]) == MAX_NODES
        over = [*at_limit, {"key": "one_more", "title": "X"}]
        assert f"an orchestration holds at most {MAX_NODES}" in await refused(
            client, "invalid_args", "orchestration.editDag", workspace_id=ws, orchestrationId=oid, nodes=over
        )
        one = await client.call(
            "orchestration.editDag", workspace_id=ws, orchestrationId=oid, nodes=[{"key": "only", "title": "One"}]
        )
        assert [n["key"] for n in one["nodes"]] == ["only"]
        for bad, says in (
            ([], "an orchestration needs at least one sub-ticket"),
            ([{"key": "Bad-Key", "title": "x"}], "nodes[0].key must be a lower-case name"),
            ([{"key": "a", "title": "x", "dependsOn": ["ghost"]}], "depends on unknown node 'ghost'"),
            ([{"key": "a", "title": "x"}, {"key": "a", "title": "y"}], "node key 'a' is used twice"),
        ):
            assert says in await refused(
                client, "invalid_args", "orchestration.editDag", workspace_id=ws, orchestrationId=oid, nodes=bad
            )
        # A planner whose DAG has a cycle leaves the orchestration failed, naming the cycle.
        bad = await planned(client, ws, fake, fake.url, "cyc", plan(("a", ["b"]), ("b", ["a"])))
        assert bad["status"] == "failed" and "a → b → a" in bad["error"], bad

        # A guest reads but neither starts, edits nor approves; another workspace's member sees nothing.
        guest_t = await srv.new_user_token(ws, "guest", name="g")
        other_ws = await srv.new_workspace("other")
        other_t = await srv.new_user_token(other_ws, "member", name="o")
        async with RpcClient(srv.ws_url, guest_t) as guest, RpcClient(srv.ws_url, other_t) as other:
            assert (await guest.call("orchestration.get", workspace_id=ws, orchestrationId=oid))["id"] == oid
            await refused(guest, "forbidden", "orchestration.approve", workspace_id=ws, orchestrationId=oid, all=True)
            await refused(guest, "forbidden", "orchestration.editDag", workspace_id=ws, orchestrationId=oid, nodes=[])
            await refused(
                guest, "forbidden", "orchestration.start", workspace_id=ws, ticketId=orch["ticketId"], agentId="x"
            )
            await refused(other, "forbidden", "orchestration.get", workspace_id=ws, orchestrationId=oid)
            await refused(other, "forbidden", "orchestration.approve", workspace_id=ws, orchestrationId=oid, all=True)
            # The id names nothing in the caller's own workspace.
            theirs = {"workspace_id": other_ws, "orchestrationId": oid}
            await refused(other, "not_found", "orchestration.approve", **theirs, all=True)
        assert (await client.call("orchestration.get", workspace_id=ws, orchestrationId=oid))["status"] == "planned"


async def mcp(http: httpx.AsyncClient, headers: dict[str, str], method: str, params: dict[str, Any]) -> Any:
    """One JSON-RPC request on ``/mcp``; its result (the reply as JSON or as one server-sent event)."""
    reply = await http.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers=headers
    )
    assert reply.status_code == 200, reply.text
    text_ = reply.text
    if reply.headers["content-type"].startswith("text/event-stream"):
        text_ = next(line[5:] for line in text_.splitlines() if line.startswith("data:"))
    return json.loads(text_)["result"]


async def mcp_opened(http: httpx.AsyncClient, token: str) -> dict[str, str]:
    """An MCP session opened on ``/mcp`` with ``token``: the headers its requests carry."""
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "authorization": f"Bearer {token}",
    }
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    opened = await http.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, headers=headers
    )
    return headers | {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}


async def test_the_orchestration_ops_are_mcp_tools(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (srv, client, ws):
        orch = await planned(client, ws, fake, fake.url, "mcp", plan(("a", [])))
        async with httpx.AsyncClient(base_url=srv.url, timeout=30) as http:
            headers = await mcp_opened(http, srv.owner_token)
            names = {t["name"] for t in (await mcp(http, headers, "tools/list", {}))["tools"]}
            ops = {"orchestration.start", "orchestration.get", "orchestration.editDag", "orchestration.approve"}
            assert ops <= names
            args = {"workspace_id": ws, "orchestrationId": orch["id"], "all": True}
            done = await mcp(http, headers, "tools/call", {"name": "orchestration.approve", "arguments": args})
            assert not done.get("isError"), done
            assert orch["id"] in json.dumps(done)
        assert (await until(client, ws, orch["id"], lambda o: o["status"] != "planned"))["status"] != "planned"
