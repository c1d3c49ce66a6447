"""Driver leases on PostgreSQL (``hangar.core.leases``): session advisory locks on a dedicated connection per
process, released by the database when that connection ends, and fenced by the holder when it notices."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from hangar.core.context import AppContext
from hangar.core.leases import APPLICATION_NAME, LeaseLost, Leases
from hangar.core.postgresql import postgresql_url
from hangar.core.runcontrol import LOCK_NAME, DrivenElsewhere, RunControl, Takeover
from hangar.core.tables import run_stop_requests
from hangar.errors import Unavailable
from tests.support.dialects import app_on

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _leases(pg_url: str, heartbeat: float = 0.05) -> Leases:
    return Leases(postgresql_url(pg_url), heartbeat=heartbeat)


def _terminate(pg_url: str, pid: int) -> None:
    conninfo = make_url(pg_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


async def test_a_claim_is_refused_while_another_process_or_this_one_holds_it(pg_url: str) -> None:
    a, b = _leases(pg_url), _leases(pg_url)
    try:
        assert await a.try_claim("pipeline run", "r1")
        assert not await a.try_claim("pipeline run", "r1")  # this process too (PostgreSQL would count it)
        assert not await b.try_claim("pipeline run", "r1")
        assert await b.is_claimed("pipeline run", "r1")
        assert await b.try_claim("agent run", "r1")  # another kind is another lease
        await a.release("pipeline run", "r1")
        assert not await b.is_claimed("pipeline run", "r1")
        assert await b.try_claim("pipeline run", "r1")
        assert not await a.try_claim("pipeline run", "r1")
        await a.release("pipeline run", "r1")  # not held by a: nothing happens to b's
        assert b.holds("pipeline run", "r1") and not await a.try_claim("pipeline run", "r1")
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_live_holder_keeps_its_lease_across_many_heartbeats(pg_url: str) -> None:
    a, b = _leases(pg_url, heartbeat=0.02), _leases(pg_url)
    lost: list[list[tuple[str, str]]] = []
    a.on_lost(lost.append)
    try:
        assert await a.try_claim("pipeline run", "r1")
        pid = a.backend_pid
        await asyncio.sleep(0.5)  # some 25 heartbeats: no expiry ends a lease whose connection lives
        assert lost == [] and a.fenced == 0 and a.holds("pipeline run", "r1") and a.backend_pid == pid
        assert not await b.try_claim("pipeline run", "r1")
    finally:
        await a.aclose()
        await b.aclose()


async def test_the_lease_goes_with_its_connection_and_the_holder_fences(pg_url: str) -> None:
    a, b = _leases(pg_url), _leases(pg_url)
    lost: list[list[tuple[str, str]]] = []
    a.on_lost(lost.append)
    try:
        assert await a.try_claim("pipeline run", "r1") and await a.try_claim("pipeline run", "r2")
        assert not await b.try_claim("pipeline run", "r1")
        pid = a.backend_pid
        assert pid is not None
        await asyncio.to_thread(_terminate, pg_url, pid)  # the holder's connection dies (as with its host)
        # The database released the locks at once: another process takes the run without waiting for anything.
        async with asyncio.timeout(10):
            while not await b.try_claim("pipeline run", "r1"):
                await asyncio.sleep(0.01)
            # The holder notices at its next heartbeat and gives up every lease it held (it stops driving).
            while not lost:
                await asyncio.sleep(0.01)
        assert lost == [[("pipeline run", "r1"), ("pipeline run", "r2")]]
        assert not a.holds("pipeline run", "r1") and a.fenced == 1
        # Back on a new connection: what the other process holds is refused, what is free is taken.
        assert not await a.try_claim("pipeline run", "r1")
        assert await a.try_claim("pipeline run", "r2")
        assert a.backend_pid not in (None, pid)
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_call_on_a_dead_connection_fences_and_goes_on_on_a_new_one(pg_url: str) -> None:
    a = _leases(pg_url, heartbeat=3600)  # no heartbeat in time: the call finds the connection dead
    lost: list[list[tuple[str, str]]] = []
    a.on_lost(lost.append)
    try:
        assert await a.try_claim("agent run", "r1")
        pid = a.backend_pid
        assert pid is not None
        await asyncio.to_thread(_terminate, pg_url, pid)
        await asyncio.sleep(0.2)
        assert await a.try_claim("agent run", "r2")  # on a new connection
        assert lost == [[("agent run", "r1")]] and not a.holds("agent run", "r1")
        assert a.backend_pid not in (None, pid)
        assert await a.try_claim("agent run", "r1")  # it was free: the database released it with the old one
    finally:
        await a.aclose()


async def test_an_unreachable_database_is_lease_lost(tmp_path: Path) -> None:
    nowhere = postgresql_url(f"postgresql://hangar@/hangar?host={tmp_path}")
    a = Leases(nowhere)
    try:
        with pytest.raises(LeaseLost) as err:
            await a.try_claim("pipeline run", "r1")
        assert "the lease connection to postgresql" in str(err.value)
        assert not a.holds("pipeline run", "r1")
    finally:
        await a.aclose()


async def test_the_lease_connection_is_named_and_probed_by_the_server(pg_url: str) -> None:
    a = _leases(pg_url)
    try:
        assert await a.try_claim("pipeline run", "r1")
        conninfo = make_url(pg_url).set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            row = conn.execute(
                "SELECT application_name FROM pg_stat_activity WHERE pid = %s", (a.backend_pid,)
            ).fetchone()
        assert row == (APPLICATION_NAME,)
    finally:
        await a.aclose()


async def test_run_control_on_postgresql_claims_stops_and_fences_through_the_database(
    tmp_path: Path, pg_url: str
) -> None:
    """Two processes' run control (each its own Databases, as two servers): a run held by one is refused to the
    other; a stop asked by the other is a row that reaches the holder; a lost lease connection fences the
    holder's runs and the other takes them, honouring the stop request that stands."""
    async with app_on(tmp_path / "a", pg_url) as a, app_on(tmp_path / "b", pg_url) as b:
        await a.dbs.create_workspace("w1")
        stops: list[str] = []
        fenced: list[str] = []
        ca = RunControl(
            tmp_path / "ca",
            kind="pipeline run",
            on_stop=lambda r: stops.append(r) or True,
            dbs=a.dbs,
            on_fenced=fenced.append,
        )
        cb = RunControl(tmp_path / "cb", kind="pipeline run", on_stop=lambda _r: True, dbs=b.dbs)
        assert ca.in_database and cb.in_database
        took = await ca.take("r1", workspace_id="w1")
        assert took == Takeover(stop_requested=False, killed=0)
        assert await cb.try_take("r1", workspace_id="w1") is None
        with pytest.raises(DrivenElsewhere):
            await cb.take("r1", workspace_id="w1")
        assert not (tmp_path / "ca" / "r1" / LOCK_NAME).exists()  # no flock on PostgreSQL

        async def never_here() -> bool:
            return False

        async def never_ends() -> bool:
            return False

        with pytest.raises(Unavailable):  # the holder never ends it here; the request stands
            await cb.stop(
                "r1", by="user:pat", at=AT, stop_here=never_here, ended=never_ends, wait_s=0.3, workspace_id="w1"
            )
        assert stops == ["r1"]  # the holder was told, through the row
        rows = await _stop_rows(a, "w1")
        assert rows == [("pipeline run", "r1", "user:pat", AT)]

        pid = a.dbs.leases().backend_pid
        assert pid is not None
        await asyncio.to_thread(_terminate, pg_url, pid)
        async with asyncio.timeout(10):
            while not fenced:
                await asyncio.sleep(0.01)
        assert fenced == ["r1"] and not ca.holds("r1")
        again = await cb.take("r1", workspace_id="w1")
        assert again.stop_requested  # the next driver honours the request before anything runs
        cb.release("r1", ended=True)
        await cb.aclose()
        await ca.aclose()
        assert await _stop_rows(a, "w1") == []  # gone with the run's end
        assert await ca.try_take("r1", workspace_id="w1") is not None  # free again
        ca.release("r1")
        await ca.aclose()
        with pytest.raises(ValueError):
            await ca.try_take("r2")  # on PostgreSQL a run is taken with its workspace


async def _stop_rows(app: AppContext, ws: str) -> list[tuple[object, ...]]:
    engine = await app.dbs.workspace(ws)
    t = run_stop_requests
    async with engine.connect() as conn:
        rows = await conn.execute(sa.select(t.c.kind, t.c.run_id, t.c.requested_by, t.c.requested_at))
        return [tuple(r) for r in rows]
