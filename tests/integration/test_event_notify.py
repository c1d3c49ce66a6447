"""Events across server processes on one PostgreSQL database, delivered by LISTEN/NOTIFY.

Each "process" is what a server holds for events: its own ``Databases`` (its own pool) and ``EventBus`` on the
same URL; one test appends from a real second OS process (tests/support/event_writer.py). The buses run with
their slow safety catch-up and the SQLite poll an hour apart, so what is delivered within a test came by a
notification, or by the catch-up the listener runs when it (re)connects.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from hangar.core.event_listener import APPLICATION_NAME, EventListener
from hangar.core.event_types import StoredEvent
from hangar.core.events import EventBus
from tests.support.event_writer import Pinged, append, open_bus

REPO = Path(__file__).resolve().parents[2]
SLOW = {"tail_interval": 3600.0, "catchup_interval": 3600.0}
WAIT_S = 120.0  # a bound for a failing test, never a figure asserted


class Process:
    """One server process's bus, tailing the workspaces ``ids`` lists, and what its subscriber received."""

    def __init__(self, bus: EventBus, ids: list[str]) -> None:
        self.bus = bus
        self.ids = ids
        self.got: dict[str, list[StoredEvent]] = {}

    async def start(self, *watch: str) -> None:
        for ws in watch:
            self.bus.subscribe(self._recorder(ws), name=f"watch-{ws}", workspace_id=ws)

        async def listed() -> list[str]:
            return list(self.ids)

        async def stamp() -> int:
            return len(self.ids)

        await self.bus.start(listed, stamp)
        assert self.bus.listener is not None
        await until(lambda: self.bus.listener is not None and self.bus.listener.connections >= 1)

    def _recorder(self, ws: str) -> Callable[[StoredEvent], asyncio.Future[None]]:
        async def record(ev: StoredEvent) -> None:
            self.got.setdefault(ws, []).append(ev)

        return record  # type: ignore[return-value]

    def numbers(self, ws: str) -> list[int]:
        return [int(e.payload["n"]) for e in self.got.get(ws, [])]

    def seqs(self, ws: str) -> list[int]:
        return [e.seq for e in self.got.get(ws, [])]


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(WAIT_S):
        while not condition():
            await asyncio.sleep(0.01)


@pytest.fixture
async def processes(pg_url: str, tmp_path: Path) -> AsyncIterator[tuple[Process, Process]]:
    async with open_bus(tmp_path / "a", pg_url, **SLOW) as a, open_bus(tmp_path / "b", pg_url, **SLOW) as b:
        yield Process(a, []), Process(b, [])


async def _create(proc: Process, *ids: str) -> None:
    for ws in ids:
        await proc.bus._dbs.workspace(ws, create=True)


def _admin(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(
        make_url(url).set(drivername="postgresql").render_as_string(hide_password=False), autocommit=True
    )


def _terminate_listeners(pg_url: str) -> int:
    with _admin(pg_url) as c:
        rows = c.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND datname = current_database()",
            (APPLICATION_NAME,),
        ).fetchall()
    return len(rows)


async def test_two_processes_deliver_each_others_events_in_order(processes: tuple[Process, Process]) -> None:
    a, b = processes
    await _create(a, "w1")
    a.ids.append("w1")
    b.ids.append("w1")
    await a.start("w1")
    await b.start("w1")
    # Both write at once, interleaving their transactions: one through the write path, one with its records.
    await asyncio.gather(append(a.bus, "w1", 1, 100, with_records=False), append(b.bus, "w1", 101, 100))
    await until(lambda: len(a.got.get("w1", [])) >= 200 and len(b.got.get("w1", [])) >= 200)
    await asyncio.sleep(0.2)  # nothing more arrives (a duplicate would)
    stored = [e.seq for e in await a.bus.replay("w1")]
    assert len(stored) == 200
    for proc in (a, b):
        assert proc.seqs("w1") == stored  # every event, once, in sequence order
        assert sorted(proc.numbers("w1")) == list(range(1, 201))
    # Each process heard the other's events (not only its own, handed over without reading them back).
    assert [n for n in a.numbers("w1") if n > 100] == list(range(101, 201))
    assert [n for n in b.numbers("w1") if n <= 100] == list(range(1, 101))


