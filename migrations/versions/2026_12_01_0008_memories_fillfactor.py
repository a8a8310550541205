"""Leave room on each page of memories for in-place (HOT) updates.

Every search bumps access_count and last_accessed_at on its hits. Neither column is
indexed, so PostgreSQL can rewrite those rows in place (a heap-only tuple update) and skip
all six indexes (ivfflat, two GIN, three btree), but only when the page has free space; at
the default fillfactor of 100 it rarely has. Applies to pages written from now on.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE memories SET (fillfactor = 85)")


def downgrade() -> None:
    op.execute("ALTER TABLE memories RESET (fillfactor)")
