"""SQLAlchemy tables, all in one place. Migrations own the schema; these mirror it, indexes
included (their migrations say why each exists), so autogenerate proposes no change."""

import uuid
from datetime import datetime
from typing import Any

import numpy as np
from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Embedding(Vector):
    """pgvector's column type, its values sent as float32 text ('%.9g' gives each float32 back
    exactly): a 384-dimension vector formats in 0.09 ms instead of 0.32, and is 5,200
    characters for the server to parse instead of 8,100."""

    cache_ok = True

    def bind_processor(self, dialect: Any) -> Any:
        fallback = super().bind_processor(dialect)

        def process(value: Any) -> Any:
            if isinstance(value, np.ndarray | list | tuple):
                return "[" + ",".join(["%.9g" % number for number in np.asarray(value, dtype=np.float32).tolist()]) + "]"
            return fallback(value)

        return process


MEMORY_TYPES = ("working", "episodic", "semantic")
MEMORY_STATUSES = ("active", "superseded", "uncertain", "archived", "deleted", "invalidated")
RELATION_TYPES = ("supersedes", "refines", "coexists", "related")
REVISION_TRIGGERS = ("same_key", "strong", "weak", "periodic", "manual")
REVISION_DECISIONS = ("CONFLICT", "REFINE", "COEXIST", "UNRELATED", "DUPLICATE", "INVALIDATE")
REVISION_STATUSES = ("applied", "pending", "dismissed", "rolled_back", "logged")
LESSON_ATTRIBUTIONS = ("param_error", "tool_limit", "planning_flaw", "external_env", "unverified")
LESSON_PATH_TYPES = ("verified", "falsified", "tentative")
LESSON_STATUSES = ("observing", "active", "deprecated")

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(value) for value in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _created_at() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


class Memory(Base):
    __tablename__ = "memories"
    __table_args__ = (
        CheckConstraint(one_of("memory_type", MEMORY_TYPES), name="memory_type"),
        CheckConstraint(one_of("status", MEMORY_STATUSES), name="status"),
        CheckConstraint("confidence BETWEEN 0 AND 1", name="confidence"),
        CheckConstraint("importance BETWEEN 0 AND 1", name="importance"),
        Index("ix_memories_namespace_key", "namespace", "key", postgresql_ops={"key": "text_pattern_ops"}),
        Index("ix_memories_namespace_created_at", "namespace", text("created_at DESC")),
        Index("ix_memories_namespace_content_hash", "namespace", "content_hash"),
        Index(
            "ix_memories_embedding",
            "embedding",
            postgresql_using="ivfflat",
            postgresql_ops={"embedding": "vector_cosine_ops"},
            postgresql_with={"lists": 1},
        ),
        Index("ix_memories_lexemes", "lexemes", postgresql_using="gin"),
        Index("ix_memories_content_trgm", "content", postgresql_using="gin", postgresql_ops={"content": "gin_trgm_ops"}),
        Index(
            "ix_memories_key_terms",
            text("hindsight_key_terms(namespace, key)"),
            postgresql_using="gin",
            postgresql_where=text("key IS NOT NULL"),
        ),
        Index(
            "ix_memories_session_order",
            "namespace",
            "session_id",
            "created_at",
            postgresql_where=text("session_id IS NOT NULL"),
        ),
        Index(
            "ix_memories_namespace_speaker",
            "namespace",
            text("(source ->> 'speaker')"),
            postgresql_where=text("(source ->> 'speaker') IS NOT NULL"),
        ),
        Index("ix_memories_embedding_model", "embedding_model"),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()"))
    namespace: Mapped[str] = mapped_column(Text, nullable=False)
    key: Mapped[str | None] = mapped_column(Text)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    # sha256 of the normalised content: exact-duplicate lookups without scanning text.
    content_hash: Mapped[str] = mapped_column(Text, nullable=False)
    query_hint: Mapped[str | None] = mapped_column(Text)
    memory_type: Mapped[str] = mapped_column(Text, nullable=False, server_default="semantic")
    # Deferred: similarity is computed in SQL, so Python rarely needs the vector or the lexemes.
    # No dimension here: it is the deployment's (HINDSIGHT_EMBEDDING_DIM), given to the column at
    # migration time (app/maintenance/dimension.py).
    embedding: Mapped[Any] = mapped_column(Embedding(), nullable=True, deferred=True)
    embedding_model: Mapped[str | None] = mapped_column(Text)
    embedding_dim: Mapped[int | None] = mapped_column(Integer)
    lexemes: Mapped[Any] = mapped_column(TSVECTOR, nullable=True, deferred=True)
    confidence: Mapped[float] = mapped_column(Float, nullable=False, server_default="1.0")
    importance: Mapped[float] = mapped_column(Float, nullable=False, server_default="0.5")
    status: Mapped[str] = mapped_column(Text, nullable=False, server_default="active")
    version: Mapped[int] = mapped_column(Integer, nullable=False, server_default="1")
    supersedes: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), ForeignKey("memories.id", ondelete="SET NULL"))
    superseded_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), ForeignKey("memories.id", ondelete="SET NULL"))
    session_id: Mapped[str | None] = mapped_column(Text)
    source: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False, server_default=text("'{}'::jsonb"))
    ttl_seconds: Mapped[int | None] = mapped_column(Integer)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    access_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    last_accessed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _created_at()
    updated_at: Mapped[datetime] = _created_at()
    revised_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # "This was never right": why, and since when (status `invalidated`).
    invalidated_reason: Mapped[str | None] = mapped_column(Text)
    invalidated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb"))

    # Optimistic locking: every ORM update checks and bumps `version`.
    __mapper_args__ = {"version_id_col": version}


