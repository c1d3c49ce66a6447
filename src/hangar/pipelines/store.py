"""Persistence of templates, triggers, runs and step runs in the workspace database.

The runner hands ``commit`` everything one scheduling tick changed (the run row, the step rows, the waits) and
it is written in one transaction, before anything it describes takes effect: a step is stored as running
before its body starts, a result is stored before the steps after it start. SQLite runs in WAL mode with
``synchronous=NORMAL`` (set by the core), which survives a killed process.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import RowMapping
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core import tables as core_tables

# The same pragmas (WAL, synchronous=NORMAL, busy timeout) as every connection the core opens.
from hangar.core.event_types import StoredEvent
from hangar.core.ids import new_id
from hangar.core.write_conn import Writer, integrity_error
from hangar.errors import Conflict, NotFound
from hangar.pipelines import tables as t
from hangar.pipelines._algo import StepRec
from hangar.pipelines.events import TaskFinished
from hangar.pipelines.layout import CONTROL_DIR
from hangar.pipelines.model import FINISHED_RUN, RunStatus, StepStatus
from hangar.pipelines.results import TemplateSummary
from hangar.pipelines.rows import RunRow, Tick, TriggerRow, aware
from hangar.pipelines.writer import insert_run, interest, run_row_values, step_row, write_tick

T = TypeVar("T")
EngineFor = Callable[[str], Awaitable[AsyncEngine]]
WriterFor = Callable[[str], Awaitable[Writer]]


def _task_id(payload: Any) -> Any:
    """The task a stored ``TaskFinished`` names: ``taskId``, or ``task_id`` in one stored before payloads went
    camelCase."""
    # The JSON type's own accessors: ``json_extract`` on SQLite, ``->>`` on PostgreSQL (which has no json_extract).
    return sa.func.coalesce(payload["taskId"].as_string(), payload["task_id"].as_string())


def _rec(row: RowMapping) -> StepRec:
    return StepRec(
        step_id=row["step_id"],
        status=StepStatus(row["status"]),
        attempts=row["attempts"],
        error=row["error"],
        route_key=row["route_key"],
        started_at=aware(row["started_at"]),
        finished_at=aware(row["finished_at"]),
        not_before=aware(row["not_before"]),
        suspend=row["suspend"],
        deadline=aware(row["deadline"]),
        resume=row["resume"],
        progress=row["progress"],
    )


def _run(ws: str, row: RowMapping) -> RunRow:
    return RunRow(
        id=row["id"],
        workspace_id=ws,
        template_id=row["template_id"],
        template=row["template"],
        status=RunStatus(row["status"]),
        trigger_kind=row["trigger_kind"],
        payload=row["payload"],
        state=row["state"],
        dry_run=bool(row["dry_run"]),
        created_at=aware(row["created_at"]) or row["created_at"],
        updated_at=aware(row["updated_at"]) or row["updated_at"],
        trigger_id=row["trigger_id"],
        trigger_key=row["trigger_key"],
        parent_run_id=row["parent_run_id"],
        parent_step_id=row["parent_step_id"],
        error=row["error"],
        created_by=row["created_by"],
        finished_at=aware(row["finished_at"]),
    )


def _trigger(row: RowMapping) -> TriggerRow:
    values = {k: row[k] for k in TriggerRow.__dataclass_fields__}
    for k in ("last_fired_at", "next_fire_at", "created_at"):
        values[k] = aware(values[k])
    return TriggerRow(**values)


class PipelineStore:
    def __init__(self, engine_for: EngineFor, writer_for: WriterFor) -> None:
        """``engine_for``, ``writer_for``: a workspace's engine and write path (``Databases.workspace``,
        ``Databases.writer``)."""
        self._engine_for = engine_for
        self._writer = writer_for

    async def engine(self, ws: str) -> AsyncEngine:
        return await self._engine_for(ws)

    # -- templates ----------------------------------------------------------------------------------------

    async def insert_template(self, ws: str, wire: dict[str, Any], *, by: str | None, now: datetime) -> None:
        engine = await self.engine(ws)
        try:
            async with engine.begin() as conn:
                await conn.execute(
                    sa.insert(t.templates).values(
                        id=wire["id"],
                        name=wire.get("name") or wire["id"],
                        definition=wire,
                        created_by=by,
                        created_at=now,
                        updated_at=now,
                    )
                )
        except IntegrityError as exc:
            raise Conflict(f"a template with id {wire['id']!r} already exists") from exc

    async def update_template(self, ws: str, wire: dict[str, Any], *, now: datetime) -> None:
        engine = await self.engine(ws)
        async with engine.begin() as conn:
            res = await conn.execute(
                sa.update(t.templates)
                .where(t.templates.c.id == wire["id"])
                .values(name=wire.get("name") or wire["id"], definition=wire, updated_at=now)
            )
        if res.rowcount == 0:
            raise NotFound(f"template {wire['id']!r} does not exist")

    async def get_template(self, ws: str, template_id: str) -> dict[str, Any]:
        engine = await self.engine(ws)
        async with engine.connect() as conn:
            row = (
                await conn.execute(sa.select(t.templates.c.definition).where(t.templates.c.id == template_id))
            ).first()
        if row is None:
            raise NotFound(f"template {template_id!r} does not exist")
        return dict(row[0])

    async def list_templates(self, ws: str) -> list[TemplateSummary]:
        engine = await self.engine(ws)
        tt = t.templates
        async with engine.connect() as conn:
            rows = (await conn.execute(sa.select(tt).order_by(tt.c.id))).mappings().all()
        return [
            TemplateSummary(
                id=r["id"],
                name=r["name"],
                steps=len(r["definition"].get("steps", [])),
                created_at=r["created_at"],
                updated_at=r["updated_at"],
            )
            for r in rows
        ]

    async def delete_template(self, ws: str, template_id: str) -> None:
        engine = await self.engine(ws)
        async with engine.begin() as conn:
            res = await conn.execute(sa.delete(t.templates).where(t.templates.c.id == template_id))
            if res.rowcount == 0:
                raise NotFound(f"template {template_id!r} does not exist")
            await conn.execute(sa.delete(t.triggers).where(t.triggers.c.template_id == template_id))

    # -- triggers -----------------------------------------------------------------------------------------

    async def insert_trigger(self, ws: str, row: TriggerRow, *, by: str | None) -> None:
        engine = await self.engine(ws)
        async with engine.begin() as conn:
            await conn.execute(
                sa.insert(t.triggers).values(
                    **{k: getattr(row, k) for k in TriggerRow.__dataclass_fields__}, created_by=by
                )
            )

    async def list_triggers(
        self, ws: str, *, template_id: str | None = None, kind: str | None = None, event_type: str | None = None
    ) -> list[TriggerRow]:
        engine = await self.engine(ws)
        tt = t.triggers
        q = sa.select(tt).order_by(tt.c.created_at, tt.c.id)
        if template_id is not None:
            q = q.where(tt.c.template_id == template_id)
        if kind is not None:
            q = q.where(tt.c.kind == kind)
        if event_type is not None:
            q = q.where(tt.c.event_type == event_type)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [_trigger(r) for r in rows]

    async def delete_trigger(self, ws: str, trigger_id: str) -> None:
        engine = await self.engine(ws)
        async with engine.begin() as conn:
            res = await conn.execute(sa.delete(t.triggers).where(t.triggers.c.id == trigger_id))
        if res.rowcount == 0:
            raise NotFound(f"trigger {trigger_id!r} does not exist")

    async def set_trigger_enabled(self, ws: str, trigger_id: str, enabled: bool) -> TriggerRow:
        engine = await self.engine(ws)
        tt = t.triggers
        async with engine.begin() as conn:
            res = await conn.execute(sa.update(tt).where(tt.c.id == trigger_id).values(enabled=enabled))
            if res.rowcount == 0:
                raise NotFound(f"trigger {trigger_id!r} does not exist")
            row = (await conn.execute(sa.select(tt).where(tt.c.id == trigger_id))).mappings().one()
        return _trigger(row)

    async def set_trigger_times(
        self, ws: str, trigger_id: str, *, last_fired_at: datetime | None, next_fire_at: datetime | None
    ) -> None:
        engine = await self.engine(ws)
        async with engine.begin() as conn:
            await conn.execute(
                sa.update(t.triggers)
                .where(t.triggers.c.id == trigger_id)
                .values(last_fired_at=last_fired_at, next_fire_at=next_fire_at)
            )

    # -- runs ---------------------------------------------------------------------------------------------

    async def create_run(self, run: RunRow, recs: Sequence[StepRec]) -> bool:
        """Insert the run and its step rows; ``False`` when this trigger firing already has a run."""
        writer = await self._writer(run.workspace_id)
        _dt, _js = writer.dt, writer.js
        row = (
            run.id,
            run.template_id,
            _js(run.template),
            run.status.value,
            run.trigger_id,
            run.trigger_kind,
            run.trigger_key,
            _js(run.payload),
            _js(run.state),
            run.dry_run,
            run.parent_run_id,
            run.parent_step_id,
            run.error,
            run.created_by,
            _dt(run.created_at),
            _dt(run.updated_at),
            _dt(run.finished_at),
        )
        steps = [(run.id, r.step_id, i, r.status.value) for i, r in enumerate(recs)]
        try:
            await writer.call(insert_run, row, steps)
        except Exception as exc:
            if run.trigger_key is None or not integrity_error(exc):
                raise
            return False
        return True

    async def load_run(self, ws: str, run_id: str) -> tuple[RunRow, dict[str, StepRec]]:
        engine = await self.engine(ws)
        async with engine.connect() as conn:
            row = (await conn.execute(sa.select(t.runs).where(t.runs.c.id == run_id))).mappings().first()
            if row is None:
                raise NotFound(f"pipeline run {run_id!r} does not exist")
            steps = (
                (
                    await conn.execute(
                        sa.select(t.step_runs).where(t.step_runs.c.run_id == run_id).order_by(t.step_runs.c.position)
                    )
                )
                .mappings()
                .all()
            )
        return _run(ws, row), {s["step_id"]: _rec(s) for s in steps}

    async def list_runs(
        self,
        ws: str,
        *,
        template_id: str | None = None,
        status: str | None = None,
        parent_run_id: str | None = None,
        limit: int = 100,
    ) -> list[RunRow]:
        engine = await self.engine(ws)
        q = sa.select(t.runs).order_by(t.runs.c.created_at.desc(), t.runs.c.id).limit(limit)
        if template_id is not None:
            q = q.where(t.runs.c.template_id == template_id)
        if status is not None:
            q = q.where(t.runs.c.status == status)
        if parent_run_id is not None:
            q = q.where(t.runs.c.parent_run_id == parent_run_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [_run(ws, r) for r in rows]

    async def unfinished_run_ids(self, ws: str, *, running_only: bool = False) -> list[str]:
        """Runs not finished (``running_only``: not waiting either, every live step suspended)."""
        engine = await self.engine(ws)
        statuses = [RunStatus.running.value] if running_only else [RunStatus.running.value, RunStatus.suspended.value]
        q = sa.select(t.runs.c.id).where(t.runs.c.status.in_(statuses)).order_by(t.runs.c.created_at)
        async with engine.connect() as conn:
            return [r[0] for r in (await conn.execute(q)).all()]

    async def finished_before(self, ws: str, run_ids: Sequence[str], cutoff: datetime) -> list[str]:
        """Which of ``run_ids`` are runs of ``ws`` that finished before ``cutoff``."""
        if not run_ids:
            return []
        engine = await self.engine(ws)
        found: list[str] = []
        async with engine.connect() as conn:
            for start in range(0, len(run_ids), 500):  # SQLite bounds the number of bound parameters
                q = sa.select(t.runs.c.id).where(
                    t.runs.c.id.in_(list(run_ids[start : start + 500])),
                    t.runs.c.status.in_([s.value for s in FINISHED_RUN]),
                    t.runs.c.finished_at.is_not(None),
                    t.runs.c.finished_at < cutoff,
                )
                found += [r[0] for r in (await conn.execute(q)).all()]
        return found

    async def commit(self, ws: str, run_id: str, tick: Tick, now: datetime) -> tuple[int, list[StoredEvent]]:
        """Write one tick in one transaction, with the events it announces; returns the highest domain-event
        seq at that moment (a step started in this tick only counts events after it) and the events written."""
        writer = await self._writer(ws)
        steps = [step_row(writer, run_id, r) for r in tick.steps]
        run = run_row_values(writer, tick.run) if tick.run is not None else None
        events = [(new_id(), e.type, e.payload()) for e in tick.events]
        rows = [(ev_id, kind, now, payload) for ev_id, kind, payload in events]
        seq, seqs = await writer.call(
            write_tick, run_id, steps, run, list(tick.waits_cleared), list(tick.waits_added), rows
        )
        stored = [
            StoredEvent(ws, n, ev_id, kind, now, payload)
            for n, (ev_id, kind, payload) in zip(seqs, events, strict=True)
        ]
        return seq, stored

    async def aclose(self) -> None:
        """Nothing of its own to close: the write paths are the ``Databases``' (closed with them)."""

    async def set_progress(self, ws: str, run_id: str, step_id: str, progress: dict[str, Any]) -> None:
        """Only the progress column, so it never overwrites a newer status written by the runner."""
        engine = await self.engine(ws)
        sr = t.step_runs
        async with engine.begin() as conn:
            await conn.execute(
                sa.update(sr).where(sr.c.run_id == run_id, sr.c.step_id == step_id).values(progress=progress)
            )

    async def find_firing(self, ws: str, trigger_id: str, trigger_key: str) -> str | None:
        """The run already started by this trigger firing, if any."""
        engine = await self.engine(ws)
        q = sa.select(t.runs.c.id).where(t.runs.c.trigger_id == trigger_id, t.runs.c.trigger_key == trigger_key)
        async with engine.connect() as conn:
            found = (await conn.execute(q)).scalar()
        return str(found) if found is not None else None

    async def interest(self, ws: str, keys: Sequence[str], event_type: str) -> tuple[list[tuple[str, str]], bool]:
        """Who cares about an event: the (run, step) pairs waiting on one of ``keys``, and whether any event
        trigger names ``event_type``. Read on the fast connection: every domain event asks this."""
        return await (await self._writer(ws)).call(interest, list(keys), event_type)

    async def waiting_on(self, ws: str, keys: Iterable[str]) -> list[tuple[str, str]]:
        """(run id, step id) of every suspended step waiting on one of ``keys``."""
        engine = await self.engine(ws)
        q = sa.select(t.waits.c.run_id, t.waits.c.step_id).where(t.waits.c.wait_key.in_(list(keys))).distinct()
        async with engine.connect() as conn:
            return [(r[0], r[1]) for r in (await conn.execute(q)).all()]

    async def expired_suspensions(self, ws: str, now: datetime) -> list[str]:
        """Runs with a suspended step whose 24-hour deadline has passed."""
        engine = await self.engine(ws)
        sr = t.step_runs
        q = (
            sa.select(sr.c.run_id)
            .where(sr.c.status == StepStatus.suspended.value, sr.c.deadline.is_not(None), sr.c.deadline <= now)
            .distinct()
        )
        async with engine.connect() as conn:
            return [r[0] for r in (await conn.execute(q)).all()]

    async def next_deadline(self, ws: str) -> datetime | None:
        engine = await self.engine(ws)
        sr = t.step_runs
        q = sa.select(sa.func.min(sr.c.deadline)).where(sr.c.status == StepStatus.suspended.value)
        async with engine.connect() as conn:
            value = (await conn.execute(q)).scalar()
        return value if isinstance(value, datetime) else None

    # -- persisted events (no race between a suspension and the event that ends it) -------------------------

    async def events_since(self, ws: str, type_name: str, after_seq: int) -> list[StoredEvent]:
        engine = await self.engine(ws)
        de = core_tables.domain_events
        q = sa.select(de).where(de.c.type == type_name, de.c.seq > after_seq).order_by(de.c.seq)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [StoredEvent(ws, r["seq"], r["id"], r["type"], r["occurred_at"], dict(r["payload"])) for r in rows]

    async def finished_tasks(self, ws: str, task_ids: Sequence[str]) -> dict[str, tuple[str, Any]]:
        """task id -> (outcome, output) for every listed task with a persisted ``TaskFinished`` (first one wins).

        A task that is a child pipeline run also counts as finished when its run row says so: the run's end is
        stored before its ``TaskFinished`` is published, and a crash in between must not strand the parent.
        """
        engine = await self.engine(ws)
        de = core_tables.domain_events
        q = (
            sa.select(de.c.payload)
            .where(de.c.type == TaskFinished.type, _task_id(de.c.payload).in_(task_ids))
            .order_by(de.c.seq)
        )
        children = sa.select(t.runs.c.id, t.runs.c.status, t.runs.c.state).where(
            t.runs.c.id.in_(task_ids), t.runs.c.status.in_([s.value for s in FINISHED_RUN])
        )
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).all()
            child_rows = (await conn.execute(children)).all()
        found: dict[str, tuple[str, Any]] = {}
        for (payload,) in rows:
            task_id = payload.get("taskId", payload.get("task_id"))  # snake_case: stored before the wire went camel
            found.setdefault(str(task_id), (str(payload.get("outcome")), payload.get("output")))
        for run_id, status, state in child_rows:
            found.setdefault(str(run_id), (str(status), state))
        return found

    # -- what retention keeps ---------------------------------------------------------------------------

    async def needed_events_after(self, ws: str, cursor: str) -> int:
        """The seq after which this part still needs the workspace's events: its event triggers' cursor
        ``cursor`` (0 before its first poll: every event is still to be read), a suspended step's ``sinceSeq``,
        and the first ``TaskFinished`` of a task a suspended step waits on."""
        engine = await self.engine(ws)
        sr, de, ec = t.step_runs, core_tables.domain_events, core_tables.event_cursors
        async with engine.connect() as conn:
            read = (await conn.execute(sa.select(ec.c.seq).where(ec.c.consumer == cursor))).scalar()
            suspends = (
                await conn.execute(sa.select(sr.c.suspend).where(sr.c.status == StepStatus.suspended.value))
            ).scalars()
            floors, task_ids = [int(read or 0)], set[str]()
            for suspend in suspends:
                if isinstance(suspend, dict):
                    floors.append(int(suspend.get("sinceSeq") or 0))
                    task_ids.update(str(i) for i in suspend.get("taskIds") or ())
            if task_ids:
                first = (
                    await conn.execute(
                        sa.select(sa.func.min(de.c.seq)).where(
                            de.c.type == TaskFinished.type, _task_id(de.c.payload).in_(sorted(task_ids))
                        )
                    )
                ).scalar()
                if first is not None:
                    floors.append(int(first) - 1)
        return min(floors)

    async def run_folders(self, data_root: Path, ws: str) -> list[Path]:
        """The working directories that exist of this workspace's runs (``<dataDir>/pipelines/<runId>``)."""
        folder = data_root / "pipelines"
        try:
            names = [e.name for e in os.scandir(folder) if e.is_dir(follow_symlinks=False) and e.name != CONTROL_DIR]
        except FileNotFoundError:
            return []
        engine = await self.engine(ws)
        found: list[str] = []
        async with engine.connect() as conn:
            for at in range(0, len(names), 500):
                q = sa.select(t.runs.c.id).where(t.runs.c.id.in_(names[at : at + 500]))
                found.extend((await conn.execute(q)).scalars())
        return [folder / name for name in sorted(found)]
