"""Agent skills: installed skills pinned by digest, with the last scan's verdict and findings.

Revision ID: a0008
"""

import sqlalchemy as sa
from alembic import op

revision = "a0008"
down_revision = "a0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "skills",
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


def downgrade() -> None:
    op.drop_table("skills")
