"""Erasures: the tombstone a purged memory leaves, and the audit record of an erased namespace.

A purge deletes the memory's row (its versions, relations and working items go with it) and
erases its text everywhere else, so what stays must hold no content: the id, the namespace,
when, who asked, and how many rows each table lost. `memory_id` has no foreign key: the memory
is gone. The partial index answers "was this id purged?" (410 instead of 404) without scanning
namespace erasures; (namespace, created_at) lists a namespace's erasures newest first.

Revision ID: 17a
Revises: 14a
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "17a"
down_revision: str | None = "14a"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "erasures",
        sa.Column("id", postgresql.UUID(as_uuid=True), primary_key=True, server_default=sa.text("gen_random_uuid()")),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("memory_id", postgresql.UUID(as_uuid=True)),
        sa.Column("requested_by", sa.Text(), nullable=False),
        sa.Column("job_id", postgresql.UUID(as_uuid=True)),
        sa.Column("counts", postgresql.JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.CheckConstraint("kind IN ('memory', 'namespace')", name="ck_erasures_kind"),
    )
    op.create_index(
        "ix_erasures_memory_id", "erasures", ["memory_id"], postgresql_where=sa.text("memory_id IS NOT NULL")
    )
    op.create_index("ix_erasures_namespace_created_at", "erasures", ["namespace", sa.text("created_at DESC")])


def downgrade() -> None:
    op.drop_table("erasures")