class MemoryVersion(Base):
    """One row per change of a memory; `snapshot` holds every mutable field, so rollback is exact."""

    __tablename__ = "memory_versions"
    __table_args__ = (
        UniqueConstraint("memory_id", "version", name="uq_memory_versions_memory_id_version"),
        Index("ix_memory_versions_memory_id_created_at", "memory_id", "created_at"),
        Index("ix_memory_versions_changed_by", "changed_by"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    memory_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), ForeignKey("memories.id", ondelete="CASCADE"), nullable=False)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    status: Mapped[str] = mapped_column(Text, nullable=False)
    changed_by: Mapped[str] = mapped_column(Text, nullable=False)
    snapshot: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    created_at: Mapped[datetime] = _created_at()


class MemoryChunk(Base):
    """The vectors of a long memory's later windows (app/embeddings/chunking.py): the model sees
    a text's first `embedding_max_chars`, so a memory longer than that also has a row per further
    window here, and the vector route scores it by its best window. Derived data: rewritten with
    the memory's vector, gone with the memory (cascade). `namespace` and `embedding_model` are
    copied so the chunk index scan filters without a join."""

    __tablename__ = "memory_chunks"
    __table_args__ = (
        Index(
            "ix_memory_chunks_embedding",
            "embedding",
            postgresql_using="ivfflat",
            postgresql_ops={"embedding": "vector_cosine_ops"},
            postgresql_with={"lists": 1},
        ),
    )

    memory_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True
    )
    ordinal: Mapped[int] = mapped_column(Integer, primary_key=True)  # 1 = the window after the memory's own
    namespace: Mapped[str] = mapped_column(Text, nullable=False)
    embedding: Mapped[Any] = mapped_column(Embedding(), nullable=False)
    embedding_model: Mapped[str] = mapped_column(Text, nullable=False)


