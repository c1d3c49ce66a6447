"""Sign-in state that must survive a restart: SAML AuthnRequests we issued (``sso_saml_pending``), SAML
assertions already accepted (``sso_saml_seen``) and OIDC logins waiting for their callback
(``sso_oidc_pending``). Rows are short-lived: each pending row is used once or expires after ten minutes, a
seen row lives until its assertion expires. Times are UTC text as SQLAlchemy's SQLite ``DateTime`` writes it.

Revision ID: s0006
"""

import sqlalchemy as sa
from alembic import op

revision = "s0006"
down_revision = "s0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sso_saml_pending",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("relay", sa.String(16), nullable=True),
        sa.Column("client_origin", sa.Text, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_sso_saml_pending_created", "sso_saml_pending", ["created_at"])
    op.create_index("ix_sso_saml_pending_expires", "sso_saml_pending", ["expires_at"])
    op.create_table(
        "sso_saml_seen",
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("accepted_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_sso_saml_seen_accepted", "sso_saml_seen", ["accepted_at"])
    op.create_index("ix_sso_saml_seen_until", "sso_saml_seen", ["until"])
    op.create_table(
        "sso_oidc_pending",
        sa.Column("state", sa.String(128), primary_key=True),
        sa.Column("nonce", sa.String(128), nullable=False),
        # Needed to redeem the code (PKCE); the row goes when the callback takes it or when it expires.
        sa.Column("code_verifier", sa.String(128), nullable=False),
        sa.Column("redirect_uri", sa.Text, nullable=False),
        sa.Column("relay", sa.String(16), nullable=True),
        sa.Column("client_origin", sa.Text, nullable=True),
        sa.Column("binding_hash", sa.String(64), nullable=False),
        sa.Column("issuer", sa.Text, nullable=False),
        sa.Column("client_id", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_sso_oidc_pending_created", "sso_oidc_pending", ["created_at"])
    op.create_index("ix_sso_oidc_pending_expires", "sso_oidc_pending", ["expires_at"])


def downgrade() -> None:
    op.drop_table("sso_oidc_pending")
    op.drop_table("sso_saml_seen")
    op.drop_table("sso_saml_pending")
