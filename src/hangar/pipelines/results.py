"""What the pipelines ops answer, as every part's ``results`` does: templates, runs and their step runs, triggers,
emitted events and bodies. (What a step body returns to the engine is ``step_results``.)
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, RootModel

from hangar.core.types import Timestamp
from hangar.pipelines.bodies.spec import Refers
from hangar.pipelines.model import RunStatus, StepStatus
from hangar.rpc.registry import Result


class TemplateCheck(Result):
    valid: bool
    problems: list[str]
    warnings: list[str]


class TemplateSaved(Result):
    id: str
    warnings: list[str]


class TemplateSummary(Result):
    id: str
    name: str
    steps: int  # how many
    created_at: Timestamp
    updated_at: Timestamp


class TemplateList(Result):
    templates: list[TemplateSummary]


class TemplateDetail(Result):
    template: dict[str, Any]  # as stored: camelCase, defaults left out
    warnings: list[str]


class Deleted(Result):
    deleted: str  # the id of what was deleted


class RunStarted(Result):
    run_id: str


class StepState(Result):
    status: StepStatus
    attempts: int
    error: str | None


class RunSnapshot(Result):
    """The command line's ``--json`` shape (CONTRACTS §5)."""

    run_id: str
    status: RunStatus
    state: dict[str, Any]
    steps: dict[str, StepState]


class TriggerOfRun(Result):
    kind: str
    id: str | None


class RunSummary(Result):
    run_id: str
    template_id: str
    status: RunStatus
    trigger: TriggerOfRun
    dry_run: bool
    parent_run_id: str | None
    error: str | None
    created_at: Timestamp
    updated_at: Timestamp
    finished_at: Timestamp | None


class RunList(Result):
    runs: list[RunSummary]


class Suspension(Result):
    event_type: str | None
    task_ids: list[str]


class ApprovalWait(Result):
    """A step waiting for an agent's decision (an approval gate): the agent, the space where it decides, and the
    output its ``submit_output`` must match. A person decides by telling that agent there."""

    agent_id: str
    space_id: str
    output_schema: dict[str, Any]


class StepDetail(StepState):
    step_id: str
    label: str
    route_key: str | None
    started_at: Timestamp | None
    finished_at: Timestamp | None
    duration_ms: int | None
    retry_at: Timestamp | None
    suspended_on: Suspension | None
    deadline: Timestamp | None
    progress: dict[str, Any] | None
    # Set while the step is suspended on an agent's decision (from what the body reported in ``progress``).
    approval: ApprovalWait | None = None


class RunDetail(RunSummary):
    payload: dict[str, Any]
    state: dict[str, Any]
    steps: list[StepDetail]
    # The template as this run started with it (later edits do not reach a started run): what a monitor draws.
    template: dict[str, Any]


class RunWatchReply(RootModel[RunDetail | RunList]):
    """The first reply of ``pipelines.runs.watch``: the run when one is named, else the workspace's run list."""


class StepChange(StepState):
    step_id: str


class StepsChanged(Result):
    """An event of ``pipelines.runs.watch``: step runs of one run that changed."""

    run_id: str
    status: RunStatus
    steps: list[StepChange]


class TriggerView(Result):
    id: str
    template_id: str
    kind: Literal["manual", "event", "schedule", "pullRequest"]
    event_type: str | None
    cron: str | None
    payload: dict[str, Any]
    enabled: bool
    last_fired_at: Timestamp | None
    next_fire_at: Timestamp | None


class TriggerList(Result):
    triggers: list[TriggerView]


class Emitted(Result):
    seq: int
    id: str


class BodySetting(Result):
    name: str
    doc: str
    required: bool
    refers: Refers | None = Field(
        default=None, description="the kind of workspace record the setting names by id (an editor offers them)"
    )


class BodyInfo(Result):
    key: str
    summary: str
    config: list[BodySetting]
    resumes: bool
    honours_dry_run: bool


class BodyList(Result):
    bodies: list[BodyInfo]
