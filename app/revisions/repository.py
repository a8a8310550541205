"""SQL of revisions: the log, relations, candidates and the versions a revision wrote. Log rows
and edges are written behind (app.memories.repository): any statement here that touches their
tables writes them first."""

import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any
from uuid import UUID

from sqlalchemy import and_, delete, exists, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.memories import repository as memories
from app.models import Memory, MemoryRelation, MemoryVersion, RevisionLog

REVISABLE_TYPES = ("semantic", "working")


async def active_with_key(
    session: AsyncSession, *, namespace: str, key: str, exclude: UUID, not_after: datetime
) -> list[Memory]:
    statement = select(Memory).where(
        Memory.namespace == namespace,
        Memory.key == key,
        Memory.status.in_(("active", "uncertain")),
        Memory.id != exclude,
        Memory.created_at <= not_after,
    )
    return list((await session.execute(statement)).scalars())


def add(session: AsyncSession, **fields: Any) -> RevisionLog:
    """A new log row, written behind (app.memories.repository) with the other rows
    of the transaction: its id and time are set here, not by the database."""
    fields.setdefault("id", uuid.uuid4())
    fields.setdefault("created_at", datetime.now(timezone.utc))
    fields.setdefault("reason", "")
    revision = RevisionLog(**fields)
    memories.hold_log(session, revision)
    return revision


async def get(session: AsyncSession, revision_id: UUID, *, for_update: bool = False) -> RevisionLog | None:
    statement = select(RevisionLog).where(RevisionLog.id == revision_id)
    if for_update:
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalar_one_or_none()


async def listing(
    session: AsyncSession, *, namespace: str | None, status: str | None, limit: int
) -> list[RevisionLog]:
    statement = select(RevisionLog).order_by(RevisionLog.created_at.desc()).limit(limit)
    if namespace is not None:
        statement = statement.where(RevisionLog.namespace == namespace)
    if status is not None:
        statement = statement.where(RevisionLog.status == status)
    return list((await session.execute(statement)).scalars())


async def pending_for(session: AsyncSession, memory_id: UUID, *, exclude: UUID) -> int:
    statement = select(func.count()).select_from(RevisionLog).where(
        RevisionLog.new_memory_id == memory_id, RevisionLog.status == "pending", RevisionLog.id != exclude
    )
    return int(await session.scalar(statement) or 0)


async def judged_against(session: AsyncSession, memory_ids: Sequence[UUID]) -> dict[UUID, set[UUID]]:
    """For each memory, the older memories it has already been judged against (one statement)."""
    statement = select(RevisionLog.new_memory_id, RevisionLog.old_memory_id).where(
        RevisionLog.new_memory_id.in_(memory_ids), RevisionLog.old_memory_id.is_not(None)
    )
    judged: dict[UUID, set[UUID]] = {memory_id: set() for memory_id in memory_ids}
    for new_id, old_id in await session.execute(statement):
        judged[new_id].add(old_id)
    return judged


async def unlink_revision(session: AsyncSession, revision_id: UUID) -> None:
    await session.execute(delete(MemoryRelation).where(MemoryRelation.revision_id == revision_id))


async def versions_written_by(session: AsyncSession, tag: str) -> list[MemoryVersion]:
    statement = select(MemoryVersion).where(MemoryVersion.changed_by == tag).order_by(MemoryVersion.id)
    return list((await session.execute(statement)).scalars())


async def version_before(session: AsyncSession, memory_id: UUID, version: int) -> MemoryVersion | None:
    statement = (
        select(MemoryVersion)
        .where(MemoryVersion.memory_id == memory_id, MemoryVersion.version < version)
        .order_by(MemoryVersion.version.desc())
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def recent_revisable(
    session: AsyncSession, *, namespace: str, since: datetime | None, limit: int
) -> list[Memory]:
    statement = (
        select(Memory)
        .where(Memory.namespace == namespace, Memory.status == "active", Memory.memory_type.in_(REVISABLE_TYPES))
        .order_by(Memory.created_at.desc())
        .limit(limit)
    )
    if since is not None:
        statement = statement.where(Memory.created_at >= since)
    return list((await session.execute(statement)).scalars())


async def replaced_by(session: AsyncSession, memory_id: UUID) -> list[Memory]:
    """Memories this one superseded as their update or merge (not restatements folded into
    it), locked for the change."""
    folded = exists().where(
        RevisionLog.decision == "DUPLICATE",
        RevisionLog.status == "applied",
        or_(
            and_(RevisionLog.new_memory_id == Memory.id, RevisionLog.old_memory_id == memory_id),
            and_(RevisionLog.new_memory_id == memory_id, RevisionLog.old_memory_id == Memory.id),
        ),
    )
    statement = (
        select(Memory)
        .where(Memory.superseded_by == memory_id, Memory.status == "superseded", ~folded)
        .order_by(Memory.created_at)
        .with_for_update()
    )
    return list((await session.execute(statement)).scalars())