class MemoryRelation(Base):
    __tablename__ = "memory_relations"
    __table_args__ = (
        CheckConstraint(one_of("type", RELATION_TYPES), name="type"),
        UniqueConstraint("from_memory_id", "to_memory_id", "type", name="uq_memory_relations_edge"),
        Index("ix_memory_relations_to_memory_id", "to_memory_id"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    from_memory_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), ForeignKey("memories.id", ondelete="CASCADE"), nullable=False)
    to_memory_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), ForeignKey("memories.id", ondelete="CASCADE"), nullable=False)
    type: Mapped[str] = mapped_column(Text, nullable=False)
    revision_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), ForeignKey("revision_log.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = _created_at()


class RevisionLog(Base):
    __tablename__ = "revision_log"
    __table_args__ = (
        CheckConstraint(one_of("trigger", REVISION_TRIGGERS), name="trigger"),
        CheckConstraint(one_of("decision", REVISION_DECISIONS), name="decision"),
        CheckConstraint(one_of("status", REVISION_STATUSES), name="status"),
        Index("ix_revision_log_namespace_created_at", "namespace", text("created_at DESC")),
        Index("ix_revision_log_status", "status"),
        Index("ix_revision_log_new_memory_id", "new_memory_id"),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()"))
    namespace: Mapped[str] = mapped_column(Text, nullable=False)
    trigger: Mapped[str] = mapped_column(Text, nullable=False)
    new_memory_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), ForeignKey("memories.id", ondelete="SET NULL"))
    old_memory_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), ForeignKey("memories.id", ondelete="SET NULL"))
    merged_memory_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), ForeignKey("memories.id", ondelete="SET NULL"))
    similarity: Mapped[float | None] = mapped_column(Float)
    decision: Mapped[str] = mapped_column(Text, nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
    confidence: Mapped[float] = mapped_column(Float, nullable=False)
    merged_content: Mapped[str | None] = mapped_column(Text)
    judge: Mapped[str] = mapped_column(Text, nullable=False)
    llm_prompt: Mapped[str | None] = mapped_column(Text)
    llm_response: Mapped[str | None] = mapped_column(Text)
    new_content: Mapped[str | None] = mapped_column(Text)
    note: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = _created_at()
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Reflection(Base):
    __tablename__ = "reflections"
    __table_args__ = (
        CheckConstraint(one_of("attribution", LESSON_ATTRIBUTIONS), name="attribution"),
        CheckConstraint(one_of("path_type", LESSON_PATH_TYPES), name="path_type"),
        CheckConstraint(one_of("status", LESSON_STATUSES), name="status"),
        CheckConstraint("confidence BETWEEN 0 AND 1", name="confidence"),
        Index("ix_reflections_namespace_scope", "namespace", "scope"),
        Index("ix_reflections_namespace_lesson_hash", "namespace", "scope", "lesson_hash"),
        Index("ix_reflections_namespace_status", "namespace", "status"),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()"))
    namespace: Mapped[str] = mapped_column(Text, nullable=False)
    situation: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
    action: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
    outcome: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
    attribution: Mapped[str] = mapped_column(Text, nullable=False)
    lesson: Mapped[str] = mapped_column(Text, nullable=False)
    lesson_hash: Mapped[str] = mapped_column(Text, nullable=False)
    scope: Mapped[str] = mapped_column(Text, nullable=False)
    path_type: Mapped[str] = mapped_column(Text, nullable=False, server_default="tentative")
    agent_role: Mapped[str | None] = mapped_column(Text)
    domain: Mapped[str | None] = mapped_column(Text)
    confidence: Mapped[float] = mapped_column(Float, nullable=False)
    occurrences: Mapped[int] = mapped_column(Integer, nullable=False, server_default="1")
    status: Mapped[str] = mapped_column(Text, nullable=False, server_default="observing")
    conflict_flag: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default="false")
    hit_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    useful_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    hit_penalty: Mapped[float] = mapped_column(Float, nullable=False, server_default="0")
    embedding: Mapped[Any] = mapped_column(Embedding(), nullable=True)  # dimension as on memories
    embedding_model: Mapped[str | None] = mapped_column(Text)
    source_task_id: Mapped[str | None] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb"))
    occurred_at: Mapped[datetime] = _created_at()
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _created_at()
    updated_at: Mapped[datetime] = _created_at()
    # When decay last stepped the confidence down: one step per idle period, not per call.
    decayed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


EVENT_TYPES = ("llm_request", "tool_call", "plan_step", "observation", "user_feedback", "task_end")


class EventPayload(Base):
    """The full text of a payload too long for its event row, addressed by its sha256."""

    __tablename__ = "event_payloads"

    hash: Mapped[str] = mapped_column(Text, primary_key=True)
    full_text: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = _created_at()


class TaskEvent(Base):
    """One event of a task's stream, in order (`seq`), so the task can be replayed."""

    __tablename__ = "task_events"
    __table_args__ = (
        CheckConstraint(one_of("type", EVENT_TYPES), name="type"),
        UniqueConstraint("namespace", "task_id", "seq", name="uq_task_events_task_seq"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    namespace: Mapped[str] = mapped_column(Text, nullable=False)
    task_id: Mapped[str] = mapped_column(Text, nullable=False)
    seq: Mapped[int] = mapped_column(Integer, nullable=False)
    session_id: Mapped[str | None] = mapped_column(Text)
    agent_role: Mapped[str | None] = mapped_column(Text)
    domain: Mapped[str | None] = mapped_column(Text)
    task_type: Mapped[str | None] = mapped_column(Text)
    type: Mapped[str] = mapped_column(Text, nullable=False)
    # Long strings clipped; the whole payload is then in event_payloads under this hash.
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    payload_hash: Mapped[str | None] = mapped_column(Text, ForeignKey("event_payloads.hash"))
    at: Mapped[datetime] = _created_at()
    created_at: Mapped[datetime] = _created_at()


class TaskReview(Base):
    """One review of an ended task: why it ran, who reviewed, and the LLM exchange if any."""

    __tablename__ = "task_reviews"
    __table_args__ = (UniqueConstraint("namespace", "task_id", name="uq_task_reviews_task"),)

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()"))
    namespace: Mapped[str] = mapped_column(Text, nullable=False)
    task_id: Mapped[str] = mapped_column(Text, nullable=False)
    triggers: Mapped[list[str]] = mapped_column(JSONB, nullable=False)
    reviewer: Mapped[str] = mapped_column(Text, nullable=False)
    lesson_ids: Mapped[list[str]] = mapped_column(JSONB, nullable=False)
    llm_prompt: Mapped[str | None] = mapped_column(Text)
    llm_response: Mapped[str | None] = mapped_column(Text)
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()


JOB_STATUSES = ("queued", "running", "succeeded", "failed")


class Job(Base):
    """Long-running work (a conversation import, ...): its state and progress live here, so
    any API process can report on it and take it over when its runner's heartbeat stops."""

    __tablename__ = "jobs"
    __table_args__ = (
        CheckConstraint(one_of("status", JOB_STATUSES), name="status"),
        # The sweep's look for jobs to take over.
        Index("ix_jobs_unfinished", "status", "heartbeat_at", postgresql_where=text("status IN ('queued', 'running')")),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()"))
    kind: Mapped[str] = mapped_column(Text, nullable=False)
    namespace: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text, nullable=False, server_default="queued")
    params: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    progress_done: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    progress_total: Mapped[int | None] = mapped_column(Integer)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    owner: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ConversationMessage(Base):
    """One message of a conversation, by its id within the session: what makes re-sending the
    same messages store nothing new, and which messages still await extraction."""

    __tablename__ = "conversation_messages"
    __table_args__ = (UniqueConstraint("namespace", "session_id", "message_id", name="uq_conversation_messages_message"),)

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    namespace: Mapped[str] = mapped_column(Text, nullable=False)
    session_id: Mapped[str] = mapped_column(Text, nullable=False)
    message_id: Mapped[str] = mapped_column(Text, nullable=False)
    content_hash: Mapped[str] = mapped_column(Text, nullable=False)
    role: Mapped[str] = mapped_column(Text, nullable=False)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    # The episodic memories holding the message (several when a long one is stored in parts).
    memory_ids: Mapped[list[str]] = mapped_column(JSONB, nullable=False, server_default=text("'[]'::jsonb"))
    extracted_by: Mapped[str | None] = mapped_column(Text)
    extracted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _created_at()


WORKING_KINDS = ("user", "agent", "tool")


class WorkingSession(Base):
    """A session's turn counter: working items decay per turn."""

    __tablename__ = "working_sessions"

    namespace: Mapped[str] = mapped_column(Text, primary_key=True)
    session_id: Mapped[str] = mapped_column(Text, primary_key=True)
    turn: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    updated_at: Mapped[datetime] = _created_at()


class WorkingItem(Base):
    """One item of a session's working memory (seed 001 3.1), with its decaying score."""

    __tablename__ = "working_items"
    __table_args__ = (
        CheckConstraint(one_of("kind", WORKING_KINDS), name="kind"),
        Index("ix_working_items_session", "namespace", "session_id"),
        Index("ix_working_items_memory_id", "memory_id"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    namespace: Mapped[str] = mapped_column(Text, nullable=False)
    session_id: Mapped[str] = mapped_column(Text, nullable=False)
    memory_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), ForeignKey("memories.id", ondelete="CASCADE"))
    message_id: Mapped[str | None] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text, nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    tokens: Mapped[int] = mapped_column(Integer, nullable=False)
    importance: Mapped[float] = mapped_column(Float, nullable=False)
    score: Mapped[float] = mapped_column(Float, nullable=False)
    turn: Mapped[int] = mapped_column(Integer, nullable=False)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    access_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    # Set when evicted; the row goes once its summary is stored (a crash in between resumes).
    evicted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _created_at()


class NamespaceState(Base):
    """What every API process must agree on about a namespace (migration 14a says why each)."""

    __tablename__ = "namespace_state"

    namespace: Mapped[str] = mapped_column(Text, primary_key=True)
    generation: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    writes_since_review: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    memories: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    updated_at: Mapped[datetime] = _created_at()


class WriteRateCount(Base):
    """Writes of one writer within one second: the rows of its one-minute window."""

    __tablename__ = "write_rate_counts"
    __table_args__ = (Index("ix_write_rate_counts_second", "second"),)

    writer: Mapped[str] = mapped_column(Text, primary_key=True)
    second: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    writes: Mapped[int] = mapped_column(Integer, nullable=False)


class WriteRateFlag(Base):
    """A burst of one writer above the threshold; `open` while the burst lasts."""

    __tablename__ = "write_rate_flags"
    __table_args__ = (Index("ix_write_rate_flags_writer", "writer", postgresql_where=text("open")),)

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    writer: Mapped[str] = mapped_column(Text, nullable=False)
    session_id: Mapped[str | None] = mapped_column(Text)
    namespace: Mapped[str] = mapped_column(Text, nullable=False)
    writes: Mapped[int] = mapped_column(Integer, nullable=False)
    first_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    last_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    open: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default="true")


class IdempotencyKey(Base):
    """The first answer to a caller's Idempotency-Key; `status` is NULL while that request runs."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (Index("ix_idempotency_keys_created_at", "created_at"),)

    caller: Mapped[str] = mapped_column(Text, primary_key=True)
    key: Mapped[str] = mapped_column(Text, primary_key=True)
    request_hash: Mapped[str] = mapped_column(Text, nullable=False)
    status: Mapped[int | None] = mapped_column(Integer)
    content_type: Mapped[str | None] = mapped_column(Text)
    body: Mapped[bytes | None] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = _created_at()


ERASURE_KINDS = ("memory", "namespace")


class Erasure(Base):
    """What a purge or a namespace erasure leaves: who asked, when, and counts; never content."""

    __tablename__ = "erasures"
    __table_args__ = (
        CheckConstraint(one_of("kind", ERASURE_KINDS), name="kind"),
        Index("ix_erasures_memory_id", "memory_id", postgresql_where=text("memory_id IS NOT NULL")),
        Index("ix_erasures_namespace_created_at", "namespace", text("created_at DESC")),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()"))
    kind: Mapped[str] = mapped_column(Text, nullable=False)
    namespace: Mapped[str] = mapped_column(Text, nullable=False)
    # No foreign key: the memory is gone.
    memory_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    requested_by: Mapped[str] = mapped_column(Text, nullable=False)
    job_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    counts: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False, server_default=text("'{}'::jsonb"))
    created_at: Mapped[datetime] = _created_at()
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
