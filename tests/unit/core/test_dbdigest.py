"""The table fingerprint migrate-to-postgresql compares: one value read from SQLite and the same value read from
PostgreSQL reduce to the same text, and different values never do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hangar.core.dbdigest import canonical, fingerprint

TSTZ = "timestamp with time zone"


def test_each_engine_s_form_of_one_value_is_the_same() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    # SQLite keeps naive UTC text; PostgreSQL gives an aware datetime, in whatever zone the session has.
    assert canonical("2026-01-02 03:04:05.678901", TSTZ) == canonical(moment, TSTZ)
    assert canonical(moment.astimezone(timezone(timedelta(hours=5))), TSTZ) == canonical(moment, TSTZ)
    assert canonical("2026-01-02 03:04:05.678901", "timestamp without time zone") == canonical(
        moment.replace(tzinfo=None), "timestamp without time zone"
    )
    # JSON as written by SQLite and as jsonb's text gives it back (keys reordered, spaces added).
    assert canonical('{"b":1,"a":[true,null]}', "jsonb") == canonical('{"a": [true, null], "b": 1}', "jsonb")
    assert canonical(1, "boolean") == canonical(True, "boolean")
    assert canonical(0, "boolean") == canonical(False, "boolean")
    assert canonical(2, "double precision") == canonical(2.0, "double precision")
    assert canonical(b"\x00\xff", "bytea") == canonical(memoryview(b"\x00\xff"), "bytea")


def test_different_values_stay_different() -> None:
    assert canonical("null", "json") != canonical(None, "json")  # JSON null is not SQL NULL
    assert canonical("1", "text") != canonical(1, "integer")
    assert canonical("", "text") != canonical(None, "text")
    later = datetime(2026, 1, 2, 3, 4, 5, 678902, tzinfo=UTC)
    assert canonical("2026-01-02 03:04:05.678901", TSTZ) != canonical(later, TSTZ)
    assert canonical('{"a":1}', "json") != canonical('{"a":1.5}', "json")


def test_the_fingerprint_ignores_order_but_counts_every_row() -> None:
    kinds = ["integer", "text"]
    rows = [(1, "a"), (2, "b"), (3, "c")]
    assert fingerprint(rows, kinds) == fingerprint(list(reversed(rows)), kinds)
    assert fingerprint(rows, kinds).rows == 3
    # A row twice is not the row once (an XOR of digests would cancel it out), and a changed value shows.
    assert fingerprint([*rows, (1, "a"), (1, "a")], kinds) != fingerprint(rows, kinds)
    assert fingerprint([(1, "a"), (2, "b"), (3, "C")], kinds) != fingerprint(rows, kinds)
    assert fingerprint([], kinds).digest == "0" * 64
