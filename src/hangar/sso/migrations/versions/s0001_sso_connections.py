"""Server-wide SSO connection records, one row per kind (saml, oidc); secrets are never stored here.

Revision ID: s0001
"""

import sqlalchemy as sa
from alembic import op

revision = "s0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sso_connections",
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("sso_connections")
