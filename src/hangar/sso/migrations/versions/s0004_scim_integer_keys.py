"""Integer keys for SCIM filtering: ``scim_users.seq`` (unique, assigned once per record) and
``scim_values.user_seq`` (the record's seq), with covering indexes, so a filter's subqueries compare and carry
small integers instead of 36-character user ids and never read a table row; and a live index that also covers
the columns filters read, so counting column matches never reads a representation.

The indexes these replace (``ix_scim_values_*`` on ``user_id`` and bare values, ``ix_scim_users_live``) are
prefixes of the new ones and are dropped; no data is removed. Existing records take their ``rowid`` as seq (on
PostgreSQL, which has none, their place in creation order).

Revision ID: s0004
"""

import sqlalchemy as sa
from alembic import op

revision = "s0004"
down_revision = "s0003"
branch_labels = None
depends_on = None

OLD_VALUE_INDEXES = {
    "ix_scim_values_text": ["path", "text_lc"],
    "ix_scim_values_exact": ["path", "text"],
    "ix_scim_values_num": ["path", "num"],
    "ix_scim_values_user": ["user_id", "path", "elem"],
}


def upgrade() -> None:
    op.add_column("scim_users", sa.Column("seq", sa.Integer, nullable=True))
    if op.get_bind().dialect.name == "sqlite":
        op.execute("UPDATE scim_users SET seq = rowid")
    else:
        # No rowid elsewhere: existing records are numbered in the order they were created.
        op.execute(
            "UPDATE scim_users SET seq = n.seq FROM (SELECT user_id, row_number() OVER "
            "(ORDER BY created_at, user_id) AS seq FROM scim_users) AS n WHERE n.user_id = scim_users.user_id"
        )
    op.create_index("ix_scim_users_seq", "scim_users", ["seq"], unique=True)
    op.add_column("scim_values", sa.Column("user_seq", sa.Integer, nullable=True))
    op.execute(
        "UPDATE scim_values SET user_seq = (SELECT seq FROM scim_users WHERE scim_users.user_id = scim_values.user_id)"
    )
    op.execute("DELETE FROM scim_values WHERE user_seq IS NULL")
    for name in OLD_VALUE_INDEXES:
        op.drop_index(name, "scim_values")
    op.create_index("ix_scim_values_seq_text", "scim_values", ["path", "text_lc", "user_seq", "elem"])
    op.create_index("ix_scim_values_seq_exact", "scim_values", ["path", "text", "user_seq", "elem"])
    op.create_index("ix_scim_values_seq_num", "scim_values", ["path", "num", "user_seq", "elem"])
    op.create_index("ix_scim_values_seq_user", "scim_values", ["user_seq", "path", "elem", "text_lc", "num", "text"])
    op.drop_index("ix_scim_users_live", "scim_users")
    op.create_index(
        "ix_scim_users_listing",
        "scim_users",
        ["deleted_at", "created_at", "user_id", "seq", "user_name_lc", "external_id", "updated_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_scim_users_listing", "scim_users")
    op.create_index("ix_scim_users_live", "scim_users", ["deleted_at", "created_at", "user_id"])
    for name in ("ix_scim_values_seq_text", "ix_scim_values_seq_exact", "ix_scim_values_seq_num"):
        op.drop_index(name, "scim_values")
    op.drop_index("ix_scim_values_seq_user", "scim_values")
    for name, columns in OLD_VALUE_INDEXES.items():
        op.create_index(name, "scim_values", columns)
    op.drop_column("scim_values", "user_seq")
    op.drop_index("ix_scim_users_seq", "scim_users")
    op.drop_column("scim_users", "seq")
