"""Reflection events: task event streams kept for replay, task reviews, lesson decay.

- task_events: one row per event, ordered by (namespace, task_id, seq); the unique
  constraint's index also serves replay and "has this task ended" lookups.
- event_payloads: payload strings longer than the configured limit are clipped in the event
  row (which stays small enough to scan and to show an LLM); the whole payload is kept here
  under its sha256, so identical large results (the same error page, the same document) are
  stored once.
- task_reviews: one per reviewed task (unique), the judge-style log of why it was reviewed,
  by whom, and the full LLM prompt and answer.
- reflections.decayed_at: decay steps a lesson's confidence once per idle period; without a
  marker every maintenance call would step it again.
No ANN index on reflections: recall filters by namespace and scope first, leaving a handful
of lessons whose exact cosine is cheaper than an index probe.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None

EVENT_TYPES = ("llm_request", "tool_call", "plan_step", "observation", "user_feedback", "task_end")


def _created_at(name: str = "created_at") -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def upgrade() -> None:
    op.add_column("reflections", sa.Column("decayed_at", sa.DateTime(timezone=True)))
    op.create_index("ix_reflections_namespace_status", "reflections", ["namespace", "status"])

    op.create_table(
        "event_payloads",
        sa.Column("hash", sa.Text(), primary_key=True),
        sa.Column("full_text", sa.Text(), nullable=False),
        _created_at(),
    )
    op.create_table(
        "task_events",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Text()),
        sa.Column("agent_role", sa.Text()),
        sa.Column("domain", sa.Text()),
        sa.Column("task_type", sa.Text()),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("payload", postgresql.JSONB(), nullable=False),
        sa.Column("payload_hash", sa.Text(), sa.ForeignKey("event_payloads.hash")),
        _created_at("at"),
        _created_at(),
        sa.CheckConstraint(f"type IN ({', '.join(repr(kind) for kind in EVENT_TYPES)})", name="ck_task_events_type"),
        sa.UniqueConstraint("namespace", "task_id", "seq", name="uq_task_events_task_seq"),
    )
    op.create_table(
        "task_reviews",
        sa.Column("id", postgresql.UUID(as_uuid=True), primary_key=True, server_default=sa.text("gen_random_uuid()")),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("triggers", postgresql.JSONB(), nullable=False),
        sa.Column("reviewer", sa.Text(), nullable=False),
        sa.Column("lesson_ids", postgresql.JSONB(), nullable=False),
        sa.Column("llm_prompt", sa.Text()),
        sa.Column("llm_response", sa.Text()),
        sa.Column("note", sa.Text()),
        _created_at(),
        sa.UniqueConstraint("namespace", "task_id", name="uq_task_reviews_task"),
    )


def downgrade() -> None:
    op.drop_table("task_reviews")
    op.drop_table("task_events")
    op.drop_table("event_payloads")
    op.drop_index("ix_reflections_namespace_status", "reflections")
    op.drop_column("reflections", "decayed_at")
