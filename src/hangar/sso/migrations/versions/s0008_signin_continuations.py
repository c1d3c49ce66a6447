"""Sign-ins that continue a flow of this server (the OAuth authorization server's sign-in page) instead of
handing a credential to a client: the pending SAML and OIDC logins remember which flow they continue
(``continuation``), and a verified login leaves a one-time hand-off (``sso_handoffs``: its SHA-256, the user,
the continuation, two minutes of life) for that flow to take. See ``hangar.sso.continuation``.

Revision ID: s0008
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.types import UtcDateTime

revision = "s0008"
down_revision = "s0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sso_saml_pending", sa.Column("continuation", sa.String(128), nullable=True))
    op.add_column("sso_oidc_pending", sa.Column("continuation", sa.String(128), nullable=True))
    op.create_table(
        "sso_handoffs",
        sa.Column("code_hash", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("continuation", sa.String(128), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_sso_handoffs_expires", "sso_handoffs", ["expires_at"])


def downgrade() -> None:
    op.drop_table("sso_handoffs")
    with op.batch_alter_table("sso_oidc_pending") as batch:
        batch.drop_column("continuation")
    with op.batch_alter_table("sso_saml_pending") as batch:
        batch.drop_column("continuation")
