"""How runs and step runs are shown: the command line's ``--json`` shape (CONTRACTS §5) and the fuller shape
of the ``pipelines.runs.get`` op (timings, trigger, progress)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hangar.core.types import rfc3339_or_none
from hangar.pipelines._algo import StepRec
from hangar.pipelines.rows import RunRow


def _iso(value: datetime | None) -> str | None:
    return rfc3339_or_none(value)


def step_wire(rec: StepRec) -> dict[str, Any]:
    return {"status": rec.status.value, "attempts": rec.attempts, "error": rec.error}


def run_snapshot(run: RunRow, recs: Mapping[str, StepRec]) -> dict[str, Any]:
    """``{"runId", "status", "state", "steps": {"<stepId>": {"status", "attempts", "error"}}}``."""
    return {
        "runId": run.id,
        "status": run.status.value,
        "state": run.state,
        "steps": {sid: step_wire(rec) for sid, rec in recs.items()},
    }


def run_summary(run: RunRow) -> dict[str, Any]:
    return {
        "runId": run.id,
        "templateId": run.template_id,
        "status": run.status.value,
        "trigger": {"kind": run.trigger_kind, "id": run.trigger_id},
        "dryRun": run.dry_run,
        "parentRunId": run.parent_run_id,
        "error": run.error,
        "createdAt": _iso(run.created_at),
        "updatedAt": _iso(run.updated_at),
        "finishedAt": _iso(run.finished_at),
    }


def _duration_ms(rec: StepRec) -> int | None:
    if rec.started_at is None or rec.finished_at is None:
        return None
    return int((rec.finished_at - rec.started_at).total_seconds() * 1000)


def run_detail(run: RunRow, recs: Mapping[str, StepRec], labels: Mapping[str, str]) -> dict[str, Any]:
    steps = []
    for sid, rec in recs.items():
        steps.append(
            {
                "stepId": sid,
                "label": labels.get(sid, sid),
                **step_wire(rec),
                "routeKey": rec.route_key,
                "startedAt": _iso(rec.started_at),
                "finishedAt": _iso(rec.finished_at),
                "durationMs": _duration_ms(rec),
                "retryAt": _iso(rec.not_before),
                "suspendedOn": (
                    {"eventType": rec.suspend.get("eventType"), "taskIds": rec.suspend.get("taskIds") or []}
                    if rec.suspend
                    else None
                ),
                "deadline": _iso(rec.deadline),
                "progress": rec.progress,
            }
        )
    return {**run_summary(run), "payload": run.payload, "state": run.state, "steps": steps}
