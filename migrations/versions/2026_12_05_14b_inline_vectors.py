"""Memory vectors stored in the row, not out of line.

A 384-dimension vector is 1.5 kB: with a memory's text, lexemes and metadata the row passes
PostgreSQL's 2 kB threshold, and the vector, the largest column, went to the TOAST table. Every
exact neighbour scan then fetched each vector through the TOAST index (about six buffers a row):
about 4 ms for a 1,000-memory namespace, against 1.5 ms with the vectors in the rows. With
STORAGE MAIN the other columns (a long text first) leave the row before the vector does.

Only rows written from now on are stored this way; older ones move in as they are rewritten.

Revision ID: 14b
Revises: 13a
Create Date: 2026-12-05
"""

from collections.abc import Sequence

from alembic import op

revision: str = "14b"
down_revision: str | None = "13a"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE memories ALTER COLUMN embedding SET STORAGE MAIN")


def downgrade() -> None:
    op.execute("ALTER TABLE memories ALTER COLUMN embedding SET STORAGE EXTERNAL")  # pgvector's default
