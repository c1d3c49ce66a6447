"""How runs and step runs are shown: the command line's ``--json`` shape (CONTRACTS §5) and the fuller shape
of the ``pipelines.runs.get`` op (timings, trigger, progress)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hangar.pipelines._algo import StepRec
from hangar.pipelines.results import (
    ApprovalWait,
    RunDetail,
    RunSnapshot,
    RunSummary,
    StepChange,
    StepDetail,
    StepsChanged,
    StepState,
    Suspension,
    TriggerOfRun,
)
from hangar.pipelines.rows import RunRow
from hangar.pipelines.step import APPROVAL_PROGRESS_KEY


def step_state(rec: StepRec) -> StepState:
    return StepState(status=rec.status, attempts=rec.attempts, error=rec.error)


def run_snapshot(run: RunRow, recs: Mapping[str, StepRec]) -> RunSnapshot:
    return RunSnapshot(
        run_id=run.id, status=run.status, state=run.state, steps={sid: step_state(rec) for sid, rec in recs.items()}
    )


def steps_changed(run: RunRow, changed: Sequence[StepRec]) -> StepsChanged:
    return StepsChanged(
        run_id=run.id,
        status=run.status,
        steps=[StepChange(step_id=r.step_id, **dict(step_state(r))) for r in changed],
    )


def run_summary(run: RunRow) -> RunSummary:
    return RunSummary(
        run_id=run.id,
        template_id=run.template_id,
        status=run.status,
        trigger=TriggerOfRun(kind=run.trigger_kind, id=run.trigger_id),
        dry_run=run.dry_run,
        parent_run_id=run.parent_run_id,
        error=run.error,
        created_at=run.created_at,
        updated_at=run.updated_at,
        finished_at=run.finished_at,
    )


def _duration_ms(rec: StepRec) -> int | None:
    if rec.started_at is None or rec.finished_at is None:
        return None
    return int((rec.finished_at - rec.started_at).total_seconds() * 1000)


def _approval(rec: StepRec) -> ApprovalWait | None:
    """What a suspended step waiting for an agent's decision reported about it (malformed reports show nothing)."""
    reported = (rec.progress or {}).get(APPROVAL_PROGRESS_KEY)
    if rec.suspend is None or not isinstance(reported, dict):
        return None
    agent, space, schema = reported.get("agentId"), reported.get("spaceId"), reported.get("outputSchema")
    if not (isinstance(agent, str) and isinstance(space, str) and isinstance(schema, dict)):
        return None
    return ApprovalWait(agent_id=agent, space_id=space, output_schema=schema)


def _step_detail(step_id: str, rec: StepRec, label: str) -> StepDetail:
    suspended_on = None
    if rec.suspend:
        suspended_on = Suspension(event_type=rec.suspend.get("eventType"), task_ids=rec.suspend.get("taskIds") or [])
    return StepDetail(
        **dict(step_state(rec)),
        step_id=step_id,
        label=label,
        route_key=rec.route_key,
        started_at=rec.started_at,
        finished_at=rec.finished_at,
        duration_ms=_duration_ms(rec),
        retry_at=rec.not_before,
        suspended_on=suspended_on,
        deadline=rec.deadline,
        progress=rec.progress,
        approval=_approval(rec),
    )


def run_detail(run: RunRow, recs: Mapping[str, StepRec], labels: Mapping[str, str]) -> RunDetail:
    return RunDetail(
        **dict(run_summary(run)),
        payload=run.payload,
        state=run.state,
        steps=[_step_detail(sid, rec, labels.get(sid, sid)) for sid, rec in recs.items()],
        template=run.template,
    )
