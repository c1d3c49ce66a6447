"""The pipeline engine: starts runs, keeps one driver per live run, routes events and task completions to
suspended steps, cancels, resumes after a restart, and tells watchers what changed.

The engine depends only on what it needs: a store, the event bus, a clock, the body registry, the data
directory, and (for bodies) the application context. The server provides it as a service
(``app.service(PipelineEngine)``); ``hangar pipeline`` builds its own without listening.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hangar.core.clock import Clock
from hangar.core.confine import Confinement
from hangar.core.event_types import DomainEvent, StoredEvent
from hangar.core.events import EventBus
from hangar.core.ids import new_id
from hangar.core.runcontrol import STOP_WAIT_S, DrivenElsewhere, RunControl, Takeover
from hangar.errors import Conflict, NotFound, Unavailable
from hangar.identity import IdentityService
from hangar.pipelines import template as tpl
from hangar.pipelines._algo import Graph, StepRec
from hangar.pipelines.bodies.spec import BodyRegistry, BodySpec
from hangar.pipelines.child_runs import StepChildren
from hangar.pipelines.events import TaskFinished
from hangar.pipelines.layout import control_root, pipeline_run_key
from hangar.pipelines.model import FINISHED_RUN, RunStatus, Template
from hangar.pipelines.pull_requests import (
    PULL_REQUEST_EVENT,
    PULL_REQUEST_TRIGGER,
    pull_request_firing,
    run_payload,
)
from hangar.pipelines.rows import RunRow, aware
from hangar.pipelines.runner import Msg, RunDriver
from hangar.pipelines.slots import DEFAULT_MAX_RUNNING_RUNS, MAX_RUNNING_RUNS_SETTING, RunSlots
from hangar.pipelines.step import StepContext
from hangar.pipelines.step_results import StepResult
from hangar.pipelines.stepqueue import STEPS_HERE_SETTING, WAITS_FOR_SERVER_WORKER, StepQueue
from hangar.pipelines.store import PipelineStore
from hangar.pipelines.views import run_snapshot, steps_changed

if TYPE_CHECKING:
    from hangar.core.context import AppContext

log = logging.getLogger(__name__)


def _firing(kind: str, ev: StoredEvent) -> tuple[dict[str, Any], str]:
    """What a trigger's firing puts in the run's payload, and the key that makes it one firing: the event's
    payload and id, or for a pull request trigger its state keys and the head it reports."""
    if kind == PULL_REQUEST_TRIGGER:
        payload = run_payload(ev.payload)
        return payload, pull_request_firing(payload)
    return dict(ev.payload), ev.id


@dataclass(eq=False)
class Listener:
    workspace_id: str
    run_id: str | None
    queue: asyncio.Queue[dict[str, Any]]


class PipelineEngine:
    def __init__(
        self,
        *,
        store: PipelineStore,
        bus: EventBus,
        clock: Clock,
        bodies: BodyRegistry,
        data_root: Path,
        app: AppContext | None = None,
    ) -> None:
        self.store = store
        self.bus = bus
        self.clock = clock
        self.bodies = bodies
        self.app = app
        self.data_root = data_root
        self._drivers: dict[str, RunDriver] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._listeners: list[Listener] = []
        self._graphs: dict[int, Graph] = {}
        self._wires: dict[int, tuple[Template, dict[str, Any]]] = {}
        # Announcements of finished runs (events, a parent's task) run beside the drivers; settle() waits.
        self._announcing: set[asyncio.Task[None]] = set()
        # The runs' driver locks, and the stop requests other processes write for the runs driven here.
        self.control = RunControl(
            control_root(data_root),
            kind="pipeline run",
            on_stop=self._stop_requested,
            dbs=app.dbs if app is not None else None,
            on_fenced=self._fenced,
        )
        # When the engine is subscribed to the bus, events reach ``on_event`` through it; otherwise (the
        # command line) the engine calls ``on_event`` itself after publishing.
        self.subscribed = False
        self.slots = RunSlots(self.slots_limit)
        # Each live step's last state counted (``hangar_pipeline_steps`` counts changes of state, not writes).
        self._counted: dict[tuple[str, str], str] = {}
        # On PostgreSQL, steps that do work go to ``hangar worker`` processes while any is attached.
        self.queue = (
            StepQueue(app.dbs.server, clock, app.dbs.postgresql_url)
            if app is not None and app.dbs.on_postgresql
            else None
        )

    async def slots_limit(self) -> int:
        """``pipelines.maxRunningRuns``, read afresh (another process may change it)."""
        if self.app is not None:
            identity = self.app.maybe_service(IdentityService)
            value = await identity.get_setting(MAX_RUNNING_RUNS_SETTING) if identity is not None else None
            if isinstance(value, int) and value > 0:
                return value
        return DEFAULT_MAX_RUNNING_RUNS

    @classmethod
    def from_app(cls, app: AppContext, bodies: BodyRegistry) -> PipelineEngine:
        return cls(
            store=PipelineStore(app.dbs.workspace, app.dbs.writer),
            bus=app.bus,
            clock=app.clock,
            bodies=bodies,
            data_root=app.datadir.root,
            app=app,
        )

    # -- what the driver uses (``DriverHost``) ------------------------------------------------------------

    def graph_for(self, template: Template) -> Graph:
        """The scheduling graph of a template, built once per template object (runs of one template share it)."""
        key = id(template)
        cached = self._graphs.get(key)
        if cached is not None and cached.template is template:
            return cached
        graph = Graph.build(template)
        if len(self._graphs) >= 256:
            self._graphs.pop(next(iter(self._graphs)))
        self._graphs[key] = graph
        return graph

    def _wire(self, template: Template) -> dict[str, Any]:
        key = id(template)
        cached = self._wires.get(key)
        if cached is not None and cached[0] is template:
            return cached[1]
        wire = template.to_wire()
        if len(self._wires) >= 256:
            self._wires.pop(next(iter(self._wires)))
        self._wires[key] = (template, wire)
        return wire

    def control_dir(self, run_id: str) -> Path:
        return self.control.control_dir(run_id)

    def children_for(self, run: RunRow, step_id: str, attempt: int) -> StepChildren:
        return StepChildren(self, run, step_id, attempt)

    def notify(self, run: RunRow, changed: Sequence[StepRec]) -> None:
        self._count_steps(run, changed)
        if not self._listeners:
            return
        frame = steps_changed(run, changed).model_dump(mode="json", by_alias=True)
        for lst in self._listeners:
            if lst.workspace_id == run.workspace_id and lst.run_id in (None, run.id):
                lst.queue.put_nowait(frame)

    def _count_steps(self, run: RunRow, changed: Sequence[StepRec]) -> None:
        """Count and log each step that reached a new state (the log line carries the request the run started
        under, ``hangar.core.requestids``)."""
        metrics = self.app.metrics if self.app is not None else None
        for rec in changed:
            key, state = (run.id, rec.step_id), rec.status.value
            if self._counted.get(key) == state:
                continue
            self._counted[key] = state
            if metrics is not None:
                metrics.pipeline_step(state)
            log.debug("pipeline run %s: step %s %s", run.id, rec.step_id, state, extra={"runId": run.id})

    def detach(self, driver: RunDriver) -> None:
        """The driver will do nothing more: later messages for its run load a fresh driver from the store."""
        if self._drivers.get(driver.run.id) is driver:
            del self._drivers[driver.run.id]

    async def announce_committed(self, ws: str, events: list[StoredEvent]) -> None:
        """Deliver events a tick committed (when no subscription does, hand them to ``on_event`` here)."""
        await self.bus.committed(ws, events)
        if not self.subscribed:
            for stored in events:
                await self.on_event(stored)

    def run_ended(self, run: RunRow) -> None:
        """After a run's end is stored (with its announcements): a run that did not complete cancels its
        children, whose results nobody waits for any more."""
        self._run_state(run)
        for key in [k for k in self._counted if k[0] == run.id]:
            del self._counted[key]
        if run.status is RunStatus.completed:
            return
        task = asyncio.create_task(self._cancel_children(run), name=f"pipeline-run-ended:{run.id}")
        self._announcing.add(task)
        task.add_done_callback(self._announcing.discard)

    async def run_body(self, spec: BodySpec, ctx: StepContext) -> StepResult:
        # A resumed body (an agent step harvesting the run it dispatched here) finishes where it began.
        if spec.on_worker and not ctx.dry_run and ctx.resume is None and await self._steps_to_workers():
            assert self.queue is not None
            needs_server = spec.needs_server_for(ctx)
            if needs_server:
                # Only a worker started with --server claims it: the step says so while it waits for one.
                await ctx.progress({"waitingFor": WAITS_FOR_SERVER_WORKER})
            return await self.queue.run(ctx, needs_server=needs_server)
        return await spec.fn(ctx)

    async def _steps_to_workers(self) -> bool:
        """Workers are attached and ``pipelines.stepsHere`` does not keep the steps in this process."""
        return self.queue is not None and await self.queue.to_workers(self._steps_here)

    async def _steps_here(self) -> bool:
        identity = self.app.maybe_service(IdentityService) if self.app is not None else None
        return identity is not None and await identity.get_setting(STEPS_HERE_SETTING) is True

    async def body_abandoned(self, run: RunRow, step_id: str) -> None:
        if self.queue is not None:
            await self.queue.cancel(run.workspace_id, run.id, step_id)

    async def _cancel_children(self, run: RunRow) -> None:
        for child in await self.store.list_runs(run.workspace_id, parent_run_id=run.id):
            if child.status not in FINISHED_RUN:
                # Conflict: it ended meanwhile; Unavailable: its driver elsewhere will honour the request.
                with contextlib.suppress(Conflict, Unavailable):
                    await self.cancel(run.workspace_id, child.id)

    async def publish(self, event: DomainEvent) -> StoredEvent:
        stored = await self.bus.publish(event)
        if not self.subscribed:
            await self.on_event(stored)
        return stored

    # -- templates ------------------------------------------------------------------------------------------

    def load_template(self, raw: Mapping[str, Any]) -> Template:
        """A template document another part builds (a built-in one), checked against the bodies this engine runs."""
        return tpl.load(dict(raw), self.bodies).template

    async def stored_template(self, ws: str, template_id: str) -> Template:
        wire = await self.store.get_template(ws, template_id)
        return tpl.load(wire, self.bodies).template

    # -- starting and controlling runs ------------------------------------------------------------------------

    async def start_run(
        self,
        ws: str,
        template: Template,
        *,
        payload: Mapping[str, Any] | None = None,
        dry_run: bool = False,
        trigger_kind: str = "manual",
        trigger_id: str | None = None,
        trigger_key: str | None = None,
        parent_run_id: str | None = None,
        parent_step_id: str | None = None,
        by: str | None = None,
    ) -> str | None:
        """Persist a new run and start driving it; ``None`` when this trigger firing already has a run."""
        now = self.clock.now()
        run = RunRow(
            id=new_id(),
            workspace_id=ws,
            template_id=template.id,
            template=self._wire(template),
            status=RunStatus.running,
            trigger_kind=trigger_kind,
            payload=dict(payload or {}),
            state={},
            dry_run=dry_run,
            created_at=now,
            updated_at=now,
            trigger_id=trigger_id,
            trigger_key=trigger_key,
            parent_run_id=parent_run_id,
            parent_step_id=parent_step_id,
            created_by=by,
        )
        recs = {s.id: StepRec(s.id) for s in template.steps}
        # Held before the row exists: no other process's take-over pass can find the new run undriven.
        took = await self.control.take(run.id, workspace_id=ws)
        try:
            created = await self.store.create_run(run, list(recs.values()))
        except BaseException:
            self.control.release(run.id)
            raise
        if not created:  # this firing has its run already: the new id's lock and directory go
            self.control.release(run.id)
            self.control.remove(run.id)
            return None
        self._launch(RunDriver(self, run, recs, template), took)
        self._run_state(run)
        return run.id

    def _run_state(self, run: RunRow) -> None:
        if self.app is not None:
            self.app.metrics.pipeline_run(run.status.value)
        log.debug("pipeline run %s %s", run.id, run.status.value, extra={"runId": run.id})

    def _launch(self, driver: RunDriver, took: Takeover) -> None:
        """Start driving a run whose lock ``took`` holds."""
        run_id = driver.run.id
        if took.stop_requested:
            # Asked to stop while nobody drove it (or its driver died): it ends cancelled before anything runs.
            driver.offer(Msg("cancel"))
        self._drivers[run_id] = driver
        self._tasks[run_id] = asyncio.create_task(self._drive(driver), name=f"pipeline-run:{run_id}")

    def _stop_requested(self, run_id: str) -> bool:
        """Another process asked to stop a run driven here: its driver stops running bodies, shell scripts
        included."""
        driver = self._drivers.get(run_id)
        if driver is None:
            return False
        driver.offer(Msg("cancel"))
        return True

    def _fenced(self, run_id: str) -> None:
        """This process lost the run's lease (its lease connection broke): stop driving it at once, recording
        nothing, as at shutdown; whoever holds the lease next resumes it from the store."""
        task = self._tasks.get(run_id)
        if task is not None:
            task.cancel()

    async def _drive(self, driver: RunDriver) -> None:
        ws, run_id = driver.run.workspace_id, driver.run.id
        slot = False
        try:
            # Past the workspace's cap the run waits here, its steps pending; a cancel ends the wait at once.
            slot = await self.slots.acquire(ws, run_id, driver.woken, driver.cancel_pending)
            await driver.drive()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("pipeline run %s: driver failed", driver.run.id)
        finally:
            if slot:
                self.slots.release(ws, run_id)
            self.detach(driver)
            self.control.release(driver.run.id, ended=driver.run.status in FINISHED_RUN)
            await self.release_enclosure(driver.run.id)
            if self.queue is not None and driver.run.status in FINISHED_RUN:
                await self._cancel_queued(driver.run)
            if self._tasks.get(driver.run.id) is asyncio.current_task():
                del self._tasks[driver.run.id]

    async def _cancel_queued(self, run: RunRow) -> None:
        """The run ended: steps of it still with workers stop (the workers are fenced at their next heartbeat)."""
        assert self.queue is not None
        try:
            await self.queue.cancel(run.workspace_id, run.id)
        except Exception:
            log.exception("pipeline run %s: could not cancel its steps on workers", run.id)

    async def release_enclosure(self, run_id: str) -> None:
        """The run's shell steps are over here: its warm enclosure goes (a later driver boots a new one)."""
        confinement = self.app.maybe_service(Confinement) if self.app is not None else None
        if confinement is not None:
            try:
                await confinement.release(pipeline_run_key(run_id))
            except Exception:  # the run's outcome stands whatever happens to its enclosure
                log.exception("pipeline run %s: could not close its enclosure", run_id)

    async def _ensure_driver(self, ws: str, run_id: str) -> RunDriver | None:
        """The live driver of a run, loading one from the store when the run is unfinished and not live
        (``DrivenElsewhere`` when another process drives it)."""
        live = self._drivers.get(run_id)
        if live is not None:
            return live
        lock = self._locks.setdefault(run_id, asyncio.Lock())
        try:
            async with lock:
                live = self._drivers.get(run_id)
                if live is not None:
                    return live
                if (await self.store.load_run(ws, run_id))[0].status in FINISHED_RUN:
                    return None
                took = await self.control.take(run_id, workspace_id=ws)
                try:
                    # Read again under the lock: a driver that held it until now may have moved the run on.
                    run, recs = await self.store.load_run(ws, run_id)
                except BaseException:
                    self.control.release(run_id)
                    raise
                if run.status in FINISHED_RUN:
                    self.control.release(run_id)
                    return None
                driver = RunDriver(self, run, recs, Template.model_validate(run.template))
                self._launch(driver, took)
        finally:
            self._locks.pop(run_id, None)
        return driver

    async def resume(self, ws: str, run_id: str) -> bool:
        """Drive an unfinished run again (after a restart); ``False`` when it is finished."""
        return await self._ensure_driver(ws, run_id) is not None

    async def resume_workspace(self, ws: str) -> list[str]:
        """Drive every unfinished run of the workspace that no other process drives; returns their ids."""
        resumed = []
        for run_id in await self.store.unfinished_run_ids(ws):
            try:
                await self.resume(ws, run_id)
            except DrivenElsewhere:
                log.info("pipeline run %s is driven by another process; not resumed here", run_id)
                continue
            resumed.append(run_id)
        return resumed

    async def adopt(self, ws: str) -> list[str]:
        """Take over the workspace's running runs nobody drives (their driver died, on any host); returns their
        ids. Runs waiting on events or tasks are resumed by those, not here."""
        adopted = []
        for run_id in await self.store.unfinished_run_ids(ws, running_only=True):
            if run_id in self._drivers or self.control.holds(run_id):
                continue
            try:
                if not await self.control.abandoned(run_id):
                    continue  # driven, or its driver may be taking its lease back after a blip
                if await self._ensure_driver(ws, run_id) is not None:
                    adopted.append(run_id)
            except (DrivenElsewhere, Unavailable):
                continue
        if adopted:
            log.info("pipeline runs taken over from a driver that stopped: %s", ", ".join(adopted))
        return adopted

    async def cancel(self, ws: str, run_id: str, *, by: str = "hangar", wait_s: float = STOP_WAIT_S) -> None:
        """Cancel an unfinished run and return once it has ended, whichever process drives it.

        The request is recorded beside the run's driver lock first, so it stands whatever happens next. A run
        this process drives (or can take over: nobody drives it) is cancelled here at once; a run another process
        drives is cancelled by that process when it sees the request, or by this one if that driver dies while
        this one waits."""
        run, _ = await self.store.load_run(ws, run_id)
        if run.status in FINISHED_RUN:
            raise Conflict(f"pipeline run {run_id} is already {run.status.value}")

        async def cancel_here() -> bool:
            try:
                driver = await self._ensure_driver(ws, run_id)
            except DrivenElsewhere:
                return False
            if driver is not None:  # else it ended meanwhile (cancelled by its driver, or it finished first)
                driver.offer(Msg("cancel"))
                await self.wait(run_id)
            return True

        async def ended() -> bool:
            return (await self.store.load_run(ws, run_id))[0].status in FINISHED_RUN

        await self.control.stop(
            run_id, by=by, at=self.clock.now(), stop_here=cancel_here, ended=ended, wait_s=wait_s, workspace_id=ws
        )

    async def wait(self, run_id: str) -> None:
        """Until the run's current driver stops (the run ended or every live step is suspended)."""
        while (task := self._tasks.get(run_id)) is not None:
            await asyncio.gather(task, return_exceptions=True)

    async def settle(self) -> None:
        """Until no run has a live driver and every announcement is delivered (children and resumed parents
        included)."""
        if self.subscribed:
            await self.bus.drain()
        while self._tasks or self._announcing:
            await asyncio.gather(*self._tasks.values(), *self._announcing, return_exceptions=True)
            if self.subscribed:
                await self.bus.drain()

    @property
    def live_runs(self) -> list[str]:
        return list(self._drivers)

    # -- events -----------------------------------------------------------------------------------------------

    async def on_event(self, ev: StoredEvent) -> list[str]:
        """Resume the steps suspended on ``ev`` and start the runs its event triggers fire; returns run ids."""
        ws = ev.workspace_id
        keys = [f"event:{ev.type}"]
        task_id = ev.payload.get("taskId") if ev.type == TaskFinished.type else None
        if task_id is not None:
            keys.append(f"task:{task_id}")
        touched: list[str] = []
        waiters, has_triggers = await self.store.interest(ws, keys, ev.type)
        for run_id, step_id in waiters:
            try:
                driver = await self._ensure_driver(ws, run_id)
            except DrivenElsewhere:
                continue  # the process driving it resumes it from the stored event when it looks
            if driver is None:
                continue
            driver.offer(Msg("tasks", step_id) if task_id is not None else Msg("event", step_id, ev))
            touched.append(run_id)
        if not has_triggers:
            return list(dict.fromkeys(touched))
        occurred = aware(ev.occurred_at)
        firings = await self.store.list_triggers(ws, kind="event", event_type=ev.type)
        if ev.type == PULL_REQUEST_EVENT:
            firings += await self.store.list_triggers(ws, kind=PULL_REQUEST_TRIGGER, event_type=ev.type)
        for trig in firings:
            # A trigger fires for events after it was created, not for history replayed at start.
            if not trig.enabled or (occurred is not None and occurred < trig.created_at):
                continue
            try:
                template = await self.stored_template(ws, trig.template_id)
            except NotFound:
                log.warning("event trigger %s names a missing template %s", trig.id, trig.template_id)
                continue
            given, key = _firing(trig.kind, ev)
            started = await self.start_run(
                ws,
                template,
                payload={**trig.payload, **given},
                trigger_kind=trig.kind,
                trigger_id=trig.id,
                trigger_key=key,
            )
            if started is not None:
                touched.append(started)
        return list(dict.fromkeys(touched))

    async def expire_suspensions(self, ws: str) -> list[str]:
        """Time out steps suspended for more than 24 hours (drivers check each deadline themselves)."""
        now = self.clock.now()
        run_ids = await self.store.expired_suspensions(ws, now)
        for run_id in run_ids:
            live = self._drivers.get(run_id)
            if live is not None:
                for rec in live.recs.values():
                    if rec.deadline is not None and rec.deadline <= now:
                        live.offer(Msg("expire", rec.step_id))
            else:
                with contextlib.suppress(DrivenElsewhere):
                    await self._ensure_driver(ws, run_id)  # loading checks deadlines
        return run_ids

    # -- reading ----------------------------------------------------------------------------------------------

    async def snapshot(self, ws: str, run_id: str) -> dict[str, Any]:
        """The run in the command line's ``--json`` shape."""
        run, recs = await self.store.load_run(ws, run_id)
        return run_snapshot(run, recs).model_dump(mode="json", by_alias=True)

    def listen(self, ws: str, run_id: str | None) -> Listener:
        """Start receiving step-run changes of one run (or every run of the workspace) on ``.queue``."""
        lst = Listener(ws, run_id, asyncio.Queue())
        self._listeners.append(lst)
        return lst

    def unlisten(self, lst: Listener) -> None:
        if lst in self._listeners:
            self._listeners.remove(lst)

    async def watch(self, ws: str, run_id: str | None) -> AsyncIterator[dict[str, Any]]:
        """Step-run changes as they are persisted (an async iterator over ``listen``)."""
        lst = self.listen(ws, run_id)
        try:
            while True:
                yield await lst.queue.get()
        finally:
            self.unlisten(lst)

    async def aclose(self) -> None:
        """Stop every driver without recording anything: unfinished runs resume at the next start."""
        tasks = [*self._tasks.values(), *self._announcing]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.control.aclose()
        if self.queue is not None:
            await self.queue.aclose()
        self._tasks.clear()
        self._drivers.clear()
        await self.store.aclose()


__all__ = ["PipelineEngine"]
