"""The server table of sealed secrets (``hangar.core.sealed``), used by installs on PostgreSQL; SQLite installs
keep their secrets in files (``hangar.core.secrets``, ``hangar.core.secretfiles``) and leave it empty.

A row is one secret: its scope (``""`` for the server's secrets file, a workspace's id for that workspace's
secret folders), its name, and its value sealed under the installation's key with the scope and name as
associated data (``hangar.core.secretkey``)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet
from hangar.core.postgresql import SERVER_SCHEMA

metadata = sa.MetaData()

SERVER_SCOPE = ""

sealed_secrets = sa.Table(
    "sealed_secrets",
    metadata,
    sa.Column("scope", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(400), primary_key=True),
    sa.Column("sealed", sa.LargeBinary, nullable=False),
)

MIGRATIONS = MigrationSet("sealed", "server", Path(__file__).parent / "sealed_migrations", tables=(metadata,))

# The same table named with its schema, for statements on a connection not bound to the server schema.
qualified = sealed_secrets.to_metadata(sa.MetaData(), schema=SERVER_SCHEMA)


def forget_sealed(workspace_id: str) -> sa.Delete:
    """The statement removing a workspace's sealed secrets, for the transaction that drops its records."""
    return sa.delete(qualified).where(qualified.c.scope == workspace_id)
