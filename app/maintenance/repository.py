"""SQL of maintenance tasks."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import numpy as np
from sqlalchemy import (
    ColumnElement,
    Row,
    and_,
    bindparam,
    exists,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from app.models import Embedding, Memory, MemoryRelation, Reflection, RevisionLog

VECTOR_INDEX = "ix_memories_embedding"


async def count_embedded(connection: AsyncConnection) -> int:
    return int(await connection.scalar(select(func.count()).select_from(Memory).where(Memory.embedding.is_not(None))) or 0)


async def vector_index_lists(connection: AsyncConnection) -> int:
    options = await connection.scalar(
        text("SELECT reloptions FROM pg_class WHERE relname = :name"), {"name": VECTOR_INDEX}
    )
    settings = dict(option.split("=", 1) for option in options or [])
    return int(settings.get("lists", 100))


# Taken for the connection's session (not a transaction: REINDEX CONCURRENTLY runs outside one).
_REBUILD_LOCK = "hashtextextended('hindsight.vector-index-rebuild', 0)"


async def rebuild_vector_index(connection: AsyncConnection, *, lists: int) -> bool:
    """ivfflat clusters are fixed at build time: a new list count needs a rebuild. On an
    autocommit connection: the new list count is set (a catalog change, which waits at most
    2 s for the index, so it never holds writers in line behind it for longer), then the index
    is rebuilt beside the old one and swapped in (REINDEX CONCURRENTLY), with no statement
    timeout. False if another process is rebuilding."""
    if not await connection.scalar(text(f"SELECT pg_try_advisory_lock({_REBUILD_LOCK})")):
        return False
    try:
        await connection.execute(text("SET lock_timeout = '2s'"))
        await connection.execute(text(f"ALTER INDEX {VECTOR_INDEX} SET (lists = {int(lists)})"))
        await connection.execute(text("SET lock_timeout = 0"))
        await connection.execute(text("SET statement_timeout = 0"))
        try:
            await connection.execute(text(f"REINDEX INDEX CONCURRENTLY {VECTOR_INDEX}"))
        except DBAPIError:
            await _drop_unfinished_copies(connection)
            raise
        return True
    finally:
        await connection.execute(text("RESET lock_timeout"))
        await connection.execute(text("RESET statement_timeout"))
        await connection.execute(text(f"SELECT pg_advisory_unlock({_REBUILD_LOCK})"))


async def _drop_unfinished_copies(connection: AsyncConnection) -> None:
    """A REINDEX CONCURRENTLY that failed leaves its unfinished copy (`..._ccnew`) behind, which
    every write would keep up to date for nothing."""
    leftovers = await connection.scalars(
        text(
            "SELECT c.relname FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
            "WHERE NOT i.indisvalid AND c.relname LIKE :pattern"
        ),
        {"pattern": f"{VECTOR_INDEX}_ccnew%"},
    )
    for name in leftovers.all():
        await connection.execute(text(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"'))


def _expired(now: datetime) -> ColumnElement[bool]:
    return and_(Memory.status.in_(("active", "uncertain")), Memory.expires_at.is_not(None), Memory.expires_at <= now)


def _long_superseded(before: datetime) -> ColumnElement[bool]:
    return and_(Memory.status == "superseded", Memory.updated_at < before)


def archivable(kind: str, *, now: datetime, superseded_before: datetime) -> ColumnElement[bool]:
    return _expired(now) if kind == "expired" else _long_superseded(superseded_before)


async def count_where(session: AsyncSession, condition: ColumnElement[bool]) -> int:
    return int(await session.scalar(select(func.count()).select_from(Memory).where(condition)) or 0)


async def batch_where(session: AsyncSession, condition: ColumnElement[bool], *, limit: int) -> list[Memory]:
    """Up to `limit` matching memories, locked; rows another transaction holds are skipped."""
    statement = select(Memory).where(condition).order_by(Memory.id).limit(limit).with_for_update(skip_locked=True)
    return list((await session.execute(statement)).scalars())


async def trigger_outcomes(session: AsyncSession) -> list[tuple[str, int, int]]:
    """(trigger, judgements, of which UNRELATED) per trigger kind."""
    unrelated = func.count().filter(RevisionLog.decision == "UNRELATED")
    statement = select(RevisionLog.trigger, func.count(), unrelated).group_by(RevisionLog.trigger)
    return [(trigger, int(total), int(false)) for trigger, total, false in (await session.execute(statement)).all()]


async def count_orphans(session: AsyncSession, *, idle_since: datetime) -> int:
    """Active memories nothing links to, not accessed since `idle_since` and older than it."""
    linked = select(MemoryRelation.id).where(
        or_(MemoryRelation.from_memory_id == Memory.id, MemoryRelation.to_memory_id == Memory.id)
    )
    condition = and_(
        Memory.status == "active",
        Memory.created_at < idle_since,
        or_(Memory.last_accessed_at.is_(None), Memory.last_accessed_at < idle_since),
        ~exists(linked),
    )
    return await count_where(session, condition)


async def count_other_models(session: AsyncSession, *, model: str) -> int:
    return await count_where(session, and_(Memory.embedding.is_not(None), Memory.embedding_model != model))


Embedded = type[Memory] | type[Reflection]
# What each embedded entity embeds: memories their content, lessons their text.
EMBEDDED_TEXT = {Memory: Memory.content, Reflection: Reflection.lesson}


def other_model(model: str, entity: Embedded = Memory) -> ColumnElement[bool]:
    """Rows outside the model's vector space, those with no model recorded included."""
    return entity.embedding_model.is_distinct_from(model)


