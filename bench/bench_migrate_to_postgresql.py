"""Copying a SQLite install into PostgreSQL: rows per second of ``hangar admin migrate-to-postgresql`` (copy and
check of every table, in one transaction), beside a peer on the same rows: the same tables written with SQLAlchemy
Core's batched ``INSERT`` (``executemany`` through psycopg 3, what a copy without ``COPY`` would do), unchecked.

The install: a data directory a real command made (an owner, a workspace with a pipeline run), grown to
``MESSAGES`` messages in one space and as many domain events and audit rows, written straight into its
workspace database. The target: the test suite's throwaway cluster (``tests/support/postgres.py``; fsync off).

Run: ``.venv/bin/python bench/bench_migrate_to_postgresql.py``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.postgres import PostgresCluster
from tests.support.templates import HOP, written

from hangar.core.dbcopy import copy_install
from hangar.core.dblocation import parse_database_url
from hangar.core.postgresql import postgresql_url, workspace_schema
from hangar.server.parts import all_parts

MESSAGES = 100_000
HANGAR = str(Path(sys.executable).parent / "hangar")


def make_install(root: Path) -> tuple[str, int]:
    """A data directory with one workspace grown to ``MESSAGES`` messages, events and audit rows."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANGAR_DATABASE")}
    template = written(HOP, root.parent)
    subprocess.run([HANGAR, "pipeline", "run", str(template), "--data-dir", str(root)], env=env, check=True)
    (workspace,) = [p.parent.name for p in root.glob("*/workspace.db")]
    space = str(uuid.uuid4())
    stamp = "2026-01-02 03:04:05.678901"
    with sqlite3.connect(root / workspace / "workspace.db") as db:
        db.execute(
            "INSERT INTO spaces (id, kind, mode, title, hidden, created_by, provisioning, created_at, updated_at) "
            "VALUES (?, 'space', 'chat', 'bench', 0, 'bench', 'ready', ?, ?)",
            (space, stamp, stamp),
        )
        db.executemany(
            "INSERT INTO messages (id, space_id, author_kind, author_id, author_name, content, metadata, created_at) "
            "VALUES (?, ?, 'user', 'u1', 'Ann', ?, ?, ?)",
            ((str(uuid.uuid4()), space, f"message {n} «ß»", json.dumps({"n": n}), stamp) for n in range(MESSAGES)),
        )
        db.executemany(
            "INSERT INTO domain_events (id, type, occurred_at, payload) VALUES (?, 'message.posted', ?, ?)",
            ((str(uuid.uuid4()), stamp, json.dumps({"spaceId": space, "n": n})) for n in range(MESSAGES)),
        )
        db.executemany(
            "INSERT INTO audit_log (at, principal, action, target, target_seq, details) "
            "VALUES (?, 'user:u1', 'messages.post', ?, 0, '{}')",
            ((stamp, f"message:{n}") for n in range(MESSAGES)),
        )
        rows = sum(
            int(db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0])
            for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'")
        )
    return workspace, rows


def peer_inserts(source: Path, url: str, schema: str) -> tuple[int, float]:
    """The three big tables written with SQLAlchemy Core's batched INSERT into a fresh schema: rows, seconds."""
    sets = [m for p in all_parts() for m in p.migrations if m.scope == "workspace"]
    tables = {t.name: t for m in sets for md in m.tables for t in md.tables.values()}
    lite = sa.create_engine(f"sqlite:///{source}")
    pg = sa.create_engine(postgresql_url(url)).execution_options(schema_translate_map={None: schema})
    rows = 0
    began = time.monotonic()
    with lite.connect() as a, pg.begin() as b:
        b.exec_driver_sql(f'TRUNCATE "{schema}".messages, "{schema}".domain_events, "{schema}".audit_log CASCADE')
        for name in ("spaces", "messages", "domain_events", "audit_log"):
            table = tables[name]
            if name == "spaces":
                b.exec_driver_sql(f'TRUNCATE "{schema}".spaces CASCADE')
            result = a.execute(sa.select(table)).mappings()
            while batch := result.fetchmany(1000):
                b.execute(table.insert(), [dict(r) for r in batch])
                rows += len(batch)
    seconds = time.monotonic() - began
    lite.dispose()
    pg.dispose()
    return rows, seconds


def main() -> None:
    cluster = PostgresCluster.start()
    try:
        with tempfile.TemporaryDirectory() as tmp, cluster.database() as name, cluster.database() as other:
            root = Path(tmp) / "data"
            workspace, _rows = make_install(root)
            url = parse_database_url(cluster.url(name))
            report = copy_install(root, url, [m for p in all_parts() for m in p.migrations])
            print(
                f"migrate-to-postgresql: {report.rows} rows of {len(report.tables)} tables from {report.databases} "
                f"databases copied and checked in {report.seconds:.2f} s (the check {report.checked_in_s:.2f} s) = "
                f"{report.rows / report.seconds:,.0f} rows/s"
            )
            # The peer writes into a schema migrated by a copy of the same install (then emptied).
            (root / "database-url").unlink()
            copy_install(root, parse_database_url(cluster.url(other)), [m for p in all_parts() for m in p.migrations])
            peer_rows, peer_s = peer_inserts(
                root / workspace / "workspace.db", cluster.url(other), workspace_schema(workspace)
            )
            print(
                f"peer (SQLAlchemy Core batched INSERT, unchecked): {peer_rows} rows in {peer_s:.2f} s = "
                f"{peer_rows / peer_s:,.0f} rows/s; ratio {report.rows / report.seconds / (peer_rows / peer_s):.2f}x"
            )
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
