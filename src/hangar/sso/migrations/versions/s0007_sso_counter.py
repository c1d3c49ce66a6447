"""The SSO connection change counter (see hangar.core.stamps): every process sees a saved connection at once.

Revision ID: s0007
"""

from alembic import op

from hangar.core.stamps import bump_triggers_sql, drop_triggers_sql

revision = "s0007"
down_revision = "s0006"
branch_labels = None
depends_on = None

GUARDED = [("sso_connections", "sso", None)]


def upgrade() -> None:
    for table, counter, columns in GUARDED:
        for statement in bump_triggers_sql(table, counter, update_columns=columns):
            op.execute(statement)


def downgrade() -> None:
    for table, counter, _columns in GUARDED:
        for statement in drop_triggers_sql(table, counter):
            op.execute(statement)
