"""Code graph: a trigram index of symbol names, so that ``code.search`` finds the names holding a query without
reading every name (see ``hangar.codegraph.trigrams``).

On SQLite an FTS5 table with the trigram tokenizer over ``code_symbols.folded`` (external content: the names are
not stored twice), kept by triggers on ``code_symbols``, so every insert and delete of a symbol (an index run's
swap, a removed repo's rows) updates it in the same transaction; an existing graph is indexed by the ``rebuild``
here. On PostgreSQL a GIN index with ``pg_trgm``'s operator class, which the planner uses for ``LIKE '%…%'`` by
itself; the extension goes into a schema of its own (``hangar_trgm``, ``hangar.core.postgresql.ensure_pg_trgm``)
that no workspace's schema owns, so dropping a workspace never drops another's index. ``pg_trgm`` ships with
PostgreSQL (contrib) and is trusted: a role that may create schemas may create it. A backup's dump holds the index,
not the extension: a restore creates it first (``hangar.backup.pg_source.restore_records``).

Revision ID: x0002
"""

from alembic import op

from hangar.codegraph.trigrams import FTS_TABLE, PG_INDEX
from hangar.core.postgresql import ensure_pg_trgm

revision = "x0002"
down_revision = "x0001"
branch_labels = None
depends_on = None

_TRIGGERS = {
    "code_symbols_trigrams_ai": (
        "AFTER INSERT",
        f"INSERT INTO {FTS_TABLE}(rowid, folded) VALUES (new.id, new.folded);",
    ),
    "code_symbols_trigrams_ad": (
        "AFTER DELETE",
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, folded) VALUES ('delete', old.id, old.folded);",
    ),
    "code_symbols_trigrams_au": (
        "AFTER UPDATE OF folded",
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, folded) VALUES ('delete', old.id, old.folded); "
        f"INSERT INTO {FTS_TABLE}(rowid, folded) VALUES (new.id, new.folded);",
    ),
}


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        # detail=none: candidates only (every one is checked against the name), at a third less space than
        # positions; columnsize=0: no per-row sizes, which nothing ranks by.
        op.execute(
            f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(folded, content='code_symbols', content_rowid='id', "
            "tokenize='trigram', detail=none, columnsize=0)"
        )
        for name, (when, body) in _TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {when} ON code_symbols BEGIN {body} END")
        op.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")  # the graph indexed before
        return
    schema, _created = ensure_pg_trgm(bind)  # the migration lock is database-wide: no other schema races it
    quoted = bind.dialect.identifier_preparer.quote_identifier(schema)
    op.execute(f"CREATE INDEX {PG_INDEX} ON code_symbols USING gin (folded {quoted}.gin_trgm_ops)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in _TRIGGERS:
            op.execute(f"DROP TRIGGER {name}")
        op.execute(f"DROP TABLE {FTS_TABLE}")
    else:
        op.execute(f"DROP INDEX {PG_INDEX}")
