"""Re-embedding after the embedding model changes. Memories and lessons move to the configured
model in batches, each its own short transaction, lowest id first; a stopped run leaves its
converted rows on the new model and the next run continues with the rest. Search keeps answering
meanwhile: its vector route sees only rows of the current model and says how many it skipped.
A model of another dimension goes through app.maintenance.dimension first."""

from collections.abc import Callable

from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.embeddings.provider import EmbeddingProvider
from app.maintenance import repository
from app.maintenance.repository import Embedded
from app.models import Memory, Reflection
from app.namespaces.tracking import mark_written

EMBEDDED: tuple[Embedded, ...] = (Memory, Reflection)


class ReembedReport(BaseModel):
    model: str
    converted: int
    remaining: int = Field(description="Memories and lessons still embedded with another model; the next run continues with them.")
    staged_dimension: int | None = Field(
        default=None,
        description="Set when the vectors went to new columns for a model of another dimension: start the "
        "service with the new settings to switch to them.",
    )


async def count_remaining(sessions: async_sessionmaker[AsyncSession], *, model: str) -> int:
    async with sessions() as session:
        return sum([await repository.count_other_model(session, model=model, entity=entity) for entity in EMBEDDED])


async def _convert_batch(
    sessions: async_sessionmaker[AsyncSession], embedder: EmbeddingProvider, *, entity: Embedded, size: int
) -> int:
    async with sessions.begin() as session:
        batch = await repository.batch_to_reembed(session, model=embedder.name, limit=size, entity=entity)
        if batch:
            vectors = await embedder.embed_passages([row.content for row in batch])
            # Written in place, without a version row or version bump: content and status do
            # not change, and a rollback re-embeds restored content with the current model.
            await repository.set_embeddings(
                session, {row.id: vector for row, vector in zip(batch, vectors)}, model=embedder.name, entity=entity
            )
            if entity is Memory:
                mark_written(session, {row.namespace for row in batch})
    return len(batch)


async def reembed(
    sessions: async_sessionmaker[AsyncSession],
    *,
    embedder: EmbeddingProvider,
    batch: int,
    limit: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> ReembedReport:
    """Re-embed memories, then lessons, of another model with the configured one, at most `limit` of them."""
    converted = 0
    for entity in EMBEDDED:
        while limit is None or converted < limit:
            size = batch if limit is None else min(batch, limit - converted)
            done = await _convert_batch(sessions, embedder, entity=entity, size=size)
            converted += done
            if progress:
                progress(done)
            if done < size:  # nothing left, or the rest is locked by writers: a later run takes it
                break
    return ReembedReport(
        model=embedder.name, converted=converted, remaining=await count_remaining(sessions, model=embedder.name)
    )
