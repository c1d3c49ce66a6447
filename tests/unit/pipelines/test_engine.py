"""The engine end to end against a real workspace database: the spec's semantics, row by row."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hangar.core.clock import FakeClock
from hangar.core.event_types import StoredEvent
from hangar.pipelines import StepStatus, TaskFinished
from hangar.pipelines import template as tpl
from hangar.pipelines.layout import CONTROL_DIR
from tests.support.locks import lock_held_elsewhere
from tests.unit.pipelines.bodies_for_tests import CALLS, GATES, TEST_BODIES, approval_wait
from tests.unit.pipelines.harness import WS, Harness, harness, listen, steps


@pytest.fixture
async def h(tmp_path: Path) -> Any:
    GATES.clear()
    CALLS.clear()
    async with harness(tmp_path, bodies=TEST_BODIES) as hh:
        yield hh


@pytest.fixture
async def fh(tmp_path: Path) -> Any:
    """A harness on a fake clock."""
    async with harness(tmp_path, clock=FakeClock(), bodies=[*TEST_BODIES, approval_wait]) as hh:
        yield hh


def val(sid: str, *src: str, value: Any = None, **config: Any) -> dict[str, Any]:
    extras = config.pop("extras", {})
    return listen(sid, *src, body="test.value", extras={"value": value, **extras}, **config)


def status(snap: dict[str, Any]) -> dict[str, str]:
    return {sid: s["status"] for sid, s in snap["steps"].items()}


async def until(cond: Any, timeout: float = 5.0) -> None:
    for _ in range(int(timeout / 0.01)):
        if cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never became true")


async def test_router_then_join_fires_once_routed_branch_settles(h: Harness) -> None:
    raw = steps(
        val("count", "start", value=3, outputKey="errors"),
        {
            "id": "route",
            "kind": "router",
            "body": "flow.router",
            "trigger": {"sourceStepIds": ["count"]},
            "config": {"extras": {"predicate": {"type": "comparison", "left": "errors", "op": "gt", "right": 0}}},
        },
        val("fix", "route", value="fixed", outputKey="fix"),
        val("ignore", "route", value="ignored", outputKey="ignore"),
        val("after_ignore", "ignore", value=1, outputKey="after"),
        {"id": "both", "kind": "join", "body": "test.value", "waitForStepIds": ["fix", "ignore"]},
        {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["both"]}},
        edges=[
            {"from": "route", "to": "fix", "routeKey": "true"},
            {"from": "route", "to": "ignore", "routeKey": "false"},
        ],
    )
    snap = await h.run(raw)
    assert snap["status"] == "completed"
    assert status(snap) == {
        "start": "completed",
        "count": "completed",
        "route": "completed",
        "fix": "completed",
        "ignore": "skipped",
        "after_ignore": "skipped",
        "both": "completed",
        "end": "completed",
    }
    assert snap["state"] == {"errors": 3, "fix": "fixed"}


async def test_switch_router_routes_first_contained_case_else_default(h: Harness) -> None:
    def raw(text: str) -> dict[str, Any]:
        return steps(
            val("v", "start", value=text, outputKey="kind"),
            {
                "id": "route",
                "kind": "router",
                "body": "flow.router",
                "trigger": {"sourceStepIds": ["v"]},
                "config": {"extras": {"switchKey": "kind", "cases": ["bug", "feature"], "default": "other"}},
            },
            val("bug", "route", value=1),
            val("other", "route", value=1),
            edges=[
                {"from": "route", "to": "bug", "routeKey": "bug"},
                {"from": "route", "to": "other", "routeKey": "other"},
            ],
        )

    assert status(await h.run(raw("A BUG report")))["bug"] == "completed"
    snap = await h.run(raw("a question"))
    assert status(snap)["bug"] == "skipped" and status(snap)["other"] == "completed"


async def test_reducers_under_real_parallel_branches(h: Harness) -> None:
    branches = []
    for i in range(5):
        branches.append(val(f"a{i}", "start", value=i, outputKey="items", reducer="append", extras={"gate": "g"}))
        branches.append(val(f"s{i}", "start", value=i + 1, outputKey="total", reducer="sum", extras={"gate": "g"}))
        branches.append(
            val(f"m{i}", "start", value={f"k{i}": i}, outputKey="map", reducer="mergeMaps", extras={"gate": "g"})
        )
        branches.append(
            val(f"l{i}", "start", value=[i, i], outputKey="lists", reducer="mergeLists", extras={"gate": "g"})
        )
        branches.append(val(f"o{i}", "start", value=i, outputKey="last", extras={"gate": "g"}))
    run_id = await h.start(steps(*branches))
    # Every branch is running at once before any finishes.
    await until(lambda: len(CALLS) == 25)
    GATES["g"].set()
    await h.engine.settle()
    snap = await h.engine.snapshot(WS, run_id)
    assert snap["status"] == "completed"
    st = snap["state"]
    assert sorted(st["items"]) == [0, 1, 2, 3, 4]
    assert st["total"] == 15
    assert st["map"] == {f"k{i}": i for i in range(5)}
    assert sorted(st["lists"]) == sorted([i for i in range(5) for _ in range(2)])
    assert st["last"] in range(5)


async def test_retries_wait_per_backoff_on_the_injectable_clock(fh: Harness) -> None:
    clock = fh.clock
    assert isinstance(clock, FakeClock)
    raw = steps(
        listen(
            "flaky",
            "start",
            body="test.flaky",
            outputKey="attempt",
            retryPolicy={"maxAttempts": 4, "backoff": "exponential", "initialDelayMs": 1000},
            extras={"failTimes": 2},
        )
    )
    run_id = await fh.start(raw)
    delays = []
    for _ in range(2):
        await until(lambda: clock.pending_sleepers > 0)
        snap = await fh.engine.snapshot(WS, run_id)
        assert snap["steps"]["flaky"]["status"] == "pending"
        before = clock.monotonic()
        clock.advance(0.5)
        await asyncio.sleep(0.05)
        assert (await fh.engine.snapshot(WS, run_id))["steps"]["flaky"]["status"] == "pending"  # too early
        clock.advance(10)
        delays.append(clock.monotonic() - before)
        await until(lambda: clock.pending_sleepers == 0)
    await fh.engine.settle()
    snap = await fh.engine.snapshot(WS, run_id)
    assert snap["status"] == "completed"
    assert snap["steps"]["flaky"] == {"status": "completed", "attempts": 3, "error": None}
    assert snap["state"] == {"attempt": 3}


async def test_retries_exhausted_fail_the_run_with_last_error(fh: Harness) -> None:
    clock = fh.clock
    assert isinstance(clock, FakeClock)
    raw = steps(
        listen(
            "flaky",
            "start",
            body="test.flaky",
            retryPolicy={"maxAttempts": 2, "initialDelayMs": 10},
            extras={"failTimes": 5},
        ),
    )
    run_id = await fh.start(raw)
    await until(lambda: clock.pending_sleepers > 0)
    clock.advance(1)
    await fh.engine.settle()
    snap = await fh.engine.snapshot(WS, run_id)
    assert snap["status"] == "failed"
    assert snap["steps"]["flaky"] == {"status": "failed", "attempts": 2, "error": "attempt 2 failed"}


async def test_continue_on_fail_stashes_error_and_run_goes_on(h: Harness) -> None:
    snap = await h.run(
        steps(
            val("keep", "start", value="kept", outputKey="kept"),
            listen("boom", "keep", body="test.raise", continueOnFail=True),
            val("after", "boom", value="ran", outputKey="after"),
        )
    )
    assert snap["status"] == "completed"
    assert snap["state"] == {
        "kept": "kept",
        "_stepErrors": {"boom": "body test.raise raised RuntimeError: kaboom"},
        "after": "ran",
    }
    assert snap["steps"]["boom"]["status"] == "failed"


async def test_failure_without_continue_fails_run_keeps_state_and_cancels_the_rest(h: Harness) -> None:
    snap = await h.run(
        steps(
            val("keep", "start", value="kept", outputKey="kept"),
            listen("boom", "keep", body="test.raise"),
            val("slow", "keep", value=1, extras={"gate": "never"}),
            val("after", "boom", value="ran"),
        )
    )
    assert snap["status"] == "failed"
    assert snap["state"] == {"kept": "kept"}
    assert status(snap) == {
        "start": "completed",
        "keep": "completed",
        "boom": "failed",
        "slow": "cancelled",
        "after": "cancelled",
    }
    run = (await h.engine.store.list_runs(WS))[0]
    assert run.error == "step boom failed: body test.raise raised RuntimeError: kaboom"


@pytest.mark.parametrize(
    ("step", "error"),
    [
        (listen("s", "start", body="shell.run", script="echo {{nope}}"), "{{nope}} is not in the pipeline state"),
        (listen("s", "start", body="test.bad"), "body test.bad returned dict, not a StepResult"),
        (val("s", "start", inputKeys=["pre", "absent"]), "input key 'absent' is not in the pipeline state"),
        (
            val(
                "s",
                "start",
                value={"decision": "maybe"},
                outputKey="o",
                outputSchema={"properties": {"decision": {"enum": ["approved", "rejected"]}}},
            ),
            'output does not match outputSchema: $.decision: "maybe" is not one of ["approved", "rejected"]',
        ),
        (listen("s", "start", body="shell.run", script="echo oops >&2; exit 3"), "script exited with status 3: oops"),
    ],
)
async def test_bad_input_fails_that_step_with_a_clear_error(h: Harness, step: dict[str, Any], error: str) -> None:
    snap = await h.run(
        steps(val("pre", "start", value=1, outputKey="pre"), {**step, "trigger": {"sourceStepIds": ["pre"]}})
    )
    assert snap["status"] == "failed"
    assert snap["state"] == {"pre": 1}
    assert snap["steps"]["s"]["status"] == "failed"
    assert error in snap["steps"]["s"]["error"]


async def test_timeout_ms_on_the_clock(fh: Harness) -> None:
    clock = fh.clock
    assert isinstance(clock, FakeClock)
    run_id = await fh.start(
        steps(listen("nap", "start", body="test.sleep", timeoutMs=500, continueOnFail=True, extras={"seconds": 60}))
    )
    await until(lambda: clock.pending_sleepers >= 2)
    clock.advance(0.6)
    await fh.engine.settle()
    snap = await fh.engine.snapshot(WS, run_id)
    assert snap["steps"]["nap"] == {"status": "timedOut", "attempts": 1, "error": "timed out after 500 ms"}
    assert snap["state"]["_stepErrors"] == {"nap": "timed out after 500 ms"}
    assert snap["status"] == "completed"


async def test_run_when_unmet_skips_and_propagates(h: Harness) -> None:
    snap = await h.run(
        steps(
            val("flag", "start", value=False, outputKey="go"),
            val("maybe", "flag", value=1, outputKey="m", extras={"runWhen": "go"}),
            val("after", "maybe", value=1, outputKey="a"),
            val("neg", "flag", value=2, outputKey="n", extras={"runWhen": "!go"}),
        )
    )
    assert status(snap)["maybe"] == "skipped" and status(snap)["after"] == "skipped"
    assert snap["state"] == {"go": False, "n": 2}


async def test_unregistered_body_never_executes_and_does_not_fail_the_run(h: Harness) -> None:
    loaded = tpl.load(steps(listen("ghost", "start", body="ghost.body"), val("after", "ghost")), h.engine.bodies)
    assert loaded.warnings
    run_id = await h.engine.start_run(WS, loaded.template)
    assert run_id
    await h.engine.settle()
    snap = await h.engine.snapshot(WS, run_id)
    assert snap["status"] == "completed"
    assert snap["steps"]["ghost"] == {
        "status": "skipped",
        "attempts": 0,
        "error": "body 'ghost.body' is not registered; the step never executes",
    }


async def test_terminal_result_ends_run_and_cancels_unstarted(h: Harness) -> None:
    snap = await h.run(
        steps(
            listen("end", "start", body="test.terminal"),
            val("never", "end"),
            val("side", "start", extras={"gate": "x"}),
        )
    )
    assert snap["status"] == "completed"
    assert snap["state"] == {"ended_by": "end"}
    assert status(snap)["never"] == "cancelled"


async def test_nothing_runnable_completes_the_run(h: Harness) -> None:
    snap = await h.run(steps(val("a", "start", value=1)))
    assert snap["status"] == "completed"


async def test_suspend_until_event_resumes_with_payload(h: Harness) -> None:
    run_id = await h.start(
        steps(
            listen(
                "wait",
                "start",
                body="test.waitEvent",
                outputKey="approval",
                extras={"eventType": "x.approved", "match": {"id": 7}},
            ),
            val("after", "wait", value=1, outputKey="after"),
        )
    )
    await h.engine.settle()
    snap = await h.engine.snapshot(WS, run_id)
    assert snap["status"] == "suspended" and status(snap)["wait"] == "suspended"
    assert snap["state"] == {"waiting": "wait"}
    other = await h.bus.publish_raw(WS, "x.approved", {"id": 8})
    assert await h.engine.on_event(other) == [run_id]  # delivered, but the match refuses it
    await h.engine.settle()
    assert (await h.engine.snapshot(WS, run_id))["status"] == "suspended"
    ev = await h.bus.publish_raw(WS, "x.approved", {"id": 7, "by": "ann"})
    await h.engine.on_event(ev)
    await h.engine.settle()
    snap = await h.engine.snapshot(WS, run_id)
    assert snap["status"] == "completed"
    assert snap["state"]["approval"] == {"id": 7, "by": "ann"}


async def test_event_published_before_suspension_is_not_missed(h: Harness) -> None:
    snap = await h.run(
        steps(
            listen(
                "wait",
                "start",
                body="test.waitEvent",
                outputKey="got",
                extras={"eventType": "x.early", "publishFirst": {"v": 1}},
            )
        )
    )
    assert snap["status"] == "completed"
    assert snap["state"]["got"] == {"v": 1}


async def test_event_from_before_the_step_started_does_not_resume_it(h: Harness) -> None:
    await h.bus.publish_raw(WS, "x.old", {"v": 0})
    snap = await h.run(steps(listen("wait", "start", body="test.waitEvent", extras={"eventType": "x.old"})))
    assert snap["status"] == "suspended"


async def test_tasks_finished_before_and_after_suspension(h: Harness) -> None:
    run_id = await h.start(
        steps(
            listen(
                "wait",
                "start",
                body="test.waitTasks",
                outputKey="outs",
                extras={"taskIds": ["t1", "t2"], "finishFirst": ["t1"]},
            )
        )
    )
    await h.engine.settle()
    assert (await h.engine.snapshot(WS, run_id))["status"] == "suspended"
    await h.engine.publish(TaskFinished(workspace_id=WS, task_id="t2", outcome="completed", output={"t": "t2"}))
    await h.engine.settle()
    snap = await h.engine.snapshot(WS, run_id)
    assert snap["status"] == "completed"
    assert snap["state"]["outs"] == {"t1": {"t": "t1"}, "t2": {"t": "t2"}}


async def test_failed_task_fails_the_waiting_step(h: Harness) -> None:
    run_id = await h.start(steps(listen("wait", "start", body="test.waitTasks", extras={"taskIds": ["t9"]})))
    await h.engine.settle()
    await h.engine.publish(TaskFinished(workspace_id=WS, task_id="t9", outcome="failed"))
    await h.engine.settle()
    snap = await h.engine.snapshot(WS, run_id)
    assert snap["status"] == "failed"
    assert snap["steps"]["wait"]["error"] == "task t9 finished with outcome failed"


async def test_resuming_body_harvests_itself(h: Harness) -> None:
    run_id = await h.start(
        steps(listen("h", "start", body="test.harvest", outputKey="r", extras={"taskId": "agent-run-1"}))
    )
    await h.engine.settle()
    await h.engine.publish(
        TaskFinished(workspace_id=WS, task_id="agent-run-1", outcome="completed", output={"answer": 42})
    )
    await h.engine.settle()
    snap = await h.engine.snapshot(WS, run_id)
    assert snap["state"]["r"] == {"harvested": {"answer": 42}, "outcome": "completed"}
    assert snap["steps"]["h"]["attempts"] == 1


GATE = "orchestration.awaitApproval"  # the stand-in of bodies_for_tests


async def test_suspended_step_times_out_after_24_hours_unless_awaiting_approval(fh: Harness) -> None:
    clock = fh.clock
    assert isinstance(clock, FakeClock)
    run_id = await fh.start(
        steps(
            listen("w1", "start", body="test.waitEvent", continueOnFail=True, extras={"eventType": "x.never"}),
            listen("w2", "start", body=GATE, extras={"eventType": "x.never", "awaitApproval": True}),
        )
    )
    await fh.engine.settle()
    clock.advance(23 * 3600)
    assert await fh.engine.expire_suspensions(WS) == []
    clock.advance(3600 + 1)
    assert await fh.engine.expire_suspensions(WS) == [run_id]
    await fh.engine.settle()
    snap = await fh.engine.snapshot(WS, run_id)
    assert snap["steps"]["w1"] == {"status": "timedOut", "attempts": 1, "error": "suspended for more than 24 hours"}
    assert snap["steps"]["w2"]["status"] == "suspended"
    assert snap["status"] == "suspended"
    clock.advance(30 * 24 * 3600)
    assert await fh.engine.expire_suspensions(WS) == []


async def test_cancel_running_and_suspended_runs(h: Harness) -> None:
    running = await h.start(steps(val("slow", "start", extras={"gate": "hold"})))
    await until(lambda: "slow" in CALLS)
    await h.engine.cancel(WS, running)
    snap = await h.engine.snapshot(WS, running)
    assert snap["status"] == "cancelled" and status(snap)["slow"] == "cancelled"
    suspended = await h.start(steps(listen("w", "start", body="test.waitEvent", extras={"eventType": "x.never"})))
    await h.engine.settle()
    await h.engine.cancel(WS, suspended)
    snap = await h.engine.snapshot(WS, suspended)
    assert snap["status"] == "cancelled" and status(snap)["w"] == "cancelled"
    from hangar.errors import Conflict

    with pytest.raises(Conflict, match="already cancelled"):
        await h.engine.cancel(WS, suspended)


async def test_dry_run_reports_instead_of_doing(h: Harness, tmp_path: Path) -> None:
    marker = tmp_path / "touched"
    snap = await h.run(
        steps(
            listen("sh", "start", body="shell.run", script=f"touch {marker}"),
            val("v", "sh", value=1, outputKey="v"),
        ),
        dry_run=True,
    )
    assert snap["status"] == "completed"
    assert not marker.exists()
    assert snap["state"]["_dryRun"] == {"sh": f"bash -c touch {marker}", "v": "would run test.value"}
    assert "v" not in snap["state"] and "v" not in CALLS


async def test_sub_pipeline_runs_child_and_merges_its_state(h: Harness) -> None:
    child = {
        "id": "child",
        "steps": [{"id": "start", "kind": "trigger"}, val("c", "start", value="from child", outputKey="c")],
    }
    await h.engine.store.insert_template(
        WS, tpl.load(child, h.engine.bodies).template.to_wire(), by=None, now=h.clock.now()
    )
    snap = await h.run(
        steps(
            val("seed", "start", value="seed-value", outputKey="seed"),
            listen(
                "sub",
                "seed",
                body="pipeline.subPipeline",
                inputKeys=["seed"],
                outputKey="child_state",
                extras={"templateId": "child"},
            ),
        )
    )
    assert snap["status"] == "completed"
    assert snap["state"]["child_state"] == {"c": "from child"}
    (child_run,) = await h.engine.store.list_runs(WS, template_id="child")
    assert child_run.parent_run_id == snap["runId"] and child_run.payload == {"seed": "seed-value"}


async def test_progress_is_persisted_and_watchers_see_step_changes(h: Harness) -> None:
    frames: list[dict[str, Any]] = []

    async def watch() -> None:
        async for frame in h.engine.watch(WS, None):
            frames.append(frame)

    watcher = asyncio.create_task(watch())
    await asyncio.sleep(0)
    snap = await h.run(steps(listen("p", "start", body="test.progress")))
    watcher.cancel()
    _run, recs = await h.engine.store.load_run(WS, snap["runId"])
    assert recs["p"].progress == {"done": 1, "of": 2}
    seen = [(s["stepId"], s["status"]) for f in frames for s in f["steps"]]
    assert ("p", "running") in seen and ("p", "completed") in seen
    assert frames[-1]["status"] == "completed"


async def test_restart_resumes_suspended_run_from_the_store(tmp_path: Path) -> None:
    async with harness(tmp_path, bodies=TEST_BODIES) as h1:
        run_id = await h1.start(
            steps(
                listen("w", "start", body="test.waitEvent", outputKey="got", extras={"eventType": "x.go"}),
                val("after", "w", value=1, outputKey="after"),
            )
        )
        await h1.engine.settle()
    async with harness(tmp_path, bodies=TEST_BODIES) as h2:
        assert await h2.engine.resume_workspace(WS) == [run_id]
        await h2.engine.settle()
        ev = await h2.bus.publish_raw(WS, "x.go", {"ok": True})
        await h2.engine.on_event(ev)
        await h2.engine.settle()
        snap = await h2.engine.snapshot(WS, run_id)
        assert snap["status"] == "completed"
        assert snap["state"] == {"waiting": "w", "got": {"ok": True}, "after": 1}
        assert snap["steps"]["w"]["attempts"] == 1


async def test_cancelling_a_parent_cancels_its_running_child(h: Harness) -> None:
    child = {"id": "child", "steps": [{"id": "start", "kind": "trigger"}, val("c", "start", extras={"gate": "child"})]}
    await h.engine.store.insert_template(
        WS, tpl.load(child, h.engine.bodies).template.to_wire(), by=None, now=h.clock.now()
    )
    parent = await h.start(steps(listen("sub", "start", body="pipeline.subPipeline", extras={"templateId": "child"})))
    await until(lambda: "c" in CALLS)
    await h.engine.cancel(WS, parent)
    await h.engine.settle()
    (kid,) = await h.engine.store.list_runs(WS, parent_run_id=parent)
    assert kid.status.value == "cancelled"
    assert (await h.engine.snapshot(WS, parent))["steps"]["sub"]["status"] == "cancelled"


async def test_restart_during_a_retry_wait_keeps_the_retry_time(tmp_path: Path) -> None:
    clock = FakeClock()
    raw = steps(
        listen(
            "flaky",
            "start",
            body="test.flaky",
            outputKey="n",
            retryPolicy={"maxAttempts": 3, "initialDelayMs": 60_000},
            extras={"failTimes": 1},
        )
    )
    async with harness(tmp_path, clock=clock, bodies=TEST_BODIES) as h1:
        run_id = await h1.start(raw)
        await until(lambda: clock.pending_sleepers > 0)
    async with harness(tmp_path, clock=clock, bodies=TEST_BODIES) as h2:
        _run, recs = await h2.engine.store.load_run(WS, run_id)
        assert recs["flaky"].status is StepStatus.pending and recs["flaky"].attempts == 1
        await h2.engine.resume(WS, run_id)
        await until(lambda: clock.pending_sleepers > 0)
        clock.advance(30)
        await asyncio.sleep(0.05)
        assert (await h2.engine.snapshot(WS, run_id))["status"] == "running"
        clock.advance(31)
        await h2.engine.settle()
        snap = await h2.engine.snapshot(WS, run_id)
        assert snap["status"] == "completed" and snap["state"] == {"n": 2}


async def test_parent_resumes_from_a_finished_child_whose_announcement_was_lost(tmp_path: Path) -> None:
    GATES.clear()
    async with harness(tmp_path, bodies=TEST_BODIES) as h1:
        child = {
            "id": "child",
            "steps": [
                {"id": "start", "kind": "trigger"},
                val("c", "start", value=5, outputKey="v", extras={"gate": "kid"}),
            ],
        }
        await h1.engine.store.insert_template(
            WS, tpl.load(child, h1.engine.bodies).template.to_wire(), by=None, now=h1.clock.now()
        )
        parent = await h1.start(
            steps(listen("sub", "start", body="pipeline.subPipeline", outputKey="kid", extras={"templateId": "child"}))
        )
        await until(lambda: "c" in CALLS)
        for _ in range(500):
            if (await h1.engine.snapshot(WS, parent))["status"] == "suspended":
                break
            await asyncio.sleep(0.01)

        # The process dies after the child's end (and its announcement) is stored, before it is delivered.
        async def undelivered(ws: str, events: list[StoredEvent]) -> None:
            return None

        h1.engine.announce_committed = undelivered  # type: ignore[method-assign]
        GATES["kid"].set()
        await h1.engine.settle()
        assert (await h1.engine.snapshot(WS, parent))["status"] == "suspended"
    async with harness(tmp_path, bodies=TEST_BODIES) as h2:
        await h2.engine.resume_workspace(WS)
        await h2.engine.settle()
        snap = await h2.engine.snapshot(WS, parent)
        assert snap["status"] == "completed" and snap["state"]["kid"] == {"v": 5}


async def test_a_harvest_interrupted_by_a_crash_harvests_again_without_dispatching_again(tmp_path: Path) -> None:
    GATES.clear()
    CALLS.clear()
    raw = steps(listen("h", "start", body="test.slowHarvest", outputKey="out", extras={"taskId": "run-9"}))
    async with harness(tmp_path, bodies=TEST_BODIES) as h1:
        run_id = await h1.start(raw)
        await until(lambda: "dispatch" in CALLS)
        await h1.engine.settle()
        await h1.engine.publish(TaskFinished(workspace_id=WS, task_id="run-9", outcome="completed", output={"x": 1}))
        await until(lambda: "harvest" in CALLS)
    # The process stopped mid-harvest: the step is stored as running, with what resumed it.
    GATES.clear()
    GATES["harvest"] = asyncio.Event()
    GATES["harvest"].set()
    async with harness(tmp_path, bodies=TEST_BODIES) as h2:
        _run, recs = await h2.engine.store.load_run(WS, run_id)
        assert recs["h"].status is StepStatus.running and recs["h"].resume is not None
        await h2.engine.resume(WS, run_id)
        await h2.engine.settle()
        snap = await h2.engine.snapshot(WS, run_id)
    assert snap["status"] == "completed" and snap["state"]["out"] == {"x": 1}
    assert CALLS.count("dispatch") == 1 and CALLS.count("harvest") == 2


async def test_a_stop_request_from_elsewhere_cancels_a_running_run_promptly(h: Harness) -> None:
    from hangar.core.runcontrol import request_stop

    run_id = await h.start(steps(val("slow", "start", extras={"gate": "hold"}), val("after", "slow", value=1)))
    await until(lambda: "slow" in CALLS)
    # What another process's cancel writes: the driver here sees it without being told in-process.
    request_stop(h.engine.control_dir(run_id), "elsewhere", h.clock.now())
    await h.engine.wait(run_id)
    snap = await h.engine.snapshot(WS, run_id)
    assert snap["status"] == "cancelled"
    assert status(snap) == {"start": "completed", "slow": "cancelled", "after": "cancelled"}


async def test_a_run_asked_to_stop_while_nobody_drove_it_ends_cancelled_when_next_driven(tmp_path: Path) -> None:
    from hangar.core.runcontrol import request_stop

    async with harness(tmp_path, bodies=TEST_BODIES) as h1:
        run_id = await h1.start(
            steps(
                listen("w", "start", body="test.waitEvent", extras={"eventType": "x.go"}),
                val("after", "w", value=1, outputKey="after"),
            )
        )
        await h1.engine.settle()
        assert (await h1.engine.snapshot(WS, run_id))["status"] == "suspended"
    request_stop(tmp_path / "pipelines" / CONTROL_DIR / run_id, "elsewhere", h1.clock.now())
    async with harness(tmp_path, bodies=TEST_BODIES) as h2:
        # The event it waited for is there, but the stop request comes first: nothing more runs.
        await h2.bus.publish_raw(WS, "x.go", {})
        assert await h2.engine.resume_workspace(WS) == [run_id]
        await h2.engine.settle()
        snap = await h2.engine.snapshot(WS, run_id)
        assert snap["status"] == "cancelled"
        assert "after" not in snap["state"] and "after" not in CALLS


async def test_cancel_from_an_engine_that_does_not_drive_the_run(tmp_path: Path) -> None:
    """Two engines on one data directory (as two processes would be): the one not driving the run cancels it."""
    GATES.clear()
    CALLS.clear()
    async with harness(tmp_path, bodies=TEST_BODIES) as driver, harness(tmp_path, bodies=TEST_BODIES) as other:
        run_id = await driver.start(steps(val("slow", "start", extras={"gate": "hold"})))
        await until(lambda: "slow" in CALLS)
        assert await other.engine.resume_workspace(WS) == []  # driven elsewhere: not taken over
        await other.engine.cancel(WS, run_id)
        snap = await other.engine.snapshot(WS, run_id)
        assert snap["status"] == "cancelled" and status(snap)["slow"] == "cancelled"
        assert driver.engine.live_runs == []


async def test_a_cancel_the_driver_does_not_answer_stands_until_the_run_is_driven_again(tmp_path: Path) -> None:
    """The driving process is alive but does not answer (here: a process holding the run's lock and nothing
    else): the cancel fails ``unavailable`` after its wait, and the request is honoured by the next driver."""
    from hangar.core.runcontrol import LOCK_NAME, stop_requested
    from hangar.errors import Unavailable

    async with harness(tmp_path, bodies=TEST_BODIES) as h1:
        run_id = await h1.start(steps(listen("w", "start", body="test.waitEvent", extras={"eventType": "x.go"})))
        await h1.engine.settle()
    run_dir = tmp_path / "pipelines" / CONTROL_DIR / run_id
    with lock_held_elsewhere(run_dir / LOCK_NAME):
        async with harness(tmp_path, bodies=TEST_BODIES) as h2:
            with pytest.raises(Unavailable) as err:
                await h2.engine.cancel(WS, run_id, wait_s=0.3)
            assert err.value.detail_code == "stop_pending"
            assert stop_requested(run_dir)
            assert (await h2.engine.snapshot(WS, run_id))["status"] == "suspended"
    async with harness(tmp_path, bodies=TEST_BODIES) as h3:
        assert await h3.engine.resume_workspace(WS) == [run_id]
        await h3.engine.settle()
        assert (await h3.engine.snapshot(WS, run_id))["status"] == "cancelled"
