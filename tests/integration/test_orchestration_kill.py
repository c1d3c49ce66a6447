"""kill -9 of the server during an orchestration: the next server resumes it, and no sub-ticket is worked twice
to completion. Real ``hangar serve`` processes on one data directory, agents on a scripted model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.integration.test_orchestration import plan, start, states, until
from tests.support.processes import hangar_serve, owner_token
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed
from tests.unit.agents.fake_openai import Reply, running_fake_openai, text

pytestmark = pytest.mark.slow


async def test_kill_9_mid_orchestration_resumes_without_working_a_sub_ticket_twice(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = owner_token(data)
    async with running_fake_openai() as fake:
        fake.script("plan", plan(("a", []), ("b", ["a"]), ("c", ["a"])))
        fake.script("work", text("result of a"), text("result of b"))
        with hangar_serve(data) as srv:
            async with RpcClient(srv.ws_url, token) as c:
                ws = (await c.call("workspaces.create", name="orch"))["id"]
                ids = {}
                for m in ("plan", "work", "synth"):
                    adapter = {"type": "openai", "baseUrl": fake.url, "model": m}
                    ids[m] = (await c.call("agents.create", workspace_id=ws, name=m, adapter=adapter))["id"]
                ticket = await c.call("tickets.create", workspace_id=ws, title="Big", description="All of it.")
                oid = (await start(c, ws, ticket["id"], ids))["id"]
                await until(c, ws, oid, lambda o: o["status"] == "planned")
                await c.call("orchestration.approve", workspace_id=ws, orchestrationId=oid, nodeKeys=["a", "b"])
                # a and b done; c waits for its approval when the server dies.
                await until(c, ws, oid, lambda o: states(o) == {"a": "done", "b": "done", "c": "awaitingApproval"})
            srv.kill9()
        # c's model call stalls: the second server dies while c's agent is at work.
        fake.script("work", Reply(text="result of c", stall_seconds=30))
        with hangar_serve(data) as srv:
            async with RpcClient(srv.ws_url, token) as c:
                orch = await c.call("orchestration.get", workspace_id=ws, orchestrationId=oid)
                assert orch["status"] == "running" and states(orch)["c"] == "awaitingApproval", orch
                await c.call("orchestration.approve", workspace_id=ws, orchestrationId=oid, nodeKeys=["c"])
                await until(c, ws, oid, lambda o: states(o)["c"] == "running")
                while len(fake.bodies_for("work")) < 3:  # c's request reached the model
                    await asyncio.sleep(0.05)
            srv.kill9()
        fake.script("synth", text("The deliverable."))
        with hangar_serve(data) as srv:
            async with RpcClient(srv.ws_url, token) as c:
                orch = await until(c, ws, oid, lambda o: o["status"] in ("completed", "failed"))
                assert_completed(orch)
                assert orch["deliverable"] == "The deliverable."
                # c's agent died with the server: its step failed, leaving a failure sentinel; a and b kept theirs.
                assert states(orch) == {"a": "done", "b": "done", "c": "failed"}
                run = await c.call("pipelines.runs.get", workspace_id=ws, runId=orch["workRunId"])
                attempts = {s["stepId"]: s["attempts"] for s in run["steps"]}
                assert [attempts[f"work_{k}"] for k in "abc"] == [1, 1, 1]
                runs = (await c.call("runs.list", workspace_id=ws))["runs"]
                per_step = [r["dispatchedBy"].rsplit("/", 1)[-1] for r in runs if "work_" in r["dispatchedBy"]]
                assert sorted(per_step) == ["work_a#1", "work_b#1", "work_c#1"]
                assert len(fake.bodies_for("work")) == 3  # the model was asked once per sub-ticket
                synth_prompt = fake.bodies_for("synth")[0]["messages"][-1]["content"]
                assert "result of a" in synth_prompt and "FAILED" in synth_prompt
