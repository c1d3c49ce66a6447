"""The server-database table SCIM owns (schema in ``sso/migrations``)."""

from __future__ import annotations

import sqlalchemy as sa

from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

scim_users = sa.Table(
    "scim_users",
    metadata,
    sa.Column("user_id", sa.String(36), primary_key=True),
    sa.Column("user_name", sa.String(320), nullable=False),
    sa.Column("user_name_lc", sa.String(320)),
    sa.Column("external_id", sa.String(320)),
    sa.Column("resource", sa.JSON, nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("deleted_at", UtcDateTime()),
    # A small integer naming the record in ``scim_values`` (unique, assigned once at insert, never reused).
    sa.Column("seq", sa.Integer),
    # The JSON text of what only SCIM writes change (``scim.render``), rewritten with every write; NULL: render
    # from ``resource`` (records from before the column, or cleared so that they are rebuilt).
    sa.Column("rendered", sa.Text),
)

# One row per leaf value of a stored representation (see ``scim.index``); filters query it through its indexes.
scim_values = sa.Table(
    "scim_values",
    metadata,
    sa.Column("user_id", sa.String(36), nullable=False),
    sa.Column("user_seq", sa.Integer),
    sa.Column("path", sa.String(400), nullable=False),
    sa.Column("elem", sa.Integer, nullable=False),
    sa.Column("text", sa.Text),
    sa.Column("text_lc", sa.Text),
    sa.Column("num", sa.Float),
)
