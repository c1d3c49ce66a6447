"""The trigram index of symbol names (migration ``x0002``), and the candidate filter ``code.search`` adds with it.

A name holding the query holds each of its three-letter runs, so an index of every name's trigrams finds the few
names that may hold it without reading the others. The index only narrows: every name it yields is checked against
the query's own ``LIKE`` (and then ranked), so search answers exactly what a scan of every name would.

- SQLite: an FTS5 table with the trigram tokenizer over ``code_symbols.folded``, kept by triggers. ``candidates``
  asks it with ``LIKE`` (FTS5 answers a pattern holding a run of three characters that are not wildcards from the
  index, and would read its every row for any other, so such a query is not asked of it). The statement reads
  ``code_symbols`` by the rowids it yields: its repo condition is written ``+repo_id IN (…)``, SQLite's documented
  way of keeping a term from choosing an index, since without statistics the planner takes the (repo, folded)
  index for an equality on a repo and then reads every name of the repo (0.23 s on 300,000 names, against
  0.06 s from the trigram index).
- PostgreSQL: a GIN index with ``pg_trgm``'s operator class on the same column; the planner uses it for the
  query's ``LIKE '%…%'`` by itself, so nothing is added to the statement.

A query shorter than three characters has no trigram: its substrings are found by the scan as before (a name
shorter than three characters is only ever found by such a query, or as an exact name or prefix, by index).
"""

from __future__ import annotations

import re

import sqlalchemy as sa

from hangar.codegraph.tables import code_symbols

FTS_TABLE = "code_symbols_trigrams"
PG_INDEX = "ix_code_symbols_trigrams"

_RUN = re.compile(r"[^%_]{3}")  # three characters FTS5's LIKE takes literally (``%`` and ``_`` are wildcards there)


def indexable(folded_query: str) -> bool:
    """Whether the trigram index can answer a substring search for ``folded_query``."""
    return _RUN.search(folded_query) is not None


def candidates(dialect: str, folded_query: str, repo_ids: list[str]) -> sa.ColumnElement[bool] | None:
    """The condition on ``code_symbols`` for the names of ``repo_ids`` the trigram index says may hold
    ``folded_query`` (a superset of those that do), or None when the index cannot narrow (PostgreSQL, where the
    planner uses it unasked; a query without a run of three literal characters) and the repo condition is the
    caller's.

    The pattern is given to FTS5 unescaped: its ``%`` and ``_`` are then wildcards, which matches more names, never
    fewer, and the search's own escaped ``LIKE`` keeps only the names holding the query as written."""
    if dialect != "sqlite" or not indexable(folded_query):
        return None
    rows = sa.text(f"SELECT rowid FROM {FTS_TABLE} WHERE folded LIKE :pattern").bindparams(
        pattern="%" + folded_query + "%"
    )
    by_rowid = code_symbols.c.id.in_(rows.columns(sa.column("rowid", sa.Integer())))
    return sa.and_(sa.literal_column(f"+{code_symbols.name}.repo_id", sa.String()).in_(repo_ids), by_rowid)
