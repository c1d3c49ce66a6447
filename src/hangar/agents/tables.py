"""Tables owned by the agents part (schema in ``agents/migrations``, revisions ``a…``).

Turn events are not stored here: they are domain events, persisted by the bus in ``domain_events``.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.db import MigrationSet

metadata = sa.MetaData()

agents = sa.Table(
    "agents",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("role", sa.String(32), nullable=False),
    sa.Column("system_prompt", sa.Text, nullable=False),
    sa.Column("adapter", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

agent_runs = sa.Table(
    "agent_runs",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("agent_id", sa.String(36), nullable=False),
    sa.Column("space_id", sa.String(36), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("outcome", sa.String(16), nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("prompt", sa.Text, nullable=False),
    sa.Column("output_schema", sa.JSON, nullable=True),
    sa.Column("output", sa.JSON, nullable=True),
    sa.Column("has_output", sa.Boolean, nullable=False),
    sa.Column("output_error", sa.Text, nullable=True),
    sa.Column("turns", sa.Integer, nullable=False),
    sa.Column("dispatched_by", sa.String(200), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("owner", sa.String(64), nullable=True),
    sa.Column("first_seq", sa.Integer, nullable=True),
)

MIGRATIONS = MigrationSet("agents", "workspace", Path(__file__).parent / "migrations", tables=(metadata,))
