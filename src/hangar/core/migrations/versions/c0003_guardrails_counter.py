"""The guardrails change counter (see hangar.core.stamps): a policy saved by any process applies at once.

Revision ID: c0003
"""

from alembic import op

from hangar.core.stamps import bump_triggers_sql, drop_triggers_sql

revision = "c0003"
down_revision = "c0002"
branch_labels = None
depends_on = None

GUARDED = [("guardrail_settings", "guardrails", None)]


def upgrade() -> None:
    for table, counter, columns in GUARDED:
        for statement in bump_triggers_sql(table, counter, update_columns=columns):
            op.execute(statement)


def downgrade() -> None:
    for table, counter, _columns in GUARDED:
        for statement in drop_triggers_sql(table, counter):
            op.execute(statement)
