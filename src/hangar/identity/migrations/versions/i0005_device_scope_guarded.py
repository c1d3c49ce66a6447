"""A change to a credential's reach or deadline is a change of authority: its scope columns and ``expires_at``
join the columns whose updates bump the authority counter, so a credential narrowed or whose deadline moved
(an agent's tools taken away mid-run, a worker's agent credential renewed with its claim's lease) is read afresh by
every process at its next use, not from a copy kept in memory.

Revision ID: i0005
"""

from alembic import op

from hangar.core.stamps import Guard, add_guards, drop_guards

revision = "i0005"
down_revision = "i0004"
branch_labels = None
depends_on = None

BEFORE: list[Guard] = [("devices", "authority", ("revoked_at", "user_id", "token_hash"))]
AFTER: list[Guard] = [
    (
        "devices",
        "authority",
        (
            "revoked_at",
            "user_id",
            "token_hash",
            "expires_at",
            "tools",
            "read_only",
            "workspace_id",
            "space_id",
            "agent_id",
            "client_id",
        ),
    )
]


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    drop_guards(op.execute, BEFORE, dialect=dialect)
    add_guards(op.execute, AFTER, dialect=dialect)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    drop_guards(op.execute, AFTER, dialect=dialect)
    add_guards(op.execute, BEFORE, dialect=dialect)
