"""The step queue's wake-ups and batched results on a real PostgreSQL database: a NOTIFY is a wake-up, never a
claim (a worker woken for rows that are not open takes nothing of them, and takes a row whose lease lapsed with
the dead try marked ``lapsed``), results stored together keep the fencing rule row by row (a late result for a row
now another worker's is dropped while the others of its batch are stored), and the notification of stored
results carries them while they fit, else only their ids.

A ``Worker`` runs in this process against the test's own database (the queue's guards, not the processes around
them: tests/integration/test_workers.py runs real ``hangar worker`` processes and a server).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from hangar.config import Settings
from hangar.core.context import AppContext
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.pipelines import BodyRegistry, StepContext, body
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.part import PIPELINES_CLI_PART
from hangar.pipelines.queue_tables import step_queue
from hangar.pipelines.step_results import StepResult
from hangar.pipelines.stepqueue import DONE_CHANNEL, DONE_PAYLOAD_MAX, QUEUED_CHANNEL, Line, notified_results
from hangar.pipelines.worker import Worker
from hangar.pipelines.workercreds import mint, verify
from hangar.server.context_factory import open_context

pytestmark = pytest.mark.slow

WS = "wakeups"


@body("test.onWorker", summary="A body workers run; here it finds no run and fails.", on_worker=True)
async def on_worker(step: StepContext) -> StepResult:
    return StepResult.failed("never called: the worker finds no run")


def conninfo(pg_url: str) -> str:
    return make_url(pg_url).set(drivername="postgresql").render_as_string(hide_password=False)


@contextlib.asynccontextmanager
async def context(tmp_path: Path, pg_url: str) -> AsyncIterator[tuple[AppContext, Worker]]:
    settings = Settings(data_dir=tmp_path / "data", database_url=pg_url)  # type: ignore[arg-type]
    async with open_context(settings, parts=[OVERSIGHT_PART, IDENTITY_PART, PIPELINES_CLI_PART]) as ctx:
        _, secret = await mint(ctx.dbs.server, "test", ctx.clock.now())
        credential = await verify(ctx.dbs.server, secret)
        engine = PipelineEngine.from_app(ctx, BodyRegistry([*PIPELINES_CLI_PART.bodies, on_worker]))
        try:
            yield ctx, Worker(ctx, engine, credential, concurrency=8)
        finally:
            await engine.aclose()


async def put(ctx: AppContext, step_id: str, **row: Any) -> int:
    values = {
        "workspace_id": WS,
        "run_id": "run-1",
        "step_id": step_id,
        "attempt": 1,
        "body_key": "test.onWorker",
        "state": {},
        "status": "queued",
        "tries": 0,
        "history": [],
        "created_at": ctx.clock.now(),
        **row,
    }
    async with ctx.dbs.server.begin() as conn:
        return int((await conn.execute(step_queue.insert().values(values).returning(step_queue.c.id))).scalar_one())


async def rows(ctx: AppContext) -> dict[str, Any]:
    q = step_queue.c
    async with ctx.dbs.server.connect() as conn:
        found = (await conn.execute(sa.select(step_queue).order_by(q.id))).mappings().all()
    return {r["step_id"]: dict(r) for r in found}


async def eventually(check: Any, what: str) -> Any:
    for _ in range(600):
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_notification_wakes_a_worker_but_it_takes_only_open_rows(tmp_path: Path, pg_url: str) -> None:
    async with context(tmp_path, pg_url) as (ctx, worker):
        now = ctx.clock.now()
        await put(ctx, "done", status="done", tries=1, result={"kind": "ok"}, finished_at=now)
        await put(ctx, "cancelled", status="cancelled", finished_at=now)
        alive = [{"key": "pipeline:run-1/held#1.1", "workerId": "other", "outcome": None, "progress": None}]
        await put(
            ctx,
            "held",
            status="claimed",
            tries=1,
            worker_id="other",
            lease_until=now + timedelta(minutes=5),
            history=alive,
        )
        # Rows this worker cannot run: a body it does not run, a step needing a server (it has none).
        await put(ctx, "unknown", body_key="test.not-a-worker-body")
        await put(ctx, "needs-server", needs_server=True)
        before = await rows(ctx)
        running = asyncio.create_task(worker.run())
        try:
            # Woken for nothing (and with a payload that means nothing): nothing open, nothing taken.
            with psycopg.connect(conninfo(pg_url), autocommit=True) as conn:
                conn.execute(f"NOTIFY {QUEUED_CHANNEL}, 'run-1/done'")
            # A row whose lease lapsed and one queued: both taken, the dead try marked lapsed.
            dead = [{"key": "pipeline:run-1/lapsed#1.1", "workerId": "gone", "outcome": None, "progress": {"n": 1}}]
            await put(
                ctx,
                "lapsed",
                status="claimed",
                tries=1,
                worker_id="gone",
                lease_until=now - timedelta(seconds=1),
                history=dead,
            )
            await put(ctx, "queued")
            with psycopg.connect(conninfo(pg_url), autocommit=True) as conn:
                conn.execute(f"NOTIFY {QUEUED_CHANNEL}")

            async def both_done() -> dict[str, Any] | None:
                found = await rows(ctx)
                return found if all(found[s]["status"] == "done" for s in ("lapsed", "queued")) else None

            after = await eventually(both_done, "the open rows to be done")
        finally:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
    for untouched in ("done", "cancelled", "held", "unknown", "needs-server"):
        assert after[untouched] == before[untouched]
    assert (after["unknown"]["status"], after["needs-server"]["status"]) == ("queued", "queued")
    queued = after["queued"]
    assert queued["tries"] == 1 and queued["worker_id"] == worker.id
    assert queued["result"]["kind"] == "failed"  # its run is not in the records: failed, and recorded as such
    [only] = queued["history"]
    assert only["key"] == "pipeline:run-1/queued#1.1" and only["workerId"] == worker.id
    assert only["outcome"] == "failed"
    earlier, mine = after["lapsed"]["history"]
    assert earlier == {**dead[0], "outcome": "lapsed"}  # what the dead try recorded stays
    assert mine["key"] == "pipeline:run-1/lapsed#1.2" and mine["credentialId"] == worker.credential.id
    assert after["lapsed"]["tries"] == 2


async def test_results_stored_together_each_need_the_row_still_this_workers_try(tmp_path: Path, pg_url: str) -> None:
    async with context(tmp_path, pg_url) as (ctx, worker):
        for step in ("kept", "taken"):
            await put(ctx, step)
        claims = {c.step_id: c for c in await worker._claim(2)}
        assert set(claims) == {"kept", "taken"}
        # The lease of "taken" lapsed and another worker claimed it: this worker's late result must not land.
        async with ctx.dbs.server.begin() as conn:
            q = step_queue.c
            await conn.execute(
                step_queue.update().where(q.id == claims["taken"].id).values(worker_id="thief", tries=q.tries + 1)
            )
        listening = await psycopg.AsyncConnection.connect(conninfo(pg_url), autocommit=True)
        try:
            await listening.execute(f"LISTEN {DONE_CHANNEL}")
            # Both end in the same turn of the loop: one statement stores them, row by row.
            await asyncio.gather(
                worker._complete(claims["kept"], StepResult.ok(output="kept")),
                worker._complete(claims["taken"], StepResult.ok(output="late")),
            )
            heard = [n.payload async for n in listening.notifies(timeout=5, stop_after=1)]
        finally:
            await listening.close()
        after = await rows(ctx)
        assert after["kept"]["status"] == "done" and after["kept"]["result"]["output"] == "kept"
        assert after["taken"]["status"] == "claimed" and after["taken"]["worker_id"] == "thief"
        assert after["taken"]["result"] is None and after["taken"]["tries"] == 2
        assert worker.done == 1
        # The notification names the stored row only, with its result (it fits).
        assert [notified_results(p) for p in heard] == [{claims["kept"].id: after["kept"]["result"]}]
        await worker._results_line.aclose()
        await worker._claims_line.aclose()


@pytest.mark.parametrize(("size", "inline"), [(DONE_PAYLOAD_MAX - 200, True), (DONE_PAYLOAD_MAX, False)])
async def test_a_stored_result_is_notified_itself_only_while_it_fits(
    tmp_path: Path, pg_url: str, size: int, inline: bool
) -> None:
    async with context(tmp_path, pg_url) as (ctx, worker):
        await put(ctx, "one")
        [claim] = await worker._claim(1)
        listening = await psycopg.AsyncConnection.connect(conninfo(pg_url), autocommit=True)
        try:
            await listening.execute(f"LISTEN {DONE_CHANNEL}")
            await worker._complete(claim, StepResult.ok(output="x" * size))
            [payload] = [n.payload async for n in listening.notifies(timeout=5, stop_after=1)]
        finally:
            await listening.close()
        said = notified_results(payload)
        if inline:
            assert len(payload) <= DONE_PAYLOAD_MAX and said == {claim.id: (await rows(ctx))["one"]["result"]}
        else:
            assert payload == str(claim.id) and said == {claim.id: None}  # the driver reads the row
        await worker._results_line.aclose()
        await worker._claims_line.aclose()


async def test_a_kept_connection_that_failed_is_replaced(tmp_path: Path, pg_url: str) -> None:
    async with context(tmp_path, pg_url) as (ctx, _):
        line = Line(ctx.dbs.server)
        try:
            assert (await line.execute(sa.text("SELECT count(*) FROM pipeline_step_queue"))).scalar() == 0
            with pytest.raises(sa.exc.DBAPIError):
                await line.execute(sa.text("SELECT 1 / 0"))
            assert (await line.execute(sa.text("SELECT count(*) FROM pipeline_step_queue"))).scalar() == 0
        finally:
            await line.aclose()


def test_a_notification_of_results_says_only_what_it_can() -> None:
    assert notified_results("12,x,13, 14") == {12: None, 13: None, 14: None}
    assert notified_results("") == {}
    assert notified_results("{not json") == {}
    assert notified_results("[1, 2]") == {}
    # Only ids with a result that looks like one: anything else is left to the read of the table.
    assert notified_results(json.dumps({"5": {"kind": "ok"}, "x": {"kind": "ok"}, "6": 1, "7": {}})) == {
        5: {"kind": "ok"}
    }
