"""Jobs: long-running work whose state every API process can read and take over.

A job row is the whole truth about the work: its parameters, status, progress and result.
The process running it writes `heartbeat_at`; the partial index on (status, heartbeat_at)
serves the sweep that looks for queued jobs nobody started and running jobs whose process
went quiet, which is a handful of rows whatever the size of the table.

Revision ID: 16a
Revises: 0009
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "16a"
down_revision: str | None = "12a"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None

JOB_STATUSES = ("queued", "running", "succeeded", "failed")


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", postgresql.UUID(as_uuid=True), primary_key=True, server_default=sa.text("gen_random_uuid()")),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text()),
        sa.Column("status", sa.Text(), nullable=False, server_default="queued"),
        sa.Column("params", postgresql.JSONB(), nullable=False),
        sa.Column("progress_done", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("progress_total", sa.Integer()),
        sa.Column("result", postgresql.JSONB()),
        sa.Column("error", sa.Text()),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("owner", sa.Text()),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True)),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.CheckConstraint(f"status IN ({', '.join(repr(s) for s in JOB_STATUSES)})", name="ck_jobs_status"),
    )
    op.create_index(
        "ix_jobs_unfinished",
        "jobs",
        ["status", "heartbeat_at"],
        postgresql_where=sa.text("status IN ('queued', 'running')"),
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_unfinished", "jobs")
    op.drop_table("jobs")
