"""Requests we sent and assertions we accepted, remembered just long enough to refuse replays.

``PendingRequests`` holds every AuthnRequest id we issued with what the login started with (relay, client
origin, the flow it continues, the client's state to echo in the hand-off). ``take`` removes it, so an
``InResponseTo`` is honoured once; entries expire after ``ttl``.
``SeenAssertions`` remembers accepted assertion ids until the assertion itself expires, so the same signed
assertion posted twice (an unsolicited one in particular, which has no request to use up) is refused.

``SeenAssertions.use_up`` does both at the end of a verification in one write transaction: the request is taken and the
assertion remembered under one hold of the write lock (the checks before it only read, ``peek`` and ``seen``,
and take no lock).

Both live in the server database (``sso_saml_pending``, ``sso_saml_seen``; see ``hangar.sso.state``), so a
sign-in started before a restart completes after it and a restart forgets no used assertion. Both are
bounded so that a flood of ``/saml/login`` requests cannot grow them without limit: expired rows go on every
insert, and past the capacity the oldest go first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hangar.core.clock import Clock
from hangar.core.write_conn import WriteConnection
from hangar.sso.state import StateDb, cap_oldest, parse_dt, purge_expired

DEFAULT_TTL = timedelta(minutes=10)
MAX_PENDING = 10_000
MAX_SEEN = 100_000


@dataclass(frozen=True)
class PendingRequest:
    id: str
    relay: str | None
    client_origin: str | None
    created_at: datetime
    expires_at: datetime
    continuation: str | None = None
    client_state: str | None = None


_COLUMNS = "id, relay, client_origin, created_at, expires_at, continuation, client_state"
# An id issued again (ids are random: only a retry could) replaces its row.
_SQL_UPSERT = (
    f"INSERT INTO sso_saml_pending ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS.split(", ")[1:])
)


def _request(row: tuple[Any, ...]) -> PendingRequest:
    return PendingRequest(row[0], row[1], row[2], parse_dt(row[3]), parse_dt(row[4]), row[5], row[6])


class PendingRequests:
    def __init__(self, clock: Clock, db: StateDb, *, ttl: timedelta = DEFAULT_TTL, capacity: int = MAX_PENDING) -> None:
        self._clock = clock
        self._db = db
        self._ttl = ttl
        self._capacity = capacity

    def add(
        self,
        request_id: str,
        *,
        relay: str | None = None,
        client_origin: str | None = None,
        continuation: str | None = None,
        client_state: str | None = None,
    ) -> PendingRequest:
        now = self._clock.now()
        item = PendingRequest(request_id, relay, client_origin, now, now + self._ttl, continuation, client_state)

        def insert(conn: WriteConnection) -> None:
            purge_expired(conn, "sso_saml_pending", "expires_at", now)
            conn.execute(
                _SQL_UPSERT,
                (request_id, relay, client_origin, conn.dt(now), conn.dt(item.expires_at), continuation, client_state),
            )
            cap_oldest(conn, "sso_saml_pending", "id", "created_at", self._capacity)

        self._db.run(insert)
        return item

    def peek(self, request_id: str) -> PendingRequest | None:
        """The live pending request, without using it up."""
        now = self._clock.now()

        def select(conn: WriteConnection) -> PendingRequest | None:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM sso_saml_pending WHERE id = ? AND expires_at > ?",
                (request_id, conn.dt(now)),
            ).fetchone()
            return None if row is None else _request(row)

        return self._db.read(select)

    def take(self, request_id: str) -> PendingRequest | None:
        """Use up the pending request: the first caller gets it, every later one gets None."""
        return self._db.run(self.take_in, request_id, self._clock.now())

    @staticmethod
    def take_in(conn: WriteConnection, request_id: str, now: datetime) -> PendingRequest | None:
        """``take`` inside the caller's write transaction."""
        row = conn.execute(f"DELETE FROM sso_saml_pending WHERE id = ? RETURNING {_COLUMNS}", (request_id,)).fetchone()
        item = None if row is None else _request(row)
        if item is None or item.expires_at <= now:
            return None
        return item

    def __len__(self) -> int:
        return int(self._db.read(lambda conn: conn.execute("SELECT count(*) FROM sso_saml_pending").fetchone()[0]))


class SeenAssertions:
    def __init__(self, clock: Clock, db: StateDb, *, capacity: int = MAX_SEEN) -> None:
        self._clock = clock
        self._db = db
        self._capacity = capacity

    def seen(self, key: str) -> bool:
        now = self._clock.now()

        def select(conn: WriteConnection) -> bool:
            row = conn.execute(
                "SELECT 1 FROM sso_saml_seen WHERE key = ? AND until > ?", (key, conn.dt(now))
            ).fetchone()
            return row is not None

        return self._db.read(select)

    def remember(self, key: str, until: datetime) -> bool:
        """Record ``key`` until ``until``; False when it was already recorded (a replay)."""
        return self._db.run(self.remember_in, key, until, self._clock.now())

    def remember_in(self, conn: WriteConnection, key: str, until: datetime, now: datetime) -> bool:
        """``remember`` inside the caller's write transaction."""
        # One statement: a new key is inserted, an expired one replaced, a live one left alone (rowcount 0).
        cur = conn.execute(
            "INSERT INTO sso_saml_seen (key, until, accepted_at) VALUES (?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET until = excluded.until, accepted_at = excluded.accepted_at "
            "WHERE sso_saml_seen.until <= ?",
            (key, conn.dt(until), conn.dt(now), conn.dt(now)),
        )
        if cur.rowcount == 0:
            return False
        # Expired entries go at every insert (a range of the index on ``until``), so the table holds the live ones
        # only and counting it stays cheap; kept until the cap, they made every sign-in count up to the cap's rows.
        # Past the cap even so (a flood within one validity window), the oldest accepted go.
        purge_expired(conn, "sso_saml_seen", "until", now)
        cap_oldest(conn, "sso_saml_seen", "key", "accepted_at", self._capacity)
        return True

    def use_up(
        self, pending: PendingRequests, request_id: str | None, key: str, until: datetime
    ) -> tuple[PendingRequest | None, bool]:
        """The end of a verification, in one write transaction (``pending`` is kept in the same database): take
        the request ``request_id`` answers (when it answers one), then, only when it was there to take, remember
        the assertion ``key`` until ``until``. Answers the request taken (None: none was live) and whether the
        assertion is new (False: a replay, or not remembered because the request was gone). What was done commits
        either way: a request is used up even when its answer turns out to be a replay, as ``take`` then
        ``remember`` would leave it."""
        now = self._clock.now()

        def both(conn: WriteConnection) -> tuple[PendingRequest | None, bool]:
            request = None
            if request_id is not None:
                request = pending.take_in(conn, request_id, now)
                if request is None:
                    return None, False
            return request, self.remember_in(conn, key, until, now)

        return self._db.run(both)
