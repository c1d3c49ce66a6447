"""The lease lapse is the server setting ``leases.lapseSeconds`` (``hangar.core.lapse``): bounded (2 to 300 s), set
through ``hangar admin setting`` by any process, and read by every process's leases at their next heartbeat; a
lowered lapse is not trusted for take-overs until every holder has had time to read it, and a stored value outside
today's bounds means the default."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from hangar.core.lapse import LAPSE_MAX_S, LAPSE_MIN_S, LAPSE_SETTING
from hangar.core.leases import CHECK_TIMEOUT_S, Leases
from hangar.core.postgresql import postgresql_url
from tests.integration.test_workers import sql
from tests.support.processes import cli
from tests.support.server import running_server

EXTRA_S = 1.0 + CHECK_TIMEOUT_S + 10  # a heartbeat, a check's timeout, a connection attempt


def test_the_lapse_is_refused_outside_its_bounds_and_taken_at_them(tmp_path: Path) -> None:
    data = tmp_path / "d"
    for refused in (LAPSE_MIN_S - 1, LAPSE_MAX_S + 1, 2.5, "true"):
        said = cli(data, "admin", "setting", LAPSE_SETTING, json.dumps(refused), check=False)
        assert said.returncode == 2, said
        flat = " ".join(re.sub("[│╭╮╰╯─]", " ", said.stderr).split())  # the error box, unwrapped
        assert f"{LAPSE_SETTING} must be a whole number from {LAPSE_MIN_S} to {LAPSE_MAX_S}" in flat
    for taken in (LAPSE_MIN_S, LAPSE_MAX_S):
        assert cli(data, "admin", "setting", LAPSE_SETTING, str(taken)).stdout.strip() == str(taken)
    assert cli(data, "admin", "setting", LAPSE_SETTING).stdout.strip() == str(LAPSE_MAX_S)


async def until(check: object, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.05)


async def test_a_running_server_reads_the_lapse_another_process_set(tmp_path: Path, pg_url: str) -> None:
    async with running_server(tmp_path / "data", database_url=pg_url) as s:
        leases = s.ctx.dbs.leases()
        assert await leases.try_claim("agent run", "r1")  # the lease connection and its heartbeat start
        assert leases.lapse == 10 and leases.takeover_after == 10 + EXTRA_S
        cli(tmp_path / "data", "admin", "setting", LAPSE_SETTING, str(LAPSE_MAX_S), "--database-url", pg_url)
        await until(lambda: leases.lapse == LAPSE_MAX_S)
        assert leases.takeover_after == LAPSE_MAX_S + EXTRA_S
        # Lowered: the holder gives its leases up after the new lapse, but a take-over still waits for the old one
        # (a holder cut off from the database has not read the change).
        cli(tmp_path / "data", "admin", "setting", LAPSE_SETTING, str(LAPSE_MIN_S), "--database-url", pg_url)
        await until(lambda: leases.lapse == LAPSE_MIN_S)
        assert leases.takeover_after == LAPSE_MAX_S + EXTRA_S
        # A value stored outside today's bounds (by an older version, or by hand) means the default.
        sql(pg_url, "UPDATE hangar_server.server_settings SET value = '1' WHERE key = %s", LAPSE_SETTING)
        await until(lambda: leases.lapse == 10)
        await leases.release("agent run", "r1")


async def test_the_lapse_read_bounds_a_holders_wait_through_a_broken_connection(pg_url: str) -> None:
    stored: list[object] = [LAPSE_MIN_S]

    async def read() -> object:
        return stored[0]

    a = Leases(postgresql_url(pg_url), heartbeat=0.05, read_lapse=read)
    try:
        assert await a.try_claim("agent run", "r1")
        await until(lambda: a.lapse == LAPSE_MIN_S)
        stored[0] = LAPSE_MIN_S - 1  # not a lapse: the default
        await until(lambda: a.lapse == 10)
        stored[0] = LAPSE_MAX_S + 1
        await asyncio.sleep(0.3)
        assert a.lapse == 10
        stored[0] = LAPSE_MAX_S
        await until(lambda: a.lapse == LAPSE_MAX_S)
    finally:
        await a.aclose()
