"""The authority change counter: bumped in the same transaction as any change to who may do what, so every
process checks what it keeps in memory against it (see hangar.core.stamps). A credential's last use is not such
a change.

Revision ID: i0002
"""

from alembic import op

from hangar.core.stamps import bump_triggers_sql, drop_triggers_sql

revision = "i0002"
down_revision = "i0001"
branch_labels = None
depends_on = None

GUARDED = [
    ("users", "authority", None),
    ("workspaces", "authority", None),
    ("memberships", "authority", None),
    ("devices", "authority", ("revoked_at", "user_id", "token_hash")),
    ("server_settings", "authority", None),
]


def upgrade() -> None:
    for table, counter, columns in GUARDED:
        for statement in bump_triggers_sql(table, counter, update_columns=columns):
            op.execute(statement)


def downgrade() -> None:
    for table, counter, _columns in GUARDED:
        for statement in drop_triggers_sql(table, counter):
            op.execute(statement)
