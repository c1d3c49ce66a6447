"""The server's side of the step queue (PostgreSQL only): hand a step's attempt to the workers and wait for its
result.

A step whose body does work on a host (``BodySpec.on_worker``: shell steps) is handed over when workers are
attached (a ``pipeline_workers`` row seen in the last ``WORKER_SEEN_S`` whose credential is not revoked) and the
server setting ``pipelines.stepsHere`` is not ``true``; otherwise this process runs it, as without workers.

Handing over is idempotent per attempt (``uq_step_queue_attempt``): a driver that takes a run over after its
server died hands the same attempt over again and finds the row the dead server wrote, done or still queued or
claimed, and waits for it. The steps a process hands over together (a tick's, a fan-out's) are written in one
transaction, and the results are read by one poll per process every ``POLL_S`` for all the steps it waits for (one
query whatever their number). When the run ends, or the attempt times out, the rows still open are
cancelled: the worker running one is fenced at its next heartbeat and stops the body.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.clock import Clock
from hangar.core.settings import SettingSpec, strict_bool
from hangar.pipelines.queue_tables import step_queue, worker_credentials, workers
from hangar.pipelines.step_results import NO_OUTPUT, StepResult

if TYPE_CHECKING:
    from hangar.pipelines.step import StepContext

log = logging.getLogger(__name__)

POLL_S = 0.02  # how often a waiting server reads the results of the steps it handed over
WORKER_SEEN_S = 10.0  # a worker not seen for this long is not attached (it heartbeats every HEARTBEAT_S)
ATTACHED_RECHECK_S = 1.0  # how long one answer to "are workers attached?" is used

STEPS_HERE_SETTING = "pipelines.stepsHere"
STEPS_HERE_SPEC = SettingSpec(
    STEPS_HERE_SETTING,
    "true: servers run pipeline steps themselves even while hangar worker processes are attached (default false).",
    strict_bool(STEPS_HERE_SETTING),
)


def result_wire(result: StepResult) -> dict[str, Any]:
    """A ``StepResult`` as JSON (the worker writes it, the server reads it back with ``result_from_wire``)."""
    wire: dict[str, Any] = {"kind": result.kind}
    if result.mutated_state is not None:
        wire["mutatedState"] = dict(result.mutated_state)
    if result.has_output:
        wire["output"] = result.output
    for key, value in (
        ("routeKey", result.route_key),
        ("eventType", result.event_type),
        ("eventMatch", dict(result.event_match) if result.event_match is not None else None),
        ("error", result.error),
    ):
        if value is not None:
            wire[key] = value
    if result.task_ids:
        wire["taskIds"] = list(result.task_ids)
    return wire


def result_from_wire(wire: Mapping[str, Any]) -> StepResult:
    return StepResult(
        kind=wire["kind"],
        mutated_state=wire.get("mutatedState"),
        output=wire.get("output", NO_OUTPUT),
        route_key=wire.get("routeKey"),
        event_type=wire.get("eventType"),
        event_match=wire.get("eventMatch"),
        task_ids=tuple(wire.get("taskIds") or ()),
        error=wire.get("error"),
    )


class StepQueue:
    def __init__(self, engine: AsyncEngine, clock: Clock) -> None:
        self._db = engine
        self._clock = clock
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._handing: list[tuple[dict[str, Any], asyncio.Future[tuple[int, Any]]]] = []
        self._hander: asyncio.Task[None] | None = None
        self._poller: asyncio.Task[None] | None = None
        self._attached: tuple[float, bool] | None = None

    async def workers_attached(self) -> bool:
        loop = asyncio.get_running_loop()
        if self._attached is not None and loop.time() - self._attached[0] < ATTACHED_RECHECK_S:
            return self._attached[1]
        since = self._clock.now() - timedelta(seconds=WORKER_SEEN_S)
        query = (
            sa.select(workers.c.id)
            .join(worker_credentials, worker_credentials.c.id == workers.c.credential_id)
            .where(worker_credentials.c.revoked_at.is_(None), workers.c.seen_at > since)
            .limit(1)
        )
        async with self._db.connect() as conn:
            attached = (await conn.execute(query)).first() is not None
        self._attached = (loop.time(), attached)
        return attached

    async def run(self, ctx: StepContext) -> StepResult:
        """Hand ``ctx``'s attempt to the workers (or find it handed over already) and wait for its result."""
        row = {
            "workspace_id": ctx.workspace_id,
            "run_id": ctx.run_id,
            "step_id": ctx.step_id,
            "attempt": ctx.attempt,
            "body_key": ctx.step.body_key or "",
            "state": dict(ctx.state),
            "status": "queued",
            "tries": 0,
            "history": [],
            "created_at": self._clock.now(),
        }
        loop = asyncio.get_running_loop()
        handed: asyncio.Future[tuple[int, Any]] = loop.create_future()
        self._handing.append((row, handed))
        if self._hander is None or self._hander.done():
            self._hander = asyncio.create_task(self._hand_over(), name="pipelines-step-hand-over")
        row_id, done = await handed
        if done is not None:
            return result_from_wire(done)
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._waiting[row_id] = future
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll(), name="pipelines-step-queue")
        try:
            return result_from_wire(await future)
        finally:
            self._waiting.pop(row_id, None)

    async def _hand_over(self) -> None:
        """Write the steps handed over since the last write in one transaction (a fan-out's steps, all of a
        tick's, go together), and tell each its row's id, or the result an earlier hand-over already has."""
        q = step_queue.c
        await asyncio.sleep(0)  # the other steps this tick starts join the batch
        while self._handing:
            batch: dict[tuple[str, str, str, int], list[asyncio.Future[tuple[int, Any]]]] = {}
            rows: dict[tuple[str, str, str, int], dict[str, Any]] = {}
            for row, handed in self._handing:
                key = (row["workspace_id"], row["run_id"], row["step_id"], row["attempt"])
                rows[key] = row
                batch.setdefault(key, []).append(handed)
            self._handing = []
            insert = pg_insert(step_queue).values(list(rows.values()))
            # An attempt cancelled (its run ended here before a take-over) is queued again; any other row stands.
            upsert = insert.on_conflict_do_update(
                constraint="uq_step_queue_attempt",
                set_={"status": "queued", "state": insert.excluded.state},
                where=q.status == "cancelled",
            )
            found = sa.select(q.id, q.status, q.result, q.workspace_id, q.run_id, q.step_id, q.attempt).where(
                sa.tuple_(q.workspace_id, q.run_id, q.step_id, q.attempt).in_(list(rows))
            )
            try:
                async with self._db.begin() as conn:
                    await conn.execute(upsert)
                    stored = (await conn.execute(found)).all()
            except Exception as exc:
                for waiters in batch.values():
                    for handed in waiters:
                        if not handed.done():
                            handed.set_exception(exc)
                continue
            for r in stored:
                for handed in batch.get((r.workspace_id, r.run_id, r.step_id, r.attempt), ()):
                    if not handed.done():
                        handed.set_result((r.id, r.result if r.status == "done" else None))

    async def _poll(self) -> None:
        q = step_queue.c
        while self._waiting:
            await asyncio.sleep(POLL_S)
            ids = list(self._waiting)
            try:
                async with self._db.connect() as conn:
                    rows = (
                        await conn.execute(sa.select(q.id, q.result).where(q.id.in_(ids), q.status == "done"))
                    ).all()
            except Exception:
                log.exception("pipelines: reading the results of steps handed to workers failed; trying again")
                continue
            for r in rows:
                future = self._waiting.pop(r.id, None)
                if future is not None and not future.done():
                    future.set_result(r.result)

    async def cancel(self, ws: str, run_id: str, step_id: str | None = None) -> None:
        """Cancel the open rows of a run (of one of its steps): workers running them are fenced."""
        q = step_queue.c
        where = [q.workspace_id == ws, q.run_id == run_id, q.status.in_(("queued", "claimed"))]
        if step_id is not None:
            where.append(q.step_id == step_id)
        async with self._db.begin() as conn:
            await conn.execute(
                step_queue.update().where(*where).values(status="cancelled", finished_at=self._clock.now())
            )

    async def aclose(self) -> None:
        for task in (self._poller, self._hander):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._poller = self._hander = None
