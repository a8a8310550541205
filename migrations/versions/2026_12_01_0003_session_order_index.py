"""Session order: find the turns just before and after a memory in its session.

Recall lifts the neighbours of a hit (the turn before a question often holds its answer),
so it asks, per candidate, for the nearest memories of the same (namespace, session_id)
by created_at on each side. This btree answers each side with a short index range scan.
Partial: memories written outside a session never take part.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX ix_memories_session_order ON memories (namespace, session_id, created_at) "
        "WHERE session_id IS NOT NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX ix_memories_session_order")
