"""OIDC sign-ins waiting for their callback, kept in the server database (``sso_oidc_pending``).

A row is keyed by the ``state`` sent to the provider and holds what the callback needs: the PKCE verifier
(to redeem the code; it never leaves the server and is never logged), the nonce, the redirect URI, the
client's relay, origin and state, the SHA-256 of the browser-binding cookie (never the cookie itself), and the
issuer and client id the sign-in went to. ``take`` removes the row in one ``DELETE ... RETURNING`` so each
state works once, even for two callbacks racing each other; rows expire after ``ttl`` by the injectable
clock. Expired rows go on every insert, and past the capacity the oldest go first, so a flood of
``/oidc/login`` requests cannot grow the table without limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from hangar.core.clock import Clock
from hangar.core.write_conn import WriteConnection
from hangar.sso.handoff import LoginIntent
from hangar.sso.state import StateDb, cap_oldest, parse_dt, purge_expired

PENDING_TTL_SECONDS = 600
MAX_PENDING = 10_000

_COLUMNS = (
    "nonce, code_verifier, redirect_uri, relay, client_origin, continuation, binding_hash, issuer, client_id, "
    "created_at, expires_at, client_state"
)
# A state seen again (the provider never sends one twice; a client retrying might) replaces its row.
_SQL_UPSERT = (
    f"INSERT INTO sso_oidc_pending (state, {_COLUMNS}) VALUES ({', '.join('?' * 13)}) "
    "ON CONFLICT (state) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS.split(", "))
)


@dataclass(frozen=True)
class PendingLogin:
    nonce: str
    code_verifier: str
    redirect_uri: str
    intent: LoginIntent
    binding_hash: str
    issuer: str
    client_id: str
    created_at: datetime
    expires_at: datetime

    def __repr__(self) -> str:
        # The verifier and nonce stay out of reprs (and so out of tracebacks and logs).
        return f"PendingLogin(issuer={self.issuer!r}, client_id={self.client_id!r}, expires_at={self.expires_at})"


class PendingLogins:
    def __init__(
        self,
        clock: Clock,
        db: StateDb,
        *,
        ttl: timedelta = timedelta(seconds=PENDING_TTL_SECONDS),
        capacity: int = MAX_PENDING,
    ) -> None:
        self._clock = clock
        self._db = db
        self._ttl = ttl
        self._capacity = capacity

    def new(
        self,
        *,
        nonce: str,
        code_verifier: str,
        redirect_uri: str,
        intent: LoginIntent,
        binding_hash: str,
        issuer: str,
        client_id: str,
    ) -> PendingLogin:
        """A pending login starting now (not yet stored)."""
        now = self._clock.now()
        return PendingLogin(
            nonce, code_verifier, redirect_uri, intent, binding_hash, issuer, client_id, now, now + self._ttl
        )

    def add(self, state: str, p: PendingLogin) -> None:
        def insert(conn: WriteConnection) -> None:
            purge_expired(conn, "sso_oidc_pending", "expires_at", self._clock.now())
            conn.execute(
                _SQL_UPSERT,
                (
                    state,
                    p.nonce,
                    p.code_verifier,
                    p.redirect_uri,
                    p.intent.relay,
                    p.intent.client_origin,
                    p.intent.continuation,
                    p.binding_hash,
                    p.issuer,
                    p.client_id,
                    conn.dt(p.created_at),
                    conn.dt(p.expires_at),
                    p.intent.client_state,
                ),
            )
            cap_oldest(conn, "sso_oidc_pending", "state", "created_at", self._capacity)

        self._db.run(insert)

    def take(self, state: str) -> PendingLogin | None:
        """Remove and return the row for ``state`` (expired or not); None when there is none."""

        def delete(conn: WriteConnection) -> PendingLogin | None:
            row = conn.execute(
                f"DELETE FROM sso_oidc_pending WHERE state = ? RETURNING {_COLUMNS}",
                (state,),
            ).fetchone()
            if row is None:
                return None
            (
                nonce,
                verifier,
                redirect_uri,
                relay,
                origin,
                continuation,
                binding,
                issuer,
                client_id,
                created,
                expires,
                kept_state,
            ) = row
            return PendingLogin(
                nonce,
                verifier,
                redirect_uri,
                LoginIntent.restore(relay, origin, continuation, kept_state),
                binding,
                issuer,
                client_id,
                parse_dt(created),
                parse_dt(expires),
            )

        return self._db.run(delete)

    def __len__(self) -> int:
        return int(self._db.run(lambda conn: conn.execute("SELECT count(*) FROM sso_oidc_pending").fetchone()[0]))
