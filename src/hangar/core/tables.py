"""Workspace tables owned by the core (schema in ``core/migrations``)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet
from hangar.core.types import UtcDateTime

metadata = sa.MetaData()

domain_events = sa.Table(
    "domain_events",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("id", sa.String(36), nullable=False),
    sa.Column("type", sa.String(128), nullable=False),
    sa.Column("occurred_at", UtcDateTime(), nullable=False),
    sa.Column("payload", sa.JSON, nullable=False),
)

event_cursors = sa.Table(
    "event_cursors",
    metadata,
    sa.Column("consumer", sa.String(128), primary_key=True),
    sa.Column("seq", sa.Integer, nullable=False),
)

audit_log = sa.Table(
    "audit_log",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", UtcDateTime(), nullable=False),
    sa.Column("principal", sa.String(200), nullable=False),
    sa.Column("action", sa.String(128), nullable=False),
    sa.Column("target", sa.String(300), nullable=False),
    sa.Column("target_seq", sa.Integer, nullable=False),
    sa.Column("details", sa.JSON, nullable=False),
    sa.Column("door", sa.String(16), nullable=True),  # the call's door (``audit.DOOR``); null: no call
)

guardrail_settings = sa.Table(
    "guardrail_settings",
    metadata,
    sa.Column("scope", sa.String(200), primary_key=True),
    sa.Column("read_only", sa.Boolean, nullable=False),
    sa.Column("ask_first", sa.JSON, nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
)

workspace_settings = sa.Table(
    "workspace_settings",
    metadata,
    sa.Column("key", sa.String(128), primary_key=True),
    sa.Column("value", sa.JSON, nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
    sa.Column("updated_by", sa.String(200), nullable=False),
)

# Stop requests for pipeline and agent runs, on PostgreSQL (``hangar.core.leases``; SQLite installs write a
# ``.stop`` note in the run's control directory instead): who asked and when, for whoever drives the run now or
# next, on any host.
run_stop_requests = sa.Table(
    "run_stop_requests",
    metadata,
    sa.Column("kind", sa.String(32), primary_key=True),
    sa.Column("run_id", sa.String(64), primary_key=True),
    sa.Column("requested_by", sa.String(200), nullable=False),
    sa.Column("requested_at", UtcDateTime(), nullable=False),
)

# What retention passes pruned (``hangar.core.retention``): ``events.prunedThrough`` (events at or below that seq
# may be gone), ``audit.prunedThrough``, and ``audit.deletableThrough``, set only inside a pass's transaction.
retention_marks = sa.Table(
    "retention_marks",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.BigInteger, nullable=False),
)

MIGRATIONS = MigrationSet("core", "workspace", Path(__file__).parent / "migrations", tables=(metadata,))
