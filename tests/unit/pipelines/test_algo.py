"""The pure scheduling rules, row by row (spec step kinds and step results; CONTRACTS §5 open semantics)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hangar.pipelines import _algo
from hangar.pipelines._algo import Graph, StepRec
from hangar.pipelines.model import StepDef, StepStatus, Template
from hangar.pipelines.step_results import StepResult

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def graph(*steps: dict[str, Any], edges: list[dict[str, Any]] | None = None) -> Graph:
    return Graph.build(
        Template.model_validate(
            {"id": "t", "steps": [{"id": "start", "kind": "trigger"}, *steps], "edges": edges or []}
        )
    )


def recs(g: Graph, **statuses: str) -> dict[str, StepRec]:
    out = {sid: StepRec(sid) for sid in g.order}
    for sid, st in statuses.items():
        status, _, route = st.partition(":")
        out[sid].status = StepStatus(status)
        out[sid].route_key = route or None
    return out


def L(sid: str, *src: str, kind: str = "listen") -> dict[str, Any]:
    return {"id": sid, "kind": kind, "body": "x.y", "trigger": {"sourceStepIds": list(src)}}


def J(sid: str, *waits: str) -> dict[str, Any]:
    return {"id": sid, "kind": "join", "body": "x.y", "waitForStepIds": list(waits)}


def test_trigger_is_ready_first_and_listen_waits_for_all_sources() -> None:
    g = graph(L("a", "start"), L("b", "start"), L("c", "a", "b"))
    assert _algo.propagate(g, recs(g), g.order).ready == ["start"]
    r = recs(g, start="completed", a="completed")
    assert _algo.propagate(g, r, ["c"]).ready == []
    r["b"].status = StepStatus.completed
    assert _algo.propagate(g, r, ["c"]).ready == ["c"]


def test_router_selects_matching_edge_and_skips_the_rest_with_propagation() -> None:
    g = graph(
        L("route", "start", kind="router"),
        L("yes", "route"),
        L("no", "route"),
        L("after_no", "no"),
        edges=[{"from": "route", "to": "yes", "routeKey": "true"}, {"from": "route", "to": "no", "routeKey": "false"}],
    )
    r = recs(g, start="completed", route="completed:true")
    plan = _algo.propagate(g, r, ["yes", "no"])
    assert plan.ready == ["yes"]
    assert plan.skipped == ["no", "after_no"]


def test_join_after_router_fires_once_routed_branches_settle() -> None:
    g = graph(
        L("route", "start", kind="router"),
        L("a", "route"),
        L("b", "route"),
        J("both", "a", "b"),
        edges=[{"from": "route", "to": "a", "routeKey": "x"}, {"from": "route", "to": "b", "routeKey": "y"}],
    )
    r = recs(g, start="completed", route="completed:x")
    plan = _algo.propagate(g, r, ["a", "b"])
    assert plan.ready == ["a"] and plan.skipped == ["b"]
    r["b"].status = StepStatus.skipped
    assert _algo.propagate(g, r, ["both"]).ready == []  # a still running
    r["a"].status = StepStatus.completed
    assert _algo.propagate(g, r, ["both"]).ready == ["both"]


def test_step_whose_only_sources_are_skipped_is_skipped_but_mixed_sources_fire() -> None:
    g = graph(L("a", "start"), L("b", "start"), L("c", "a", "b"))
    r = recs(g, start="completed", a="skipped", b="completed")
    assert _algo.propagate(g, r, ["c"]).ready == ["c"]
    r["b"].status = StepStatus.skipped
    assert _algo.propagate(g, r, ["c"]).skipped == ["c"]


def test_join_waits_for_terminal_states_including_failure_and_timeout() -> None:
    g = graph(L("a", "start"), L("b", "start"), J("j", "a", "b"))
    r = recs(g, start="completed", a="failed", b="running")
    assert _algo.propagate(g, r, ["j"]).ready == []
    r["b"].status = StepStatus.timedOut
    assert _algo.propagate(g, r, ["j"]).ready == ["j"]


def test_router_that_failed_skips_its_branches_and_join_on_router_itself_waits_for_it() -> None:
    g = graph(
        L("route", "start", kind="router"),
        L("a", "route"),
        J("j", "route"),
        edges=[{"from": "route", "to": "a", "routeKey": "true"}],
    )
    r = recs(g, start="completed", route="failed")
    plan = _algo.propagate(g, r, ["a", "j"])
    assert plan.skipped == ["a"] and plan.ready == ["j"]


def step(**config: Any) -> StepDef:
    return StepDef.model_validate({"id": "s", "kind": "listen", "body": "x.y", "config": config})


def running(attempts: int = 1) -> StepRec:
    return StepRec("s", StepStatus.running, attempts=attempts, started_at=NOW)


def test_ok_writes_output_through_reducer_and_merges_mutated_state() -> None:
    state: dict[str, Any] = {"n": 2}
    rec = running()
    applied = _algo.apply_result(step(outputKey="n", reducer="sum"), rec, StepResult.ok({"x": 1}, output=3), state, NOW)
    assert applied.outcome == "completed" and rec.status is StepStatus.completed
    assert state == {"n": 5, "x": 1}


def test_reducer_applies_to_mutated_state_writes_of_the_output_key_too() -> None:
    state: dict[str, Any] = {"items": [1]}
    _algo.apply_result(step(outputKey="items", reducer="append"), running(), StepResult.ok({"items": 2}), state, NOW)
    assert state["items"] == [1, 2]


def test_output_schema_violation_fails_step_and_leaves_state_intact() -> None:
    state: dict[str, Any] = {"keep": True}
    rec = running()
    sch = {"type": "object", "required": ["verdict"]}
    applied = _algo.apply_result(
        step(outputKey="o", outputSchema=sch), rec, StepResult.ok({"side": 1}, output={"x": 1}), state, NOW
    )
    assert applied.outcome == "run_failed"
    assert rec.status is StepStatus.failed
    assert rec.error == "output does not match outputSchema: $: missing required property 'verdict'"
    assert state == {"keep": True}


def test_reducer_type_error_fails_the_step_with_its_message() -> None:
    state: dict[str, Any] = {"n": "text"}
    rec = running()
    _algo.apply_result(step(outputKey="n", reducer="sum"), rec, StepResult.ok(output=1), state, NOW)
    assert rec.status is StepStatus.failed
    assert "reducer sum on 'n'" in (rec.error or "")


def test_retry_linear_and_exponential_delays_then_final_failure() -> None:
    lin = step(retryPolicy={"maxAttempts": 3, "backoff": "linear", "initialDelayMs": 100})
    exp = step(retryPolicy={"maxAttempts": 4, "initialDelayMs": 100})
    rec = running(1)
    assert _algo.apply_result(lin, rec, StepResult.failed("x"), {}, NOW).delay_s == 0.1
    rec = running(2)
    assert _algo.apply_result(lin, rec, StepResult.failed("x"), {}, NOW).delay_s == 0.2
    assert rec.status is StepStatus.pending and rec.not_before == NOW + timedelta(seconds=0.2)
    assert [_algo.apply_result(exp, running(n), StepResult.failed("x"), {}, NOW).delay_s for n in (1, 2, 3)] == [
        0.1,
        0.2,
        0.4,
    ]
    rec = running(3)
    assert _algo.apply_result(lin, rec, StepResult.failed("boom"), {}, NOW).outcome == "run_failed"
    assert rec.status is StepStatus.failed and rec.error == "boom"


def test_continue_on_fail_stashes_error_and_settles() -> None:
    state: dict[str, Any] = {"_stepErrors": {"other": "old"}}
    rec = running()
    applied = _algo.apply_result(step(continueOnFail=True), rec, StepResult.failed("bad"), state, NOW)
    assert applied.outcome == "settled_failure"
    assert state["_stepErrors"] == {"other": "old", "s": "bad"}


def test_timeout_ends_in_timed_out_state() -> None:
    rec = running()
    _algo.apply_result(step(), rec, StepResult.failed("timed out"), {}, NOW, timed_out=True)
    assert rec.status is StepStatus.timedOut


def test_suspension_has_24_hour_deadline_unless_await_approval() -> None:
    rec = running()
    res = StepResult.suspend_until_event("x.done", {"partial": 1})
    state: dict[str, Any] = {}
    assert _algo.apply_result(step(), rec, res, state, NOW, since_seq=7).outcome == "suspended"
    assert rec.deadline == NOW + timedelta(hours=24)
    assert rec.suspend == {"eventType": "x.done", "match": None, "taskIds": [], "sinceSeq": 7}
    assert state == {"partial": 1}
    rec = running()
    _algo.apply_result(step(extras={"awaitApproval": True}), rec, res, {}, NOW)
    assert rec.deadline is None


def test_terminal_result_and_terminal_kind_end_the_run() -> None:
    assert _algo.apply_result(step(), running(), StepResult.terminal(), {}, NOW).outcome == "run_terminal"
    term = StepDef.model_validate({"id": "s", "kind": "terminal"})
    assert _algo.apply_result(term, running(), StepResult.ok(), {}, NOW).outcome == "run_terminal"


def test_route_records_route_key() -> None:
    rec = running()
    _algo.apply_result(step(), rec, StepResult.route("blue"), {}, NOW)
    assert rec.route_key == "blue"


def test_recover_reruns_interrupted_attempt_without_counting_it() -> None:
    rec = running(2)
    _algo.recover(rec)
    assert rec.status is StepStatus.pending and rec.attempts == 1


def test_task_resume_result() -> None:
    s = step()
    assert _algo.task_resume_result(s, [("t1", "completed", {"a": 1})]).output == {"a": 1}
    both = _algo.task_resume_result(s, [("t1", "completed", 1), ("t2", "succeeded", 2)])
    assert both.output == {"t1": 1, "t2": 2}
    bad = _algo.task_resume_result(s, [("t1", "completed", 1), ("t2", "failed", None)])
    assert bad.kind == "failed" and bad.error == "task t2 finished with outcome failed"


def test_event_match() -> None:
    sus = {"eventType": "a.b", "match": {"id": 3}}
    assert _algo.event_matches(sus, "a.b", {"id": 3, "x": 1})
    assert not _algo.event_matches(sus, "a.b", {"id": 4})
    assert not _algo.event_matches(sus, "a.c", {"id": 3})
    # A step suspended before event payloads went camelCase matched on the snake_case name: it still resumes.
    old = {"eventType": "agents.runFinished", "match": {"agent_id": "a1", "has_output": True}}
    assert _algo.event_matches(old, "agents.runFinished", {"agentId": "a1", "hasOutput": True})
    assert not _algo.event_matches(old, "agents.runFinished", {"agentId": "a2", "hasOutput": True})
