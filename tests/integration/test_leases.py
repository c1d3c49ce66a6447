"""Driver leases on PostgreSQL (``hangar.core.leases``): session advisory locks on a dedicated connection per
process, released by the database when that connection ends, taken back by the holder on a new connection when
nobody took them meanwhile, and given up (fenced) when someone did or the connection stayed away past the lapse."""

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
from tests.support.postgres import PostgresCluster

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


async def test_a_blip_nobody_used_is_bridged_every_lease_taken_back_on_a_new_connection(pg_url: str) -> None:
    a, b = _leases(pg_url), _leases(pg_url)
    lost: list[list[tuple[str, str]]] = []
    a.on_lost(lost.append)
    try:
        assert await a.try_claim("pipeline run", "r1") and await a.try_claim("agent run", "r2")
        pid = a.backend_pid
        assert pid is not None
        await asyncio.to_thread(_terminate, pg_url, pid)  # the holder's connection dies: a restart, a failover
        async with asyncio.timeout(10):  # the next heartbeat finds it broken and opens a new one
            while a.regained == 0:
                await asyncio.sleep(0.01)
        assert lost == [] and a.fenced == 0
        assert a.holds("pipeline run", "r1") and a.holds("agent run", "r2")
        assert a.backend_pid not in (None, pid)
        # Held again in the database, not only in the holder's memory.
        assert not await b.try_claim("pipeline run", "r1") and not await b.try_claim("agent run", "r2")
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_lease_another_process_took_during_the_blip_is_given_up_and_the_rest_kept(pg_url: str) -> None:
    a, b = _leases(pg_url, heartbeat=3600), _leases(pg_url)  # a's next call, not its heartbeat, finds the loss
    lost: list[list[tuple[str, str]]] = []
    a.on_lost(lost.append)
    try:
        assert await a.try_claim("pipeline run", "r1") and await a.try_claim("pipeline run", "r2")
        assert not await b.try_claim("pipeline run", "r1")
        pid = a.backend_pid
        assert pid is not None
        await asyncio.to_thread(_terminate, pg_url, pid)
        # The database released the locks at once: another process takes the run without waiting for anything.
        async with asyncio.timeout(10):
            while not await b.try_claim("pipeline run", "r1"):
                await asyncio.sleep(0.01)
        assert await a.try_claim("pipeline run", "r3")  # on a new connection, which takes back what is free
        assert lost == [[("pipeline run", "r1")]] and a.fenced == 1 and a.regained == 0
        assert not a.holds("pipeline run", "r1")
        assert a.holds("pipeline run", "r2") and a.holds("pipeline run", "r3")
        assert not await b.try_claim("pipeline run", "r2")
        assert a.backend_pid not in (None, pid)
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_connection_away_longer_than_the_lapse_gives_up_every_lease(pg_cluster: PostgresCluster) -> None:
    with pg_cluster.database() as name:
        role, password = pg_cluster.login_role(name)
        url = make_url(pg_cluster.url(name)).set(username=role, password=password)
        a = Leases(postgresql_url(url.render_as_string(hide_password=False)), heartbeat=0.05, lapse=0.5)
        lost: list[list[tuple[str, str]]] = []
        a.on_lost(lost.append)
        try:
            assert await a.try_claim("agent run", "r1")
            pid = a.backend_pid
            assert pid is not None
            with psycopg.connect(pg_cluster.dsn(name), autocommit=True) as admin:
                admin.execute(f'ALTER ROLE "{role}" NOLOGIN')  # no new connection can be had
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            async with asyncio.timeout(30):
                while not lost:
                    await asyncio.sleep(0.01)
            assert lost == [[("agent run", "r1")]] and a.fenced == 1 and not a.holds("agent run", "r1")
            with psycopg.connect(pg_cluster.dsn(name), autocommit=True) as admin:
                admin.execute(f'ALTER ROLE "{role}" LOGIN')
            assert await a.try_claim("agent run", "r1")  # free: claimed again once the database lets it in
        finally:
            await a.aclose()


async def test_a_call_on_a_dead_connection_goes_on_on_a_new_one_that_takes_the_leases_back(pg_url: str) -> None:
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
        assert lost == [] and a.holds("agent run", "r1") and a.regained == 1
        assert a.backend_pid not in (None, pid)
        assert not await a.is_claimed("agent run", "r9") and await a.is_claimed("agent run", "r1")
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

        leases = a.dbs.leases()
        leases.heartbeat = 3600  # the take-over below comes first; a's next call then finds the loss
        assert leases._beat is not None
        leases._beat.cancel()
        pid = leases.backend_pid
        assert pid is not None
        await asyncio.to_thread(_terminate, pg_url, pid)
        async with asyncio.timeout(10):  # free once a's connection has ended
            while (again := await cb.try_take("r1", workspace_id="w1")) is None:
                await asyncio.sleep(0.01)
        assert again.stop_requested  # the next driver honours the request before anything runs
        assert await ca.try_take("r2", workspace_id="w1") is not None  # a's new connection: r1 is b's, given up
        assert fenced == ["r1"] and not ca.holds("r1") and ca.holds("r2")
        ca.release("r2")
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