async def batch_to_reembed(session: AsyncSession, *, model: str, limit: int, entity: Embedded = Memory) -> list[Row]:
    """Up to `limit` (id, namespace, content) of other models, locked; rows a writer holds are skipped."""
    statement = (
        select(entity.id, entity.namespace, EMBEDDED_TEXT[entity].label("content"))
        .where(other_model(model, entity))
        .order_by(entity.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return list((await session.execute(statement)).all())


async def count_other_model(session: AsyncSession, *, model: str, entity: Embedded) -> int:
    return int(await session.scalar(select(func.count()).select_from(entity).where(other_model(model, entity))) or 0)


async def set_embeddings(
    session: AsyncSession, vectors: Mapping[UUID, np.ndarray], *, model: str, entity: Embedded = Memory
) -> None:
    # The table, not the ORM entity: an ORM update would bump the optimistic-locking version.
    table = entity.__table__
    values = {"embedding": bindparam("vector"), "embedding_model": model}
    if "embedding_dim" in table.c:
        values["embedding_dim"] = bindparam("dim")
    statement = update(table).where(table.c.id == bindparam("row_id")).values(**values)
    await session.execute(
        statement,
        [{"row_id": row_id, "vector": vector, "dim": int(vector.shape[0])} for row_id, vector in vectors.items()],
    )


# ---------------------------------------------------------------- vector columns
# Changing to a model of another dimension stages its vectors in `embedding_next` (with the
# model and the hash of the text they were made from) beside the live `embedding`, then swaps.


@dataclass(frozen=True, slots=True)
class VectorTable:
    """A table with an embedding: what text it embeds, that text's hash, its vector index."""

    name: str
    text: str
    text_hash: str
    index: str | None


VECTOR_TABLES = (
    VectorTable("memories", "content", "content_hash", VECTOR_INDEX),
    VectorTable("reflections", "lesson", "lesson_hash", None),
)
STAGED = "embedding_next"
# A long memory's later windows (memory_chunks) are derived from its text, never staged: with a
# model of another dimension they are dropped, and a long memory is then searched by its own
# vector (its prefix) until it is written again. (A model of the same dimension re-embeds them
# with the memory: app/maintenance/reembed.py.)
CHUNKS = VectorTable("memory_chunks", "", "", "ix_memory_chunks_embedding")


async def column_dim(connection: AsyncConnection, table: VectorTable, column: str = "embedding") -> int | None:
    """The dimension a vector column is declared with; None if the column does not exist."""
    return await connection.scalar(
        text(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = CAST(:table AS regclass) "
            "AND attname = :column AND NOT attisdropped"
        ),
        {"table": table.name, "column": column},
    )


async def has_vectors(connection: AsyncConnection, table: VectorTable) -> bool:
    return bool(await connection.scalar(text(f"SELECT EXISTS (SELECT 1 FROM {table.name} WHERE embedding IS NOT NULL)")))


async def set_dim(connection: AsyncConnection, table: VectorTable, dim: int) -> None:
    """Only for a column holding no vector: the type changes without a rewrite of any value."""
    await connection.execute(text(f"ALTER TABLE {table.name} ALTER COLUMN embedding TYPE vector({int(dim)})"))
    await connection.execute(text(f"ALTER TABLE {table.name} DROP COLUMN IF EXISTS {STAGED}"))


async def add_staging(connection: AsyncConnection, table: VectorTable, dim: int) -> None:
    """Columns for the new model's vectors; a staging of another dimension is dropped first."""
    if (staged := await column_dim(connection, table, STAGED)) is not None and staged != dim:
        await connection.execute(
            text(f"ALTER TABLE {table.name} DROP COLUMN {STAGED}, DROP COLUMN {STAGED}_model, DROP COLUMN {STAGED}_hash")
        )
    await connection.execute(
        text(
            f"ALTER TABLE {table.name} ADD COLUMN IF NOT EXISTS {STAGED} vector({int(dim)}), "
            f"ADD COLUMN IF NOT EXISTS {STAGED}_model text, ADD COLUMN IF NOT EXISTS {STAGED}_hash text"
        )
    )


def _unstaged(table: VectorTable) -> str:
    """Rows without a current staged vector: none yet, another model's, or of text changed since."""
    return (
        f"({STAGED} IS NULL OR {STAGED}_model IS DISTINCT FROM :model "
        f"OR {STAGED}_hash IS DISTINCT FROM {table.text_hash})"
    )


async def count_unstaged(session: AsyncSession, table: VectorTable, *, model: str) -> int:
    return int(await session.scalar(text(f"SELECT count(*) FROM {table.name} WHERE {_unstaged(table)}"), {"model": model}))


async def batch_to_stage(session: AsyncSession, table: VectorTable, *, model: str, limit: int) -> list[Row]:
    """(id, text, text hash) of up to `limit` unstaged rows, lowest id first; nothing is locked."""
    statement = text(
        f"SELECT id, {table.text} AS text, {table.text_hash} AS text_hash FROM {table.name} "
        f"WHERE {_unstaged(table)} ORDER BY id LIMIT :limit"
    )
    return list((await session.execute(statement, {"model": model, "limit": limit})).all())


async def set_staged(session: AsyncSession, table: VectorTable, rows: list[tuple[Row, np.ndarray]], *, model: str) -> None:
    """Store staged vectors, each only if its row's text is still the one embedded."""
    statement = text(
        f"UPDATE {table.name} SET {STAGED} = :vector, {STAGED}_model = :model, {STAGED}_hash = :text_hash "
        f"WHERE id = :id AND {table.text_hash} = :text_hash"
    ).bindparams(bindparam("vector", type_=Embedding()))
    await session.execute(
        statement, [{"id": row.id, "text_hash": row.text_hash, "vector": vector, "model": model} for row, vector in rows]
    )


async def build_staged_index(connection: AsyncConnection, table: VectorTable, *, lists: int) -> None:
    """The vector index on the staged column, built without blocking writers (autocommit)."""
    name = f"{table.index}_next"
    await connection.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {name}"))
    await connection.execute(
        text(
            f"CREATE INDEX CONCURRENTLY {name} ON {table.name} "
            f"USING ivfflat ({STAGED} vector_cosine_ops) WITH (lists = {int(lists)})"
        )
    )


async def swap_staged(connection: AsyncConnection, table: VectorTable, *, model: str, dim: int) -> None:
    """Make the staged vectors the live ones, in one transaction holding the table: staged
    vectors of another model or of changed text are dropped, and their rows, recorded with no
    model, wait for the next re-embedding like any row of another model."""
    await connection.execute(text(f"LOCK TABLE {table.name} IN ACCESS EXCLUSIVE MODE"))
    per_row_dim = table.name == "memories"  # memories also record each vector's dimension
    await connection.execute(
        text(
            f"UPDATE {table.name} SET {STAGED} = NULL, embedding_model = NULL{', embedding_dim = NULL' if per_row_dim else ''} "
            f"WHERE {_unstaged(table)}"
        ),
        {"model": model},
    )
    await connection.execute(
        text(
            f"UPDATE {table.name} SET embedding_model = :model{', embedding_dim = :dim' if per_row_dim else ''} "
            f"WHERE {STAGED} IS NOT NULL"
        ),
        {"model": model, "dim": dim},
    )
    await connection.execute(text(f"ALTER TABLE {table.name} DROP COLUMN embedding"))
    await connection.execute(text(f"ALTER TABLE {table.name} RENAME COLUMN {STAGED} TO embedding"))
    await connection.execute(text(f"ALTER TABLE {table.name} DROP COLUMN {STAGED}_model, DROP COLUMN {STAGED}_hash"))
    if table.index:
        staged_index = await connection.scalar(text("SELECT to_regclass(:name)"), {"name": f"{table.index}_next"})
        if staged_index is not None:
            await connection.execute(text(f"ALTER INDEX {table.index}_next RENAME TO {table.index}"))
        else:
            await connection.execute(
                text(
                    f"CREATE INDEX {table.index} ON {table.name} "
                    "USING ivfflat (embedding vector_cosine_ops) WITH (lists = 1)"
                )
            )


async def reset_chunks(connection: AsyncConnection, dim: int) -> None:
    """Drop every chunk vector and give the column the new dimension (its index is rebuilt, empty)."""
    await connection.execute(text(f"DELETE FROM {CHUNKS.name}"))
    await connection.execute(text(f"ALTER TABLE {CHUNKS.name} ALTER COLUMN embedding TYPE vector({int(dim)})"))
