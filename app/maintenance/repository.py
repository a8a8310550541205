"""SQL of maintenance tasks."""

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Memory

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
