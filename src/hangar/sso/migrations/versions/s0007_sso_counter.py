"""The SSO connection change counter (see hangar.core.stamps): every process sees a saved connection at once.

Revision ID: s0007
"""

from alembic import op

from hangar.core.stamps import Guard, add_guards, drop_guards

revision = "s0007"
down_revision = "s0006"
branch_labels = None
depends_on = None

GUARDED: list[Guard] = [("sso_connections", "sso", None)]


def upgrade() -> None:
    add_guards(op.execute, GUARDED, dialect=op.get_bind().dialect.name)


def downgrade() -> None:
    drop_guards(op.execute, GUARDED, dialect=op.get_bind().dialect.name)
