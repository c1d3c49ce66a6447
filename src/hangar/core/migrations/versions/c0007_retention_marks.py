"""Retention: the marks of what a pass pruned (``retention_marks``), and the audit log's refusal of deletions
made to let a retention pass delete the rows it marks, and nothing else (``hangar.core.retention``).

Revision ID: c0007
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.triggers import prunable_audit_sql, unprunable_audit_sql

revision = "c0007"
down_revision = "c0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "retention_marks",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.BigInteger, nullable=False),
    )
    for statement in prunable_audit_sql(dialect=op.get_bind().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in unprunable_audit_sql(dialect=op.get_bind().dialect.name):
        op.execute(statement)
    op.drop_table("retention_marks")
