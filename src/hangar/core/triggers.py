"""Triggers the migrations create, written for each dialect: SQLAlchemy and Alembic have no construct for them.

Three kinds: the change counters' bump triggers (``hangar.core.stamps``), the refusal of edits to append-only
tables (the audit log, whose old rows only a retention pass deletes, and a rig's action log), and on PostgreSQL
only the domain events' order and notification
(``event_notify_sql``). SQLite's statements are the ones its databases were always created with; PostgreSQL's do
the same through trigger functions (a PostgreSQL trigger runs a function, never a body). The counters' and the
append-only triggers fire once per row, as SQLite's do; the events' once per statement.
"""

from __future__ import annotations

COUNTERS_TABLE = "change_counters"


def create_counters_sql() -> list[str]:
    """The counters table (for the migration that introduces it in a database)."""
    return [f"CREATE TABLE IF NOT EXISTS {COUNTERS_TABLE} (name VARCHAR(64) PRIMARY KEY, value INTEGER NOT NULL)"]


_EVENTS = (("INSERT", "ins"), ("UPDATE", "upd"), ("DELETE", "del"))


def bump_triggers_sql(
    table: str, counter: str, *, update_columns: tuple[str, ...] | None = None, dialect: str = "sqlite"
) -> list[str]:
    """Statements creating the triggers that bump ``counter`` when ``table`` changes, plus the counter's row.

    ``update_columns`` limits which updates count (a credential's last use is not a change of authority)."""
    bump = f"UPDATE {COUNTERS_TABLE} SET value = value + 1 WHERE name = '{counter}'"
    of = f" OF {', '.join(update_columns)}" if update_columns else ""
    if dialect == "sqlite":
        first = [f"INSERT OR IGNORE INTO {COUNTERS_TABLE} (name, value) VALUES ('{counter}', 0)"]
        create, body = "CREATE TRIGGER IF NOT EXISTS", f"BEGIN {bump}; END"
    else:
        _postgresql_only(dialect)
        function = f"bump_{counter}"
        first = [
            f"INSERT INTO {COUNTERS_TABLE} (name, value) VALUES ('{counter}', 0) ON CONFLICT (name) DO NOTHING",
            f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT "
            f"AS $$ BEGIN {bump}; RETURN NULL; END $$",
        ]
        create, body = "CREATE OR REPLACE TRIGGER", f"FOR EACH ROW EXECUTE FUNCTION {function}()"
    return [
        *create_counters_sql(),
        *first,
        *(
            f"{create} bump_{counter}_{table}_{suffix} AFTER {event}{of if event == 'UPDATE' else ''} ON {table} {body}"
            for event, suffix in _EVENTS
        ),
    ]


def drop_triggers_sql(table: str, counter: str, *, dialect: str = "sqlite") -> list[str]:
    on = "" if dialect == "sqlite" else f" ON {table}"
    return [f"DROP TRIGGER IF EXISTS bump_{counter}_{table}_{suffix}{on}" for _event, suffix in _EVENTS]


def append_only_sql(table: str, *, dialect: str) -> list[str]:
    """Statements making the database itself refuse updates and deletions of ``table``'s rows (an error whose
    message says ``<table> is append-only``)."""
    if dialect == "sqlite":
        return [
            f"CREATE TRIGGER {table}_no_{what} BEFORE {what.upper()} ON {table} "
            f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
            for what in ("update", "delete")
        ]
    _postgresql_only(dialect)
    return [
        "CREATE OR REPLACE FUNCTION refuse_append_only_change() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END $$",
        *(
            f"CREATE TRIGGER {table}_no_{what} BEFORE {what.upper()} ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION refuse_append_only_change()"
            for what in ("update", "delete")
        ),
    ]


# The mark a retention pass sets, inside its own transaction, to the highest audit row id it deletes, and puts back
# to 0 before it commits (``hangar.core.retention``): outside a pass no audit row can be deleted.
MARKS_TABLE = "retention_marks"
AUDIT_DELETABLE = "audit.deletableThrough"


