"""Pipelines: templates, triggers, runs, step runs, waits.

Revision ID: p0001
"""

import sqlalchemy as sa
from alembic import op

revision = "p0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pipeline_templates",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("name", sa.String(300), nullable=False),
        sa.Column("definition", sa.JSON, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "pipeline_triggers",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("template_id", sa.String(128), nullable=False, index=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("event_type", sa.String(128), nullable=True, index=True),
        sa.Column("cron", sa.String(200), nullable=True),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("last_fired_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("next_fire_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "pipeline_runs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("template_id", sa.String(128), nullable=False, index=True),
        sa.Column("template", sa.JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("trigger_id", sa.String(36), nullable=True),
        sa.Column("trigger_kind", sa.String(16), nullable=False),
        sa.Column("trigger_key", sa.String(200), nullable=True),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("state", sa.JSON, nullable=False),
        sa.Column("dry_run", sa.Boolean, nullable=False),
        sa.Column("parent_run_id", sa.String(36), nullable=True, index=True),
        sa.Column("parent_step_id", sa.String(128), nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        # One run per firing: replaying an event or a missed schedule slot never starts a second run.
        sa.UniqueConstraint("trigger_id", "trigger_key", name="uq_pipeline_runs_firing"),
    )
    op.create_table(
        "pipeline_step_runs",
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
        sa.Column("deadline", sa.DateTime(timezone=True), nullable=True, index=True),
        sa.Column("resume", sa.JSON, nullable=True),
        sa.Column("progress", sa.JSON, nullable=True),
    )
    op.create_table(
        "pipeline_waits",
        sa.Column("run_id", sa.String(36), sa.ForeignKey("pipeline_runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("step_id", sa.String(128), primary_key=True),
        sa.Column("wait_key", sa.String(300), primary_key=True, index=True),
    )


def downgrade() -> None:
    op.drop_table("pipeline_waits")
    op.drop_table("pipeline_step_runs")
    op.drop_table("pipeline_runs")
    op.drop_table("pipeline_triggers")
    op.drop_table("pipeline_templates")
