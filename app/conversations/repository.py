"""Every SQL statement about conversation messages."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import ConversationMessage, Memory


async def known(
    session: AsyncSession, *, namespace: str, session_id: str, message_ids: Sequence[str]
) -> dict[str, ConversationMessage]:
    """The messages of this session already stored, by message id."""
    if not message_ids:
        return {}
    statement = select(ConversationMessage).where(
        ConversationMessage.namespace == namespace,
        ConversationMessage.session_id == session_id,
        ConversationMessage.message_id.in_(message_ids),
    )
    return {row.message_id: row for row in (await session.execute(statement)).scalars()}


async def claim(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> set[str]:
    """Insert message rows; the ids of those this call inserted (a concurrent request carrying the
    same message gets nothing back for it, so it is stored once). Rows go in id order: two
    requests holding the same messages in another order wait for each other, never deadlock."""
    if not rows:
        return set()
    statement = (
        insert(ConversationMessage)
        .values(sorted(rows, key=lambda row: row["message_id"]))
        .on_conflict_do_nothing(constraint="uq_conversation_messages_message")
        .returning(ConversationMessage.message_id)
    )
    return set((await session.execute(statement)).scalars())


async def set_memories(
    session: AsyncSession, *, namespace: str, session_id: str, memory_ids: dict[str, list[str]]
) -> None:
    for message_id, ids in memory_ids.items():
        await session.execute(
            update(ConversationMessage)
            .where(
                ConversationMessage.namespace == namespace,
                ConversationMessage.session_id == session_id,
                ConversationMessage.message_id == message_id,
            )
            .values(memory_ids=ids)
        )


async def mark_extracted(
    session: AsyncSession, *, namespace: str, session_id: str, message_ids: Sequence[str], by: str, at: datetime
) -> None:
    if not message_ids:
        return
    await session.execute(
        update(ConversationMessage)
        .where(
            ConversationMessage.namespace == namespace,
            ConversationMessage.session_id == session_id,
            ConversationMessage.message_id.in_(message_ids),
        )
        .values(extracted_by=by, extracted_at=at)
    )


async def known_keys(session: AsyncSession, *, namespace: str, limit: int) -> list[str]:
    """The namespace's keys in use by active memories, most recently written first."""
    latest = func.max(Memory.created_at)
    statement = (
        select(Memory.key)
        .where(Memory.namespace == namespace, Memory.status == "active", Memory.key.is_not(None))
        .group_by(Memory.key)
        .order_by(latest.desc())
        .limit(limit)
    )
    return list((await session.execute(statement)).scalars())
