"""The run driver: one asyncio task per live run, executing bodies and persisting every change first.

One scheduling tick: fold in what finished (body results, resumptions, cancellation, due retries), ask
``_algo`` which steps are now ready or skipped, mark the ready ones running, write all of it in one
transaction, and only then start their bodies. So whatever a crash interrupts, the database says which steps
completed (never run again) and which were running (run again: bodies are at-least-once).

A driver stops when the run ends, or when every live step is suspended (the run is then ``suspended`` and a
resumption loads a fresh driver from the store). What it needs from whoever runs it (the engine) is ``DriverHost``.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hangar.core.clock import Clock
from hangar.core.event_types import DomainEvent, StoredEvent
from hangar.errors import HangarError
from hangar.pipelines import _algo, layout, predicates
from hangar.pipelines._algo import DRY_RUN_KEY, Graph, StepRec
from hangar.pipelines.bodies.spec import BodyRegistry, BodySpec
from hangar.pipelines.events import PipelineRunFinished, TaskFinished
from hangar.pipelines.model import RunStatus, StepKind, StepStatus, Template
from hangar.pipelines.rows import RunRow, Tick
from hangar.pipelines.step import ChildRuns, Resume, ResumedEvent, StepContext, TaskOutcome
from hangar.pipelines.step_results import StepResult
from hangar.pipelines.store import PipelineStore

if TYPE_CHECKING:
    from hangar.core.context import AppContext

log = logging.getLogger(__name__)


class DriverHost(Protocol):
    """What a driver needs from whoever runs it (``PipelineEngine``)."""

    store: PipelineStore
    clock: Clock
    bodies: BodyRegistry
    app: AppContext | None
    data_root: Path

    def graph_for(self, template: Template) -> Graph:
        """The scheduling graph of ``template`` (shared by runs of one template)."""
        ...

    def children_for(self, run: RunRow, step_id: str, attempt: int) -> ChildRuns:
        """How one attempt of one step starts child runs."""
        ...

    def notify(self, run: RunRow, changed: Sequence[StepRec]) -> None:
        """Tell watchers which step runs changed (after they are stored)."""
        ...

    async def announce_committed(self, ws: str, events: list[StoredEvent]) -> None:
        """Deliver the events a tick committed."""
        ...

    def detach(self, driver: RunDriver) -> None:
        """The driver will do nothing more: later messages for its run load a fresh driver."""
        ...

    def run_ended(self, run: RunRow) -> None:
        """After a run's end is stored."""
        ...

    async def run_body(self, spec: BodySpec, ctx: StepContext) -> StepResult:
        """Run one attempt's body: here, or on a worker (``hangar.pipelines.stepqueue``)."""
        ...

    async def body_abandoned(self, run: RunRow, step_id: str) -> None:
        """An attempt timed out: whoever runs its body elsewhere stops."""
        ...


def end_events(run: RunRow) -> list[DomainEvent]:
    """What a run's end announces, written with it: ``PipelineRunFinished``, and for a child run the
    ``TaskFinished`` its parent's step waits for."""
    events: list[DomainEvent] = [
        PipelineRunFinished(
            workspace_id=run.workspace_id,
            run_id=run.id,
            template_id=run.template_id,
            status=run.status.value,
            parent_run_id=run.parent_run_id,
            error=run.error,
        )
    ]
    if run.parent_run_id is not None:
        events.append(
            TaskFinished(workspace_id=run.workspace_id, task_id=run.id, outcome=run.status.value, output=run.state)
        )
    return events


@dataclass(frozen=True)
class Finished:
    step_id: str
    result: StepResult
    timed_out: bool = False


@dataclass(frozen=True)
class Msg:
    """Something from outside the driver: ``event`` (with ``event``), ``tasks`` (a task the step waits for
    finished), ``check`` (look at persisted events and tasks), ``expire`` (24-hour deadline), ``cancel``."""

    kind: str
    step_id: str | None = None
    event: StoredEvent | None = None


def _resume_wire(resume: Resume) -> dict[str, Any]:
    if resume.event is not None:
        ev = resume.event
        return {"event": {"type": ev.type, "seq": ev.seq, "payload": dict(ev.payload)}}
    return {"tasks": [{"taskId": t.task_id, "outcome": t.outcome, "output": t.output} for t in resume.tasks]}


