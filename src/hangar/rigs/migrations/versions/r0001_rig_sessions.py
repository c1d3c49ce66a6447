"""Rigs: the rig records (``rig_sessions``) and the append-only action log (``rig_action_log``).

Revision ID: r0001
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.triggers import append_only_sql

revision = "r0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rig_sessions",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("space_id", sa.String(64), nullable=False, index=True),
        sa.Column("surface", sa.String(16), nullable=False),
        sa.Column("engine", sa.String(16), nullable=True),
        sa.Column("backend", sa.String(32), nullable=False),
        sa.Column("phase", sa.String(16), nullable=False, index=True),
        sa.Column("status_detail", sa.String(500), nullable=False, server_default=""),
        sa.Column("close_reason", sa.String(32), nullable=True),
        sa.Column("controller", sa.String(64), nullable=True),
        sa.Column("opened_by", sa.String(200), nullable=False),
        sa.Column("memory_mb", sa.Integer, nullable=False),
        sa.Column("vcpus", sa.Integer, nullable=False),
        sa.Column("display", sa.String(16), nullable=True),
        sa.Column("resident_mb", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "rig_action_log",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("rig_id", sa.String(36), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("principal", sa.String(200), nullable=False),
        sa.Column("verb", sa.String(64), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("details", sa.JSON, nullable=False),
        sa.UniqueConstraint("rig_id", "seq", name="uq_rig_action_seq"),
        sqlite_autoincrement=True,
    )
    # The log is evidence: the database itself refuses edits and deletions.
    for statement in append_only_sql("rig_action_log", dialect=op.get_bind().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    op.drop_table("rig_action_log")
    op.drop_table("rig_sessions")
