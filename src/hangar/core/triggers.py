"""Triggers the migrations create, written for each dialect: SQLAlchemy and Alembic have no construct for them.

Two kinds: the change counters' bump triggers (``hangar.core.stamps``) and the refusal of edits to append-only
tables (the audit log, a rig's action log). SQLite's statements are the ones its databases were always created
with; PostgreSQL's do the same through trigger functions (a PostgreSQL trigger runs a function, never a body).
Every trigger fires once per row, as SQLite's do.
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


def _postgresql_only(dialect: str) -> None:
    if dialect != "postgresql":
        raise ValueError(f"no triggers written for the {dialect} dialect")