def prunable_audit_sql(*, dialect: str) -> list[str]:
    """Statements replacing the audit log's refusal of deletions (``append_only_sql``) by one that lets a
    retention pass delete the rows it marked deletable in its transaction; updates stay refused, and so does every
    deletion outside a pass."""
    deletable = f"coalesce((SELECT value FROM {MARKS_TABLE} WHERE name = '{AUDIT_DELETABLE}'), 0)"
    if dialect == "sqlite":
        return [
            "DROP TRIGGER IF EXISTS audit_log_no_delete",
            f"CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log WHEN OLD.id > {deletable} "
            "BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END",
        ]
    _postgresql_only(dialect)
    return [
        "DROP TRIGGER IF EXISTS audit_log_no_delete ON audit_log",
        # The workspace's own schema, fixed when the function is made: the function reads its marks table.
        "CREATE OR REPLACE FUNCTION refuse_audit_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM "
        f"CURRENT AS $$ BEGIN IF OLD.id > {deletable} THEN RAISE EXCEPTION 'audit_log is append-only'; END IF; "
        "RETURN OLD; END $$",
        "CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION "
        "refuse_audit_delete()",
    ]


def unprunable_audit_sql(*, dialect: str) -> list[str]:
    """The refusal ``append_only_sql`` made, back in place of ``prunable_audit_sql``'s (a downgrade)."""
    if dialect == "sqlite":
        return [
            "DROP TRIGGER IF EXISTS audit_log_no_delete",
            "CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log "
            "BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END",
        ]
    _postgresql_only(dialect)
    return [
        "DROP TRIGGER IF EXISTS audit_log_no_delete ON audit_log",
        "DROP FUNCTION IF EXISTS refuse_audit_delete()",
        "CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION "
        "refuse_append_only_change()",
    ]


# The channel every process of an install LISTENs on for new domain events (NOTIFY reaches the listeners of the
# one database, so one name serves an install). The payload is ``<schema> <seq>``: the workspace's schema and the
# newest sequence number the statement wrote.
EVENTS_CHANNEL = "hangar_events"
# The first key of the per-workspace lock that puts event inserts in commit order (the second is the schema's
# hash); the two-key advisory lock space is apart from the one-key locks of ``hangar.core.db``.
EVENTS_ORDER_LOCK = 0x68616E67


def event_notify_sql(*, dialect: str) -> list[str]:
    """PostgreSQL: the triggers that make a committed domain event reach every process (SQLite: none; its
    readers poll, see ``hangar.core.events``).

    - Order: a statement inserting events first takes a transaction lock of its workspace, before its rows draw
      their sequence numbers. Numbers are then drawn in commit order, as under SQLite's write lock; without it a
      transaction that drew seq 5 could commit after one that drew 6, and a reader that had moved past 6 would
      never see 5.
    - Notification: after the statement, one NOTIFY on ``EVENTS_CHANNEL`` with the workspace's schema and the
      statement's highest seq. NOTIFY is transactional: listeners hear it when the transaction commits, and never
      for one that rolls back."""
    _postgresql_only(dialect)
    return [
        "CREATE OR REPLACE FUNCTION domain_events_in_order() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"PERFORM pg_advisory_xact_lock({EVENTS_ORDER_LOCK}, hashtext(TG_TABLE_SCHEMA)); RETURN NULL; END $$",
        "CREATE OR REPLACE TRIGGER domain_events_in_order BEFORE INSERT ON domain_events "
        "FOR EACH STATEMENT EXECUTE FUNCTION domain_events_in_order()",
        "CREATE OR REPLACE FUNCTION domain_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "DECLARE top bigint; BEGIN SELECT max(seq) INTO top FROM inserted; "
        f"IF top IS NOT NULL THEN PERFORM pg_notify('{EVENTS_CHANNEL}', TG_TABLE_SCHEMA || ' ' || top); END IF; "
        "RETURN NULL; END $$",
        "CREATE OR REPLACE TRIGGER domain_events_notify AFTER INSERT ON domain_events REFERENCING NEW TABLE AS "
        "inserted FOR EACH STATEMENT EXECUTE FUNCTION domain_events_notify()",
    ]


def drop_event_notify_sql(*, dialect: str) -> list[str]:
    _postgresql_only(dialect)
    return [
        "DROP TRIGGER IF EXISTS domain_events_notify ON domain_events",
        "DROP TRIGGER IF EXISTS domain_events_in_order ON domain_events",
        "DROP FUNCTION IF EXISTS domain_events_notify()",
        "DROP FUNCTION IF EXISTS domain_events_in_order()",
    ]


def _postgresql_only(dialect: str) -> None:
    if dialect != "postgresql":
        raise ValueError(f"no triggers written for the {dialect} dialect")
