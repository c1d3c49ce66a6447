"""Template loading: every malformed template is refused with a message naming what is wrong."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from hangar.pipelines import BodyRegistry
from hangar.pipelines import template as tpl
from hangar.server.parts import all_parts, step_bodies

BODIES = BodyRegistry(step_bodies(all_parts()))

CONTRACT_EXAMPLE: dict[str, Any] = {
    "id": "triage",
    "name": "Triage a report",
    "steps": [
        {"id": "start", "kind": "trigger", "body": "pipeline.trigger"},
        {
            "id": "check",
            "kind": "listen",
            "body": "shell.run",
            "trigger": {"sourceStepIds": ["start"]},
            "config": {
                "script": "grep -c ERROR {{log_path}}",
                "outputKey": "errors",
                "retryPolicy": {"maxAttempts": 3, "backoff": "exponential", "initialDelayMs": 200},
                "continueOnFail": False,
                "timeoutMs": 30000,
            },
        },
        {
            "id": "route",
            "kind": "router",
            "body": "flow.router",
            "trigger": {"sourceStepIds": ["check"]},
            "config": {"extras": {"predicate": {"type": "comparison", "left": "errors", "op": "gt", "right": 0}}},
        },
        {
            "id": "fix",
            "kind": "listen",
            "body": "shell.run",
            "trigger": {"sourceStepIds": ["route"]},
            "config": {"script": "echo fixing"},
        },
        {"id": "both", "kind": "join", "body": "pipeline.trigger", "waitForStepIds": ["fix"]},
        {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["both"]}},
    ],
    "edges": [{"from": "route", "to": "fix", "routeKey": "true"}],
}


def problems_of(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(tpl.TemplateInvalid) as info:
        tpl.load(raw, BODIES)
    return info.value.problems


def edit(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(CONTRACT_EXAMPLE)
    raw.update(changes)
    return raw


def step_at(raw: dict[str, Any], sid: str) -> dict[str, Any]:
    return next(s for s in raw["steps"] if s["id"] == sid)


def test_contract_example_loads_without_warnings() -> None:
    loaded = tpl.load(CONTRACT_EXAMPLE, BODIES)
    assert loaded.warnings == []
    assert loaded.template.step("check").config.retry_policy is not None
    assert loaded.template.to_wire()["edges"] == [{"from": "route", "to": "fix", "routeKey": "true"}]


def test_yaml_and_json_files_load(tmp_path: Path) -> None:
    import json

    import yaml

    (tmp_path / "t.yaml").write_text(yaml.safe_dump(CONTRACT_EXAMPLE))
    (tmp_path / "t.json").write_text(json.dumps(CONTRACT_EXAMPLE))
    assert tpl.load_file(tmp_path / "t.yaml", BODIES).template == tpl.load_file(tmp_path / "t.json", BODIES).template


def test_syntax_errors_name_the_line(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"id": "x",\n "steps": [}')
    with pytest.raises(tpl.TemplateInvalid, match=r"not valid JSON.*line 2"):
        tpl.load_file(tmp_path / "bad.json", BODIES)


def test_exactly_one_trigger_first() -> None:
    raw = edit()
    raw["steps"] = raw["steps"][1:]
    step_at(raw, "check")["trigger"] = {"sourceStepIds": []}
    assert "a template needs exactly one trigger step (found none)" in problems_of(raw)
    raw = edit()
    raw["steps"].append({"id": "start2", "kind": "trigger"})
    assert "a template needs exactly one trigger step (found start, start2)" in problems_of(raw)
    raw = edit()
    raw["steps"] = [raw["steps"][1], raw["steps"][0], *raw["steps"][2:]]
    assert "the trigger step 'start' must be the first step" in problems_of(raw)


def test_unknown_ids_in_sources_waits_and_edges() -> None:
    raw = edit()
    step_at(raw, "fix")["trigger"]["sourceStepIds"].append("ghost")
    step_at(raw, "both")["waitForStepIds"].append("phantom")
    raw["edges"].append({"from": "route", "to": "nowhere", "routeKey": "false"})
    found = problems_of(raw)
    assert "step fix: trigger.sourceStepIds names unknown step 'ghost'" in found
    assert "step both: waitForStepIds names unknown step 'phantom'" in found
    assert "edge route→nowhere: unknown step id 'nowhere'" in found


def test_cycle_is_named() -> None:
    raw = edit()
    step_at(raw, "check")["trigger"]["sourceStepIds"].append("fix")
    found = problems_of(raw)
    assert any("form a cycle" in p and "check" in p and "fix" in p for p in found), found


def test_routed_step_without_edge_and_edge_without_route_key() -> None:
    raw = edit(edges=[])
    assert "step fix: listens to router 'route' but no edge route→fix carries a routeKey" in problems_of(raw)
    raw = edit(edges=[{"from": "route", "to": "fix"}])
    assert "edge route→fix: needs a routeKey (route is a router)" in problems_of(raw)


def test_sub_pipeline_naming_itself() -> None:
    raw = edit()
    raw["steps"].insert(
        2,
        {
            "id": "sub",
            "kind": "listen",
            "body": "pipeline.subPipeline",
            "trigger": {"sourceStepIds": ["start"]},
            "config": {"extras": {"templateId": "triage"}},
        },
    )
    assert "step sub: config.extras.templateId: a pipeline cannot call itself ('triage')" in problems_of(raw)


def test_max_attempts_below_one() -> None:
    raw = edit()
    step_at(raw, "check")["config"]["retryPolicy"]["maxAttempts"] = 0
    assert problems_of(raw) == ["steps[check].config.retryPolicy.maxAttempts: maxAttempts must be at least 1, not 0"]


def test_bad_reducers() -> None:
    raw = edit()
    step_at(raw, "check")["config"]["reducer"] = "concat"
    (found,) = problems_of(raw)
    assert found.startswith("steps[check].config.reducer: 'concat' is not a reducer")
    raw = edit()
    step_at(raw, "fix")["config"]["reducer"] = "sum"
    assert "step fix: config.reducer sum needs config.outputKey" in problems_of(raw)
    raw = edit()
    step_at(raw, "check")["config"]["reducer"] = "sum"
    step_at(raw, "fix")["config"].update(outputKey="errors", reducer="append")
    assert "step fix: config.reducer append on 'errors' conflicts with sum on step check" in problems_of(raw)


def test_unknown_fields_and_bad_schema_and_run_when_and_router_condition() -> None:
    raw = edit()
    step_at(raw, "check")["config"]["scirpt"] = "typo"
    assert "steps[check].config.scirpt: is not a known field" in problems_of(raw)
    raw = edit()
    step_at(raw, "fix")["config"]["outputSchema"] = {"type": "strnig"}
    assert any(p.startswith("step fix: config.outputSchema.type") for p in problems_of(raw))
    raw = edit()
    step_at(raw, "fix")["config"]["extras"] = {"runWhen": {"type": "comparison", "left": "x", "op": "near"}}
    assert any("extras.runWhen.op must be one of" in p for p in problems_of(raw))
    raw = edit()
    step_at(raw, "route")["config"] = {"extras": {}}
    assert any("extras needs a router condition" in p for p in problems_of(raw))


def test_required_body_setting_missing() -> None:
    raw = edit()
    del step_at(raw, "fix")["config"]["script"]
    assert "step fix: config: shell.run needs script" in problems_of(raw)


def test_agent_and_team_are_exclusive() -> None:
    raw = edit()
    step_at(raw, "fix")["config"].update(agentId="a", teamId="t")
    assert any("agentId and teamId are mutually exclusive" in p for p in problems_of(raw))


def test_unregistered_body_is_a_warning_not_an_error() -> None:
    raw = edit()
    step_at(raw, "fix")["body"] = "nobody.knows"
    loaded = tpl.load(raw, BODIES)
    assert loaded.warnings == [
        "step fix: body 'nobody.knows' is not registered; the step will be skipped and never execute"
    ]


def test_trigger_body_is_the_no_op() -> None:
    raw = edit()
    raw["steps"][0]["body"] = "shell.run"
    assert "step start: the trigger step's body is pipeline.trigger, not 'shell.run'" in problems_of(raw)


def test_join_needs_waits_and_step_needs_sources() -> None:
    raw = edit()
    step_at(raw, "both")["waitForStepIds"] = []
    found = problems_of(raw)
    assert "step both: a join step needs waitForStepIds" in found


def test_thousand_step_chain_validates() -> None:
    chain = [
        {
            "id": f"s{i}",
            "kind": "listen",
            "body": "pipeline.trigger",
            "trigger": {"sourceStepIds": [f"s{i - 1}" if i else "start"]},
        }
        for i in range(1000)
    ]
    loaded = tpl.load({"id": "long", "steps": [{"id": "start", "kind": "trigger"}, *chain]}, BODIES)
    assert len(loaded.template.steps) == 1001


def test_only_the_approval_gate_may_set_await_approval() -> None:
    """extras.awaitApproval exempts a suspended step from the 24-hour timeout: any body but the gate is refused."""
    raw = copy.deepcopy(CONTRACT_EXAMPLE)
    step_at(raw, "fix")["config"]["extras"] = {"awaitApproval": True}
    assert problems_of(raw) == ["step fix: extras.awaitApproval is set only by the orchestration.awaitApproval body"]
    gate = {"orchestrationId": "o1", "nodeKey": "a", "awaitApproval": True}
    step_at(raw, "fix").update(body="orchestration.awaitApproval", config={"extras": gate})
    assert tpl.load(raw, BODIES).template.step("fix").config.await_approval
