"""Workspace core tables: domain events, consumer cursors, the audit log.

Revision ID: c0001
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.triggers import append_only_sql

revision = "c0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "domain_events",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(36), nullable=False, unique=True),
        sa.Column("type", sa.String(128), nullable=False, index=True),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "event_cursors",
        sa.Column("consumer", sa.String(128), primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
    )
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("principal", sa.String(200), nullable=False),
        sa.Column("action", sa.String(128), nullable=False),
        sa.Column("target", sa.String(300), nullable=False),
        sa.Column("target_seq", sa.Integer, nullable=False),
        sa.Column("details", sa.JSON, nullable=False),
        sa.UniqueConstraint("target", "target_seq", name="uq_audit_target_seq"),
        sqlite_autoincrement=True,
    )
    # Append-only by construction, not by convention: the database itself refuses edits.
    for statement in append_only_sql("audit_log", dialect=op.get_bind().dialect.name):
        op.execute(statement)
    op.create_table(
        "guardrail_settings",
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("read_only", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("ask_first", sa.JSON, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("guardrail_settings")
    op.drop_table("audit_log")
    op.drop_table("event_cursors")
    op.drop_table("domain_events")
