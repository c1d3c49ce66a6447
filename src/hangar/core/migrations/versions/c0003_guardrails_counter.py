"""The guardrails change counter (see hangar.core.stamps): a policy saved by any process applies at once. And an
index on event ids, so relaying an event from the server's outbox can tell it is already here.

Revision ID: c0003
"""

from alembic import op

from hangar.core.stamps import Guard, add_guards, drop_guards

revision = "c0003"
down_revision = "c0002"
branch_labels = None
depends_on = None

GUARDED: list[Guard] = [("guardrail_settings", "guardrails", None)]


def upgrade() -> None:
    add_guards(op.execute, GUARDED, dialect=op.get_bind().dialect.name)
    op.create_index("ix_domain_events_id", "domain_events", ["id"])


def downgrade() -> None:
    op.drop_index("ix_domain_events_id", "domain_events")
    drop_guards(op.execute, GUARDED, dialect=op.get_bind().dialect.name)
