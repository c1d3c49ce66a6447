"""The guardrails change counter (see hangar.core.stamps): a policy saved by any process applies at once. And an
index on event ids, so relaying an event from the server's outbox can tell it is already here.

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
    op.create_index("ix_domain_events_id", "domain_events", ["id"])


def downgrade() -> None:
    op.drop_index("ix_domain_events_id", "domain_events")
    for table, counter, _columns in GUARDED:
        for statement in drop_triggers_sql(table, counter):
            op.execute(statement)
