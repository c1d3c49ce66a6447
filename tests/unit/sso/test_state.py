"""The sign-in state stores on a real server database: they survive a reopen (a restart), use-once holds
between separate connections racing from threads (as two processes would), expiry follows the injectable
clock, and the tables stay bounded."""

from __future__ import annotations

import sqlite3
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from hangar.core.clock import FakeClock
from hangar.core.sqlite_writer import SqliteRunner
from hangar.sso.handoff import LoginIntent
from hangar.sso.oidc.pending import PendingLogin, PendingLogins
from hangar.sso.saml import PendingRequests, SeenAssertions
from hangar.sso.state import BUSY_MS
from tests.unit.sso.saml.kit import NOW
from tests.unit.sso.saml.state import state_db


def _path(db: SqliteRunner) -> Path:
    return Path(db._path)


def _race(workers: list[SqliteRunner], attempt: object) -> list[object]:
    """Run ``attempt(db)`` on every connection at once (released together by a barrier); their results."""
    barrier = threading.Barrier(len(workers))
    results: list[object] = [None] * len(workers)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = attempt(workers[i])  # type: ignore[operator]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_pending_requests_and_seen_assertions_survive_a_reopen() -> None:
    clock = FakeClock(NOW)
    first = state_db()
    PendingRequests(clock, first).add("_req", relay="web-popup", client_origin="http://localhost:5173")
    assert SeenAssertions(clock, first).remember("idp\n_a1", NOW + timedelta(minutes=5))
    first.close()
    again = SqliteRunner(_path(first), busy_ms=BUSY_MS)
    taken = PendingRequests(clock, again).take("_req")
    assert taken is not None and (taken.relay, taken.client_origin) == ("web-popup", "http://localhost:5173")
    assert taken.expires_at == NOW + timedelta(minutes=10)
    seen = SeenAssertions(clock, again)
    assert seen.seen("idp\n_a1") and not seen.remember("idp\n_a1", NOW + timedelta(minutes=5))


def test_one_pending_request_taken_by_racing_connections_goes_to_exactly_one() -> None:
    clock = FakeClock(NOW)
    db = state_db()
    workers = [SqliteRunner(_path(db), busy_ms=BUSY_MS) for _ in range(6)]
    for round_ in range(20):
        PendingRequests(clock, db).add(f"_r{round_}", relay="desktop")
        got = _race(workers, lambda w, rid=f"_r{round_}": PendingRequests(clock, w).take(rid))
        assert sum(g is not None for g in got) == 1, got


def test_one_assertion_remembered_by_racing_connections_is_accepted_once() -> None:
    clock = FakeClock(NOW)
    db = state_db()
    workers = [SqliteRunner(_path(db), busy_ms=BUSY_MS) for _ in range(6)]
    for round_ in range(20):
        key, until = f"idp\n_a{round_}", NOW + timedelta(minutes=5)
        got = _race(workers, lambda w, k=key, u=until: SeenAssertions(clock, w).remember(k, u))
        assert got.count(True) == 1, got


def test_seen_assertions_are_bounded_expired_first_then_oldest() -> None:
    clock = FakeClock(NOW)
    seen = SeenAssertions(clock, state_db(), capacity=3)
    hour = NOW + timedelta(hours=1)
    assert seen.remember("old", hour)
    clock.advance(10)
    assert seen.remember("short", NOW + timedelta(seconds=15))
    clock.advance(10)
    assert seen.remember("a", hour)
    clock.advance(10)
    # Over capacity with an expired entry: the expired one goes, the oldest live one stays.
    assert seen.remember("b", hour)
    assert all(seen.seen(k) for k in ("old", "a", "b"))
    clock.advance(10)
    # Over capacity with none expired: the oldest accepted goes.
    assert seen.remember("c", hour)
    assert not seen.seen("old") and all(seen.seen(k) for k in "abc")


def test_expired_assertions_go_at_the_next_one_so_the_table_holds_the_live_ones() -> None:
    clock, db = FakeClock(NOW), state_db()
    seen = SeenAssertions(clock, db)
    for key in ("a", "b", "c"):
        assert seen.remember(key, NOW + timedelta(minutes=5))
    clock.advance(5 * 60)  # at their end: expired

    def rows() -> int:
        return int(db.read(lambda conn: conn.execute("SELECT count(*) FROM sso_saml_seen").fetchone()[0]))

    assert rows() == 3
    assert seen.remember("d", clock.now() + timedelta(minutes=5))
    assert rows() == 1 and seen.seen("d")


