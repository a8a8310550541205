"""Every SQL statement about working memory (sessions' turn counters and items)."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import WorkingItem, WorkingSession


def _of(namespace: str, session_id: str):
    return (WorkingItem.namespace == namespace) & (WorkingItem.session_id == session_id)


async def lock_session(session: AsyncSession, namespace: str, session_id: str) -> int:
    """Lock the session's counter row (created at turn 0) until the transaction ends; its turn."""
    await session.execute(
        insert(WorkingSession).values(namespace=namespace, session_id=session_id).on_conflict_do_nothing()
    )
    statement = (
        select(WorkingSession.turn)
        .where(WorkingSession.namespace == namespace, WorkingSession.session_id == session_id)
        .with_for_update()
    )
    return int((await session.execute(statement)).scalar_one())


async def set_turn(session: AsyncSession, namespace: str, session_id: str, turn: int) -> None:
    await session.execute(
        update(WorkingSession)
        .where(WorkingSession.namespace == namespace, WorkingSession.session_id == session_id)
        .values(turn=turn, updated_at=func.now())
    )


async def decay(session: AsyncSession, namespace: str, session_id: str, *, factor: float) -> None:
    """Every item still in working memory loses importance by `factor`."""
    await session.execute(
        update(WorkingItem)
        .where(_of(namespace, session_id), WorkingItem.evicted_at.is_(None))
        .values(score=WorkingItem.score * factor)
    )


async def add(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        await session.execute(insert(WorkingItem).values(list(rows)))


async def drop_expired(session: AsyncSession, namespace: str, session_id: str, *, before: datetime) -> int:
    """Items said before `before` leave working memory (their messages stay in long-term memory)."""
    statement = delete(WorkingItem).where(
        _of(namespace, session_id), WorkingItem.evicted_at.is_(None), WorkingItem.at < before
    )
    return (await session.execute(statement)).rowcount


async def active(
    session: AsyncSession, namespace: str, session_id: str, *, since: datetime | None = None
) -> list[WorkingItem]:
    """The session's items in working memory, most important first (then newest)."""
    conditions = [_of(namespace, session_id), WorkingItem.evicted_at.is_(None)]
    if since is not None:
        conditions.append(WorkingItem.at >= since)
    statement = select(WorkingItem).where(*conditions).order_by(WorkingItem.score.desc(), WorkingItem.id.desc())
    return list((await session.execute(statement)).scalars())


async def evict(session: AsyncSession, item_ids: Sequence[int], *, at: datetime) -> None:
    if item_ids:
        await session.execute(update(WorkingItem).where(WorkingItem.id.in_(item_ids)).values(evicted_at=at))


async def evicted(session: AsyncSession, namespace: str, session_id: str) -> list[WorkingItem]:
    """Evicted items not yet compressed, in the order they were said."""
    statement = (
        select(WorkingItem)
        .where(_of(namespace, session_id), WorkingItem.evicted_at.is_not(None))
        .order_by(WorkingItem.evicted_at, WorkingItem.at, WorkingItem.id)
    )
    return list((await session.execute(statement)).scalars())


async def remove(session: AsyncSession, item_ids: Sequence[int]) -> int:
    """Delete items whose summary is stored; how many were still there (another process may have
    compressed them first)."""
    if not item_ids:
        return 0
    return (await session.execute(delete(WorkingItem).where(WorkingItem.id.in_(item_ids)))).rowcount


async def touch(session: AsyncSession, item_ids: Sequence[int], *, boost: float) -> None:
    """Items used in a context: importance up by `boost` (capped at 1), counted."""
    if item_ids:
        await session.execute(
            update(WorkingItem)
            .where(WorkingItem.id.in_(item_ids))
            .values(score=func.least(1.0, WorkingItem.score + boost), access_count=WorkingItem.access_count + 1)
        )
