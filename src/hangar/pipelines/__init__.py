"""Pipelines: templates of steps run by a durable scheduler.

The public surface other parts use: ``body`` (declare a body), ``BodySpec``, ``ConfigField``, ``StepContext``,
``StepResult``, ``Resume``/``TaskOutcome`` (what a resumed body sees) and the ``TaskFinished`` event.
"""

from hangar.pipelines.bodies.spec import BodyRegistry, BodySpec, ConfigField, body, spec_of_body
from hangar.pipelines.events import PipelineRunFinished, TaskFinished
from hangar.pipelines.model import NodeConfig, RunStatus, StepDef, StepKind, StepStatus, Template
from hangar.pipelines.results import NO_OUTPUT, StepResult
from hangar.pipelines.step import ChildRuns, Resume, ResumedEvent, StepContext, TaskOutcome

__all__ = [
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
    "StepContext",
    "StepDef",
    "StepKind",
    "StepResult",
    "StepStatus",
    "TaskFinished",
    "TaskOutcome",
    "Template",
    "body",
    "spec_of_body",
]
