"""Memory chunks: the vectors of a long memory's windows past the first.

The embedding model sees a text's first `embedding_max_chars`; a longer memory also gets one row
here per further window, and the vector route scores the memory by its best window. The ivfflat
index lets the route ask for the chunks nearest a query as it asks for memories; `namespace` and
`embedding_model` are copied from the memory so that scan filters without a join. Rows go with
their memory (cascade): a purge leaves no vector behind; a trigger drops them when the memory's
content changes (a revision, a rollback), so no window of an old text is found for the new one. The column takes the dimension the
memories' vectors have now (app/maintenance/dimension.py keeps the two alike afterwards).

Revision ID: 13a
Revises: 17a
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "13a"
down_revision: str | None = "17a"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None


def upgrade() -> None:
    dim = op.get_bind().scalar(
        sa.text(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'memories'::regclass "
            "AND attname = 'embedding' AND NOT attisdropped"
        )
    )
    op.create_table(
        "memory_chunks",
        sa.Column(
            "memory_id",
            postgresql.UUID(as_uuid=True),
            sa.ForeignKey("memories.id", ondelete="CASCADE", name="fk_memory_chunks_memory_id_memories"),
            nullable=False,
        ),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("embedding_model", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("memory_id", "ordinal", name="pk_memory_chunks"),
    )
    op.execute(f"ALTER TABLE memory_chunks ADD COLUMN embedding vector({int(dim)}) NOT NULL")
    op.execute(
        "CREATE INDEX ix_memory_chunks_embedding ON memory_chunks USING ivfflat (embedding vector_cosine_ops) WITH (lists = 1)"
    )

    op.execute(
        """
        CREATE FUNCTION hindsight_drop_stale_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM memory_chunks WHERE memory_id = NEW.id;
            RETURN NULL;
        END
        $$
        """
    )
    op.execute(
        "CREATE TRIGGER memories_stale_chunks AFTER UPDATE OF content ON memories FOR EACH ROW "
        "WHEN (OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION hindsight_drop_stale_chunks()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER memories_stale_chunks ON memories")
    op.execute("DROP FUNCTION hindsight_drop_stale_chunks()")
    op.drop_table("memory_chunks")
