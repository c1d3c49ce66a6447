"""The store's write path: one transaction per tick, and the fallback when another writer holds the lock."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hangar.core.sqlite_writer import SqliteWriter
from tests.unit.pipelines.harness import WS, harness, listen, steps


async def test_tick_waits_for_another_writer_instead_of_failing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tick that finds the lock taken is written from the writer's thread, which waits for it; the event loop
    never waits (the fast path gives up at once), and nothing is dropped."""
    waited: list[float] = []  # when a transaction went to the writer's thread
    went_waiting = threading.Event()
    slow_call = SqliteWriter._slow_call

    def spied(self: SqliteWriter, fn: Any, args: tuple[Any, ...]) -> Any:
        waited.append(time.monotonic())
        went_waiting.set()
        return slow_call(self, fn, args)

    monkeypatch.setattr(SqliteWriter, "_slow_call", spied)
    async with harness(tmp_path) as h:
        db = tmp_path / WS / "workspace.db"
        locked, started = threading.Event(), threading.Event()
        released: list[float] = []

        def hold_lock() -> None:
            conn = sqlite3.connect(db, isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            locked.set()
            started.wait(30)
            # Held until the run's first tick has found it taken and gone to wait on the writer's thread (within
            # the 10 s a waiting connection waits, so a tick waiting on the event loop instead shows here).
            went_waiting.wait(8)
            time.sleep(0.2)
            released.append(time.monotonic())
            conn.execute("COMMIT")
            conn.close()

        # Warm the writer first, so the run below starts while the lock is held.
        await h.run(steps(tid="warm"))
        holder = threading.Thread(target=hold_lock)
        holder.start()
        assert locked.wait(5)
        t0 = time.monotonic()
        started.set()
        snap = await h.run(steps(listen("a", "start"), listen("b", "a")))
        t1 = time.monotonic()
        holder.join()
        assert snap["status"] == "completed"
        # The run began while the other transaction held the lock, its first tick went to wait for it on the
        # writer's thread, and it could finish only once the lock was free (no tick failed or went unwritten) ...
        assert waited and t0 < waited[0] < released[0] < t1
        # ... and every one of them is in the database.
        conn = sqlite3.connect(db)
        run = conn.execute("SELECT status FROM pipeline_runs WHERE id = ?", (snap["runId"],)).fetchone()
        rows = conn.execute(
            "SELECT step_id, status FROM pipeline_step_runs WHERE run_id = ? ORDER BY position", (snap["runId"],)
        ).fetchall()
        conn.close()
        assert run == ("completed",) and rows == [("start", "completed"), ("a", "completed"), ("b", "completed")]


async def test_runs_and_steps_are_in_the_database_as_reported(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        snap = await h.run(steps(listen("a", "start", body="shell.run", script="echo hi", outputKey="out")))
        conn = sqlite3.connect(tmp_path / WS / "workspace.db")
        run = conn.execute("SELECT status, state FROM pipeline_runs WHERE id = ?", (snap["runId"],)).fetchone()
        rows = conn.execute(
            "SELECT step_id, status, attempts FROM pipeline_step_runs WHERE run_id = ? ORDER BY position",
            (snap["runId"],),
        ).fetchall()
        conn.close()
        assert run[0] == "completed" and '"out":"hi"' in run[1]
        assert rows == [("start", "completed", 1), ("a", "completed", 1)]
