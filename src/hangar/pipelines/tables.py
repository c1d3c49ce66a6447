"""Workspace tables owned by the pipelines part (schema in ``pipelines/migrations``).

pipeline_templates   one row per template (its JSON definition)
pipeline_triggers    what starts runs of a template: manual, a domain event type, or a cron schedule
pipeline_runs        one row per run: status, trigger, payload, state, and the template as it was at start
pipeline_step_runs   one row per step of a run: status, attempts, error, timings, suspension, progress
pipeline_waits       what a suspended step waits for (``event:<type>`` or ``task:<id>``), for lookup
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet

metadata = sa.MetaData()

templates = sa.Table(
    "pipeline_templates",
    metadata,
    sa.Column("id", sa.String(128), primary_key=True),
    sa.Column("name", sa.String(300), nullable=False),
    sa.Column("definition", sa.JSON, nullable=False),
    sa.Column("created_by", sa.String(200), nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

triggers = sa.Table(
    "pipeline_triggers",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("template_id", sa.String(128), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("event_type", sa.String(128), nullable=True),
    sa.Column("cron", sa.String(200), nullable=True),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("last_fired_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("next_fire_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("created_by", sa.String(200), nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

runs = sa.Table(
    "pipeline_runs",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("template_id", sa.String(128), nullable=False),
    sa.Column("template", sa.JSON, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("trigger_id", sa.String(36), nullable=True),
    sa.Column("trigger_kind", sa.String(16), nullable=False),
    sa.Column("trigger_key", sa.String(200), nullable=True),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("state", sa.JSON, nullable=False),
    sa.Column("dry_run", sa.Boolean, nullable=False),
    sa.Column("parent_run_id", sa.String(36), nullable=True),
    sa.Column("parent_step_id", sa.String(128), nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("created_by", sa.String(200), nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
)

step_runs = sa.Table(
    "pipeline_step_runs",
    metadata,
    sa.Column("run_id", sa.String(36), sa.ForeignKey("pipeline_runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("step_id", sa.String(128), primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("route_key", sa.String(200), nullable=True),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("not_before", sa.DateTime(timezone=True), nullable=True),
    sa.Column("suspend", sa.JSON, nullable=True),
    sa.Column("deadline", sa.DateTime(timezone=True), nullable=True),
    sa.Column("resume", sa.JSON, nullable=True),
    sa.Column("progress", sa.JSON, nullable=True),
)

waits = sa.Table(
    "pipeline_waits",
    metadata,
    sa.Column("run_id", sa.String(36), sa.ForeignKey("pipeline_runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("step_id", sa.String(128), primary_key=True),
    sa.Column("wait_key", sa.String(300), primary_key=True),
)

MIGRATIONS = MigrationSet("pipelines", "workspace", Path(__file__).parent / "migrations", tables=(metadata,))
