"""A test's own look at an install's records, on whichever engine they are kept: the SQLite files in the data
directory, or, under ``make test-postgresql``, the schemas of the test's PostgreSQL database.

For tests that check or damage what is stored beneath a server (its records as a backup left them, a table a
failed migration dropped), with SQLAlchemy, so the same test runs on both engines.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa

from hangar.core.datadir import DataDir
from hangar.core.fileio import write_private_atomic
from hangar.core.postgresql import SERVER_SCHEMA, postgresql_url, workspace_schema
from hangar.core.runcontrol import STOP_NAME
from hangar.core.sealed import SealedSecrets
from hangar.core.secretkey import KEY_FILE, create_key
from hangar.core.tables import run_stop_requests
from tests.support import pg_mode


def on_postgresql(data_dir: Path) -> bool:
    """Whether the install at ``data_dir`` keeps its records in PostgreSQL in this test session."""
    return pg_mode.database_url_for(data_dir) is not None


@contextlib.contextmanager
def records(data_dir: Path, workspace_id: str | None = None) -> Iterator[sa.Connection]:
    """A connection to the server database of the install at ``data_dir``, or to ``workspace_id``'s; its
    transaction commits when the block ends."""
    url = pg_mode.database_url_for(data_dir)
    if url is None:
        datadir = DataDir(data_dir)
        path = datadir.server_db if workspace_id is None else datadir.workspace_db(workspace_id)
        engine = sa.create_engine(f"sqlite:///{path}")
    else:
        schema = SERVER_SCHEMA if workspace_id is None else workspace_schema(workspace_id)
        engine = sa.create_engine(postgresql_url(url), connect_args={"options": f"-c search_path={schema}"})
    try:
        with engine.begin() as conn:
            yield conn
    finally:
        engine.dispose()


def table_names(conn: sa.Connection) -> set[str]:
    """The tables of the database ``conn`` is on (its schema, on PostgreSQL)."""
    schema = None if conn.dialect.name == "sqlite" else conn.exec_driver_sql("SELECT current_schema()").scalar()
    return set(sa.inspect(conn).get_table_names(schema=schema))


def restore_flags(data_dir: Path) -> list[str]:
    """What ``hangar admin restore`` needs besides ``--data-dir data_dir``: under ``make test-postgresql`` the
    ``--database-url`` of a fresh, empty database for the records (a backup of an install on PostgreSQL restores
    into one); nothing on SQLite."""
    url = pg_mode.database_url_for(data_dir)
    return [] if url is None else ["--database-url", url]


def stop_requested(data_dir: Path, control_dir: Path, run_id: str) -> bool:
    """Whether a stop request for the run ``run_id`` is recorded (``hangar.core.runcontrol``): the ``.stop`` note
    in its control folder ``control_dir`` on SQLite files, a ``run_stop_requests`` row of its workspace on
    PostgreSQL."""
    if not on_postgresql(data_dir):
        return (control_dir / STOP_NAME).exists()
    with records(data_dir) as conn:
        workspaces = [str(w) for w in conn.execute(sa.text("SELECT id FROM workspaces")).scalars()]
    for ws in workspaces:
        with records(data_dir, ws) as conn:
            found = conn.execute(sa.select(run_stop_requests.c.run_id).where(run_stop_requests.c.run_id == run_id))
            if found.first() is not None:
                return True
    return False


def stored_text(data_dir: Path, workspace_id: str | None = None) -> bytes:
    """Everything the server database (or ``workspace_id``'s) holds, for a test that checks a secret never
    reaches it: on SQLite files the bytes of the database and its journal (pages no row uses any more
    included); on PostgreSQL every row of every table of its schema, as text."""
    if not on_postgresql(data_dir):
        datadir = DataDir(data_dir)
        path = datadir.server_db if workspace_id is None else datadir.workspace_db(workspace_id)
        return b"".join(p.read_bytes() for p in sorted(path.parent.glob(f"{path.name}*")) if p.is_file())
    found: list[str] = []
    with records(data_dir, workspace_id) as conn:
        for table in sorted(table_names(conn)):
            quoted = conn.dialect.identifier_preparer.quote(table)
            found += conn.execute(sa.text(f"SELECT CAST(t AS text) FROM {quoted} AS t")).scalars()
    return "\n".join(found).encode()


def stored_secret(data_dir: Path, name: str, workspace_id: str | None = None) -> bytes | None:
    """A secret as the install at ``data_dir`` keeps it, read beneath the server: the server's ``name`` (in
    ``secrets.json`` on SQLite), or the workspace's ``<folder>/<name>`` (its secret folder's file); on PostgreSQL
    the sealed row, opened with the data directory's key."""
    url = pg_mode.database_url_for(data_dir)
    if url is None:
        if workspace_id is None:
            path = DataDir(data_dir).secrets_file
            value = json.loads(path.read_text()).get(name) if path.exists() else None
            return None if value is None else str(value).encode()
        folder, _, leaf = name.partition("/")
        file = DataDir(data_dir).workspace_dir(workspace_id) / folder / f"{leaf}.json"
        return json.dumps(json.loads(file.read_text()), sort_keys=True).encode() if file.exists() else None
    engine = sa.create_engine(postgresql_url(url))
    try:
        return SealedSecrets(engine, data_dir / KEY_FILE, "the test's database").get(workspace_id or "", name)
    finally:
        engine.dispose()


def share_secret_key(first: Path, *others: Path) -> None:
    """The installation's key made in the data directory ``first`` and copied to ``others`` (as an operator copies
    it to each host serving one PostgreSQL database: ``hangar.core.secretkey``)."""
    key = create_key(first / KEY_FILE)
    for data in others:
        data.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_private_atomic(data / KEY_FILE, key.text())
