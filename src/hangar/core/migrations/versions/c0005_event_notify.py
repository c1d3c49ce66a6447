"""PostgreSQL only: domain events inserted in commit order and announced by NOTIFY when they commit, so every
server process on the database hears of them at once (``hangar.core.triggers.event_notify_sql``). SQLite
databases are unchanged: their readers poll.

Revision ID: c0005
"""

from alembic import op

from hangar.core.triggers import drop_event_notify_sql, event_notify_sql

revision = "c0005"
down_revision = "c0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        for statement in event_notify_sql(dialect=dialect):
            op.execute(statement)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        for statement in drop_event_notify_sql(dialect=dialect):
            op.execute(statement)
