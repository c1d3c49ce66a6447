"""Pipelines: templates of steps run by a durable scheduler.

The public surface other parts use: ``body`` (declare a body; list it in your ``Part(bodies=...)``),
``BodySpec``, ``ConfigField``, ``StepContext`` (its ``attempt_key`` keys what one attempt of a step did),
``StepResult``, ``Resume``/``TaskOutcome`` (what a resumed body sees), the ``TaskFinished`` and
``PipelineRunFinished`` events, ``run_key``/``attempt_keys_prefix`` (to find what a run's steps did), and the
``outputSchema`` checks (``schema_problems``, ``first_violation``) agents share so both accept the same payloads,
and ``ShellEnvironment``/``ShellVariables`` (what a part adds to shell steps' environment, a forge token for one),
and ``attempts_in_queue`` (which step attempts the worker queue still holds open, on PostgreSQL).
"""

from hangar.pipelines.bodies.shell import ShellEnvironment, ShellVariables
from hangar.pipelines.bodies.spec import BodyRegistry, BodySpec, ConfigField, body, spec_of_body
from hangar.pipelines.events import PipelineRunFinished, TaskFinished
from hangar.pipelines.model import NodeConfig, RunStatus, StepDef, StepKind, StepStatus, Template
from hangar.pipelines.queue_attempts import attempts_in_queue
from hangar.pipelines.schema import check_schema as schema_problems
from hangar.pipelines.schema import first_violation
from hangar.pipelines.step import (
    APPROVAL_PROGRESS_KEY,
    ChildRuns,
    Resume,
    ResumedEvent,
    StepContext,
    TaskOutcome,
    attempt_keys_prefix,
    run_key,
)
from hangar.pipelines.step_results import NO_OUTPUT, StepResult

__all__ = [
    "APPROVAL_PROGRESS_KEY",
    "NO_OUTPUT",
    "BodyRegistry",
    "BodySpec",
    "ChildRuns",
    "ConfigField",
    "NodeConfig",
    "PipelineRunFinished",
    "Resume",
    "ResumedEvent",
    "RunStatus",
    "ShellEnvironment",
    "ShellVariables",
    "StepContext",
    "StepDef",
    "StepKind",
    "StepResult",
    "StepStatus",
    "TaskFinished",
    "TaskOutcome",
    "Template",
    "attempt_keys_prefix",
    "attempts_in_queue",
    "body",
    "first_violation",
    "run_key",
    "schema_problems",
    "spec_of_body",
]
