"""Short-lived sign-in state in the server database, so a restart between login and callback loses nothing.

The SAML verifier is synchronous (the stores are called between its checks), so these stores take the server
database's synchronous write path (``StateDb``: ``Databases.server_runner``, a plain SQLite connection or a pooled
PostgreSQL one, see ``hangar.core.write_conn``), one short write transaction per call that writes; a check that only
reads (``Runner.read``) takes no lock and never waits. A write may wait for another writer of the server database,
so callers run it off the event loop (``asyncio.to_thread``): the other writer may be an ``aiosqlite`` transaction
that needs the loop to finish, and blocking the loop would stall both. This process's sign-ins take their turn first
(``Databases.server_writes``), so they queue on the loop rather than in SQLite's busy handler. Using up a row is a
single ``DELETE ... RETURNING``: of two concurrent callbacks for the same request (in this process or another one on
the same database) exactly one gets the row. Times are written with ``conn.dt`` (SQLite: UTC text of a fixed shape;
PostgreSQL: ``timestamptz``), so comparing them in SQL compares the instants.
"""

from __future__ import annotations

from datetime import datetime

from hangar.core.db import Databases
from hangar.core.write_conn import Runner, WriteConnection, read_dt

# The server database's synchronous write path, as the sign-in stores use it.
StateDb = Runner

# A sign-in waits at most this long for another writer of the server database (SQLite).
BUSY_MS = 5_000


def state_db(dbs: Databases) -> StateDb:
    """The sign-in state's write path to the server database (closed with ``dbs``)."""
    return dbs.server_runner(busy_ms=BUSY_MS)


parse_dt = read_dt  # a time read back from a sign-in table, as an aware UTC datetime


# Table and column names below are this module's callers' fixed literals, never input.
def purge_expired(conn: WriteConnection, table: str, column: str, now: datetime) -> None:
    conn.execute(f"DELETE FROM {table} WHERE {column} <= ?", (conn.dt(now),))


def cap_oldest(conn: WriteConnection, table: str, key: str, order: str, capacity: int) -> None:
    """Keep at most ``capacity`` rows in ``table``, dropping the oldest by ``order`` (ties: by the key ``key``)
    first."""
    (count,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    if count > capacity:
        conn.execute(
            f"DELETE FROM {table} WHERE {key} IN (SELECT {key} FROM {table} ORDER BY {order}, {key} LIMIT ?)",
            (count - capacity,),
        )
