"""The runner's statements, run on the core's write path (``hangar.core.write_conn``, SQLite or PostgreSQL): one
transaction per tick with statements prepared once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hangar.core.events import insert_event
from hangar.core.write_conn import Values, WriteConnection, transaction
from hangar.pipelines._algo import StepRec
from hangar.pipelines.rows import RunRow

_SQL_STEP = (
    "UPDATE pipeline_step_runs SET status=?, attempts=?, error=?, route_key=?, started_at=?, finished_at=?, "
    "not_before=?, suspend=?, deadline=?, resume=?, progress=? WHERE run_id=? AND step_id=?"
)
_SQL_RUN = "UPDATE pipeline_runs SET status=?, state=?, error=?, updated_at=?, finished_at=? WHERE id=?"
_SQL_CLEAR = "DELETE FROM pipeline_waits WHERE run_id=? AND step_id=?"
_SQL_WAIT = "INSERT INTO pipeline_waits (run_id, step_id, wait_key) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
_SQL_SEQ = "SELECT max(seq) FROM domain_events"


def step_row(v: Values, run_id: str, r: StepRec) -> tuple[Any, ...]:
    """The step's columns in the form ``v``'s database stores them (``v``: the writer the tick goes to)."""
    dt, js = v.dt, v.js
    return (
        r.status.value,
        r.attempts,
        r.error,
        r.route_key,
        dt(r.started_at),
        dt(r.finished_at),
        dt(r.not_before),
        js(r.suspend),
        dt(r.deadline),
        js(r.resume),
        js(r.progress),
        run_id,
        r.step_id,
    )


def run_row_values(v: Values, r: RunRow) -> tuple[Any, ...]:
    return (r.status.value, v.js(r.state), r.error, v.dt(r.updated_at), v.dt(r.finished_at), r.id)


@transaction
def write_tick(
    conn: WriteConnection,
    run_id: str,
    steps: list[tuple[Any, ...]],
    run: tuple[Any, ...] | None,
    cleared: list[str],
    added: list[tuple[str, str]],
    events: list[tuple[str, str, datetime, Any]],
) -> tuple[int, list[int]]:
    """The tick's rows and the events it announces (id, type, time, payload), in one transaction; returns the
    newest event's sequence number at that moment and those of the tick's events."""
    if steps:
        conn.executemany(_SQL_STEP, steps)
    if run is not None:
        conn.execute(_SQL_RUN, run)
    if cleared:
        conn.executemany(_SQL_CLEAR, [(run_id, s) for s in cleared])
    if added:
        conn.executemany(_SQL_WAIT, [(run_id, s, k) for s, k in added])
    seqs = [insert_event(conn, *event) for event in events]
    return int(conn.execute(_SQL_SEQ).fetchone()[0] or 0), seqs


_SQL_INSERT_RUN = (
    "INSERT INTO pipeline_runs (id, template_id, template, status, trigger_id, trigger_kind, trigger_key, payload, "
    "state, dry_run, parent_run_id, parent_step_id, error, created_by, created_at, updated_at, finished_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SQL_INSERT_STEP = "INSERT INTO pipeline_step_runs (run_id, step_id, position, status, attempts) VALUES (?, ?, ?, ?, 0)"


def interest(conn: WriteConnection, keys: list[str], event_type: str) -> tuple[list[tuple[str, str]], bool]:
    marks = ",".join("?" * len(keys))
    waiters = conn.execute(
        f"SELECT DISTINCT run_id, step_id FROM pipeline_waits WHERE wait_key IN ({marks})", keys
    ).fetchall()
    trig = conn.execute(
        "SELECT 1 FROM pipeline_triggers WHERE kind IN ('event', 'pullRequest') AND event_type = ? LIMIT 1",
        (event_type,),
    ).fetchone()
    return [(str(r[0]), str(r[1])) for r in waiters], trig is not None


@transaction
def insert_run(conn: WriteConnection, run: tuple[Any, ...], steps: list[tuple[Any, ...]]) -> None:
    conn.execute(_SQL_INSERT_RUN, run)
    conn.executemany(_SQL_INSERT_STEP, steps)


__all__ = ["insert_run", "interest", "run_row_values", "step_row", "write_tick"]
