"""``hangar worker``: a process that takes pipeline steps from the step queue in PostgreSQL and runs their bodies.

**Claims.** One statement takes up to the free slots' worth of rows, oldest first: rows ``queued``, or
``claimed`` whose lease lapsed (their worker died or lost the database), locked with ``FOR UPDATE SKIP LOCKED`` so
any number of workers claim at once without waiting on each other or taking one row twice, and only while the
worker's credential is not revoked (checked in the same statement). Each claim is a *try*: ``tries`` counts them,
and the row's ``history`` gets ``{key, workerId, credentialId, claimedAt, progress, outcome}``, the key being
``<attemptKey>.<try>``; a try whose worker died is marked ``lapsed`` when the next one begins, and its recorded
progress stays, so the next try (``StepContext.earlier_tries``, ``HANGAR_EARLIER_ATTEMPTS`` for a script) finds
what the dead one began. The claim statement writes the history itself (one statement per claim, whatever the
number of rows). A worker claims only the rows of the bodies it runs and, started without ``--server``, none marked
``needs_server`` (``BodySpec.needs_server_for``: files that lie with a server, a forge token a server mints); the
filter is in the statement, so the rows it leaves are never locked by it and another worker takes them. A worker
claims when a hand-over NOTIFYs ``stepqueue.QUEUED_CHANNEL`` and when a slot frees; while it hears nothing it
claims every ``stepqueue.SAFETY_POLL_S`` (lapsed leases are found so), and while its listening connection is
down, from every 5 ms doubling to ``IDLE_MAX_S``.

**Leases.** A claim holds the row until ``lease_until`` (``LEASE_S`` after the database's clock: one clock for
every host). Every ``HEARTBEAT_S`` the worker extends the leases of the claims it runs, again only while its
credential is not revoked; a claim whose row was cancelled (the run ended, the attempt timed out), taken by another
worker after its lease lapsed, or whose credential was revoked is not extended, and its body is stopped at once
(fenced: its result would not be accepted, the completion requiring the same worker and try). A worker that cannot
reach the database stops every body it runs (their leases lapse; another worker takes them) and tries again.

**Results** are written with the row's ``done`` status, in one statement that requires the claim to be this
worker's current try: the results of the bodies that end while the previous write is under way go together, in
one statement for all of them, each row stored only if it is still this worker's current try, and one NOTIFY on
``stepqueue.DONE_CHANNEL`` names the rows stored; the server that waits for the step reads it
(``hangar.pipelines.stepqueue``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
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
from hangar.pipelines.queue_tables import LEASE_S, step_queue, worker_credentials, workers
from hangar.pipelines.rows import RunRow
from hangar.pipelines.step import StepContext
from hangar.pipelines.step_results import StepResult
from hangar.pipelines.stepqueue import (
    DONE_CHANNEL,
    DONE_PAYLOAD_MAX,
    QUEUED_CHANNEL,
    SAFETY_POLL_S,
    Line,
    json_rows,
    listener,
    result_wire,
)
from hangar.pipelines.workercreds import WorkerCredential

log = logging.getLogger(__name__)

HEARTBEAT_S = 2.0  # how often a worker extends its claims' leases and says it is attached
IDLE_MAX_S = 0.05  # the longest wait between two claims while not listening and the queue is empty (from 5 ms)
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
    def __init__(
        self,
        app: AppContext,
        engine: PipelineEngine,
        credential: WorkerCredential,
        concurrency: int,
        *,
        with_server: bool = False,
    ) -> None:
        self.app = app
        self.engine = engine
        self.credential = credential
        self.concurrency = concurrency
        self.id = new_id()
        # The steps this worker claims: of the bodies it runs, and, without --server, none needing a server (the
        # bodies that always do are left out by key too, so rows an older server queued unmarked stay as well).
        self.serves = tuple(
            s.key for s in engine.bodies.specs if s.on_worker and (with_server or s.needs_server is not True)
        )
        self.with_server = with_server
        self._db = app.dbs.server
        self._claims: dict[int, Claim] = {}
        self._runs: OrderedDict[str, asyncio.Future[tuple[RunRow, Template]]] = OrderedDict()
        self._wake = asyncio.Event()  # a slot freed, a hand-over was NOTIFYed, or the listener (re)connected
        # Rows may be queued: a hand-over was heard (or the listener (re)connected, or the safety poll is due),
        # or the last claim took as many as it asked for. A claim taking fewer clears it.
        self._maybe_queued = True
        self._finished: list[tuple[Claim, StepResult, asyncio.Future[bool]]] = []  # results to store
        self._storer: asyncio.Task[None] | None = None
        # Claims and results each go through a connection of their own (one round trip a statement).
        self._claims_line = Line(self._db)
        self._results_line = Line(self._db)
        self.revoked = False
        self.done = 0

    # -- the loop -----------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Take and run steps until cancelled, or until the credential is revoked (``Unauthenticated``)."""
        await self._register()
        beat = asyncio.create_task(self._heartbeats(), name="worker-heartbeat")
        url = self.app.dbs.postgresql_url
        hears = listener(url, QUEUED_CHANNEL, self._heard, self._heard) if url is not None else None
        if hears is not None:
            hears.start()
        try:
            idle = 0.005
            loop = asyncio.get_running_loop()
            last_claim = loop.time()
            while not self.revoked:
                free = self.concurrency - len(self._claims)
                if free > 0 and self._maybe_queued:
                    self._maybe_queued = False
                    last_claim = loop.time()
                    try:
                        taken = await self._claim(free)
                    except Exception as exc:
                        log.warning("worker: cannot claim steps (%s); trying again", _said(exc))
                        self._fence_all()
                        self._maybe_queued = True
                        await asyncio.sleep(HEARTBEAT_S)
                        continue
                    if len(taken) == free:
                        self._maybe_queued = True  # more may wait: claim again once a slot frees
                    for claim in taken:
                        self._claims[claim.id] = claim
                        claim.task = asyncio.create_task(self._execute(claim), name=f"worker-step:{claim.id}")
                    if taken:
                        idle = 0.005
                        continue
                self._wake.clear()
                listening = hears is not None and hears.backend_pid is not None
                poll_at = last_claim + (SAFETY_POLL_S if listening else idle)
                try:
                    await asyncio.wait_for(self._wake.wait(), max(0.0, poll_at - loop.time()) if free else None)
                except TimeoutError:
                    self._maybe_queued = True  # the safety poll (or, not listening, the poll)
                    idle = min(IDLE_MAX_S, idle * 2)
            raise Unauthenticated(f"the worker credential {self.credential.name!r} was revoked: this worker stops")
        finally:
            beat.cancel()
            self._fence_all()  # first: the bodies stop at once
            if hears is not None:
                await hears.aclose()
            await self._claims_line.aclose()
            running = [c.task for c in self._claims.values() if c.task is not None]
            await asyncio.gather(beat, *running, return_exceptions=True)
            if self._storer is not None:
                self._storer.cancel()
                await asyncio.gather(self._storer, return_exceptions=True)
            await self._results_line.aclose()
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

    def _heard(self, _: str = "") -> None:
        self._maybe_queued = True
        self._wake.set()

    def _live_credential(self) -> sa.Exists:
        wc = worker_credentials.c
        return sa.exists().where(wc.id == self.credential.id, wc.revoked_at.is_(None))

    async def _claim(self, limit: int) -> list[Claim]:
        params = {"limit": limit, "try_claimed_at": self.app.clock.now().isoformat()}
        rows = (await self._claims_line.execute(self._claim_statement, params)).all()
        return [
            Claim(r.id, r.workspace_id, r.run_id, r.step_id, r.attempt, r.body_key, r.state, r.tries, r.history)
            for r in rows
        ]

    @functools.cached_property
    def _claim_statement(self) -> sa.Update:
        """Up to ``limit`` rows, oldest first, each queued or with its lease lapsed, of a body this worker runs and
        needing no server unless it has one, locked skipping those other workers lock, claimed while this worker's
        credential is not revoked, with this try in their history."""
        q = step_queue.c
        # Only steps this worker can run: the others stay queued for a worker that can (never locked here).
        runnable = [q.body_key.in_(self.serves)] + ([] if self.with_server else [q.needs_server.is_(False)])
        open_rows = (
            sa.select(q.id)
            # Said so that the planner walks ix_step_queue_open (status, id) past the done rows, however many.
            .where(
                q.status.in_(("queued", "claimed")),
                sa.or_(q.status == "queued", q.lease_until < sa.func.now()),
                *runnable,
            )
            .order_by(q.id)
            .limit(sa.bindparam("limit", type_=sa.Integer))
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        return (
            step_queue.update()
            .where(q.id.in_(open_rows), self._live_credential())
            .values(
                status="claimed",
                worker_id=self.id,
                tries=q.tries + 1,
                lease_until=sa.func.now() + timedelta(seconds=LEASE_S),
                history=_HISTORY_WITH_NEW_TRY.bindparams(
                    sa.bindparam("try_worker", self.id),
                    sa.bindparam("try_credential", self.credential.id),
                    sa.bindparam("try_claimed_at", type_=sa.Text),
                ),
            )
            .returning(q.id, q.workspace_id, q.run_id, q.step_id, q.attempt, q.body_key, q.state, q.tries, q.history)
        )

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
                self._wake.set()
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
        """The run's row and template, read once per run: the steps of a fan-out claimed together share one read
        (a future in the cache while it is under way; a failed read is not kept)."""
        known = self._runs.get(run_id)
        if known is not None:
            self._runs.move_to_end(run_id)
        else:
            known = self._runs[run_id] = asyncio.ensure_future(self._read_run(ws, run_id))
            while len(self._runs) > RUNS_CACHED:
                self._runs.popitem(last=False)
        try:
            return await asyncio.shield(known)
        except Exception:
            if self._runs.get(run_id) is known:
                del self._runs[run_id]
            raise

    async def _read_run(self, ws: str, run_id: str) -> tuple[RunRow, Template]:
        run = (await self.engine.store.load_run(ws, run_id))[0]
        return run, Template.model_validate(run.template)

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
            self._wake.set()
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
        stored: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._finished.append((claim, result, stored))
        if self._storer is None or self._storer.done():
            self._storer = asyncio.create_task(self._store_results(), name="worker-results")
        if not await stored:
            log.info(
                "worker: step %s of run %s is no longer this worker's: result dropped", claim.step_id, claim.run_id
            )
            return
        self.done += 1

    async def _store_results(self) -> None:
        """Store the results finished since the last write in one statement (each row only while it is this
        worker's current try) that NOTIFYs the rows stored, and tell each body whether its result was."""
        await asyncio.sleep(0)  # the bodies ending in this turn of the loop join the batch
        while self._finished:
            batch, self._finished = self._finished, []
            wire = [
                {"id": c.id, "tries": c.try_no, "result": result_wire(r), "history": c.history} for c, r, _ in batch
            ]
            try:
                stored_ids = await self._results_line.execute(self._store, {"batch": wire, "now": self.app.clock.now()})
                ids = stored_ids.scalar()
            except Exception as exc:
                for _, _, stored in batch:
                    if not stored.done():
                        stored.set_exception(exc)
                continue
            kept = set(ids or ())
            for claim, _, stored in batch:
                if not stored.done():
                    stored.set_result(claim.id in kept)

    @functools.cached_property
    def _store(self) -> sa.Select[tuple[Any, Any]]:
        q = step_queue.c
        given = json_rows(
            "batch",
            sa.column("id", sa.BigInteger),
            sa.column("tries", sa.Integer),
            sa.column("result", sa.JSON),
            sa.column("history", sa.JSON),
        )
        stored = (
            step_queue.update()
            .where(q.id == given.c.id, q.tries == given.c.tries, q.worker_id == self.id, q.status == "claimed")
            .values(
                status="done",
                result=given.c.result,
                history=given.c.history,
                lease_until=None,
                finished_at=sa.bindparam("now", type_=step_queue.c.finished_at.type),
            )
            .returning(q.id, q.result)
            .cte("stored")
        )
        # The drivers waiting are told the results themselves when they fit in a notification, else the ids.
        results = sa.cast(sa.func.json_object_agg(stored.c.id, stored.c.result), sa.Text)
        payload = sa.case(
            (sa.func.length(results) <= DONE_PAYLOAD_MAX, results),
            else_=sa.func.string_agg(sa.cast(stored.c.id, sa.Text), ","),
        )
        return sa.select(sa.func.array_agg(stored.c.id), sa.func.pg_notify(DONE_CHANNEL, payload)).having(
            sa.func.count() > 0
        )


# A claimed row's history: every earlier try still open marked ``lapsed`` (its worker died), then this try, keyed
# ``<attemptKey>.<try>`` (``StepContext.attempt_key``; ``tries`` here is the row's count before this claim).
_HISTORY_WITH_NEW_TRY = sa.text(
    """(SELECT json_agg(entry ORDER BY n) FROM (
        SELECT CASE WHEN earlier.value ->> 'outcome' IS NULL
                    THEN (earlier.value::jsonb || '{"outcome": "lapsed"}'::jsonb)::json
                    ELSE earlier.value END AS entry,
               earlier.n
        FROM json_array_elements(coalesce(history, '[]'::json)) WITH ORDINALITY AS earlier(value, n)
        UNION ALL
        SELECT json_build_object(
                   'key', 'pipeline:' || run_id || '/' || step_id || '#' || attempt || '.' || (tries + 1),
                   'workerId', CAST(:try_worker AS text),
                   'credentialId', CAST(:try_credential AS text),
                   'claimedAt', CAST(:try_claimed_at AS text),
                   'progress', NULL,
                   'outcome', NULL),
               9223372036854775807
    ) AS every_try)"""
)


def _said(exc: BaseException) -> str:
    """An error in one line (a database error's first line; never a URL: the engine hides its password)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
