"""Every SQL statement of export and import."""

from collections.abc import AsyncIterator, Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, func, literal_column, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import (
    EventPayload,
    Memory,
    MemoryRelation,
    MemoryVersion,
    Reflection,
    RevisionLog,
    TaskEvent,
    TaskReview,
)

PAGE = 500


async def memory_pages(session: AsyncSession, namespace: str) -> AsyncIterator[list[Any]]:
    """The namespace's memories, oldest first, a page at a time (keyset, so no page is skipped)."""
    table = Memory.__table__
    after: tuple[Any, Any] | None = None
    while True:
        statement = select(table).where(table.c.namespace == namespace)
        if after is not None:
            statement = statement.where(tuple_(table.c.created_at, table.c.id) > after)
        rows = list((await session.execute(statement.order_by(table.c.created_at, table.c.id).limit(PAGE))).mappings())
        if not rows:
            return
        yield rows
        after = (rows[-1]["created_at"], rows[-1]["id"])


async def versions_of(session: AsyncSession, memory_ids: Sequence[UUID]) -> dict[UUID, list[Any]]:
    table = MemoryVersion.__table__
    statement = (
        select(table).where(table.c.memory_id.in_(memory_ids)).order_by(table.c.memory_id, table.c.version, table.c.id)
    )
    found: dict[UUID, list[Any]] = {memory_id: [] for memory_id in memory_ids}
    for row in (await session.execute(statement)).mappings():
        found[row["memory_id"]].append(row)
    return found


async def rows_of(session: AsyncSession, kind: str, namespace: str) -> list[Any]:
    """Relations, revisions, lessons, events (with their payload's full text) or reviews of a namespace."""
    if kind == "relation":
        table = MemoryRelation.__table__
        inside = select(Memory.id).where(Memory.namespace == namespace)
        statement = select(table).where(table.c.from_memory_id.in_(inside)).order_by(table.c.id)
    elif kind == "event":
        table = TaskEvent.__table__
        statement = (
            select(table, EventPayload.full_text)
            .outerjoin(EventPayload, EventPayload.hash == table.c.payload_hash)
            .where(table.c.namespace == namespace)
            .order_by(table.c.id)
        )
    else:
        table = {"revision": RevisionLog, "lesson": Reflection, "review": TaskReview}[kind].__table__
        statement = select(table).where(table.c.namespace == namespace).order_by(table.c.created_at, table.c.id)
    return list((await session.execute(statement)).mappings())


async def occupied(session: AsyncSession, namespace: str) -> bool:
    """Whether the namespace holds anything an import would mix with."""
    for model in (Memory, RevisionLog, Reflection, TaskEvent, TaskReview):
        if await session.scalar(select(func.count()).select_from(model).where(model.namespace == namespace).limit(1)):
            return True
    return False


async def taken_ids(session: AsyncSession, ids: dict[type, set[UUID]]) -> int:
    """How many of these primary keys already exist."""
    taken = 0
    for model, keys in ids.items():
        if keys:
            taken += await session.scalar(select(func.count()).select_from(model).where(model.id.in_(keys))) or 0
    return taken


async def insert_memories(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Links between memories are set afterwards: a row may point to one inserted later."""
    statement = insert(Memory.__table__).values(
        lexemes=func.to_tsvector(literal_column("'simple'::regconfig"), bindparam("lexeme_text"))
    )
    await session.execute(statement, rows)


async def link_memories(session: AsyncSession, links: list[dict[str, Any]]) -> None:
    table = Memory.__table__
    statement = (
        update(table)
        .where(table.c.id == bindparam("memory_id"))
        .values(supersedes=bindparam("new_supersedes"), superseded_by=bindparam("new_superseded_by"))
    )
    await session.execute(statement, links)


async def insert_rows(session: AsyncSession, model: type, rows: list[dict[str, Any]]) -> None:
    if rows:
        await session.execute(insert(model.__table__), rows)


async def insert_payloads(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Payload texts are shared by hash: one already stored is the same text."""
    if rows:
        await session.execute(insert(EventPayload.__table__).on_conflict_do_nothing(index_elements=["hash"]), rows)
