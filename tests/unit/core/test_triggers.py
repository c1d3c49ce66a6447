"""The triggers' SQLite statements are the ones existing databases were created with (written out here), so a
database migrated before PostgreSQL support and one migrated now hold the same triggers."""

from __future__ import annotations

import pytest

from hangar.core.triggers import append_only_sql, bump_triggers_sql, drop_triggers_sql


def test_sqlite_counter_triggers_are_unchanged() -> None:
    bump = "UPDATE change_counters SET value = value + 1 WHERE name = 'authority'"
    assert bump_triggers_sql("devices", "authority", update_columns=("revoked_at", "user_id")) == [
        "CREATE TABLE IF NOT EXISTS change_counters (name VARCHAR(64) PRIMARY KEY, value INTEGER NOT NULL)",
        "INSERT OR IGNORE INTO change_counters (name, value) VALUES ('authority', 0)",
        f"CREATE TRIGGER IF NOT EXISTS bump_authority_devices_ins AFTER INSERT ON devices BEGIN {bump}; END",
        "CREATE TRIGGER IF NOT EXISTS bump_authority_devices_upd AFTER UPDATE OF revoked_at, user_id ON devices "
        f"BEGIN {bump}; END",
        f"CREATE TRIGGER IF NOT EXISTS bump_authority_devices_del AFTER DELETE ON devices BEGIN {bump}; END",
    ]
    assert drop_triggers_sql("devices", "authority") == [
        f"DROP TRIGGER IF EXISTS bump_authority_devices_{s}" for s in ("ins", "upd", "del")
    ]


def test_sqlite_append_only_triggers_are_unchanged() -> None:
    assert append_only_sql("audit_log", dialect="sqlite") == [
        "CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log "
        "BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END",
        "CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log "
        "BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END",
    ]


def test_a_dialect_without_triggers_is_refused() -> None:
    with pytest.raises(ValueError, match="mysql"):
        bump_triggers_sql("t", "c", dialect="mysql")
    with pytest.raises(ValueError, match="mysql"):
        append_only_sql("t", dialect="mysql")
