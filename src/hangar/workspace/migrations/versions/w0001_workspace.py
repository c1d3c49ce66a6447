"""Workspace tables: spaces, messages, teams, tickets, repos, worktrees.

Revision ID: w0001
"""

import sqlalchemy as sa
from alembic import op

revision = "w0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "spaces",
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
    op.create_table(
        "messages",
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
        sqlite_autoincrement=True,
    )
    op.create_index("ix_messages_space_seq", "messages", ["space_id", "seq"])
    op.create_table(
        "teams",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("leader_agent_id", sa.String(36), nullable=True),
        sa.Column("dispatch_mode", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "team_members",
        sa.Column("team_id", sa.String(36), sa.ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("agent_id", sa.String(36), primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
    )
    op.create_table(
        "tickets",
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
    op.create_index("ix_tickets_parent", "tickets", ["parent_id"])
    op.create_table(
        "repos",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("source_kind", sa.String(8), nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("default_branch", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "worktrees",
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
    op.create_index("ix_worktrees_space", "worktrees", ["space_id"])
    op.create_index("ix_worktrees_ticket", "worktrees", ["ticket_id"])


def downgrade() -> None:
    op.drop_table("worktrees")
    op.drop_table("repos")
    op.drop_table("tickets")
    op.drop_table("team_members")
    op.drop_table("teams")
    op.drop_table("messages")
    op.drop_table("spaces")
