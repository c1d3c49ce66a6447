"""Sealed secrets, kept in the database by installs on PostgreSQL (see ``hangar.core.sealed_tables``).

Revision ID: k0001
"""

import sqlalchemy as sa
from alembic import op

revision = "k0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sealed_secrets",
        sa.Column("scope", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(400), primary_key=True),
        sa.Column("sealed", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("sealed_secrets")
