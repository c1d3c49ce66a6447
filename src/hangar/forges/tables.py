"""The forges part's workspace tables (schema in ``forges/migrations``, revisions ``g…``): ``forge_links``, one row per
workspace repo linked to its forge repository by hand (``forge.linkRepo``); ``forge_pull_requests``, one row per
pull request of a linked repo Hangar knows (what the forge said last, and its space); ``forge_deliveries``, the
webhook deliveries received (a delivery id, and a signed body, count once). In the workspace's database, written
through its write transactions, so every server process sharing the data directory reads the current rows and two
writes made at once by two processes are both kept."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

forge_links = sa.Table(
    "forge_links",
    metadata,
    sa.Column("repo_id", sa.String(36), primary_key=True),
    sa.Column("full_name", sa.String(160), nullable=False),  # owner/name on the forge
    sa.Column("linked_at", UtcDateTime(), nullable=False),
    sa.Column("linked_by", sa.String(200), nullable=False),
)

forge_pull_requests = sa.Table(
    "forge_pull_requests",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("repo_id", sa.String(36), nullable=False),
    sa.Column("full_name", sa.String(160), nullable=False),
    sa.Column("number", sa.Integer(), nullable=False),
    sa.Column("space_id", sa.String(36), nullable=False),
    sa.Column("title", sa.Text(), nullable=False),
    sa.Column("author", sa.String(100), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),  # open, closed, merged, vanished
    sa.Column("head_sha", sa.String(64), nullable=False),
    sa.Column("facts", sa.JSON(), nullable=False),  # PullView's forge fields: branches, body, files, checks, url
    sa.Column("opened_at", UtcDateTime(), nullable=False),  # when Hangar first saw it
    sa.Column("synced_at", UtcDateTime(), nullable=False),  # when the forge last answered for it
    sa.Column("error", sa.Text(), nullable=True),  # the last sync's failure, if it failed
    sa.UniqueConstraint("repo_id", "number", name="uq_forge_pull_requests_repo_number"),
)

forge_deliveries = sa.Table(
    "forge_deliveries",
    metadata,
    sa.Column("delivery_id", sa.String(100), primary_key=True),
    sa.Column("event", sa.String(64), nullable=False),
    sa.Column("received_at", UtcDateTime(), nullable=False),
    # SHA-256 (hex) of the signed body: a body replayed under a new delivery id counts once too (null on rows
    # recorded before it was kept)
    sa.Column("body_sha256", sa.String(64), nullable=True),
    sa.Index("ix_forge_deliveries_body", "body_sha256"),
)

MIGRATIONS = MigrationSet("forges", "workspace", Path(__file__).parent / "migrations", tables=(metadata,))
