"""Re-embedding after the embedding model changes. Memories and lessons move to the configured
model in batches, each its own short transaction, lowest id first; a stopped run leaves its
converted rows on the new model and the next run continues with the rest. Search keeps answering
meanwhile: its vector route sees only rows of the current model and says how many it skipped.
A model of another dimension goes through app.maintenance.dimension first."""

from collections.abc import Callable

from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.embeddings import chunking
from app.embeddings import repository as chunk_vectors
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
    sessions: async_sessionmaker[AsyncSession],
    embedder: EmbeddingProvider,
    *,
    entity: Embedded,
    size: int,
    max_chars: int,
    chunks: int,
) -> int:
    async with sessions.begin() as session:
        batch = await repository.batch_to_reembed(session, model=embedder.name, limit=size, entity=entity)
        if batch:
            # A memory's later windows (memory_chunks) move to the new model with it; lessons have none.
            windows = chunks if entity is Memory else 1
            embedded = await chunking.embed(embedder, [row.content for row in batch], max_chars=max_chars, chunks=windows)
            # Written in place, without a version row or version bump: content and status do
            # not change, and a rollback re-embeds restored content with the current model.
            await repository.set_embeddings(
                session, {row.id: vector for row, vector in zip(batch, embedded.vectors)}, model=embedder.name, entity=entity
            )
            if entity is Memory:
                await chunk_vectors.replace_chunks(
                    session,
                    {row.id: (row.namespace, vectors) for row, vectors in zip(batch, embedded.chunks)},
                    model=embedder.name,
                )
                mark_written(session, {row.namespace for row in batch})
    return len(batch)


async def reembed(
    sessions: async_sessionmaker[AsyncSession],
    *,
    embedder: EmbeddingProvider,
    batch: int,
    limit: int | None = None,
    progress: Callable[[int], object] | None = None,
    max_chars: int = 512,
    chunks: int = 1,
) -> ReembedReport:
    """Re-embed memories, then lessons, of another model with the configured one, at most `limit`
    of them; a memory longer than `max_chars` also gets up to `chunks` windows (app/embeddings/chunking.py)."""
    converted = 0
    for entity in EMBEDDED:
        while limit is None or converted < limit:
            size = batch if limit is None else min(batch, limit - converted)
            done = await _convert_batch(sessions, embedder, entity=entity, size=size, max_chars=max_chars, chunks=chunks)
            converted += done
            if progress:
                progress(done)
            if done < size:  # nothing left, or the rest is locked by writers: a later run takes it
                break
    return ReembedReport(
        model=embedder.name, converted=converted, remaining=await count_remaining(sessions, model=embedder.name)
    )
