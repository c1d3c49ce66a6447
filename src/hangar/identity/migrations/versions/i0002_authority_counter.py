"""The authority change counter: bumped in the same transaction as any change to who may do what, so every
process checks what it keeps in memory against it (see hangar.core.stamps). A credential's last use is not such
a change. And the event outbox: workspace events about server-database records, written with them
(see hangar.core.outbox).

Revision ID: i0002
"""

import sqlalchemy as sa
from alembic import op

from hangar.core.stamps import Guard, add_guards, drop_guards

revision = "i0002"
down_revision = "i0001"
branch_labels = None
depends_on = None

GUARDED: list[Guard] = [
    ("users", "authority", None),
    ("workspaces", "authority", None),
    ("memberships", "authority", None),
    ("devices", "authority", ("revoked_at", "user_id", "token_hash")),
    ("server_settings", "authority", None),
]


def upgrade() -> None:
    add_guards(op.execute, GUARDED, dialect=op.get_bind().dialect.name)
    op.create_table(
        "event_outbox",
        sa.Column("position", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("workspace_id", sa.String(64), nullable=False),
        sa.Column("type", sa.String(128), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("event_outbox")
    drop_guards(op.execute, GUARDED, dialect=op.get_bind().dialect.name)