async def test_a_burst_of_1000_from_another_os_process(pg_url: str, tmp_path: Path) -> None:
    async with open_bus(tmp_path / "a", pg_url, **SLOW) as bus:
        a = Process(bus, ["w1"])
        await _create(a, "w1")
        await a.start("w1")
        writer = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.support.event_writer", "--data", str(tmp_path / "b"),
            "--database-url", pg_url, "--workspace", "w1", "--count", "1000",
            cwd=REPO, stdout=subprocess.PIPE,
        )  # fmt: skip
        out, _ = await writer.communicate()
        assert writer.returncode == 0 and out.strip() == b"done"
        await until(lambda: len(a.got.get("w1", [])) >= 1000)
        await asyncio.sleep(0.2)
        assert a.numbers("w1") == list(range(1, 1001))
        assert a.seqs("w1") == [e.seq for e in await bus.replay("w1")]


async def test_listener_killed_mid_stream_reconnects_and_loses_nothing(
    pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A password in the URL (the test cluster trusts local connections and never asks for it): no log shows it.
    secret_url = pg_url.replace("hangar@", "hangar:Sw0rdf1sh-pw@")
    async with open_bus(tmp_path / "a", secret_url, **SLOW) as bus:
        a = Process(bus, ["w1"])
        await _create(a, "w1")
        await a.start("w1")
        listener = bus.listener
        assert listener is not None
        writer = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.support.event_writer", "--data", str(tmp_path / "b"),
            "--database-url", pg_url, "--workspace", "w1", "--count", "300", "--pace", "0.01",
            cwd=REPO, stdout=subprocess.PIPE,
        )  # fmt: skip
        caplog.set_level(logging.INFO, logger="hangar.core.event_listener")
        for kill in range(1, 4):  # three outages while the other process writes
            await until(lambda kill=kill: len(a.got.get("w1", [])) >= 50 * kill)  # type: ignore[misc]
            assert _terminate_listeners(pg_url) == 1
            await until(lambda kill=kill: listener.connections > kill)  # type: ignore[misc]
        out, _ = await writer.communicate()
        assert writer.returncode == 0 and out.strip() == b"done"
        await until(lambda: len(a.got.get("w1", [])) >= 300)
        await asyncio.sleep(0.2)
        assert a.numbers("w1") == list(range(1, 301))  # none lost, none twice, in order
    lost = [r for r in caplog.records if "not arriving" in r.getMessage()]
    back = [r for r in caplog.records if "are back" in r.getMessage()]
    assert len(lost) == 3 and len(back) == 3  # once per outage, however many reconnect attempts
    assert "Sw0rdf1sh" not in caplog.text
    assert "postgresql://hangar@/" in lost[0].getMessage()  # the URL is named, without its password


@pytest.mark.parametrize(
    "given",
    [
        "postgresql+psycopg://hangar:Sw0rdf1sh-pw@/nowhere?host={}",
        "postgresql://hangar@/nowhere?host={}&password=Sw0rdf1sh-pw",
    ],
    ids=["userinfo", "query"],
)
async def test_an_unreachable_database_is_logged_once_without_its_password(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, given: str
) -> None:
    heard: list[int] = []
    url = make_url(given.format(tmp_path))  # no server there
    listener = EventListener(url, lambda _s, seq: heard.append(seq), lambda: None, backoff_min=0.01, backoff_max=0.02)
    caplog.set_level(logging.INFO, logger="hangar.core.event_listener")
    listener.start()
    try:
        await until(lambda: listener.failures >= 5)
    finally:
        await listener.aclose()
    assert listener.connections == 0 and heard == []
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "not arriving" in warnings[0]  # one line for the whole outage
    assert "Sw0rdf1sh" not in caplog.text


