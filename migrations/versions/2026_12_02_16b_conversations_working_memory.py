"""Conversations and working memory.

- conversation_messages: one row per message, unique by (namespace, session, message id):
  the unique index is what makes a re-sent message store nothing new, even when two
  requests carry it at once. `extracted_by` stays null until extraction ran for it, so an
  interrupted import resumes where it stopped.
- working_sessions / working_items: a session's working memory. Items are read and evicted
  per session, so (namespace, session_id) indexes them; the memory they copy is referenced
  with ON DELETE CASCADE, so erasing a memory erases its working copy.

Revision ID: 16b
Revises: 16a
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "16b"
down_revision: str | None = "16a"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None


def _created_at() -> sa.Column:
    return sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def upgrade() -> None:
    op.create_table(
        "conversation_messages",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("message_id", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("memory_ids", postgresql.JSONB(), nullable=False, server_default=sa.text("'[]'::jsonb")),
        sa.Column("extracted_by", sa.Text()),
        sa.Column("extracted_at", sa.DateTime(timezone=True)),
        _created_at(),
        sa.UniqueConstraint("namespace", "session_id", "message_id", name="uq_conversation_messages_message"),
    )
    op.create_table(
        "working_sessions",
        sa.Column("namespace", sa.Text(), primary_key=True),
        sa.Column("session_id", sa.Text(), primary_key=True),
        sa.Column("turn", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    )
    op.create_table(
        "working_items",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("memory_id", postgresql.UUID(as_uuid=True), sa.ForeignKey("memories.id", ondelete="CASCADE")),
        sa.Column("message_id", sa.Text()),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("importance", sa.Float(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("access_count", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("evicted_at", sa.DateTime(timezone=True)),
        _created_at(),
        sa.CheckConstraint("kind IN ('user', 'agent', 'tool')", name="ck_working_items_kind"),
    )
    op.create_index("ix_working_items_session", "working_items", ["namespace", "session_id"])
    op.create_index("ix_working_items_memory_id", "working_items", ["memory_id"])


def downgrade() -> None:
    op.drop_index("ix_working_items_memory_id", "working_items")
    op.drop_index("ix_working_items_session", "working_items")
    op.drop_table("working_items")
    op.drop_table("working_sessions")
    op.drop_table("conversation_messages")
