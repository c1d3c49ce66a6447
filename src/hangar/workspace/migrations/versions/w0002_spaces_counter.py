"""The spaces change counter (see hangar.core.stamps): a space changed by any process is read fresh.

Revision ID: w0002
"""

from alembic import op

from hangar.core.stamps import Guard, add_guards, drop_guards

revision = "w0002"
down_revision = "w0001"
branch_labels = None
depends_on = None

GUARDED: list[Guard] = [("spaces", "spaces", None)]


def upgrade() -> None:
    add_guards(op.execute, GUARDED, dialect=op.get_bind().dialect.name)


def downgrade() -> None:
    drop_guards(op.execute, GUARDED, dialect=op.get_bind().dialect.name)
