"""Which door a call came through (``socket``, ``mcp``), recorded with each audit row it wrote; null for work no
caller started (a trigger, a sweep, a row written before this column existed).

Revision ID: c0004
"""

import sqlalchemy as sa
from alembic import op

revision = "c0004"
down_revision = "c0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # ADD COLUMN rewrites no row, so the append-only triggers on audit_log have nothing to refuse.
    op.add_column("audit_log", sa.Column("door", sa.String(16), nullable=True))


def downgrade() -> None:
    op.drop_column("audit_log", "door")