def _resume_from_wire(wire: Mapping[str, Any]) -> Resume:
    if "event" in wire:
        ev = wire["event"]
        return Resume(event=ResumedEvent(ev["type"], int(ev["seq"]), ev.get("payload") or {}))
    return Resume(tasks=tuple(TaskOutcome(t["taskId"], t["outcome"], t.get("output")) for t in wire["tasks"]))


class RunDriver:
    def __init__(self, host: DriverHost, run: RunRow, recs: dict[str, StepRec], template: Template) -> None:
        self.e = host
        self.run = run
        self.ws = run.workspace_id
        self.recs = recs
        self.template = template
        self.graph = host.graph_for(template)
        self.run_dir = layout.run_dir(host.data_root, run.id)
        self.folders = layout.file_folders(host.data_root, run.id, run.workspace_id)
        self.control_dir = layout.control_dir(host.data_root, run.id)
        self.tick = Tick()
        self._dirty_steps: dict[str, StepRec] = {}
        self._run_dirty = False
        self._tasks: dict[asyncio.Task[Finished], str] = {}
        self._to_start: list[tuple[str, Resume | None]] = []
        self._timers: list[tuple[datetime, str]] = []
        self._candidates: list[str] = []
        self._just_suspended: list[str] = []
        self._since: dict[str, int] = {}
        self.inbox: deque[Msg] = deque()
        self._wake = asyncio.Event()
        self.ended = False
        self._end_written = False
        self._tick_now: datetime | None = None

    # -- outside world ------------------------------------------------------------------------------------

    def offer(self, msg: Msg) -> None:
        self.inbox.append(msg)
        self._wake.set()

    @property
    def woken(self) -> asyncio.Event:
        """Set when a message arrives (what a run waiting for a slot also watches)."""
        return self._wake

    def cancel_pending(self) -> bool:
        return any(m.kind == "cancel" for m in self.inbox)

    # -- bookkeeping --------------------------------------------------------------------------------------

    def _touch(self, rec: StepRec) -> None:
        self._dirty_steps[rec.step_id] = rec

    def _touch_run(self) -> None:
        self._run_dirty = True

    def _now(self) -> datetime:
        """The time of the current tick: everything one tick records shares it (and the clock is read once)."""
        if self._tick_now is None:
            self._tick_now = self.e.clock.now()
        return self._tick_now

    async def _flush(self) -> int:
        if not (self._dirty_steps or self._run_dirty or self.tick):
            return -1
        tick = self.tick
        tick.steps = list(self._dirty_steps.values())
        if self._run_dirty:
            self.run.updated_at = self._now()
            tick.run = self.run
            if self.ended and not self._end_written:
                # The run's end and its announcements commit together: no kill leaves a parent waiting.
                tick.events = end_events(self.run)
                self._end_written = True
        seq, announced = await self.e.store.commit(self.ws, self.run.id, tick, self._now())
        changed = tick.steps
        self.tick = Tick()
        self._dirty_steps = {}
        self._run_dirty = False
        self.e.notify(self.run, changed)
        if announced:
            await self.e.announce_committed(self.ws, announced)
        return seq

    # -- the loop -----------------------------------------------------------------------------------------

    async def drive(self) -> None:
        try:
            self._recover()
            while True:
                self._tick_now = None
                await self._process_inbox()
                self._collect()
                await self._due_timers()
                await self._schedule()
                seq = await self._flush()
                self._start_bodies(seq)
                if self._just_suspended:
                    for sid in self._just_suspended:
                        self.inbox.append(Msg("check", sid))
                    self._just_suspended = []
                    continue
                if self.ended:
                    self.e.detach(self)
                    break
                if not self._tasks and not self._timers and not self.inbox and not self._candidates:
                    if any(r.status is StepStatus.suspended for r in self.recs.values()):
                        self.run.status = RunStatus.suspended
                        self._touch_run()
                        await self._flush()
                        if not self.inbox:
                            # No await between this check and detaching: a message sent from now on
                            # finds no live driver and loads a fresh one from the store.
                            self.e.detach(self)
                            break
                        self.run.status = RunStatus.running
                        self._touch_run()
                        continue
                    self._end(RunStatus.completed, None)
                    continue
                await self._wait()
        finally:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.run.status in (RunStatus.completed, RunStatus.failed, RunStatus.cancelled):
            self.e.run_ended(self.run)

    def _recover(self) -> None:
        """Bring a run loaded from the store (fresh, after a restart, or resumed) back into motion."""
        now = self._now()
        if self.run.status is RunStatus.suspended:
            self.run.status = RunStatus.running
            self._touch_run()
        for rec in self.recs.values():
            if rec.status is StepStatus.running:
                if rec.resume is not None:
                    # The body was harvesting a resumption when the process died: harvest again.
                    self._to_start.append((rec.step_id, _resume_from_wire(rec.resume)))
                else:
                    _algo.recover(rec)
                self._touch(rec)
            elif rec.status is StepStatus.suspended:
                self.inbox.append(Msg("check", rec.step_id))
                if rec.deadline is not None and rec.deadline <= now:
                    self.inbox.append(Msg("expire", rec.step_id))
        self._candidates = list(self.graph.order)

    async def _wait(self) -> None:
        """Until a body finishes, a message arrives or the next retry is due (each sets ``_wake``)."""
        if self._wake.is_set():
            self._wake.clear()
            return
        sleeper: asyncio.Future[None] | None = None
        if self._timers:
            delay = (self._timers[0][0] - self._now()).total_seconds()
            sleeper = asyncio.ensure_future(self.e.clock.sleep(max(0.0, delay)))
            sleeper.add_done_callback(lambda _f: self._wake.set())
        try:
            await self._wake.wait()
        finally:
            # Cleared before anything is folded in: a wake-up from now on is for something not yet seen.
            self._wake.clear()
            if sleeper is not None and not sleeper.done():
                sleeper.cancel()

    # -- folding in what happened --------------------------------------------------------------------------

    def _collect(self) -> None:
        for task in [t for t in self._tasks if t.done()]:
            sid = self._tasks.pop(task)
            if self.ended:
                continue
            exc = task.exception() if not task.cancelled() else None
            if task.cancelled() or exc is not None:
                self._apply(sid, StepResult.failed(f"the step's runner failed: {exc!r}"))
                continue
            fin = task.result()
            self._apply(sid, fin.result, timed_out=fin.timed_out)

    def _apply(self, sid: str, result: StepResult, *, timed_out: bool = False) -> None:
        step = self.graph.steps[sid]
        rec = self.recs[sid]
        applied = _algo.apply_result(
            step, rec, result, self.run.state, self._now(), timed_out=timed_out, since_seq=self._since.get(sid, 0)
        )
        self._touch(rec)
        if applied.state_changed:
            self._touch_run()
        outcome = applied.outcome
        if outcome in ("completed", "settled_failure"):
            self._candidates.extend(self.graph.dependents[sid])
        elif outcome == "suspended":
            assert rec.suspend is not None
            keys = [f"task:{t}" for t in rec.suspend["taskIds"]]
            if rec.suspend.get("eventType"):
                keys.append(f"event:{rec.suspend['eventType']}")
            self.tick.waits_added += [(sid, k) for k in keys]
            self._just_suspended.append(sid)
        elif outcome == "retry":
            assert rec.not_before is not None
            heapq.heappush(self._timers, (rec.not_before, sid))
        elif outcome == "run_failed":
            self._end(RunStatus.failed, f"step {sid} failed: {rec.error}")
        elif outcome == "run_terminal":
            self._end(RunStatus.completed, None)

    def _end(self, status: RunStatus, error: str | None) -> None:
        if self.ended:
            return
        self.ended = True
        now = self._now()
        self.run.status = status
        self.run.error = error
        self.run.finished_at = now
        self._touch_run()
        # Whatever had not finished when the run ended is cancelled (never-started steps included).
        for rec in self.recs.values():
            if rec.status in (StepStatus.running, StepStatus.suspended, StepStatus.pending):
                was_suspended = rec.status is StepStatus.suspended
                rec.status = StepStatus.cancelled
                rec.finished_at = now if rec.started_at else None
                rec.deadline = None
                self._touch(rec)
                if was_suspended:
                    self.tick.waits_cleared.append(rec.step_id)
        # Running bodies are stopped once this end is stored (the loop's next flush, then ``drive``'s exit).
        self._timers.clear()
        self._to_start.clear()
        self._candidates.clear()

    async def _due_timers(self) -> None:
        now = self._now()
        while self._timers and self._timers[0][0] <= now and not self.ended:
            _, sid = heapq.heappop(self._timers)
            rec = self.recs[sid]
            if rec.status is StepStatus.pending:
                await self._launch(sid)

    async def _schedule(self) -> None:
        while self._candidates and not self.ended:
            candidates, self._candidates = self._candidates, []
            plan = _algo.propagate(self.graph, self.recs, candidates)
            now = self._now()
            for sid in plan.skipped:
                rec = self.recs[sid]
                rec.status = StepStatus.skipped
                rec.finished_at = now
                self._touch(rec)
            for sid in plan.ready:
                if self.ended:
                    break
                await self._launch(sid)

    async def _launch(self, sid: str) -> None:
        """Decide what a ready step does: wait for its retry time, finish at once, be skipped, or run."""
        step = self.graph.steps[sid]
        rec = self.recs[sid]
        now = self._now()
        if rec.not_before is not None and rec.not_before > now:
            heapq.heappush(self._timers, (rec.not_before, sid))
            return
        if step.kind is StepKind.terminal:
            _algo.start_attempt(rec, now)
            self._apply(sid, StepResult.ok())
            return
        run_when = step.config.run_when
        if run_when is not None:
            try:
                met = await predicates.run_when_met(run_when, self.run.state, self.folders)
            except HangarError as exc:  # a look outside its folders, or past its bounds
                _algo.start_attempt(rec, now)
                self._apply(sid, StepResult.failed(f"runWhen: {exc.message}"))
                return
            if self.ended:
                return
            if not met:
                self._skip(sid, None)
                return
        if self.e.bodies.get(step.body_key) is None:
            self._skip(sid, f"body {step.body_key!r} is not registered; the step never executes")
            return
        _algo.start_attempt(rec, now)
        self._touch(rec)
        self._to_start.append((sid, None))

    def _skip(self, sid: str, note: str | None) -> None:
        rec = self.recs[sid]
        rec.status = StepStatus.skipped
        rec.error = note
        rec.finished_at = self._now()
        self._touch(rec)
        self._candidates.extend(self.graph.dependents[sid])

    # -- running bodies -----------------------------------------------------------------------------------

    def _start_bodies(self, seq: int) -> None:
        starts, self._to_start = self._to_start, []
        for sid, resume in starts:
            if seq >= 0 and resume is None:
                self._since[sid] = seq
            elif resume is not None and resume.event is not None:
                # A step an event resumed that suspends again waits for a later event, not the same one again.
                self._since[sid] = max(self._since.get(sid, 0), resume.event.seq)
            task = asyncio.create_task(self._execute(sid, resume), name=f"pipeline:{self.run.id}:{sid}")
            self._tasks[task] = sid
            task.add_done_callback(lambda _t: self._wake.set())

    def _context(self, sid: str, resume: Resume | None) -> StepContext:
        step = self.graph.steps[sid]
        run = self.run
        return StepContext(
            app=self.e.app,
            run_id=run.id,
            workspace_id=self.ws,
            template_id=run.template_id,
            parent_run_id=run.parent_run_id,
            dry_run=run.dry_run,
            payload=run.payload,
            state=run.state,
            step=step,
            attempt=self.recs[sid].attempts,
            clock=self.e.clock,
            run_dir=self.run_dir,
            folders=self.folders,
            control_dir=self.control_dir,
            progress=lambda data: self._report_progress(sid, data),
            children=self.e.children_for(run, sid, self.recs[sid].attempts),
            resume=resume,
        )

    async def _report_progress(self, sid: str, data: Mapping[str, Any]) -> None:
        rec = self.recs[sid]
        rec.progress = dict(data)
        await self.e.store.set_progress(self.ws, self.run.id, sid, rec.progress)
        self.e.notify(self.run, [rec])

    async def _execute(self, sid: str, resume: Resume | None) -> Finished:
        step = self.graph.steps[sid]
        spec = self.e.bodies.get(step.body_key)
        assert spec is not None
        ctx = self._context(sid, resume)
        missing = [k for k in step.config.input_keys if not ctx.has(k)]
        if missing:
            return Finished(
                sid, StepResult.failed(f"input key {missing[0]!r} is not in the pipeline state or the trigger payload")
            )
        if self.run.dry_run and not spec.honours_dry_run:
            await ctx.progress({"dryRun": True, "wouldRun": spec.key})
            return Finished(sid, StepResult.ok({DRY_RUN_KEY: {sid: f"would run {spec.key}"}}))
        timeout_ms = step.config.timeout_ms
        try:
            if timeout_ms is None:
                result = await self.e.run_body(spec, ctx)
            else:
                body_task = asyncio.ensure_future(self.e.run_body(spec, ctx))
                timer = asyncio.ensure_future(self.e.clock.sleep(timeout_ms / 1000.0))
                try:
                    await asyncio.wait({body_task, timer}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    timer.cancel()
                    if not body_task.done():
                        body_task.cancel()
                        await asyncio.gather(body_task, return_exceptions=True)
                if body_task.cancelled():
                    await self.e.body_abandoned(self.run, sid)
                    return Finished(sid, StepResult.failed(f"timed out after {timeout_ms} ms"), timed_out=True)
                result = body_task.result()
        except asyncio.CancelledError:
            raise
        except HangarError as exc:
            return Finished(sid, StepResult.failed(exc.message))
        except Exception as exc:
            log.info("pipeline body %s raised", spec.key, exc_info=True)
            return Finished(sid, StepResult.failed(f"body {spec.key} raised {type(exc).__name__}: {exc}"))
        if not isinstance(result, StepResult):
            return Finished(
                sid, StepResult.failed(f"body {spec.key} returned {type(result).__name__}, not a StepResult")
            )
        return Finished(sid, result)

    # -- messages: resumptions, expiry, cancellation --------------------------------------------------------

    async def _process_inbox(self) -> None:
        while self.inbox and not self.ended:
            msg = self.inbox.popleft()
            if msg.kind == "cancel":
                self._end(RunStatus.cancelled, "cancelled")
                return
            sid = msg.step_id
            if sid is None or self.recs[sid].status is not StepStatus.suspended:
                continue
            rec = self.recs[sid]
            assert rec.suspend is not None
            if msg.kind == "expire":
                if rec.deadline is not None and rec.deadline <= self._now():
                    self.tick.waits_cleared.append(sid)
                    self._apply(sid, StepResult.failed("suspended for more than 24 hours"), timed_out=True)
            elif msg.kind == "event" and msg.event is not None:
                ev = msg.event
                if ev.seq > int(rec.suspend.get("sinceSeq") or 0) and _algo.event_matches(
                    rec.suspend, ev.type, ev.payload
                ):
                    self._resume(sid, Resume(event=ResumedEvent(ev.type, ev.seq, ev.payload)))
            elif msg.kind in ("tasks", "check"):
                await self._check(sid)

    async def _check(self, sid: str) -> None:
        """Does a persisted event or the finished tasks already end this suspension?"""
        rec = self.recs[sid]
        assert rec.suspend is not None
        task_ids = list(rec.suspend.get("taskIds") or [])
        if task_ids:
            found = await self.e.store.finished_tasks(self.ws, task_ids)
            if all(t in found for t in task_ids):
                outcomes = tuple(TaskOutcome(t, found[t][0], found[t][1]) for t in task_ids)
                self._resume(sid, Resume(tasks=outcomes))
            return
        type_name = rec.suspend.get("eventType")
        if type_name:
            for ev in await self.e.store.events_since(self.ws, type_name, int(rec.suspend.get("sinceSeq") or 0)):
                if _algo.event_matches(rec.suspend, ev.type, ev.payload):
                    self._resume(sid, Resume(event=ResumedEvent(ev.type, ev.seq, ev.payload)))
                    return

    def _resume(self, sid: str, resume: Resume) -> None:
        step = self.graph.steps[sid]
        rec = self.recs[sid]
        self.tick.waits_cleared.append(sid)
        spec = self.e.bodies.get(step.body_key)
        if spec is not None and spec.resumes:
            rec.status = StepStatus.running
            rec.suspend = None
            rec.deadline = None
            rec.resume = _resume_wire(resume)
            self._touch(rec)
            self._to_start.append((sid, resume))
            return
        if resume.event is not None:
            self._apply(sid, StepResult.ok(output=dict(resume.event.payload)))
        else:
            outs = [(t.task_id, t.outcome, t.output) for t in resume.tasks]
            self._apply(sid, _algo.task_resume_result(step, outs))
