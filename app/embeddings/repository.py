"""SQL of the chunk vectors (`memory_chunks`): a long memory's later windows."""

from collections.abc import Mapping
from uuid import UUID

import numpy as np
from sqlalchemy import delete, insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import MemoryChunk


async def replace_chunks(
    session: AsyncSession, memories: Mapping[UUID, tuple[str, np.ndarray]], *, model: str
) -> None:
    """Each memory's windows past its first, as (namespace, vectors) by memory id, in place of
    whatever it had. A memory whose content changes loses its chunks by trigger (migration 13a)."""
    if not memories:
        return
    await session.execute(delete(MemoryChunk).where(MemoryChunk.memory_id.in_(list(memories))))
    rows = [
        {"memory_id": memory_id, "ordinal": ordinal, "namespace": namespace, "embedding": vector, "embedding_model": model}
        for memory_id, (namespace, vectors) in memories.items()
        for ordinal, vector in enumerate(vectors, start=1)
    ]
    if rows:
        await session.execute(insert(MemoryChunk), rows)
