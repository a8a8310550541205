"""Revision details: what the new memory said, a note, and version lookups.

- revision_log.new_content: a DUPLICATE judgement keeps no new row, so the log itself
  must say what was written; it also lets a reviewer read a pending judgement at a glance.
- revision_log.note: why a judge's answer was not used (an LLM failure and the rule
  fallback), or why an action was softened (an episodic memory is never superseded).
- memory_versions (memory_id, created_at): `as_of` search reads each memory's status as
  of a time; (changed_by): rollback finds every version a revision wrote.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("revision_log", sa.Column("new_content", sa.Text()))
    op.add_column("revision_log", sa.Column("note", sa.Text()))
    op.create_index("ix_memory_versions_memory_id_created_at", "memory_versions", ["memory_id", "created_at"])
    op.create_index("ix_memory_versions_changed_by", "memory_versions", ["changed_by"])


def downgrade() -> None:
    op.drop_index("ix_memory_versions_changed_by", "memory_versions")
    op.drop_index("ix_memory_versions_memory_id_created_at", "memory_versions")
    op.drop_column("revision_log", "note")
    op.drop_column("revision_log", "new_content")
