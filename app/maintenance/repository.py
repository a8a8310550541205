"""SQL of maintenance tasks."""

from collections.abc import Mapping
from datetime import datetime
from uuid import UUID

import numpy as np
from sqlalchemy import ColumnElement, Row, and_, bindparam, exists, func, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Memory, MemoryRelation, RevisionLog

VECTOR_INDEX = "ix_memories_embedding"


async def count_embedded(session: AsyncSession) -> int:
    return int(await session.scalar(select(func.count()).select_from(Memory).where(Memory.embedding.is_not(None))) or 0)


async def vector_index_lists(session: AsyncSession) -> int:
    options = await session.scalar(
        text("SELECT reloptions FROM pg_class WHERE relname = :name"), {"name": VECTOR_INDEX}
    )
    settings = dict(option.split("=", 1) for option in options or [])
    return int(settings.get("lists", 100))


async def rebuild_vector_index(session: AsyncSession, *, lists: int) -> None:
    """ivfflat clusters are fixed at build time: a new list count needs a rebuild."""
    await session.execute(text(f"ALTER INDEX {VECTOR_INDEX} SET (lists = {int(lists)})"))
    await session.execute(text(f"REINDEX INDEX {VECTOR_INDEX}"))


def _expired(now: datetime) -> ColumnElement[bool]:
    return and_(Memory.status.in_(("active", "uncertain")), Memory.expires_at.is_not(None), Memory.expires_at <= now)


def _long_superseded(before: datetime) -> ColumnElement[bool]:
    return and_(Memory.status == "superseded", Memory.updated_at < before)


def archivable(kind: str, *, now: datetime, superseded_before: datetime) -> ColumnElement[bool]:
    return _expired(now) if kind == "expired" else _long_superseded(superseded_before)


async def count_where(session: AsyncSession, condition: ColumnElement[bool]) -> int:
    return int(await session.scalar(select(func.count()).select_from(Memory).where(condition)) or 0)


async def batch_where(session: AsyncSession, condition: ColumnElement[bool], *, limit: int) -> list[Memory]:
    """Up to `limit` matching memories, locked; rows another transaction holds are skipped."""
    statement = select(Memory).where(condition).order_by(Memory.id).limit(limit).with_for_update(skip_locked=True)
    return list((await session.execute(statement)).scalars())


async def trigger_outcomes(session: AsyncSession) -> list[tuple[str, int, int]]:
    """(trigger, judgements, of which UNRELATED) per trigger kind."""
    unrelated = func.count().filter(RevisionLog.decision == "UNRELATED")
    statement = select(RevisionLog.trigger, func.count(), unrelated).group_by(RevisionLog.trigger)
    return [(trigger, int(total), int(false)) for trigger, total, false in (await session.execute(statement)).all()]


async def count_orphans(session: AsyncSession, *, idle_since: datetime) -> int:
    """Active memories nothing links to, not accessed since `idle_since` and older than it."""
    linked = select(MemoryRelation.id).where(
        or_(MemoryRelation.from_memory_id == Memory.id, MemoryRelation.to_memory_id == Memory.id)
    )
    condition = and_(
        Memory.status == "active",
        Memory.created_at < idle_since,
        or_(Memory.last_accessed_at.is_(None), Memory.last_accessed_at < idle_since),
        ~exists(linked),
    )
    return await count_where(session, condition)


async def count_other_models(session: AsyncSession, *, model: str) -> int:
    return await count_where(session, and_(Memory.embedding.is_not(None), Memory.embedding_model != model))


def other_model(model: str) -> ColumnElement[bool]:
    """Rows outside the model's vector space, those with no model recorded included."""
    return Memory.embedding_model.is_distinct_from(model)


async def batch_to_reembed(session: AsyncSession, *, model: str, limit: int) -> list[Row]:
    """Up to `limit` (id, namespace, content) of other models, locked; rows a writer holds are skipped."""
    statement = (
        select(Memory.id, Memory.namespace, Memory.content)
        .where(other_model(model))
        .order_by(Memory.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return list((await session.execute(statement)).all())


async def set_embeddings(session: AsyncSession, vectors: Mapping[UUID, np.ndarray], *, model: str) -> None:
    # The table, not the ORM entity: an ORM update would bump the optimistic-locking version.
    memories = Memory.__table__
    statement = (
        update(memories)
        .where(memories.c.id == bindparam("memory_id"))
        .values(embedding=bindparam("vector"), embedding_model=model, embedding_dim=bindparam("dim"))
    )
    await session.execute(
        statement,
        [{"memory_id": memory_id, "vector": vector, "dim": int(vector.shape[0])} for memory_id, vector in vectors.items()],
    )
