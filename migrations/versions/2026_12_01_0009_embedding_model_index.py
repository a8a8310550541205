"""Index embedding_model: "is any memory embedded with another model?" runs with every search.

After a change of embedding model, the vector route only sees memories re-embedded with the
current one and search says how many it skipped. Almost always the answer is "none", which
this index gives without reading the table.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None


def upgrade() -> None:
    op.execute("CREATE INDEX ix_memories_embedding_model ON memories (embedding_model)")


def downgrade() -> None:
    op.execute("DROP INDEX ix_memories_embedding_model")
