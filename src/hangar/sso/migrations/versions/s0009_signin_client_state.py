"""The client's state of a pending sign-in: a random value the client that started the sign-in keeps and the
hand-off echoes (``#token=...&state=...``), so the client can tell a sign-in it asked for from someone else's
link. Short-lived like the rest of the row (see ``hangar.sso.handoff``).

Revision ID: s0009
"""

import sqlalchemy as sa
from alembic import op

revision = "s0009"
down_revision = "s0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sso_saml_pending", sa.Column("client_state", sa.String(128), nullable=True))
    op.add_column("sso_oidc_pending", sa.Column("client_state", sa.String(128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sso_oidc_pending") as batch:
        batch.drop_column("client_state")
    with op.batch_alter_table("sso_saml_pending") as batch:
        batch.drop_column("client_state")
