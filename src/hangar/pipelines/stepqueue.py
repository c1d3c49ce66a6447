"""The server's side of the step queue (PostgreSQL only): hand a step's attempt to the workers and wait for its
result.

A step whose body does work on a host (``BodySpec.on_worker``: shell steps) is handed over when workers are
attached (a ``pipeline_workers`` row seen in the last ``WORKER_SEEN_S`` whose credential is not revoked) and the
server setting ``pipelines.stepsHere`` is not ``true``; otherwise this process runs it, as without workers.

Handing over is idempotent per attempt (``uq_step_queue_attempt``): a driver that takes a run over after its
server died hands the same attempt over again and finds the row the dead server wrote, done or still queued or
claimed, and waits for it. The steps a process hands over together (a tick's, a fan-out's) are written in one
transaction, and the results are read in one query for all the steps a process waits for, whatever their number.

**Wake-ups (LISTEN/NOTIFY).** A hand-over NOTIFYs ``QUEUED_CHANNEL`` when it commits (the workers, listening,
claim at once) and a worker storing results NOTIFYs ``DONE_CHANNEL`` with their rows' ids (the drivers waiting
for them read those rows at once). A notification is a wake-up, never the data: a worker claims by the rows'
status whatever it heard, and a driver reads only ``done`` rows it waits for. Every process listens on one
dedicated connection per channel (``hangar.core.event_listener.ChannelListener``); while that connection is down
the process polls as before (the driver every ``POLL_S``), and while it is up it still reads every
``SAFETY_POLL_S`` (a notification is lost while nobody listens).

When the run ends, or the attempt times out, the rows still open are cancelled: the worker running one is fenced
at its next heartbeat and stops the body.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.core.clock import Clock
from hangar.core.postgresql import SCHEMA_OPTION, SERVER_SCHEMA
from hangar.core.settings import SettingSpec, strict_bool
from hangar.pipelines.queue_tables import step_queue, worker_credentials, workers
from hangar.pipelines.step_results import NO_OUTPUT, StepResult

if TYPE_CHECKING:
    from hangar.core.event_listener import ChannelListener, OnConnect, OnPayload
    from hangar.pipelines.step import StepContext

log = logging.getLogger(__name__)

POLL_S = 0.02  # how often a waiting server reads its steps' results while it hears no notifications
SAFETY_POLL_S = 1.0  # how often it reads them anyway while it listens (a notification sent unheard is lost)
QUEUED_CHANNEL = "hangar_step_queued"  # NOTIFYed by a hand-over: workers claim
DONE_CHANNEL = "hangar_step_done"  # NOTIFYed with the rows whose results were stored (``notified_results``)
DONE_PAYLOAD_MAX = 7900  # results sent in a notification up to this many bytes (PostgreSQL's limit is 8000)
HEARD_KEPT = 4096  # results heard for rows not (yet) waited for, kept for a hand-over that is about to wait
WORKER_SEEN_S = 10.0  # a worker not seen for this long is not attached (it heartbeats every HEARTBEAT_S)
ATTACHED_RECHECK_S = 1.0  # how long one answer to "are workers attached?" is used

# A handed-over step that needs a server's files or forge tokens, in its progress until a worker takes it: workers
# started without --server leave it in the queue (``BodySpec.needs_server_for``).
WAITS_FOR_SERVER_WORKER = "a hangar worker started with --server (this step needs a server's files or forge tokens)"

STEPS_HERE_SETTING = "pipelines.stepsHere"
STEPS_HERE_SPEC = SettingSpec(
    STEPS_HERE_SETTING,
    "true: servers run pipeline steps themselves even while hangar worker processes are attached (default false).",
    strict_bool(STEPS_HERE_SETTING),
)


def listener(url: URL, channel: str, on_payload: OnPayload, on_connect: OnConnect) -> ChannelListener:
    """A connection listening on one of the step queue's channels (psycopg loads only for PostgreSQL)."""
    from hangar.core.event_listener import ChannelListener

    return ChannelListener(
        url,
        channel,
        on_payload,
        on_connect,
        what=f"step queue notifications ({channel})",
        meanwhile="the queue is polled",
        application_name=f"hangar {channel} listener",
    )


