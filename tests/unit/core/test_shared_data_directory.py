"""What several processes on one data directory rely on: change counters, the secrets file, migrations."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.dbfailures import DatabaseDamaged
from hangar.core.migrating import apply_migrations
from hangar.core.secrets import SecretsFile
from hangar.core.stamps import StampedCache, StampReader
from hangar.identity import tables as identity_tables
from hangar.server.parts import all_parts

WORKSPACE_SETS = [m for p in all_parts() for m in p.migrations if m.scope == "workspace"]


def test_two_secrets_files_on_one_path_never_write_back_a_stale_copy(tmp_path: Path) -> None:
    path = tmp_path / "secrets.json"
    server, cli = SecretsFile(path), SecretsFile(path)  # as two processes hold it
    server.set("a", "1")
    cli.set("b", "2")  # read-modify-write of what is on disk now, not of what it loaded
    server.set("c", "3")
    assert (server.get("b"), cli.get("a"), cli.get("c")) == ("2", "1", "3")
    cli.delete("a")
    assert server.get("a") is None and SecretsFile(path).get("c") == "3"
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_the_authority_counter_moves_with_every_change_of_authority_and_not_with_use(tmp_path: Path) -> None:
    db = tmp_path / "server.db"
    apply_migrations(db, [identity_tables.MIGRATIONS])
    reader = StampReader(str(db))
    before = reader.read("authority")
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO devices (id, user_id, name, token_hash, created_at, last_used_at) "
            "VALUES ('d', 'u', 'n', 'h', '2026-01-01', '2026-01-01')"
        )
    added = reader.read("authority")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE devices SET last_used_at = '2026-02-01'")
    assert reader.read("authority") == added > before
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE devices SET revoked_at = '2026-02-01'")
    assert reader.read("authority") == added + 1


async def test_a_stamped_cache_serves_from_memory_only_while_the_counter_stands() -> None:
    counter = [1]
    loads: list[str] = []

    async def stamp() -> int:
        return counter[0]

    async def load() -> str:
        loads.append("x")
        return f"v{counter[0]}"

    cache: StampedCache[str, str] = StampedCache(stamp)
    assert [await cache.get("k", load), await cache.get("k", load)] == ["v1", "v1"] and len(loads) == 1
    counter[0] = 2  # another process committed a change
    assert await cache.get("k", load) == "v2" and len(loads) == 2


async def test_a_value_loaded_while_the_counter_moved_is_not_kept() -> None:
    """The race: a load reads the record, then (before it returns) another process changes it and another request
    reads the moved counter. What that load read is older than the counter now vouches for: it answers its own
    call, but the next call loads again."""
    counter, record = [1], ["member"]
    loads: list[str] = []

    async def stamp() -> int:
        return counter[0]

    cache: StampedCache[str, str] = StampedCache(stamp)

    async def load_overtaken() -> str:
        value = record[0]  # the record as it was
        loads.append(value)
        record[0], counter[0] = "removed", 2  # another process commits a change, bumping the counter
        assert await cache.current() == 2  # a concurrent request reads the counter while this load returns
        return value

    async def load() -> str:
        loads.append(record[0])
        return record[0]

    assert await cache.get("role", load_overtaken) == "member"
    assert await cache.get("role", load) == "removed"
    assert loads == ["member", "removed"]
    # Loaded and kept under a counter that stands: served from memory. A caller's own reading of the counter
    # (``as_of``, one read for a whole decision) reuses it when it is the reading the cache holds, and makes the
    # cache read the counter again when it is any other.
    assert await cache.get("role", load) == "removed" and len(loads) == 2
    counter[0] = 3
    assert await cache.get("role", load, as_of=2) == "removed" and len(loads) == 2
    assert await cache.get("role", load, as_of=1) == "removed" and len(loads) == 3


def test_migrating_many_databases_from_many_threads_completes_each(tmp_path: Path) -> None:
    errors: list[BaseException] = []

    def migrate(i: int) -> None:
        try:
            apply_migrations(tmp_path / f"w{i}" / "workspace.db", WORKSPACE_SETS)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=migrate, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    first = {r[0] for r in sqlite3.connect(tmp_path / "w0" / "workspace.db").execute("SELECT name FROM sqlite_master")}
    for i in range(12):
        names = {
            r[0] for r in sqlite3.connect(tmp_path / f"w{i}" / "workspace.db").execute("SELECT name FROM sqlite_master")
        }
        assert names == first


def test_a_database_missing_a_table_is_reported_not_half_used(tmp_path: Path) -> None:
    db = tmp_path / "w" / "workspace.db"
    apply_migrations(db, WORKSPACE_SETS)
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE agent_runs")
    with pytest.raises(DatabaseDamaged, match="agent_runs"):
        apply_migrations(db, WORKSPACE_SETS)


async def test_a_workspace_database_appears_complete_or_not_at_all(tmp_path: Path) -> None:
    datadir = DataDir(tmp_path).ensure()
    dbs = Databases(datadir, WORKSPACE_SETS)
    await dbs.open()
    try:
        await asyncio.gather(*(dbs.create_workspace(f"ws{i}") for i in range(6)))
        for i in range(6):
            assert await dbs.last_event_seq(f"ws{i}") == 0
        assert not list(tmp_path.glob(".creating-*"))
    finally:
        await dbs.aclose()
