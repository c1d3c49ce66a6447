"""Code graph: indexed repos, their files, symbols and edges, in the workspace's database (see
``hangar.codegraph.tables``).

Revision ID: x0001
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "x0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "code_index",
        sa.Column("repo_id", sa.String(36), primary_key=True),
        sa.Column("commit_id", sa.String(64), nullable=False),
        sa.Column("indexed_at", UtcDateTime(), nullable=False),
        sa.Column("files", sa.Integer(), nullable=False),
        sa.Column("symbols", sa.Integer(), nullable=False),
        sa.Column("edges", sa.Integer(), nullable=False),
        sa.Column("lines", sa.Integer(), nullable=False),
    )
    op.create_table(
        "code_files",
        sa.Column("repo_id", sa.String(36), primary_key=True),
        sa.Column("path", sa.String(1024), primary_key=True),
        sa.Column("blob_id", sa.String(64), nullable=False),
        sa.Column("language", sa.String(32), nullable=True),
        sa.Column("lines", sa.Integer(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
    )
    op.create_table(
        "code_symbols",
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
    )
    op.create_index("ix_code_symbols_folded", "code_symbols", ["repo_id", "folded"])
    op.create_index("ix_code_symbols_path", "code_symbols", ["repo_id", "path"])
    op.create_table(
        "code_edges",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("repo_id", sa.String(36), nullable=False),
        sa.Column("path", sa.String(1024), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("target", sa.String(200), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
    )
    op.create_index("ix_code_edges_target", "code_edges", ["repo_id", "target", "kind"])
    op.create_index("ix_code_edges_source", "code_edges", ["repo_id", "source", "kind"])
    op.create_index("ix_code_edges_path", "code_edges", ["repo_id", "path"])


def downgrade() -> None:
    for table in ("code_edges", "code_symbols", "code_files", "code_index"):
        op.drop_table(table)
