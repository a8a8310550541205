"""The vector columns' dimension is the configured model's (HINDSIGHT_EMBEDDING_DIM), given at
migration time: a column holding no vector simply takes it. A column holding vectors of another
dimension changes by re-embedding into a new column while the service keeps answering: with the
new settings, `python -m app reembed` stages every vector of the new model beside the live ones
(the running service still searches with the old model), and the first process started with the
new settings swaps them in as it migrates. Rows written or revised between the staging and the
swap have no vector of the new model yet: the vector route leaves them out (search counts them in
`skipped_other_model`) until the next `reembed` converts them in place."""

import logging
from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from app.embeddings.provider import EmbeddingProvider
from app.maintenance import repository
from app.maintenance.repository import STAGED, VECTOR_TABLES
from app.maintenance.service import ideal_lists

logger = logging.getLogger(__name__)

# Processes starting together (the API, the worker) settle the columns one at a time.
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('hindsight:vector-dimension'))"
REEMBED = "python -m app reembed"


class DimensionMismatch(RuntimeError):
    """Stored vectors are of another dimension than the configured model's, and none are staged."""


async def prepare(engine: AsyncEngine, *, model: str, dim: int, staging: bool = False) -> list[str]:
    """Give every vector column the configured dimension: empty columns take it, staged vectors
    of it are swapped in. `staging` (the re-embedding command) leaves columns that still need
    staging for it; anything else with vectors of another dimension is a DimensionMismatch."""
    done = []
    async with engine.begin() as connection:
        await connection.execute(text(_LOCK))
        # The tables move together: the old service writes memories and lessons alike.
        changing = [table for table in VECTOR_TABLES if await repository.column_dim(connection, table) != dim]
        holding = [table for table in changing if await repository.has_vectors(connection, table)]
        staged = [table for table in changing if await repository.column_dim(connection, table, STAGED) == dim]
        if holding and staging:
            return []  # the re-embedding command stages them
        if set(holding) - set(staged):
            current = await repository.column_dim(connection, holding[0])
            raise DimensionMismatch(
                f"{holding[0].name} holds {current}-dimension vectors and {model} gives {dim}: with the new settings, "
                f"run `{REEMBED}` while the current service keeps answering, then start the service again "
                "(README: changing the embedding model)"
            )
        if await repository.column_dim(connection, repository.CHUNKS) != dim:
            await repository.reset_chunks(connection, dim)
            done.append(f"{repository.CHUNKS.name}.embedding takes {dim} dimensions (its chunk vectors, of the old model, are dropped)")
        for table in changing:
            if table in staged:
                await repository.swap_staged(connection, table, model=model, dim=dim)
                done.append(f"{table.name}: the staged {dim}-dimension vectors of {model} are now the live ones")
            else:
                await repository.set_dim(connection, table, dim)
                done.append(f"{table.name}.embedding takes {dim} dimensions (it held no vector)")
    for line in done:
        logger.info("%s", line)
    return done


async def stored_dim(connection: AsyncConnection) -> int | None:
    return await repository.column_dim(connection, VECTOR_TABLES[0])


async def check(engine: AsyncEngine, embedder: EmbeddingProvider) -> None:
    """At start-up: the embedder's vectors fit the columns (migration gave them the settings' dimension)."""
    async with engine.connect() as connection:
        stored = await stored_dim(connection)
    if stored != embedder.dim:
        raise DimensionMismatch(
            f"{embedder.name} gives {embedder.dim}-dimension vectors; the database stores {stored}: "
            f"set HINDSIGHT_EMBEDDING_DIM={embedder.dim} and migrate, or re-embed (`{REEMBED}`)"
        )


async def needs_staging(engine: AsyncEngine, embedder: EmbeddingProvider) -> bool:
    async with engine.connect() as connection:
        return await stored_dim(connection) != embedder.dim


async def stage(
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
    *,
    embedder: EmbeddingProvider,
    batch: int,
    progress: Callable[[int], object] | None = None,
) -> tuple[int, int]:
    """Embed every row with the new model into the staged columns, in batches that hold no lock
    while they embed (a row whose text changed meanwhile is simply staged again later); then
    build the staged vector index without blocking writers. (staged now, still unstaged)."""
    async with engine.begin() as connection:
        await connection.execute(text(_LOCK))
        for table in VECTOR_TABLES:
            await repository.add_staging(connection, table, embedder.dim)
    staged = 0
    for table in VECTOR_TABLES:
        while True:
            async with sessions() as session:
                rows = await repository.batch_to_stage(session, table, model=embedder.name, limit=batch)
            if not rows:
                break
            vectors = await embedder.embed_passages([row.text for row in rows])
            async with sessions.begin() as session:
                await repository.set_staged(session, table, list(zip(rows, vectors, strict=True)), model=embedder.name)
            staged += len(rows)
            if progress:
                progress(len(rows))
            if len(rows) < batch:
                break
    async with engine.connect() as connection:
        autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
        rows = int(await autocommit.scalar(text(f"SELECT count({STAGED}) FROM memories")) or 0)
        await repository.build_staged_index(autocommit, VECTOR_TABLES[0], lists=ideal_lists(rows))
    async with sessions() as session:
        remaining = sum([await repository.count_unstaged(session, table, model=embedder.name) for table in VECTOR_TABLES])
    return staged, remaining
