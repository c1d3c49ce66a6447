"""An agent run's ``dispatchedBy`` names the step attempt whose queue row a server looks up before it closes the
run: only a well-formed attempt key names one; anything else (a person, another agent, a malformed key) none."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.core.clock import SystemClock
from hangar.pipelines.model import StepDef
from hangar.pipelines.queue_attempts import parse_attempt_key
from hangar.pipelines.step import StepContext


def test_an_attempt_key_names_its_run_step_and_attempt() -> None:
    assert parse_attempt_key("pipeline:r-1/ask#3") == ("r-1", "ask", 3)
    assert parse_attempt_key("pipeline:r-1/a#b#12") == ("r-1", "a#b", 12)  # the attempt is after the last '#'


@pytest.mark.parametrize(
    "key",
    [
        "user:u-1",
        "agent:a-1",
        "pipeline:r-1",  # a run's key, not an attempt's
        "pipeline:r-1/",
        "pipeline:r-1/ask",
        "pipeline:r-1/ask#",
        "pipeline:r-1/#2",
        "pipeline:r-1/ask#x",
        "pipelines:r-1/ask#1",
        "",
    ],
)
def test_anything_else_names_no_attempt(key: str) -> None:
    assert parse_attempt_key(key) is None


def test_the_key_a_step_context_makes_is_parsed_back() -> None:
    step = StepDef.model_validate({"id": "s-1", "kind": "listen", "body": "shell.run"})
    ctx = StepContext(
        app=None,
        run_id="run-9",
        workspace_id="ws",
        template_id="t",
        parent_run_id=None,
        dry_run=False,
        payload={},
        state={},
        step=step,
        attempt=4,
        clock=SystemClock(),
        run_dir=Path("/nonexistent"),
        progress=_noop,
    )
    assert parse_attempt_key(ctx.attempt_key) == ("run-9", "s-1", 4)


async def _noop(_data: object) -> None:
    return None
