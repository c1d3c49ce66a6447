"""The pipelines ops over the real RPC socket of the real server (with the pipelines part started)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hangar.core.clock import FakeClock
from hangar.pipelines.engine import PipelineEngine
from tests.support.confined import host_pids
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server


def template(tid: str = "greet", *extra: dict[str, Any], edges: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "id": tid,
        "name": "Greet",
        "steps": [
            {"id": "start", "kind": "trigger", "body": "pipeline.trigger"},
            {
                "id": "hello",
                "kind": "listen",
                "body": "shell.run",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"script": "printf 'hello %s' {{who}}", "outputKey": "greeting", "label": "Say hello"},
            },
            *extra,
        ],
        "edges": edges or [],
    }


async def wait_status(client: RpcClient, ws: str, run_id: str, wanted: str, timeout: float = 20) -> dict[str, Any]:
    for _ in range(int(timeout / 0.05)):
        run = await client.call("pipelines.runs.get", workspace_id=ws, runId=run_id)
        if run["status"] == wanted:
            return dict(run)
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} never reached {wanted}: {run}")


@pytest.mark.packs("terminal")
async def test_templates_runs_and_watch_over_rpc(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        ws = await srv.new_workspace("pipes")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            created = await c.call("pipelines.templates.create", workspace_id=ws, template=template())
            assert created == {"id": "greet", "warnings": []}
            with pytest.raises(RpcError) as dup:
                await c.call("pipelines.templates.create", workspace_id=ws, template=template())
            assert dup.value.code == "conflict"
            listed = await c.call("pipelines.templates.list", workspace_id=ws)
            assert [(t["id"], t["name"], t["steps"]) for t in listed["templates"]] == [("greet", "Greet", 2)]

            watch = await c.watch("pipelines.runs.watch", workspace_id=ws)
            assert watch.result == {"runs": []}
            started = await c.call(
                "pipelines.runs.start", workspace_id=ws, templateId="greet", payload={"who": "Ann O'Neil"}
            )
            run = await wait_status(c, ws, started["runId"], "completed")
            assert run["state"]["greeting"] == "hello Ann O'Neil"
            assert run["trigger"]["kind"] == "manual" and run["trigger"]["id"]
            hello = next(s for s in run["steps"] if s["stepId"] == "hello")
            assert hello["label"] == "Say hello" and hello["attempts"] == 1 and hello["durationMs"] is not None
            # The run carries the template it started with (what a monitor draws), not a later edit of it.
            assert run["template"]["id"] == "greet" and [s["id"] for s in run["template"]["steps"]] == [
                "start",
                "hello",
            ]
            edited = template(
                "greet",
                {
                    "id": "more",
                    "kind": "listen",
                    "body": "shell.run",
                    "trigger": {"sourceStepIds": ["hello"]},
                    "config": {"script": "true"},
                },
            )
            await c.call("pipelines.templates.update", workspace_id=ws, templateId="greet", template=edited)
            again = await c.call("pipelines.runs.get", workspace_id=ws, runId=started["runId"])
            assert [s["id"] for s in again["template"]["steps"]] == ["start", "hello"]
            seen: set[tuple[str, str]] = set()
            while ("hello", "completed") not in seen:
                frame = await watch.next()
                assert frame["runId"] == started["runId"]
                seen |= {(s["stepId"], s["status"]) for s in frame["steps"]}
            assert ("hello", "running") in seen
            await watch.close()

            one = await c.watch("pipelines.runs.watch", workspace_id=ws, runId=started["runId"])
            assert one.result["runId"] == started["runId"] and one.result["status"] == "completed"
            await one.close()
            with pytest.raises(RpcError) as missing:
                await c.watch("pipelines.runs.watch", workspace_id=ws, runId="nope")
            assert missing.value.code == "not_found"

            runs = await c.call("pipelines.runs.list", workspace_id=ws, templateId="greet")
            assert [r["runId"] for r in runs["runs"]] == [started["runId"]]
            triggers = await c.call("pipelines.triggers.list", workspace_id=ws, templateId="greet")
            assert [t["kind"] for t in triggers["triggers"]] == ["manual"]
            bodies = await c.call("pipelines.bodies.list", workspace_id=ws)
            assert {"pipeline.trigger", "shell.run", "flow.router", "pipeline.subPipeline"} <= {
                b["key"] for b in bodies["bodies"]
            }


async def test_bad_templates_are_refused_naming_the_problem(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        ws = await srv.new_workspace("pipes")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            bad = template(
                "bad",
                {
                    "id": "x",
                    "kind": "listen",
                    "body": "shell.run",
                    "trigger": {"sourceStepIds": ["ghost"]},
                    "config": {"script": "true"},
                },
            )
            with pytest.raises(RpcError) as info:
                await c.call("pipelines.templates.create", workspace_id=ws, template=bad)
            assert info.value.code == "invalid_args"
            assert "step x: trigger.sourceStepIds names unknown step 'ghost'" in info.value.message
            checked = await c.call("pipelines.templates.validate", workspace_id=ws, template=bad)
            assert checked["valid"] is False and checked["problems"]
            with pytest.raises(RpcError) as nf:
                await c.call("pipelines.runs.start", workspace_id=ws, templateId="nope")
            assert nf.value.code == "not_found"
            with pytest.raises(RpcError) as upd:
                await c.call("pipelines.templates.update", workspace_id=ws, templateId="other", template=template())
            assert upd.value.code == "invalid_args"


@pytest.mark.packs("terminal")
async def test_roles_guest_reads_member_runs_admin_deletes(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        ws = await srv.new_workspace("pipes")
        guest = await srv.new_user_token(ws, "guest", name="gus")
        member = await srv.new_user_token(ws, "member", name="meg")
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            await owner.call("pipelines.templates.create", workspace_id=ws, template=template())
        async with RpcClient(srv.ws_url, guest) as g:
            assert (await g.call("pipelines.templates.list", workspace_id=ws))["templates"]
            with pytest.raises(RpcError) as info:
                await g.call("pipelines.runs.start", workspace_id=ws, templateId="greet", payload={"who": "x"})
            assert info.value.code == "forbidden"
        async with RpcClient(srv.ws_url, member) as m:
            await m.call("pipelines.runs.start", workspace_id=ws, templateId="greet", payload={"who": "x"})
            with pytest.raises(RpcError) as info:
                await m.call("pipelines.templates.delete", workspace_id=ws, templateId="greet")
            assert info.value.code == "forbidden"


@pytest.mark.packs("terminal")
async def test_nested_sub_pipelines_merge_child_state(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        ws = await srv.new_workspace("pipes")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            child = {
                "id": "child",
                "steps": [
                    {"id": "start", "kind": "trigger"},
                    {
                        "id": "gate",
                        "kind": "listen",
                        "body": "pipeline.subPipeline",
                        "trigger": {"sourceStepIds": ["start"]},
                        "config": {"extras": {"templateId": "greet"}, "inputKeys": ["who"], "outputKey": "gc"},
                    },
                ],
            }
            await c.call("pipelines.templates.create", workspace_id=ws, template=template())
            await c.call("pipelines.templates.create", workspace_id=ws, template=child)
            started = await c.call("pipelines.runs.start", workspace_id=ws, templateId="child", payload={"who": "z"})
            run = await wait_status(c, ws, started["runId"], "completed")
            assert run["state"]["gc"]["greeting"] == "hello z"
            (kid,) = (await c.call("pipelines.runs.list", workspace_id=ws, parentRunId=started["runId"]))["runs"]
            assert kid["templateId"] == "greet" and kid["status"] == "completed"


@pytest.mark.packs("terminal")
async def test_cancel_stops_a_running_script_and_its_children(tmp_path: Path) -> None:
    slow = {
        "id": "slow",
        "kind": "listen",
        "body": "shell.run",
        "trigger": {"sourceStepIds": ["start"]},
        "config": {"script": "sleep 300 & echo $! > pid; wait"},
    }
    raw = {"id": "slow", "steps": [{"id": "start", "kind": "trigger"}, slow]}
    async with running_server(tmp_path / "data") as srv:
        ws = await srv.new_workspace("pipes")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
            started = await c.call("pipelines.runs.start", workspace_id=ws, templateId="slow")
            pid_file = srv.data_dir / "pipelines" / started["runId"] / "pid"  # the run's working directory
            for _ in range(400):
                if pid_file.exists() and pid_file.read_text().strip():
                    break
                await asyncio.sleep(0.05)
            pid = int(pid_file.read_text())  # in the run's enclosure
            assert host_pids(pid, "sleep")
            snap = await c.call("pipelines.runs.cancel", workspace_id=ws, runId=started["runId"])
            assert snap["status"] == "cancelled" and snap["steps"]["slow"]["status"] == "cancelled"
            for _ in range(100):
                if not host_pids(pid, "sleep"):
                    break
                await asyncio.sleep(0.05)
            assert not host_pids(pid, "sleep"), "the script's child survived the cancel"
            with pytest.raises(RpcError) as again:
                await c.call("pipelines.runs.cancel", workspace_id=ws, runId=started["runId"])
            assert again.value.code == "conflict"


@pytest.mark.packs("terminal")
async def test_event_trigger_and_schedule_trigger_with_fake_clock(tmp_path: Path) -> None:
    clock = FakeClock()
    async with running_server(tmp_path, clock=clock) as srv:
        ws = await srv.new_workspace("pipes")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("pipelines.templates.create", workspace_id=ws, template=template())
            trig = await c.call(
                "pipelines.triggers.create",
                workspace_id=ws,
                templateId="greet",
                kind="event",
                eventType="person.arrived",
                payload={"who": "default"},
            )
            assert trig["kind"] == "event"
            await c.call("pipelines.emit", workspace_id=ws, eventType="person.arrived", payload={"who": "Bo"})
            engine = srv.ctx.service(PipelineEngine)
            for _ in range(200):
                runs = (await c.call("pipelines.runs.list", workspace_id=ws))["runs"]
                if runs and runs[0]["status"] == "completed":
                    break
                await asyncio.sleep(0.05)
            (run,) = runs
            assert run["trigger"] == {"kind": "event", "id": trig["id"]}
            paused = await c.call("pipelines.triggers.setEnabled", workspace_id=ws, triggerId=trig["id"], enabled=False)
            assert paused["enabled"] is False
            await c.call("pipelines.emit", workspace_id=ws, eventType="person.arrived", payload={"who": "Cy"})
            await engine.settle()
            assert len((await c.call("pipelines.runs.list", workspace_id=ws))["runs"]) == 1
            detail = await c.call("pipelines.runs.get", workspace_id=ws, runId=run["runId"])
            assert detail["payload"] == {"who": "Bo"} and detail["state"]["greeting"] == "hello Bo"

            with pytest.raises(RpcError) as bad:
                await c.call(
                    "pipelines.triggers.create", workspace_id=ws, templateId="greet", kind="schedule", cron="every day"
                )
            assert bad.value.code == "invalid_args" and "cron" in bad.value.message
            sched = await c.call(
                "pipelines.triggers.create",
                workspace_id=ws,
                templateId="greet",
                kind="schedule",
                cron="*/5 * * * *",
                payload={"who": "cron"},
            )
            assert sched["nextFireAt"] == "2026-01-01T00:05:00Z"
            clock.advance(4 * 60)
            await asyncio.sleep(0.3)
            assert len((await c.call("pipelines.runs.list", workspace_id=ws))["runs"]) == 1
            clock.advance(61)
            for _ in range(200):
                runs = (await c.call("pipelines.runs.list", workspace_id=ws))["runs"]
                if len(runs) == 2 and runs[0]["status"] == "completed":
                    break
                await asyncio.sleep(0.05)
            scheduled = runs[0]
            assert scheduled["trigger"] == {"kind": "schedule", "id": sched["id"]}
            detail = await c.call("pipelines.runs.get", workspace_id=ws, runId=scheduled["runId"])
            assert detail["payload"] == {"who": "cron", "scheduledAt": "2026-01-01T00:05:00Z"}
            # Ten idle minutes later, two more slots passed while nobody looked: one run, for the latest slot.
            listed = await c.call("pipelines.triggers.list", workspace_id=ws, templateId="greet")
            assert (
                next(t for t in listed["triggers"] if t["kind"] == "schedule")["nextFireAt"] == "2026-01-01T00:10:00Z"
            )
            await engine.settle()
