"""The store's write path: one transaction per tick, and the fallback when another writer holds the lock."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from tests.unit.pipelines.harness import WS, harness, listen, steps


async def test_tick_waits_for_another_writer_instead_of_failing(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        db = tmp_path / WS / "workspace.db"
        locked = threading.Event()
        released: list[float] = []

        def hold_lock() -> None:
            conn = sqlite3.connect(db, isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            locked.set()
            time.sleep(0.4)
            released.append(time.monotonic())
            conn.execute("COMMIT")
            conn.close()

        # Warm the writer first, so the run below starts while the lock is held.
        await h.run(steps(tid="warm"))
        holder = threading.Thread(target=hold_lock)
        holder.start()
        assert locked.wait(5)
        t0 = time.monotonic()
        snap = await h.run(steps(listen("a", "start"), listen("b", "a")))
        holder.join()
        assert snap["status"] == "completed"
        # Nothing could be written before the other transaction ended, and nothing failed meanwhile.
        assert released and time.monotonic() >= released[0] > t0


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
