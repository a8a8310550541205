"""Initial schema: memories with versions, relations, the revision log and reflections.

Why these indexes:
- (namespace, key text_pattern_ops): the key-prefix route runs `key LIKE 'user:u1:%'`;
  text_pattern_ops lets a btree serve LIKE prefixes whatever the database collation.
- ivfflat (vector_cosine_ops) on the embedding: the vector route orders by cosine
  distance. It starts with lists = 1 (an empty table gives ivfflat nothing to cluster);
  the maintenance call re-tunes lists to about sqrt(rows).
- (namespace, created_at desc): the recency route and /debug/recent read the newest first.
- GIN on `lexemes`: a tsvector the app fills from its own tokenizer, which splits CJK text
  into character bigrams; the `simple` configuration alone treats a run of Chinese
  characters as one word, so 花生 would never match 用户对花生过敏.
- GIN trigram on content: fuzzy matches of names and numbers the tokenizer splits.
- (namespace, content_hash): exact-duplicate lookup on write.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: Sequence[str] | None = None
depends_on: Sequence[str] | None = None

EMBEDDING_DIM = 384


def _uuid_pk() -> sa.Column:
    return sa.Column("id", postgresql.UUID(as_uuid=True), primary_key=True, server_default=sa.text("gen_random_uuid()"))


def _timestamp(name: str, nullable: bool = False) -> sa.Column:
    if nullable:
        return sa.Column(name, sa.DateTime(timezone=True), nullable=True)
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def _memory_fk(name: str, on_delete: str = "SET NULL", nullable: bool = True) -> sa.Column:
    return sa.Column(name, postgresql.UUID(as_uuid=True), sa.ForeignKey("memories.id", ondelete=on_delete), nullable=nullable)


def _jsonb(name: str) -> sa.Column:
    return sa.Column(name, postgresql.JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False)


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")

    op.create_table(
        "memories",
        _uuid_pk(),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("key", sa.Text()),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.Text(), nullable=False),
        sa.Column("query_hint", sa.Text()),
        sa.Column("memory_type", sa.Text(), server_default="semantic", nullable=False),
        sa.Column("embedding", Vector(EMBEDDING_DIM)),
        sa.Column("embedding_model", sa.Text()),
        sa.Column("embedding_dim", sa.Integer()),
        sa.Column("lexemes", postgresql.TSVECTOR()),
        sa.Column("confidence", sa.Float(), server_default="1.0", nullable=False),
        sa.Column("importance", sa.Float(), server_default="0.5", nullable=False),
        sa.Column("status", sa.Text(), server_default="active", nullable=False),
        sa.Column("version", sa.Integer(), server_default="1", nullable=False),
        _memory_fk("supersedes"),
        _memory_fk("superseded_by"),
        sa.Column("session_id", sa.Text()),
        _jsonb("source"),
        sa.Column("ttl_seconds", sa.Integer()),
        _timestamp("expires_at", nullable=True),
        sa.Column("access_count", sa.Integer(), server_default="0", nullable=False),
        _timestamp("last_accessed_at", nullable=True),
        _timestamp("created_at"),
        _timestamp("updated_at"),
        _timestamp("revised_at", nullable=True),
        _jsonb("metadata"),
        sa.CheckConstraint("memory_type IN ('working', 'episodic', 'semantic')", name="ck_memories_memory_type"),
        sa.CheckConstraint(
            "status IN ('active', 'superseded', 'uncertain', 'archived', 'deleted')", name="ck_memories_status"
        ),
        sa.CheckConstraint("confidence BETWEEN 0 AND 1", name="ck_memories_confidence"),
        sa.CheckConstraint("importance BETWEEN 0 AND 1", name="ck_memories_importance"),
    )
    op.execute("CREATE INDEX ix_memories_namespace_key ON memories (namespace, key text_pattern_ops)")
    op.execute("CREATE INDEX ix_memories_namespace_created_at ON memories (namespace, created_at DESC)")
    op.execute("CREATE INDEX ix_memories_namespace_content_hash ON memories (namespace, content_hash)")
    op.execute(
        "CREATE INDEX ix_memories_embedding ON memories USING ivfflat (embedding vector_cosine_ops) WITH (lists = 1)"
    )
    op.execute("CREATE INDEX ix_memories_lexemes ON memories USING gin (lexemes)")
    op.execute("CREATE INDEX ix_memories_content_trgm ON memories USING gin (content gin_trgm_ops)")

    op.create_table(
        "memory_versions",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        _memory_fk("memory_id", on_delete="CASCADE", nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("changed_by", sa.Text(), nullable=False),
        sa.Column("snapshot", postgresql.JSONB(), nullable=False),
        _timestamp("created_at"),
        sa.UniqueConstraint("memory_id", "version", name="uq_memory_versions_memory_id_version"),
    )

    op.create_table(
        "revision_log",
        _uuid_pk(),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("trigger", sa.Text(), nullable=False),
        _memory_fk("new_memory_id"),
        _memory_fk("old_memory_id"),
        _memory_fk("merged_memory_id"),
        sa.Column("similarity", sa.Float()),
        sa.Column("decision", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), server_default="", nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("merged_content", sa.Text()),
        sa.Column("judge", sa.Text(), nullable=False),
        sa.Column("llm_prompt", sa.Text()),
        sa.Column("llm_response", sa.Text()),
        sa.Column("status", sa.Text(), nullable=False),
        _timestamp("created_at"),
        _timestamp("resolved_at", nullable=True),
        sa.CheckConstraint(
            "trigger IN ('same_key', 'strong', 'weak', 'periodic', 'manual')", name="ck_revision_log_trigger"
        ),
        sa.CheckConstraint(
            "decision IN ('CONFLICT', 'REFINE', 'COEXIST', 'UNRELATED', 'DUPLICATE')", name="ck_revision_log_decision"
        ),
        sa.CheckConstraint(
            "status IN ('applied', 'pending', 'dismissed', 'rolled_back', 'logged')", name="ck_revision_log_status"
        ),
    )
    op.create_index("ix_revision_log_namespace_created_at", "revision_log", ["namespace", sa.text("created_at DESC")])
    op.create_index("ix_revision_log_status", "revision_log", ["status"])

    op.create_table(
        "memory_relations",
        sa.Column("id", sa.BigInteger(), sa.Identity(), primary_key=True),
        _memory_fk("from_memory_id", on_delete="CASCADE", nullable=False),
        _memory_fk("to_memory_id", on_delete="CASCADE", nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column(
            "revision_id", postgresql.UUID(as_uuid=True), sa.ForeignKey("revision_log.id", ondelete="SET NULL")
        ),
        _timestamp("created_at"),
        sa.CheckConstraint("type IN ('supersedes', 'refines', 'coexists', 'related')", name="ck_memory_relations_type"),
        sa.UniqueConstraint("from_memory_id", "to_memory_id", "type", name="uq_memory_relations_edge"),
    )
    op.create_index("ix_memory_relations_to_memory_id", "memory_relations", ["to_memory_id"])

    op.create_table(
        "reflections",
        _uuid_pk(),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("situation", sa.Text(), server_default="", nullable=False),
        sa.Column("action", sa.Text(), server_default="", nullable=False),
        sa.Column("outcome", sa.Text(), server_default="", nullable=False),
        sa.Column("attribution", sa.Text(), nullable=False),
        sa.Column("lesson", sa.Text(), nullable=False),
        sa.Column("lesson_hash", sa.Text(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("path_type", sa.Text(), server_default="tentative", nullable=False),
        sa.Column("agent_role", sa.Text()),
        sa.Column("domain", sa.Text()),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("occurrences", sa.Integer(), server_default="1", nullable=False),
        sa.Column("status", sa.Text(), server_default="observing", nullable=False),
        sa.Column("conflict_flag", sa.Boolean(), server_default="false", nullable=False),
        sa.Column("hit_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("useful_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("hit_penalty", sa.Float(), server_default="0", nullable=False),
        sa.Column("embedding", Vector(EMBEDDING_DIM)),
        sa.Column("embedding_model", sa.Text()),
        sa.Column("source_task_id", sa.Text()),
        _jsonb("metadata"),
        _timestamp("occurred_at"),
        _timestamp("last_used_at", nullable=True),
        _timestamp("created_at"),
        _timestamp("updated_at"),
        sa.CheckConstraint(
            "attribution IN ('param_error', 'tool_limit', 'planning_flaw', 'external_env', 'unverified')",
            name="ck_reflections_attribution",
        ),
        sa.CheckConstraint("path_type IN ('verified', 'falsified', 'tentative')", name="ck_reflections_path_type"),
        sa.CheckConstraint("status IN ('observing', 'active', 'deprecated')", name="ck_reflections_status"),
        sa.CheckConstraint("confidence BETWEEN 0 AND 1", name="ck_reflections_confidence"),
    )
    op.create_index("ix_reflections_namespace_scope", "reflections", ["namespace", "scope"])
    op.create_index("ix_reflections_namespace_lesson_hash", "reflections", ["namespace", "scope", "lesson_hash"])


def downgrade() -> None:
    for table in ("reflections", "memory_relations", "revision_log", "memory_versions", "memories"):
        op.drop_table(table)
