"""What a worker hands back crosses the database as JSON: every kind of ``StepResult`` survives the trip, and a
``None`` output stays apart from no output."""

from __future__ import annotations

import json

import pytest

from hangar.pipelines.step_results import NO_OUTPUT, StepResult
from hangar.pipelines.stepqueue import result_from_wire, result_wire


@pytest.mark.parametrize(
    "result",
    [
        StepResult.ok(),
        StepResult.ok({"a": 1}, output=None),
        StepResult.ok(output={"x": [1, "two"]}),
        StepResult.route("left", {"k": "v"}, output="o"),
        StepResult.suspend_until_event("ticket.closed", match={"id": "t1"}),
        StepResult.suspend_until_tasks_complete(["t1", "t2"]),
        StepResult.terminal(output=3),
        StepResult.failed("script exited with status 2"),
    ],
)
def test_a_result_survives_the_queue(result: StepResult) -> None:
    back = result_from_wire(json.loads(json.dumps(result_wire(result))))
    assert back == result


def test_no_output_and_a_none_output_stay_apart() -> None:
    assert result_from_wire(result_wire(StepResult.ok())).output is NO_OUTPUT
    assert result_from_wire(result_wire(StepResult.ok(output=None))).output is None
