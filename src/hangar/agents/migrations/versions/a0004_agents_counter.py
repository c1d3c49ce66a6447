"""The agents change counter (see hangar.core.stamps): an agent changed by any process is read fresh.

Revision ID: a0004
"""

from alembic import op

from hangar.core.stamps import Guard, add_guards, drop_guards

revision = "a0004"
down_revision = "a0003"
branch_labels = None
depends_on = None

GUARDED: list[Guard] = [("agents", "agents", None)]


def upgrade() -> None:
    add_guards(op.execute, GUARDED, dialect=op.get_bind().dialect.name)


def downgrade() -> None:
    drop_guards(op.execute, GUARDED, dialect=op.get_bind().dialect.name)