async def test_a_workspaces_events_never_reach_a_watcher_of_another(processes: tuple[Process, Process]) -> None:
    a, b = processes
    other = "w" * 64  # a long id: its schema is named by a digest
    await _create(a, "w1", other)
    a.ids.extend(["w1", other])
    b.ids.extend(["w1", other])
    await a.start("w1", other)
    await b.start("w1")
    await append(b.bus, other, 1, 20)
    await append(a.bus, "w1", 100, 5)
    await until(lambda: len(a.got.get(other, [])) >= 20 and len(b.got.get("w1", [])) >= 5)
    await asyncio.sleep(0.2)
    assert b.numbers("w1") == [100, 101, 102, 103, 104]
    assert a.numbers(other) == list(range(1, 21))
    assert all(e.workspace_id == other for e in a.got[other])
    assert all(e.workspace_id == "w1" for e in b.got["w1"] + a.got["w1"])


async def test_a_workspace_created_after_start_is_heard_from_its_first_event(
    processes: tuple[Process, Process],
) -> None:
    a, b = processes
    await a.start()
    await b.start()
    got: list[StoredEvent] = []

    async def record(ev: StoredEvent) -> None:
        got.append(ev)

    b.bus.subscribe(record, name="all")
    await _create(a, "late")
    b.ids.append("late")  # listed by b once a notification names a schema it does not follow
    await append(a.bus, "late", 1, 3)
    await until(lambda: len(got) >= 3)
    assert [(e.workspace_id, e.payload["n"]) for e in got] == [("late", 1), ("late", 2), ("late", 3)]


async def test_sequence_numbers_follow_commit_order(processes: tuple[Process, Process]) -> None:
    """A transaction that drew a lower seq but commits later would be skipped by a reader that moved past the
    higher one: inserts of one workspace's events wait for each other, so seqs are drawn in commit order."""
    a, b = processes
    await _create(a, "w1")
    a.ids.append("w1")
    await a.start("w1")
    async with a.bus.transaction("w1") as first:
        await first.publish(Pinged(workspace_id="w1", n=1))
        second = asyncio.create_task(append(b.bus, "w1", 2, 1))
        # The second writer waits for this transaction's lock (or, without it, commits first).
        await until(lambda: second.done() or _waiting_on_lock(a) > 0)
        if second.done():  # nothing held it back: the reader moves past its seq before this one commits
            await until(lambda: len(a.got.get("w1", [])) >= 1)
    await second
    await until(lambda: len(a.got.get("w1", [])) >= 2)
    assert a.numbers("w1") == [1, 2]
    assert a.seqs("w1") == sorted(a.seqs("w1"))


def _waiting_on_lock(proc: Process) -> int:
    url = proc.bus._dbs.postgresql_url
    assert url is not None
    with _admin(url.render_as_string(hide_password=False)) as c:
        row = c.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").fetchone()
    return int(row[0]) if row else 0


async def test_sqlite_keeps_its_poll(tmp_path: Path) -> None:
    """No listener on SQLite: the tail reads every ``tail_interval`` as it always did."""
    async with open_bus(tmp_path / "d", None, tail_interval=0.05) as a, open_bus(tmp_path / "d", None) as b:
        proc = Process(a, ["w1"])
        await _create(proc, "w1")
        for ws in proc.ids:
            a.subscribe(proc._recorder(ws), name="w", workspace_id=ws)

        async def listed() -> list[str]:
            return ["w1"]

        async def stamp() -> int:
            return 1

        await a.start(listed, stamp)
        assert a.listener is None
        await append(b, "w1", 1, 3)
        await until(lambda: len(proc.got.get("w1", [])) >= 3)
        assert proc.numbers("w1") == [1, 2, 3]
    assert os.path.exists(tmp_path / "d")
