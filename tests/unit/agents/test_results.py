"""The agents ops declare their results; an agent's wire form never carries a secret; runs keep their wire form."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hangar.agents.config import parse_adapter
from hangar.agents.events import RunOutcome
from hangar.agents.ops import AGENT_OPS
from hangar.agents.results import AgentView, DispatchedRun
from hangar.agents.runs import Run, RunStatus
from hangar.agents.service import Agent
from hangar.rpc.registry import spec_of

NOW = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)


@pytest.mark.parametrize("fn", AGENT_OPS, ids=lambda fn: spec_of(fn).name)
def test_every_op_declares_its_result(fn: object) -> None:
    spec = spec_of(fn)
    assert spec.result is not None and spec.result_schema is not None


def _agent(adapter: dict[str, object]) -> Agent:
    return Agent("a1", "Ada", "member", "be brief", parse_adapter(adapter), True, NOW, NOW)


def test_agent_wire_form_says_which_secrets_are_stored_never_their_values() -> None:
    spec = spec_of(next(fn for fn in AGENT_OPS if spec_of(fn).name == "agents.get"))
    openai = _agent({"type": "openai", "baseUrl": "http://x/v1", "model": "m", "apiKey": "sk-1"})
    command = _agent({"type": "command", "argv": ["agent"], "secretEnv": {"TOKEN": "t-1"}, "secretEnvNames": ["TOKEN"]})
    wire_openai = spec.result_to_wire(AgentView.of(openai))
    wire_command = spec.result_to_wire(AgentView.of(command))
    assert wire_openai["adapter"]["hasApiKey"] is True and "apiKey" not in wire_openai["adapter"]
    assert wire_command["adapter"]["secretEnvNames"] == ["TOKEN"] and "secretEnv" not in wire_command["adapter"]
    assert wire_openai["createdAt"] == "2026-01-01T00:05:00Z" and wire_openai["systemPrompt"] == "be brief"
    schema = str(spec.result_schema)
    assert "hasApiKey" in schema and "'apiKey'" not in schema and "'secretEnv'" not in schema


def test_run_wire_form_spells_status_and_outcome_as_before() -> None:
    run = Run("r1", "a1", "s1", RunStatus.finished, RunOutcome.turn_limit, "limit", "go", None, None, False, None, 2,
              "user:u1", NOW, None)  # fmt: skip
    wire = spec_of(next(fn for fn in AGENT_OPS if spec_of(fn).name == "agents.run")).result_to_wire(
        DispatchedRun.of(run)
    )
    assert wire["runId"] == wire["id"] == "r1"
    assert (wire["status"], wire["outcome"], wire["finishedAt"], wire["outputSchema"]) == (
        "finished",
        "turnLimit",
        None,
        None,
    )
    assert Run.of_row({**vars(run), "status": "running", "outcome": None}).status is RunStatus.running
