"""Driver leases on PostgreSQL (``hangar.core.leases``): session advisory locks on a dedicated connection per
process, released by the database when that connection ends, and fenced by the holder when it notices."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from hangar.core.db import postgresql_url
from hangar.core.leases import APPLICATION_NAME, LeaseLost, Leases


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
