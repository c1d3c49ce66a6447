"""The code graph's workspace tables (schema in ``codegraph/migrations``, revisions ``x…``), in the workspace's
database on SQLite and PostgreSQL alike, written through its write transactions (so every process sharing the data
directory reads the current graph):

- ``code_index``: one row per indexed repo: the commit its graph is of, when, and its counts.
- ``code_files``: one row per file of that commit the indexer met: its blob id (what a reindex compares), its
  language, its lines, and a note when it was skipped (binary, too large, a symlink, a parse past its time).
- ``code_symbols``: definitions (name, kind, file, range, container); ``folded`` is the name in lower case, what
  prefix search scans by index, and what the trigram index of migration ``x0002`` indexes for substrings (an FTS5
  table on SQLite, a GIN index on PostgreSQL: ``hangar.codegraph.trigrams``; not declared here, as neither is a
  table of records).
- ``code_edges``: ``defines``, ``imports``, ``calls``, ``references``, ``inherits`` from a symbol (its qualified
  name, empty at file level) of a file to a target name.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

code_index = sa.Table(
    "code_index",
    metadata,
    sa.Column("repo_id", sa.String(36), primary_key=True),
    sa.Column("commit_id", sa.String(64), nullable=False),
    sa.Column("indexed_at", UtcDateTime(), nullable=False),
    sa.Column("files", sa.Integer(), nullable=False),
    sa.Column("symbols", sa.Integer(), nullable=False),
    sa.Column("edges", sa.Integer(), nullable=False),
    sa.Column("lines", sa.Integer(), nullable=False),
)

code_files = sa.Table(
    "code_files",
    metadata,
    sa.Column("repo_id", sa.String(36), primary_key=True),
    sa.Column("path", sa.String(1024), primary_key=True),
    sa.Column("blob_id", sa.String(64), nullable=False),
    sa.Column("language", sa.String(32), nullable=True),
    sa.Column("lines", sa.Integer(), nullable=False),
    sa.Column("note", sa.Text(), nullable=True),
)

code_symbols = sa.Table(
    "code_symbols",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    sa.Column("repo_id", sa.String(36), nullable=False),
    sa.Column("path", sa.String(1024), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("folded", sa.String(200), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("container", sa.Text(), nullable=False),
    sa.Column("start_line", sa.Integer(), nullable=False),
    sa.Column("start_col", sa.Integer(), nullable=False),
    sa.Column("end_line", sa.Integer(), nullable=False),
    sa.Column("end_col", sa.Integer(), nullable=False),
    sa.Index("ix_code_symbols_folded", "repo_id", "folded"),
    sa.Index("ix_code_symbols_path", "repo_id", "path"),
)

code_edges = sa.Table(
    "code_edges",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    sa.Column("repo_id", sa.String(36), nullable=False),
    sa.Column("path", sa.String(1024), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("source", sa.Text(), nullable=False),
    sa.Column("target", sa.String(200), nullable=False),
    sa.Column("line", sa.Integer(), nullable=False),
    sa.Index("ix_code_edges_target", "repo_id", "target", "kind"),
    sa.Index("ix_code_edges_source", "repo_id", "source", "kind"),
    sa.Index("ix_code_edges_path", "repo_id", "path"),
)

MIGRATIONS = MigrationSet("codegraph", "workspace", Path(__file__).parent / "migrations", tables=(metadata,))
