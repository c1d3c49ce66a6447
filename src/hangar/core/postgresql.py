"""PostgreSQL's side of the databases: the URL Hangar takes, pooled engines, and the schema of each database.

Every database Hangar keeps lives in one PostgreSQL database, a schema each (the server's ``hangar_server``, a
workspace's ``ws_<id>``): the tables of a workspace keep no workspace column, so a schema gives each its namespace
with the same migrations and the same stores, and a forgotten filter cannot leak one workspace's rows into another.
Engines of one ``Databases`` share one pool; each transaction sets its schema (``SET LOCAL search_path``).
"""

from __future__ import annotations

import hashlib
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from hangar.core.datadir import DataDir
from hangar.core.dbfailures import quiet_pool_losses, shown

# Keys of PostgreSQL advisory locks (one bigint namespace per database): the migration lock, and the write lock
# ``hangar.core.db.write_transaction`` takes (SQLite's database-wide write lock, which PostgreSQL does not have).
PG_MIGRATION_LOCK = 0x68616E6761720001
PG_WRITE_LOCK = 0x68616E6761720002
# The pool of one PostgreSQL engine: a few connections kept, more opened under load (the server's stores hold a
# connection only for one transaction).
PG_POOL_SIZE = 5
PG_MAX_OVERFLOW = 10
_PG_CONNECT_TIMEOUT_S = 10
SERVER_SCHEMA = "hangar_server"
# The schema of the ``pg_trgm`` extension the code graph's trigram index uses (one per database, so in no
# workspace's schema: dropping a workspace must not drop the others' indexes). Not in a backup's dump (the
# extension is not Hangar's to copy): a restore creates it before the dump's indexes name it.
TRIGRAM_SCHEMA = "hangar_trgm"
SCHEMA_OPTION = "hangar_schema"  # the execution option naming the schema of an engine's transactions


def postgresql_url(url: str | URL) -> URL:
    """``url`` as a psycopg 3 URL (``postgresql://`` and ``postgresql+psycopg://`` both name it); ``ValueError``
    naming what is wrong for any other database or driver."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        raise ValueError(f"not a PostgreSQL URL: {shown(parsed)}")
    if parsed.get_driver_name() not in ("psycopg", "psycopg2") and "+" in parsed.drivername:
        raise ValueError(f"unsupported PostgreSQL driver {parsed.get_driver_name()!r}: use postgresql+psycopg://")
    return parsed.set(drivername="postgresql+psycopg")


def postgresql_engine(url: str | URL) -> AsyncEngine:
    """A pooled async engine on the PostgreSQL database at ``url`` (psycopg 3). Connections are checked before
    use, so one the server closed (a restart, an idle timeout) is replaced instead of failing a request."""
    engine = create_async_engine(postgresql_url(url), **_pool_options(url))
    quiet_pool_losses(engine.sync_engine.pool)
    return engine


def postgresql_sync_engine(url: str | URL) -> Engine:
    """The same pool for synchronous callers (the write path's threads, ``hangar.core.pg_writer``)."""
    engine = create_engine(postgresql_url(url), **_pool_options(url))
    quiet_pool_losses(engine.pool)
    return engine


def _pool_options(url: str | URL) -> dict[str, Any]:
    return {
        "pool_size": PG_POOL_SIZE,
        "max_overflow": PG_MAX_OVERFLOW,
        "pool_pre_ping": True,
        "connect_args": pg_connect_args(url),
    }


def pg_connect_args(url: str | URL) -> dict[str, Any]:
    """How long a connection attempt may take (``connect_timeout`` in the URL wins): an address that drops
    packets would otherwise hold a start for the system's TCP timeout, minutes."""
    return {} if "connect_timeout" in make_url(url).query else {"connect_timeout": _PG_CONNECT_TIMEOUT_S}


def workspace_schema(workspace_id: str) -> str:
    """The PostgreSQL schema of a workspace: ``ws_<id>``, or ``wh_<digest of the id>`` for an id too long for a
    name (63 bytes); the two prefixes never meet."""
    DataDir.check_workspace_id(workspace_id)
    if len(workspace_id) <= 60:
        return f"ws_{workspace_id}"
    return "wh_" + hashlib.sha256(workspace_id.encode()).hexdigest()[:56]


def enter_schema(conn: Connection) -> None:
    """At the start of each transaction on an engine bound to a schema: make that schema the one its statements
    (and the triggers they fire) name. ``SET LOCAL`` ends with the transaction, so a pooled connection never
    carries one workspace's schema into another's transaction."""
    schema = conn.get_execution_options().get(SCHEMA_OPTION)
    if schema is None:
        return
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(f"SET LOCAL search_path TO {conn.dialect.identifier_preparer.quote_identifier(schema)}")
    finally:
        cursor.close()


def schema_engine(base: AsyncEngine, schema: str) -> AsyncEngine:
    """An engine on ``base``'s pool whose transactions run in ``schema`` (never dispose it: the pool is shared)."""
    return base.execution_options(**{SCHEMA_OPTION: schema})


def ensure_pg_trgm(conn: Connection) -> tuple[str, bool]:
    """The schema holding the ``pg_trgm`` extension in the database of ``conn``, created in ``TRIGRAM_SCHEMA``
    when the database has none (``pg_trgm`` ships with PostgreSQL and is trusted: the database's owner may
    create it); and whether it was created here. The caller holds a lock or transaction that keeps another
    process from creating it meanwhile."""
    found = conn.execute(
        sa.text(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'pg_trgm'"
        )
    ).scalar()
    if found is not None:
        return str(found), False
    conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {TRIGRAM_SCHEMA}")
    conn.exec_driver_sql(f"CREATE EXTENSION pg_trgm WITH SCHEMA {TRIGRAM_SCHEMA}")
    return TRIGRAM_SCHEMA, True
