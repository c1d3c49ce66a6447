"""The spaces change counter (see hangar.core.stamps): a space changed by any process is read fresh.

Revision ID: w0002
"""

from alembic import op

from hangar.core.stamps import bump_triggers_sql, drop_triggers_sql

revision = "w0002"
down_revision = "w0001"
branch_labels = None
depends_on = None

GUARDED = [("spaces", "spaces", None)]


def upgrade() -> None:
    for table, counter, columns in GUARDED:
        for statement in bump_triggers_sql(table, counter, update_columns=columns):
            op.execute(statement)


def downgrade() -> None:
    for table, counter, _columns in GUARDED:
        for statement in drop_triggers_sql(table, counter):
            op.execute(statement)
