"""Tables owned by the agents part (schema in ``agents/migrations``, revisions ``a…``).

Turn events are not stored here: they are domain events, persisted by the bus in ``domain_events``.

``teams`` and ``team_members`` are created by the workspace part's revision ``w0001``, from when teams lived
there; they stay in that chain so that existing workspace databases keep their migration history. Moving them
to a revision here would have to create them only where they do not exist yet, for no gain.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet

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
    # Who configured the model endpoint decides where its turns may go (hangar.agents.endpoints).
    sa.Column("endpoint_by_owner", sa.Boolean, nullable=False, server_default=sa.false()),
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
    # The space's folder is the run's to read only (``readOnlyWorktree``): mounted read-only, no changing op offered.
    sa.Column("read_only", sa.Boolean, nullable=False, server_default=sa.false()),
)

teams = sa.Table(
    "teams",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("leader_agent_id", sa.String(36), nullable=True),
    sa.Column("dispatch_mode", sa.String(16), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

team_members = sa.Table(
    "team_members",
    metadata,
    sa.Column("team_id", sa.String(36), sa.ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("agent_id", sa.String(36), primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),
)

# One per orchestrated ticket (``hangar.agents.orchestration``): the work DAG, what a person approved, the runs
# that plan and work it, the outputs of its sub-tickets and the deliverable.
orchestrations = sa.Table(
    "orchestrations",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("ticket_id", sa.String(36), nullable=False, unique=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("agent_id", sa.String(36), nullable=False),
    sa.Column("planner_agent_id", sa.String(36), nullable=False),
    sa.Column("synthesis_agent_id", sa.String(36), nullable=False),
    sa.Column("repo_ids", sa.JSON, nullable=False),
    sa.Column("dag", sa.JSON, nullable=False),
    sa.Column("approved", sa.JSON, nullable=False),
    sa.Column("outputs", sa.JSON, nullable=False),
    sa.Column("plan_run_id", sa.String(36), nullable=True),
    sa.Column("work_run_id", sa.String(36), nullable=True),
    sa.Column("space_id", sa.String(36), nullable=True),
    sa.Column("deliverable", sa.Text, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

# Installed agent skills (``hangar.agents.skills``): the exact bytes, pinned by their digest, where they came from,
# and the last scan's verdict and findings; an admin's override of a ``review`` holds for the findings it was given on.
skills = sa.Table(
    "skills",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(64), nullable=False, unique=True),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("source", sa.String(16), nullable=False),
    sa.Column("index_url", sa.Text, nullable=True),
    sa.Column("url", sa.Text, nullable=True),
    sa.Column("digest", sa.String(80), nullable=False),
    sa.Column("content", sa.LargeBinary, nullable=False),
    sa.Column("size", sa.Integer, nullable=False),
    sa.Column("instructions_bytes", sa.Integer, nullable=False),
    sa.Column("verdict", sa.String(16), nullable=False),
    sa.Column("findings", sa.JSON, nullable=False),
    sa.Column("scanned_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("override_by", sa.String(200), nullable=True),
    sa.Column("override_reason", sa.Text, nullable=True),
    sa.Column("override_findings", sa.String(80), nullable=True),
    sa.Column("installed_by", sa.String(200), nullable=False),
    sa.Column("by_owner", sa.Boolean, nullable=False),
    sa.Column("installed_at", sa.DateTime(timezone=True), nullable=False),
)

MIGRATIONS = MigrationSet("agents", "workspace", Path(__file__).parent / "migrations", tables=(metadata,))
