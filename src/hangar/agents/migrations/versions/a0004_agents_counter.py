"""The agents change counter (see hangar.core.stamps): an agent changed by any process is read fresh.

Revision ID: a0004
"""

from alembic import op

from hangar.core.stamps import bump_triggers_sql, drop_triggers_sql

revision = "a0004"
down_revision = "a0003"
branch_labels = None
depends_on = None

GUARDED = [("agents", "agents", None)]


def upgrade() -> None:
    for table, counter, columns in GUARDED:
        for statement in bump_triggers_sql(table, counter, update_columns=columns):
            op.execute(statement)


def downgrade() -> None:
    for table, counter, _columns in GUARDED:
        for statement in drop_triggers_sql(table, counter):
            op.execute(statement)
