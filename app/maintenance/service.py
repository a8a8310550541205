"""Maintenance: keep the vector index tuned to the table's size."""

import math

from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession

from app.maintenance import repository


class VectorIndexReport(BaseModel):
    rows: int
    lists_before: int
    lists_after: int
    rebuilt: bool


def ideal_lists(rows: int) -> int:
    """pgvector's guidance: about sqrt(rows) lists (rows / 1000 beyond a million)."""
    return max(1, round(math.sqrt(rows)) if rows <= 1_000_000 else rows // 1000)


async def retune_vector_index(session: AsyncSession, *, dry_run: bool = False) -> VectorIndexReport:
    """Rebuild the ivfflat index when its list count is off by more than half from ideal."""
    rows = await repository.count_embedded(session)
    before = await repository.vector_index_lists(session)
    target = ideal_lists(rows)
    rebuild = not dry_run and not (target / 1.5 <= before <= target * 1.5)
    if rebuild:
        await repository.rebuild_vector_index(session, lists=target)
    return VectorIndexReport(rows=rows, lists_before=before, lists_after=target if rebuild else before, rebuilt=rebuild)