def _login(store: PendingLogins, nonce: str = "n") -> PendingLogin:
    return store.new(
        nonce=nonce,
        code_verifier="v" * 64,
        redirect_uri="http://127.0.0.1:1/oidc/callback",
        intent=LoginIntent(relay="web-popup", client_origin="http://localhost:5173", client_state="k" * 43),
        binding_hash="b" * 64,
        issuer="http://127.0.0.1:2",
        client_id="hangar",
    )


def test_oidc_pending_logins_round_trip_once_and_survive_a_reopen() -> None:
    clock = FakeClock(NOW)
    db = state_db()
    login = _login(PendingLogins(clock, db))
    PendingLogins(clock, db).add("s1", login)
    db.close()
    store = PendingLogins(clock, SqliteRunner(_path(db), busy_ms=BUSY_MS))
    assert store.take("s1") == login
    assert store.take("s1") is None
    assert "v" * 64 not in repr(login) and "nonce" not in repr(login)


def test_oidc_pending_logins_race_expire_and_stay_bounded() -> None:
    clock = FakeClock(NOW)
    db = state_db()
    store = PendingLogins(clock, db, capacity=3)
    store.add("raced", _login(store))
    got = _race(
        [SqliteRunner(_path(db), busy_ms=BUSY_MS) for _ in range(5)], lambda w: PendingLogins(clock, w).take("raced")
    )
    assert sum(g is not None for g in got) == 1
    for i in range(5):
        store.add(f"s{i}", _login(store))
    assert len(store) == 3 and store.take("s0") is None and store.take("s4") is not None
    stale = _login(store)
    store.add("stale", stale)
    clock.advance(601)
    # Taken rows carry their expiry for the caller to judge; an insert purges the expired ones.
    taken = store.take("stale")
    assert taken is not None and taken.expires_at <= clock.now()
    store.add("fresh", _login(store))
    assert len(store) == 1


def test_using_up_takes_the_request_and_remembers_the_assertion_once() -> None:
    clock = FakeClock(NOW)
    db = state_db()
    requests, seen = PendingRequests(clock, db), SeenAssertions(clock, db)
    requests.add("_req", relay="desktop")
    taken, fresh = seen.use_up(requests, "_req", "idp\n_a1", NOW + timedelta(minutes=5))
    assert taken is not None and taken.relay == "desktop" and fresh
    assert requests.peek("_req") is None and seen.seen("idp\n_a1")
    # The same answer again: its request is gone, and nothing more is written.
    assert seen.use_up(requests, "_req", "idp\n_a1", NOW + timedelta(minutes=5)) == (None, False)


def test_using_up_an_answer_to_a_request_that_is_gone_remembers_nothing() -> None:
    clock = FakeClock(NOW)
    db = state_db()
    requests, seen = PendingRequests(clock, db), SeenAssertions(clock, db)
    assert seen.use_up(requests, "_never", "idp\n_a1", NOW + timedelta(minutes=5)) == (None, False)
    assert not seen.seen("idp\n_a1")
    requests.add("_old")
    clock.advance(11 * 60)  # past the request's ten minutes
    assert seen.use_up(requests, "_old", "idp\n_a2", NOW + timedelta(minutes=15)) == (None, False)
    assert not seen.seen("idp\n_a2") and len(requests) == 0


def test_a_replayed_answer_still_uses_its_request_up() -> None:
    """As ``take`` then ``remember`` did: the request an already-used assertion answers is spent all the same."""
    clock = FakeClock(NOW)
    db = state_db()
    requests, seen = PendingRequests(clock, db), SeenAssertions(clock, db)
    assert seen.remember("idp\n_a1", NOW + timedelta(minutes=5))
    requests.add("_req")
    taken, fresh = seen.use_up(requests, "_req", "idp\n_a1", NOW + timedelta(minutes=5))
    assert taken is not None and not fresh
    assert requests.peek("_req") is None


def test_checks_that_only_read_never_wait_for_a_writer() -> None:
    """``seen`` and ``peek`` read outside any write transaction: while another connection holds the write lock
    they answer at once, where a write (``take``) waits for it and then gives up."""
    clock = FakeClock(NOW)
    db = state_db()
    PendingRequests(clock, db).add("_req")
    impatient = SqliteRunner(_path(db), busy_ms=50)
    holder = sqlite3.connect(_path(db), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert PendingRequests(clock, impatient).peek("_req") is not None
        assert not SeenAssertions(clock, impatient).seen("idp\n_a1")
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            PendingRequests(clock, impatient).take("_req")
    finally:
        holder.rollback()
        holder.close()
    assert PendingRequests(clock, impatient).take("_req") is not None
