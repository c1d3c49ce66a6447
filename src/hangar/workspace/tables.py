"""Workspace tables owned by the workspace part (schema in ``workspace/migrations``, revisions ``w…``).

Agents live in the agents part's own tables; rows here name agents by id without a foreign key, because each
part migrates its own tables independently. The ``teams`` and ``team_members`` tables are created by this part's
revision ``w0001`` (teams began here) but belong to the agents part, which declares and uses them.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from hangar.core.migrating import MigrationSet

metadata = sa.MetaData()

spaces = sa.Table(
    "spaces",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("mode", sa.String(16), nullable=False),
    sa.Column("title", sa.String(200), nullable=False),
    sa.Column("hidden", sa.Boolean, nullable=False),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("provisioning", sa.String(16), nullable=False),
    sa.Column("provisioning_step", sa.String(32), nullable=True),
    sa.Column("provisioning_error", sa.Text, nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True),
)

messages = sa.Table(
    "messages",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("id", sa.String(36), nullable=False, unique=True),
    sa.Column("space_id", sa.String(36), sa.ForeignKey("spaces.id", ondelete="CASCADE"), nullable=False),
    sa.Column("author_kind", sa.String(16), nullable=False),
    sa.Column("author_id", sa.String(200), nullable=False),
    sa.Column("author_name", sa.String(200), nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("metadata", sa.JSON, nullable=False),
    sa.Column("run_id", sa.String(36), nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

tickets = sa.Table(
    "tickets",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("title", sa.String(300), nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("reporter", sa.String(200), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("parent_id", sa.String(36), sa.ForeignKey("tickets.id", ondelete="CASCADE"), nullable=True),
    sa.Column("space_id", sa.String(36), nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)

repos = sa.Table(
    "repos",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False, unique=True),
    sa.Column("source_kind", sa.String(8), nullable=False),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("default_branch", sa.String(200), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    # Who registered it decides where its clone and every later fetch may go (hangar.workspace.sources).
    sa.Column("registered_by_owner", sa.Boolean, nullable=False, server_default=sa.false()),
)

worktrees = sa.Table(
    "worktrees",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("repo_id", sa.String(36), sa.ForeignKey("repos.id", ondelete="CASCADE"), nullable=False),
    sa.Column("branch", sa.String(200), nullable=False),
    sa.Column("work_branch", sa.String(200), nullable=False),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("space_id", sa.String(36), nullable=True),
    sa.Column("ticket_id", sa.String(36), nullable=True),
    sa.Column("pr_key", sa.String(300), nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

MIGRATIONS = MigrationSet("workspace", "workspace", Path(__file__).parent / "migrations", tables=(metadata,))