class Line:
    """One pooled connection kept for a stream of single statements (a worker's claims, its results, a driver's
    hand-overs and reads): checked out once instead of once per statement (no ping each time), in autocommit (no
    BEGIN and COMMIT round trips), in the server schema for its whole session (no ``SET LOCAL search_path`` per
    transaction; reset before it goes back to the pool). One statement at a time; a failed statement drops the
    connection, and the next one opens another."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._db = engine
        self._conn: AsyncConnection | None = None
        self._lock = asyncio.Lock()

    async def execute(self, statement: sa.Executable, params: Mapping[str, Any] | None = None) -> sa.CursorResult[Any]:
        async with self._lock:
            if self._conn is None:
                conn = await self._db.connect()
                try:
                    await conn.execution_options(isolation_level="AUTOCOMMIT", **{SCHEMA_OPTION: None})
                    await conn.exec_driver_sql(f"SET search_path TO {SERVER_SCHEMA}")
                except BaseException:
                    await _drop(conn)
                    raise
                self._conn = conn
            try:
                return await self._conn.execute(statement, params)
            except BaseException:
                conn, self._conn = self._conn, None
                await _drop(conn)
                raise

    async def aclose(self) -> None:
        async with self._lock:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                try:
                    await conn.exec_driver_sql("RESET search_path")
                    await conn.close()
                except Exception:
                    await _drop(conn)


async def _drop(conn: AsyncConnection) -> None:
    """A connection in an unknown state never goes back to the pool."""
    with contextlib.suppress(Exception):
        await conn.invalidate()
    with contextlib.suppress(Exception):
        await conn.close()


def json_rows(param: str, *columns: sa.ColumnClause[Any]) -> Any:
    """The rows of the JSON array bound as ``param``, as a table named ``given`` of ``columns``: any number of rows
    in one parameter, so a statement taking them is the same SQL (compiled once) whatever their number."""
    return (
        sa.func.json_to_recordset(sa.bindparam(param, type_=sa.JSON))
        .table_valued(*columns)
        .render_derived(name="given", with_types=True)
    )


@functools.cache
def _hand_over_statement() -> sa.CompoundSelect[Any]:
    """One statement for a hand-over of any number of rows (the JSON array ``rows``, queued at ``now``): insert
    them, an attempt cancelled before (its run ended here before a take-over) queued again and any other row
    left as it stands; NOTIFY ``QUEUED_CHANNEL`` once if any was queued (delivered when the statement commits);
    and return every row of the attempts handed over: those queued now and those an earlier hand-over wrote (the
    statement's snapshot shows them as they were). Built once, on the first hand-over (a server on SQLite never
    makes one): the same SQL whatever the number of rows."""
    q = step_queue.c
    given = json_rows(
        "rows",
        sa.column("workspace_id", sa.Text),
        sa.column("run_id", sa.Text),
        sa.column("step_id", sa.Text),
        sa.column("attempt", sa.Integer),
        sa.column("body_key", sa.Text),
        sa.column("state", sa.JSON),
        sa.column("needs_server", sa.Boolean),
    )
    g = given.c
    # Imported here: SQLAlchemy's PostgreSQL dialect loads every driver's module, which a server on SQLite would
    # pay at start-up for nothing.
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    insert = pg_insert(step_queue).from_select(
        [
            "workspace_id",
            "run_id",
            "step_id",
            "attempt",
            "body_key",
            "state",
            "needs_server",
            "status",
            "tries",
            "history",
            "created_at",
        ],
        sa.select(
            g.workspace_id,
            g.run_id,
            g.step_id,
            g.attempt,
            g.body_key,
            g.state,
            g.needs_server,
            sa.literal("queued"),
            sa.literal(0),
            sa.cast(sa.literal("[]"), sa.JSON),
            sa.bindparam("now", type_=q.created_at.type),
        ),
    )
    upsert = insert.on_conflict_do_update(
        constraint="uq_step_queue_attempt",
        set_={"status": "queued", "state": insert.excluded.state},
        where=q.status == "cancelled",
    )
    columns = (q.id, q.status, q.result, q.workspace_id, q.run_id, q.step_id, q.attempt)
    queued = upsert.returning(*columns).cte("queued")
    notified = sa.select(sa.func.pg_notify(QUEUED_CHANNEL, "")).where(sa.exists(sa.select(queued.c.id))).cte("notified")
    fresh = sa.select(*(queued.c[c.name] for c in columns)).select_from(queued.join(notified, sa.true()))
    keys = sa.select(g.workspace_id, g.run_id, g.step_id, g.attempt)
    earlier = sa.select(*columns).where(
        sa.tuple_(q.workspace_id, q.run_id, q.step_id, q.attempt).in_(keys), q.id.not_in(sa.select(queued.c.id))
    )
    return sa.union_all(fresh, earlier)


def notified_results(payload: str) -> dict[int, dict[str, Any] | None]:
    """What a ``DONE_CHANNEL`` notification says: the rows stored with their results (a JSON object of id to
    result, when it fits in a notification), or only their ids (comma-separated: ``None``, read from the table).
    Anything else in it is ignored."""
    if payload.startswith("{"):
        try:
            given = json.loads(payload)
        except ValueError:
            return {}
        if not isinstance(given, dict):
            return {}
        return {int(k): v for k, v in given.items() if k.isdigit() and isinstance(v, dict) and "kind" in v}
    return {int(part): None for part in payload.split(",") if part.strip().isdigit()}


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


Waited = tuple[int, "asyncio.Future[dict[str, Any]]"]  # a row handed over, and the future of its result


class StepQueue:
    def __init__(self, engine: AsyncEngine, clock: Clock, url: URL | None = None) -> None:
        self._db = engine
        self._clock = clock
        self._url = url
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._handing: list[tuple[dict[str, Any], asyncio.Future[Waited]]] = []
        self._hander: asyncio.Task[None] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._listener: ChannelListener | None = None
        self._heard: dict[int, dict[str, Any] | None] = {}  # rows NOTIFYed done since the reader last looked
        # Rows heard done that nobody here waited for when heard: another process's, or one whose hand-over had
        # not yet registered its wait (a worker may store a result before the hand-over's reply is read).
        self._heard_early: OrderedDict[int, dict[str, Any] | None] = OrderedDict()
        self._catch_up = False  # the listener (re)connected: read every row waited for
        self._wake = asyncio.Event()
        self._hand_line = Line(engine)  # hand-overs, one statement each
        self._read_line = Line(engine)  # reads of results
        self._attached: tuple[float, bool] | None = None
        self._decided: tuple[float, bool] | None = None
        self._deciding: asyncio.Future[bool] | None = None

    async def to_workers(self, steps_here: Callable[[], Awaitable[bool]]) -> bool:
        """Whether steps go to the workers: some are attached and ``steps_here()`` (the server setting
        ``pipelines.stepsHere``) is false. One answer is used for ``ATTACHED_RECHECK_S``, and the steps asking
        while it is renewed (a fan-out's, all at once) share one renewal: a step costs no query."""
        loop = asyncio.get_running_loop()
        if self._decided is not None and loop.time() - self._decided[0] < ATTACHED_RECHECK_S:
            return self._decided[1]
        if self._deciding is None or self._deciding.done():
            self._deciding = asyncio.ensure_future(self._decide(steps_here))
        return await asyncio.shield(self._deciding)

    async def _decide(self, steps_here: Callable[[], Awaitable[bool]]) -> bool:
        decided = await self.workers_attached() and not await steps_here()
        self._decided = (asyncio.get_running_loop().time(), decided)
        return decided

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

    async def run(self, ctx: StepContext, *, needs_server: bool = False) -> StepResult:
        """Hand ``ctx``'s attempt to the workers (or find it handed over already) and wait for its result."""
        row = {
            "workspace_id": ctx.workspace_id,
            "run_id": ctx.run_id,
            "step_id": ctx.step_id,
            "attempt": ctx.attempt,
            "body_key": ctx.step.body_key or "",
            "state": dict(ctx.state),
            "needs_server": needs_server,
        }
        loop = asyncio.get_running_loop()
        handed: asyncio.Future[Waited] = loop.create_future()
        self._handing.append((row, handed))
        if self._hander is None or self._hander.done():
            self._hander = asyncio.create_task(self._hand_over(), name="pipelines-step-hand-over")
        row_id, result = await handed
        try:
            return result_from_wire(await result)
        finally:
            if self._waiting.get(row_id) is result:  # nobody waits any more (the attempt timed out, the run ended)
                del self._waiting[row_id]

    async def _hand_over(self) -> None:
        """Write the steps handed over since the last write in one statement (a fan-out's steps, all of a tick's,
        go together), and give each the future of its result: set already if an earlier hand-over of the attempt
        has one (or a notification of it came before this reply), else waited for."""
        await asyncio.sleep(0)  # the other steps this tick starts join the batch
        loop = asyncio.get_running_loop()
        while self._handing:
            batch: dict[tuple[str, str, str, int], list[asyncio.Future[Waited]]] = {}
            rows: dict[tuple[str, str, str, int], dict[str, Any]] = {}
            for row, handed in self._handing:
                key = (row["workspace_id"], row["run_id"], row["step_id"], row["attempt"])
                rows[key] = row
                batch.setdefault(key, []).append(handed)
            self._handing = []
            results: dict[tuple[str, str, str, int], Waited] = {}
            try:
                params = {"rows": list(rows.values()), "now": self._clock.now()}
                for r in (await self._hand_line.execute(_hand_over_statement(), params)).all():
                    result: asyncio.Future[dict[str, Any]] = loop.create_future()
                    results[(r.workspace_id, r.run_id, r.step_id, r.attempt)] = (r.id, result)
                    if r.status == "done":
                        result.set_result(r.result)
                    elif r.id in self._heard_early:  # done before this reply was read
                        early = self._heard_early.pop(r.id)
                        if early is not None:
                            result.set_result(early)
                        else:
                            self._waiting[r.id] = result
                            self._heard[r.id] = None
                            self._wake.set()
                    else:
                        self._waiting[r.id] = result
            except Exception as exc:
                for row_id, result in results.values():
                    if self._waiting.get(row_id) is result:
                        del self._waiting[row_id]
                for waiters in batch.values():
                    for handed in waiters:
                        if not handed.done():
                            handed.set_exception(exc)
                continue
            if self._waiting and (self._reader is None or self._reader.done()):
                self._reader = asyncio.create_task(self._read_results(), name="pipelines-step-results")
            for key, waiters in batch.items():
                for handed in waiters:
                    if not handed.done():
                        handed.set_result(results[key])

    def _heard_done(self, payload: str) -> None:
        self._heard.update(notified_results(payload))
        self._wake.set()

    def _reconnected(self) -> None:
        self._catch_up = True
        self._wake.set()

    async def _read_results(self) -> None:
        """Read the results of the rows waited for: those NOTIFYed done at once, all of them after the listener
        (re)connects and every ``SAFETY_POLL_S`` (every ``POLL_S`` while it is down or there is none)."""
        q = step_queue.c
        if self._listener is None and self._url is not None:
            self._listener = listener(self._url, DONE_CHANNEL, self._heard_done, self._reconnected)
            self._listener.start()
        while self._waiting:
            listening = self._listener is not None and self._listener.backend_pid is not None
            self._wake.clear()
            if not self._heard and not self._catch_up:
                try:
                    await asyncio.wait_for(self._wake.wait(), SAFETY_POLL_S if listening else POLL_S)
                except TimeoutError:
                    self._catch_up = True
            heard, self._heard = self._heard, {}
            full, self._catch_up = self._catch_up, False
            for row_id, said in heard.items():
                if row_id not in self._waiting:
                    self._heard_early[row_id] = said
                elif said is not None:
                    waiter = self._waiting.pop(row_id)
                    if not waiter.done():
                        waiter.set_result(said)
            while len(self._heard_early) > HEARD_KEPT:
                self._heard_early.popitem(last=False)
            ids = (
                list(self._waiting) if full else [i for i, said in heard.items() if said is None and i in self._waiting]
            )
            if not ids:
                continue
            try:
                read = sa.select(q.id, q.result).where(q.id.in_(ids), q.status == "done")
                rows = (await self._read_line.execute(read)).all()
            except Exception:
                log.exception("pipelines: reading the results of steps handed to workers failed; trying again")
                self._catch_up = True
                await asyncio.sleep(POLL_S)
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
        for task in (self._reader, self._hander):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._reader = self._hander = None
        if self._listener is not None:
            await self._listener.aclose()
            self._listener = None
        await self._hand_line.aclose()
        await self._read_line.aclose()
