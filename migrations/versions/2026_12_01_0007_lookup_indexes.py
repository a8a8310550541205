"""Indexes for lookups that run on every write or search.

- revision_log (new_memory_id): each write asks which memories its memory was already
  judged against, and a pending apply asks what else is pending for it.
- memories (namespace, source->>'speaker'): search removes the namespace's speaker names
  from the lexical query; partial, since most memories name no speaker.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None


def upgrade() -> None:
    op.execute("CREATE INDEX ix_revision_log_new_memory_id ON revision_log (new_memory_id)")
    op.execute(
        "CREATE INDEX ix_memories_namespace_speaker ON memories (namespace, (source ->> 'speaker')) "
        "WHERE (source ->> 'speaker') IS NOT NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX ix_memories_namespace_speaker")
    op.execute("DROP INDEX ix_revision_log_new_memory_id")
