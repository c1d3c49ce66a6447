"""Stop requests for pipeline and agent runs as rows (who asked, when), read by whoever drives the run on any
host; PostgreSQL installs use them (``hangar.core.leases``), SQLite ones keep their ``.stop`` notes.

Revision ID: c0006
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "c0006"
down_revision = "c0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_stop_requests",
        sa.Column("kind", sa.String(32), primary_key=True),
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("requested_by", sa.String(200), nullable=False),
        sa.Column("requested_at", UtcDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_stop_requests")
