"""``hangar worker``: a process that takes pipeline steps from the step queue in PostgreSQL and runs their bodies.

**Claims.** One statement takes up to the free slots' worth of rows, oldest first: rows ``queued``, or
``claimed`` whose lease lapsed (their worker died or lost the database), locked with ``FOR UPDATE SKIP LOCKED`` so
any number of workers claim at once without waiting on each other or taking one row twice, and only while the
worker's credential is not revoked (checked in the same statement). Each claim is a *try*: ``tries`` counts them,
and the row's ``history`` gets ``{key, workerId, credentialId, claimedAt, progress, outcome}``, the key being
``<attemptKey>.<try>``; a try whose worker died is marked ``lapsed`` when the next one begins, and its recorded
progress stays, so the next try (``StepContext.earlier_tries``, ``HANGAR_EARLIER_ATTEMPTS`` for a script) finds
what the dead one began.

**Leases.** A claim holds the row until ``lease_until`` (``LEASE_S`` after the database's clock: one clock for
every host). Every ``HEARTBEAT_S`` the worker extends the leases of the claims it runs, again only while its
credential is not revoked; a claim whose row was cancelled (the run ended, the attempt timed out), taken by another
worker after its lease lapsed, or whose credential was revoked is not extended, and its body is stopped at once
(fenced: its result would not be accepted, the completion requiring the same worker and try). A worker that cannot
reach the database stops every body it runs (their leases lapse; another worker takes them) and tries again.

**Results** are written with the row's ``done`` status, in one statement that requires the claim to be this
worker's current try; the server that waits for the step reads it (``hangar.pipelines.stepqueue``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.errors import HangarError, Unauthenticated
from hangar.pipelines import layout
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.model import Template
from hangar.pipelines.queue_tables import step_queue, worker_credentials, workers
from hangar.pipelines.rows import RunRow
from hangar.pipelines.step import StepContext
from hangar.pipelines.step_results import StepResult
from hangar.pipelines.stepqueue import result_wire
from hangar.pipelines.workercreds import WorkerCredential

log = logging.getLogger(__name__)

LEASE_S = 10.0  # a claim not extended for this long may be taken by another worker
HEARTBEAT_S = 2.0  # how often a worker extends its claims' leases and says it is attached
IDLE_MAX_S = 0.05  # the longest wait between two claims while the queue is empty (from 5 ms, doubling)
DEFAULT_CONCURRENCY = 8  # bodies one worker runs at once (``hangar worker --concurrency``)
RUNS_CACHED = 256  # runs whose template and payload a worker keeps (they never change during a run)


@dataclass
class Claim:
    id: int
    workspace_id: str
    run_id: str
    step_id: str
    attempt: int
    body_key: str
    state: dict[str, Any]
    try_no: int
    history: list[dict[str, Any]]
    task: asyncio.Task[None] | None = field(default=None, repr=False)


class Worker:
    def __init__(self, app: AppContext, engine: PipelineEngine, credential: WorkerCredential, concurrency: int) -> None:
        self.app = app
        self.engine = engine
        self.credential = credential
        self.concurrency = concurrency
        self.id = new_id()
        self._db = app.dbs.server
        self._claims: dict[int, Claim] = {}
        self._runs: OrderedDict[str, tuple[RunRow, Template]] = OrderedDict()
        self._freed = asyncio.Event()
        self.revoked = False
        self.done = 0

    # -- the loop -----------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Take and run steps until cancelled, or until the credential is revoked (``Unauthenticated``)."""
        await self._register()
        beat = asyncio.create_task(self._heartbeats(), name="worker-heartbeat")
        try:
            idle = 0.005
            while not self.revoked:
                free = self.concurrency - len(self._claims)
                taken: list[Claim] = []
                if free > 0:
                    try:
                        taken = await self._claim(free)
                    except Exception as exc:
                        log.warning("worker: cannot claim steps (%s); trying again", _said(exc))
                        self._fence_all()
                        await asyncio.sleep(HEARTBEAT_S)
                        continue
                for claim in taken:
                    self._claims[claim.id] = claim
                    claim.task = asyncio.create_task(self._execute(claim), name=f"worker-step:{claim.id}")
                if taken:
                    idle = 0.005
                    continue
                self._freed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._freed.wait(), idle if free > 0 else None)
                idle = min(IDLE_MAX_S, idle * 2)
            raise Unauthenticated(f"the worker credential {self.credential.name!r} was revoked: this worker stops")
        finally:
            beat.cancel()
            self._fence_all()
            running = [c.task for c in self._claims.values() if c.task is not None]
            await asyncio.gather(beat, *running, return_exceptions=True)
            with contextlib.suppress(Exception):
                async with self._db.begin() as conn:
                    await conn.execute(workers.delete().where(workers.c.id == self.id))

    async def _register(self) -> None:
        now = self.app.clock.now()
        async with self._db.begin() as conn:
            await conn.execute(
                workers.insert().values(
                    id=self.id,
                    credential_id=self.credential.id,
                    host=socket.gethostname()[:255],
                    pid=os.getpid(),
                    started_at=now,
                    seen_at=now,
                )
            )

    def _live_credential(self) -> sa.Exists:
        wc = worker_credentials.c
        return sa.exists().where(wc.id == self.credential.id, wc.revoked_at.is_(None))

    async def _claim(self, limit: int) -> list[Claim]:
        q = step_queue.c
        lease = timedelta(seconds=LEASE_S)
        open_rows = (
            sa.select(q.id)
            .where(sa.or_(q.status == "queued", sa.and_(q.status == "claimed", q.lease_until < sa.func.now())))
            .order_by(q.id)
            .limit(limit)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        claim = (
            step_queue.update()
            .where(q.id.in_(open_rows), self._live_credential())
            .values(status="claimed", worker_id=self.id, tries=q.tries + 1, lease_until=sa.func.now() + lease)
            .returning(q.id, q.workspace_id, q.run_id, q.step_id, q.attempt, q.body_key, q.state, q.tries, q.history)
        )
        now = self.app.clock.now()
        async with self._db.begin() as conn:
            rows = (await conn.execute(claim)).all()
            claims = []
            for r in rows:
                history = [
                    {**t, "outcome": t.get("outcome") or "lapsed"} for t in (r.history or [])
                ]  # an earlier try still open is one whose worker died
                key = f"pipeline:{r.run_id}/{r.step_id}#{r.attempt}.{r.tries}"
                history.append(
                    {
                        "key": key,
                        "workerId": self.id,
                        "credentialId": self.credential.id,
                        "claimedAt": now.isoformat(),
                        "progress": None,
                        "outcome": None,
                    }
                )
                claims.append(
                    Claim(r.id, r.workspace_id, r.run_id, r.step_id, r.attempt, r.body_key, r.state, r.tries, history)
                )
            if claims:
                await conn.execute(
                    step_queue.update().where(q.id == sa.bindparam("claim_id")).values(history=sa.bindparam("h")),
                    [{"claim_id": c.id, "h": c.history} for c in claims],
                )
        return claims

    # -- heartbeats and fencing -----------------------------------------------------------------------------

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            try:
                await self._beat()
            except Exception as exc:
                # The database is out of reach: nothing this worker runs can be recorded, and the leases lapse.
                log.warning("worker: lost the database (%s): stopping the steps it runs", _said(exc))
                self._fence_all()

    async def _beat(self) -> None:
        q = step_queue.c
        wc = worker_credentials.c
        held = {c.id: c.try_no for c in self._claims.values()}
        async with self._db.begin() as conn:
            revoked = (await conn.execute(sa.select(wc.revoked_at).where(wc.id == self.credential.id))).scalar()
            if revoked is not None:
                self.revoked = True
                cred = self.credential
                log.warning("worker: the worker credential %r (%s) was revoked: stopping", cred.name, cred.id)
                self._fence_all()
                self._freed.set()
                return
            await conn.execute(workers.update().where(workers.c.id == self.id).values(seen_at=self.app.clock.now()))
            if not held:
                return
            kept = (
                await conn.execute(
                    step_queue.update()
                    .where(
                        q.id.in_(list(held)),
                        q.worker_id == self.id,
                        q.status == "claimed",
                        self._live_credential(),
                    )
                    .values(lease_until=sa.func.now() + timedelta(seconds=LEASE_S))
                    .returning(q.id, q.tries)
                )
            ).all()
        still = {r.id for r in kept if held.get(r.id) == r.tries}
        for claim_id in held:
            if claim_id not in still:
                self._fence(claim_id, "its claim was cancelled or taken by another worker")

    def _fence(self, claim_id: int, why: str) -> None:
        claim = self._claims.get(claim_id)
        if claim is not None and claim.task is not None and not claim.task.done():
            log.info("worker: stopping step %s of run %s: %s", claim.step_id, claim.run_id, why)
            claim.task.cancel()

    def _fence_all(self) -> None:
        for claim_id in list(self._claims):
            self._fence(claim_id, "this worker stops or lost the database")

    # -- running one claim ----------------------------------------------------------------------------------

    async def _run_of(self, ws: str, run_id: str) -> tuple[RunRow, Template]:
        known = self._runs.get(run_id)
        if known is not None:
            self._runs.move_to_end(run_id)
            return known
        run = (await self.engine.store.load_run(ws, run_id))[0]
        known = self._runs[run_id] = (run, Template.model_validate(run.template))
        while len(self._runs) > RUNS_CACHED:
            self._runs.popitem(last=False)
        return known

    async def _execute(self, claim: Claim) -> None:
        try:
            result = await self._body(claim)
            await self._complete(claim, result)
        except asyncio.CancelledError:
            pass  # fenced: the row is another's now, or cancelled; nothing is recorded
        except Exception:
            log.exception("worker: step %s of run %s could not be recorded", claim.step_id, claim.run_id)
        finally:
            self._claims.pop(claim.id, None)
            self._freed.set()
            if not any(c.run_id == claim.run_id for c in self._claims.values()):
                await self.engine.release_enclosure(claim.run_id)

    async def _body(self, claim: Claim) -> StepResult:
        spec = self.engine.bodies.get(claim.body_key)
        if spec is None or not spec.on_worker:
            return StepResult.failed(f"body {claim.body_key!r} is not one this worker runs")
        try:
            run, template = await self._run_of(claim.workspace_id, claim.run_id)
            step = self.engine.graph_for(template).steps[claim.step_id]
            data_root = self.engine.data_root
            ctx = StepContext(
                app=self.app,
                run_id=run.id,
                workspace_id=run.workspace_id,
                template_id=run.template_id,
                parent_run_id=run.parent_run_id,
                dry_run=run.dry_run,
                payload=run.payload,
                state=claim.state,
                step=step,
                attempt=claim.attempt,
                clock=self.app.clock,
                run_dir=layout.run_dir(data_root, run.id),
                folders=layout.file_folders(data_root, run.id, run.workspace_id),
                control_dir=layout.control_dir(data_root, run.id),
                progress=lambda data: self._progress(claim, data),
                try_key=claim.history[-1]["key"],
                earlier_tries=claim.history[:-1],
                on_worker=True,
            )
            result = await spec.fn(ctx)
        except HangarError as exc:
            return StepResult.failed(exc.message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.info("pipeline body %s raised", claim.body_key, exc_info=True)
            return StepResult.failed(f"body {claim.body_key} raised {type(exc).__name__}: {exc}")
        if not isinstance(result, StepResult):
            return StepResult.failed(f"body {claim.body_key} returned {type(result).__name__}, not a StepResult")
        return result

    def _mine(self, claim: Claim) -> sa.ColumnElement[bool]:
        q = step_queue.c
        return sa.and_(q.id == claim.id, q.worker_id == self.id, q.tries == claim.try_no, q.status == "claimed")

    async def _progress(self, claim: Claim, data: Mapping[str, Any]) -> None:
        """A body's progress: on the step's row (what clients see) and on this try in the queue's history."""
        claim.history[-1]["progress"] = dict(data)
        async with self._db.begin() as conn:
            await conn.execute(step_queue.update().where(self._mine(claim)).values(history=claim.history))
        await self.engine.store.set_progress(claim.workspace_id, claim.run_id, claim.step_id, dict(data))

    async def _complete(self, claim: Claim, result: StepResult) -> None:
        claim.history[-1]["outcome"] = result.kind
        async with self._db.begin() as conn:
            stored = await conn.execute(
                step_queue.update()
                .where(self._mine(claim))
                .values(
                    status="done",
                    result=result_wire(result),
                    history=claim.history,
                    lease_until=None,
                    finished_at=self.app.clock.now(),
                )
            )
        if stored.rowcount == 0:
            log.info(
                "worker: step %s of run %s is no longer this worker's: result dropped", claim.step_id, claim.run_id
            )
            return
        self.done += 1


def _said(exc: BaseException) -> str:
    """An error in one line (a database error's first line; never a URL: the engine hides its password)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
