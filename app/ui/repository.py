"""The viewer's own reads: overviews and listings scoped to the viewer's namespaces."""

from typing import Any
from uuid import UUID

from sqlalchemy import ColumnElement, func, or_, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.auth import EVERYTHING, Access
from app.models import Memory, Reflection, RevisionLog

LISTED = 100


def in_scope(column: Any, access: Access) -> ColumnElement[bool]:
    """The key's namespaces in SQL, as app.core.auth.in_prefix reads a prefix."""
    if EVERYTHING in access.prefixes:
        return true()
    parts = []
    for prefix in access.prefixes:
        if prefix.endswith(":"):
            parts.append(func.starts_with(column, prefix))
        else:
            parts += [column == prefix, func.starts_with(column, f"{prefix}:")]
    return or_(*parts)


async def namespace_counts(session: AsyncSession, access: Access, *, limit: int = 500) -> list[Any]:
    """(namespace, status, memory_type, count) of the visible namespaces."""
    statement = (
        select(Memory.namespace, Memory.status, Memory.memory_type, func.count())
        .where(in_scope(Memory.namespace, access))
        .group_by(Memory.namespace, Memory.status, Memory.memory_type)
        .order_by(Memory.namespace)
        .limit(limit * 12)
    )
    return list(await session.execute(statement))


async def pending_counts(session: AsyncSession, access: Access) -> dict[str, int]:
    statement = (
        select(RevisionLog.namespace, func.count())
        .where(in_scope(RevisionLog.namespace, access), RevisionLog.status == "pending")
        .group_by(RevisionLog.namespace)
    )
    return {namespace: count for namespace, count in await session.execute(statement)}


async def recent_memories(session: AsyncSession, access: Access, *, namespace: str | None, limit: int) -> list[Memory]:
    where = [in_scope(Memory.namespace, access)]
    if namespace is not None:
        where.append(Memory.namespace == namespace)
    statement = select(Memory).where(*where).order_by(Memory.updated_at.desc()).limit(limit)
    return list((await session.execute(statement)).scalars())


async def recent_revisions(
    session: AsyncSession, access: Access, *, namespace: str | None, status: str | None, limit: int
) -> list[RevisionLog]:
    where = [in_scope(RevisionLog.namespace, access)]
    if namespace is not None:
        where.append(RevisionLog.namespace == namespace)
    if status is not None:
        where.append(RevisionLog.status == status)
    statement = select(RevisionLog).where(*where).order_by(RevisionLog.created_at.desc()).limit(limit)
    return list((await session.execute(statement)).scalars())


async def filtered_memories(
    session: AsyncSession,
    *,
    namespace: str,
    status: str | None,
    memory_type: str | None,
    key_prefix: str | None,
    contains: str | None,
) -> list[Memory]:
    where = [Memory.namespace == namespace]
    if status:
        where.append(Memory.status == status)
    if memory_type:
        where.append(Memory.memory_type == memory_type)
    if key_prefix:
        where.append(func.starts_with(Memory.key, key_prefix))
    if contains:
        where.append(func.strpos(func.lower(Memory.content), contains.lower()) > 0)
    statement = select(Memory).where(*where).order_by(Memory.created_at.desc()).limit(LISTED)
    return list((await session.execute(statement)).scalars())


async def revisions_touching(session: AsyncSession, memory_id: UUID) -> list[RevisionLog]:
    statement = (
        select(RevisionLog)
        .where(
            or_(
                RevisionLog.new_memory_id == memory_id,
                RevisionLog.old_memory_id == memory_id,
                RevisionLog.merged_memory_id == memory_id,
            )
        )
        .order_by(RevisionLog.created_at)
        .limit(LISTED)
    )
    return list((await session.execute(statement)).scalars())


async def memories_by_id(session: AsyncSession, ids: set[UUID]) -> dict[UUID, Memory]:
    if not ids:
        return {}
    return {memory.id: memory for memory in (await session.execute(select(Memory).where(Memory.id.in_(ids)))).scalars()}


async def lessons(session: AsyncSession, *, namespace: str) -> list[Reflection]:
    statement = (
        select(Reflection)
        .where(Reflection.namespace == namespace)
        .order_by(Reflection.status, Reflection.confidence.desc(), Reflection.created_at.desc())
        .limit(LISTED)
    )
    return list((await session.execute(statement)).scalars())
