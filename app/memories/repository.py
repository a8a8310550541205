"""Every SQL statement about memories, their versions and relations."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any
from uuid import UUID

import numpy as np
from sqlalchemy import (
    ColumnElement,
    DateTime,
    Integer,
    Select,
    Text,
    bindparam,
    delete,
    event,
    false,
    func,
    inspect,
    literal_column,
    null,
    or_,
    select,
    text,
    true,
    union_all,
    update,
)
from sqlalchemy import insert as insert_into
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import InvalidRequestError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import ORMExecuteState, Session, SessionTransaction
from sqlalchemy.orm.exc import StaleDataError
from sqlalchemy.sql import TextClause
from sqlalchemy.sql.util import find_tables

from app.core.errors import NotFound, VersionConflict
from app.memories.records import content_hash
from app.models import (
    Embedding,
    Memory,
    MemoryRelation,
    MemoryVersion,
    NamespaceState,
    RevisionLog,
    WriteRateCount,
    WriteRateFlag,
)
from app.namespaces import tracking
from app.text import lexemes

# Fields a version snapshot keeps: enough to put a memory back exactly as it was.
SNAPSHOT_FIELDS = (
    "key",
    "content",
    "content_hash",
    "query_hint",
    "memory_type",
    "status",
    "version",
    "confidence",
    "importance",
    "supersedes",
    "superseded_by",
    "expires_at",
    "revised_at",
    "invalidated_reason",
    "invalidated_at",
    "embedding_model",
)


def lexeme_vector(content: str) -> Any:
    """The tsvector the lexical route searches: the app's tokens under the `simple` config."""
    return func.to_tsvector(literal_column("'simple'::regconfig"), " ".join(lexemes(content)))


def _jsonable(value: Any) -> Any:
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _snapshot(values: dict[str, Any]) -> dict[str, Any]:
    snapshot = {name: _jsonable(values.get(name)) for name in SNAPSHOT_FIELDS}
    snapshot["metadata"] = values.get("metadata_") or {}
    return snapshot


def snapshot_of(memory: Memory) -> dict[str, Any]:
    return _snapshot({name: getattr(memory, name) for name in (*SNAPSHOT_FIELDS, "metadata_")})


_UUID_FIELDS = ("supersedes", "superseded_by")
_TIME_FIELDS = ("expires_at", "revised_at", "invalidated_at")
# The version only grows; the vector is recomputed; confidence is a ranking signal that feedback
# moves and no revision changes, so undoing a revision keeps the feedback given since.
_KEPT_ON_RESTORE = ("version", "embedding_model", "confidence")
# Columns that cannot be empty: a snapshot without them (the bulk rows of a conversation record
# no importance, a file imported from elsewhere may hold less) leaves the current value.
_REQUIRED = ("content", "content_hash", "memory_type", "status", "importance")


def restore_snapshot(memory: Memory, snapshot: dict[str, Any]) -> bool:
    """Put the memory's fields back as a snapshot recorded them; True if the content changed
    (the caller must then re-embed it)."""
    content_changed = memory.content != snapshot["content"]
    for name in SNAPSHOT_FIELDS:
        if name in _KEPT_ON_RESTORE:
            continue
        value = snapshot.get(name)
        if value is None and name in _REQUIRED:
            continue
        if value is not None and name in _UUID_FIELDS:
            value = UUID(value)
        elif value is not None and name in _TIME_FIELDS:
            value = datetime.fromisoformat(value)
        setattr(memory, name, value)
    memory.metadata_ = snapshot.get("metadata") or {}
    if content_changed:
        memory.lexemes = lexeme_vector(memory.content)
    return content_changed


async def embedding_of(session: AsyncSession, memory_id: UUID) -> np.ndarray | None:
    return await session.scalar(select(Memory.embedding).where(Memory.id == memory_id))


async def embeddings_of(session: AsyncSession, memory_ids: Sequence[UUID]) -> dict[UUID, np.ndarray]:
    """The vectors of several memories in one statement (those that have one)."""
    if not memory_ids:
        return {}
    statement = select(Memory.id, Memory.embedding).where(Memory.id.in_(memory_ids), Memory.embedding.is_not(None))
    return dict((await session.execute(statement)).tuples().all())


_SIZES = "hindsight.namespace_sizes"


async def lock_namespace(session: AsyncSession, namespace: str) -> None:
    """Serialise writers of one namespace until the transaction ends (dedup and revision
    both read-then-write, so two concurrent writers must not interleave). The same statement
    reads the namespace's size (`namespace_size`), which picks how its neighbours are scanned."""
    size = select(NamespaceState.memories).where(NamespaceState.namespace == namespace).scalar_subquery()
    statement = select(func.pg_advisory_xact_lock(func.hashtextextended(namespace, 0)), size)
    _, memories = (await session.execute(statement)).one()
    session.info.setdefault(_SIZES, {})[namespace] = int(memories or 0)


def namespace_size(session: AsyncSession, namespace: str) -> int:
    """The namespace's size as its lock read it in this session (0 if never locked here): how
    many memories were ever written to it, a size, not a live count."""
    return session.info.get(_SIZES, {}).get(namespace, 0)


def unexpired(memory: type[Memory] = Memory, at: datetime | None = None) -> ColumnElement[bool]:
    """Expired memories are gone for every purpose but history (as of `at`, default now)."""
    return or_(memory.expires_at.is_(None), memory.expires_at > (func.now() if at is None else at))


def _neighbour_conditions(
    namespace: Any, *, memory_types: Any = None, exclude: Any = None, not_after: Any = None
) -> list[ColumnElement[bool]]:
    """Active memories of the namespace with a vector (and of `memory_types`, not in `exclude`,
    no newer than `not_after`, where given): values or bound parameters."""
    conditions = [Memory.namespace == namespace, Memory.status == "active", Memory.embedding.is_not(None), unexpired()]
    if exclude is not None:
        conditions.append(Memory.id.not_in(exclude))
    if memory_types is not None:
        conditions.append(Memory.memory_type.in_(memory_types))
    if not_after is not None:
        conditions.append(Memory.created_at <= not_after)
    return conditions


def _in_namespace(conditions: list[ColumnElement[bool]], *columns: ColumnElement[Any]) -> Any:
    """The namespace's rows filtered first (materialised), so the ANN index cannot drop rows
    from a small namespace: the exact scans read their neighbours from it."""
    return select(Memory.id, *columns).where(*conditions).cte("in_namespace").prefix_with("MATERIALIZED")


def _unpacked(vector: Any) -> ColumnElement[Any]:
    """The vector itself where a row holds a pointer to it: a stored vector lives out of line
    (TOAST), and every use of the pointer fetches it again (about six buffers), which costs
    more than comparing it. A scan that compares each row's vector with several others, or
    one vector with every row, reads it once this way (the same values, copied)."""
    return func.subvector(vector, 1, func.vector_dims(vector), type_=Embedding())


async def nearest_active(
    session: AsyncSession,
    *,
    namespace: str,
    embedding: np.ndarray,
    limit: int,
    exclude: Sequence[UUID] = (),
    memory_types: Sequence[str] | None = None,
    not_after: datetime | None = None,
    approximate: bool = False,
) -> list[tuple[Memory, float]]:
    """Cosine neighbours among the namespace's active memories: exact by default (`_in_namespace`);
    through the ivfflat index when `approximate` (a large namespace, where the exact scan reads
    every row: its probes and iterative scan are set per connection)."""
    values: dict[str, Any] = {"namespace": namespace, "embedding": embedding, "limit": limit}
    if exclude:
        values["exclude"] = list(exclude)
    if memory_types:
        values["memory_types"] = list(memory_types)
    if not_after is not None:
        values["not_after"] = not_after
    statement = _nearest_statement(approximate, frozenset(values))
    return [(memory, float(similarity)) for memory, similarity in (await session.execute(statement, values)).all()]


def _nearest(approximate: bool, bound: frozenset[str]) -> Select:
    """The ids and similarities `nearest_active` reads (which filters are `bound`), nearest first."""
    conditions = _neighbour_conditions(
        bindparam("namespace", type_=Text),
        memory_types=bindparam("memory_types", expanding=True) if "memory_types" in bound else None,
        exclude=bindparam("exclude", expanding=True) if "exclude" in bound else None,
        not_after=bindparam("not_after", type_=DateTime(timezone=True)) if "not_after" in bound else None,
    )
    embedding, limit = bindparam("embedding", type_=Embedding()), bindparam("limit", type_=Integer)
    if approximate:
        distance = Memory.embedding.cosine_distance(embedding)
        return select(Memory.id, (1 - distance).label("similarity")).where(*conditions).order_by(distance).limit(limit)
    # Each row's distance is computed once, as it is read (computed by the sort, it read the
    # vector again from TOAST: 3.8 against 2.2 ms for 1,000 rows).
    in_namespace = _in_namespace(conditions, Memory.embedding.cosine_distance(embedding).label("distance"))
    distance = in_namespace.c.distance
    return select(in_namespace.c.id, (1 - distance).label("similarity")).order_by(distance).limit(limit)


@lru_cache(maxsize=32)
def _nearest_statement(approximate: bool, bound: frozenset[str]) -> Select:
    """`nearest_active`'s statement, built once per shape: a write runs it every time."""
    nearest = _nearest(approximate, bound).subquery()
    # Fresh rows even for memories this session loaded before: a write compares their versions
    # with the ones its judge saw.
    return (
        select(Memory, nearest.c.similarity)
        .join(nearest, Memory.id == nearest.c.id)
        .order_by(nearest.c.similarity.desc())
        .execution_options(populate_existing=True)
    )


@lru_cache(maxsize=4)
def _write_scan_statement(approximate: bool, keyed: bool) -> Select:
    """`write_scan`'s statement, built once per shape: the neighbours, then the memory with the
    same text (flagged `same_text`; it may be among the neighbours too)."""
    nearest = _nearest(approximate, frozenset({"namespace", "embedding", "limit"})).subquery()
    same = (
        select(Memory.id)
        .where(
            Memory.namespace == bindparam("namespace", type_=Text),
            Memory.content_hash == bindparam("content_hash", type_=Text),
            Memory.key == bindparam("key", type_=Text) if keyed else true(),
            Memory.status == "active",
            unexpired(),
        )
        .order_by(Memory.created_at)
        .limit(1)
        .subquery()
    )
    found = union_all(
        select(nearest.c.id, nearest.c.similarity, false().label("same_text")),
        select(same.c.id, null().label("similarity"), true().label("same_text")),
    ).subquery()
    return (
        select(Memory, found.c.similarity, found.c.same_text)
        .join(found, Memory.id == found.c.id)
        .order_by(found.c.same_text, found.c.similarity.desc())
        .execution_options(populate_existing=True)
    )


async def write_scan(
    session: AsyncSession,
    *,
    namespace: str,
    embedding: np.ndarray,
    limit: int,
    content_hash: str,
    key: str | None,
    approximate: bool = False,
) -> tuple[list[tuple[Memory, float]], Memory | None]:
    """What a write reads before it stores, in one statement: `nearest_active`'s neighbours, and
    the active memory holding the same text, if any (a keyed write only matches one with its key)."""
    values = {"namespace": namespace, "embedding": embedding, "limit": limit, "content_hash": content_hash}
    if key is not None:
        values["key"] = key
    rows, same_text = [], None
    for memory, similarity, same in (await session.execute(_write_scan_statement(approximate, key is not None), values)).all():
        if same:
            same_text = memory
        else:
            rows.append((memory, float(similarity)))
    return rows, same_text


async def nearest_active_each(
    session: AsyncSession,
    *,
    namespace: str,
    probes: Sequence[UUID],
    limit: int,
    memory_types: Sequence[str],
    approximate: bool = False,
) -> dict[UUID, list[tuple[Memory, float]]]:
    """What `nearest_active` gives each of several memories of the namespace (its own vector;
    its neighbours exclude it and anything newer), for all of them in two statements: the
    neighbour ids, then their rows (fresh, as there) with the probes'. A probe that is no longer
    active, or has no vector, is absent."""
    # Every probe's vector and (exact) every row's are read out of TOAST once (`_unpacked`), not
    # at each comparison: 58 against 7 ms for ten probes in 1,000 rows. Each distance is computed
    # once, where the sort reads it.
    probe = (
        select(Memory.id, _unpacked(Memory.embedding).label("embedding"), Memory.created_at)
        .where(Memory.id.in_(probes), Memory.status == "active", Memory.embedding.is_not(None))
        .cte("probe")
        .prefix_with("MATERIALIZED")
    )
    conditions = _neighbour_conditions(namespace, memory_types=memory_types)
    if approximate:
        distance = Memory.embedding.cosine_distance(probe.c.embedding).label("distance")
        near = select(Memory.id, distance).where(
            *conditions, Memory.id != probe.c.id, Memory.created_at <= probe.c.created_at
        )
    else:
        in_namespace = _in_namespace(conditions, _unpacked(Memory.embedding).label("embedding"), Memory.created_at)
        distance = in_namespace.c.embedding.cosine_distance(probe.c.embedding).label("distance")
        near = select(in_namespace.c.id, distance).where(
            in_namespace.c.id != probe.c.id, in_namespace.c.created_at <= probe.c.created_at
        )
    nearest = near.order_by(distance).limit(limit).lateral("nearest")
    similarity = 1 - nearest.c.distance
    statement = (
        select(probe.c.id, nearest.c.id, similarity)
        .select_from(probe)
        .outerjoin(nearest, true())
        .order_by(probe.c.id, similarity.desc())
    )
    pairs = (await session.execute(statement)).all()
    wanted = {probe_id for probe_id, _, _ in pairs} | {neighbour for _, neighbour, _ in pairs if neighbour is not None}
    rows = await session.execute(select(Memory).where(Memory.id.in_(wanted)).execution_options(populate_existing=True))
    loaded = {memory.id: memory for memory in rows.scalars()}
    found: dict[UUID, list[tuple[Memory, float]]] = {}
    for probe_id, neighbour, similarity in pairs:
        near_rows = found.setdefault(probe_id, [])
        if neighbour is not None:
            near_rows.append((loaded[neighbour], float(similarity)))
    return found


async def insert(session: AsyncSession, memory: Memory) -> Memory:
    """Insert the memory now (its server-set columns come back with the INSERT)."""
    memory.lexemes = lexeme_vector(memory.content)
    session.add(memory)
    await session.flush()
    return memory


async def insert_many(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Bulk import of prepared active rows (each with an `id`, its content and its vector) in two
    statements; version 1 of each row is recorded alongside. The derived columns (the content's
    hash, the lexemes of the lexical index, the vector's dimension) are filled in here."""
    rows = [
        {
            "version": 1,
            **row,
            "content_hash": content_hash(row["content"]),
            "embedding_dim": len(row["embedding"]),
            "lexeme_text": " ".join(lexemes(row["content"])),
        }
        for row in rows
    ]
    statement = insert_into(Memory).values(
        lexemes=func.to_tsvector(literal_column("'simple'::regconfig"), bindparam("lexeme_text"))
    )
    await session.execute(statement, rows)
    versions = [
        {
            "memory_id": row["id"],
            "version": 1,
            "content": row["content"],
            "status": "active",
            "changed_by": "import",
            "snapshot": _snapshot({"status": "active", **row}),
        }
        for row in rows
    ]
    await session.execute(insert_into(MemoryVersion), versions)
    for namespace in {row["namespace"] for row in rows}:
        tracking.count_stored(session, namespace, sum(row["namespace"] == namespace for row in rows))


def add_version(session: AsyncSession, memory: Memory, *, changed_by: str, at: datetime | None = None) -> None:
    """Record the memory as it now is (written behind: see the end of this module). `at` is when the change
    took effect (a write's own time for imports and revisions it causes); `as_of` search reads
    statuses by it."""
    _behind(session).rows[_VERSIONS].append(
        {
            "memory_id": memory.id,
            "version": memory.version,
            "content": memory.content,
            "status": memory.status,
            "changed_by": changed_by,
            "snapshot": snapshot_of(memory),
            "created_at": at or datetime.now(timezone.utc),
        }
    )


async def get(session: AsyncSession, memory_id: UUID, *, for_update: bool = False) -> Memory | None:
    statement = select(Memory).where(Memory.id == memory_id)
    if for_update:
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalar_one_or_none()


async def reload(session: AsyncSession, memory: Memory) -> Memory:
    """Re-read a memory read before its namespace lock was taken; 404 if a purge or an erasure
    deleted it meanwhile (rows can vanish: app/forgetting)."""
    memory_id = memory.id  # read now: a failed refresh leaves the instance expired
    try:
        await session.refresh(memory)
    except InvalidRequestError:
        raise NotFound(f"no memory with id {memory_id}") from None
    return memory


async def get_many(session: AsyncSession, memory_ids: Sequence[UUID]) -> dict[UUID, Memory]:
    if not memory_ids:
        return {}
    rows = await session.execute(select(Memory).where(Memory.id.in_(memory_ids)))
    return {memory.id: memory for memory in rows.scalars()}


async def touch(session: AsyncSession, memory: Memory) -> None:
    """A repeated write of the same memory: it was just seen again."""
    await session.execute(
        update(Memory).where(Memory.id == memory.id).values(last_accessed_at=func.now())
    )
    await session.refresh(memory)


async def adjust_confidence(session: AsyncSession, memory: Memory, *, useful: bool, step: float, cap: float) -> Memory:
    """Feedback: move the confidence up (never past the cap, never down) or down (never below
    0), in one statement, so concurrent feedback loses nothing. A ranking signal, not a change
    of the memory: no version, no version row, no conflict with a client's expected_version."""
    table = Memory.__table__  # the table, not the ORM entity, which would bump the version
    confidence = table.c.confidence
    value = func.greatest(confidence, func.least(cap, confidence + step)) if useful else func.greatest(0.0, confidence - step)
    statement = update(table).where(table.c.id == memory.id).values(confidence=value, updated_at=func.now())
    if (await session.execute(statement.returning(table.c.id))).first() is None:
        raise NotFound(f"no memory with id {memory.id}")  # purged or erased since it was read
    await session.refresh(memory)
    return memory


async def save_change(session: AsyncSession, memory: Memory, *, changed_by: str, at: datetime | None = None) -> Memory:
    """Write the memory's changed fields (its version goes up by one, refused if another
    writer got there first) and record the new version."""
    await save_changes(session, [memory], changed_by=changed_by, at=at)
    return memory


async def save_changes(session: AsyncSession, changed: Sequence[Memory], *, changed_by: str, at: datetime | None = None) -> None:
    """`save_change` for several memories in one flush: all are written, or none if another
    writer got to one of them first."""
    ids = [memory.id for memory in changed]  # a failed flush expires the objects: reading an id then raises
    now = datetime.now(timezone.utc)
    for memory in changed:
        memory.updated_at = now
    try:
        await session.flush()
    except StaleDataError as error:
        raise VersionConflict(f"one of the memories {', '.join(map(str, ids))} was changed by another writer; read it again") from error
    for memory in changed:
        add_version(session, memory, changed_by=changed_by, at=at)


async def versions(session: AsyncSession, memory_id: UUID) -> list[MemoryVersion]:
    statement = select(MemoryVersion).where(MemoryVersion.memory_id == memory_id).order_by(MemoryVersion.version)
    return list((await session.execute(statement)).scalars())


async def chain_ids(session: AsyncSession, starts: Sequence[UUID], *, direction: str) -> dict[UUID, list[UUID]]:
    """For each start, the ids along its `supersedes` (back) or `superseded_by` (forward)
    links, nearest first; one query for any number of starts."""
    link = "supersedes" if direction == "back" else "superseded_by"
    walk = text(
        f"""
        WITH RECURSIVE walk(start, id, depth) AS (
            SELECT id, {link}, 1 FROM memories WHERE id = ANY(:starts) AND {link} IS NOT NULL
            UNION ALL
            SELECT walk.start, m.{link}, walk.depth + 1 FROM memories m JOIN walk ON m.id = walk.id
            WHERE m.{link} IS NOT NULL AND walk.depth < 1000
        )
        SELECT start, id FROM walk ORDER BY start, depth
        """
    )
    chains: dict[UUID, list[UUID]] = {start: [] for start in starts}
    for start, memory_id in await session.execute(walk, {"starts": list(starts)}):
        chains[start].append(memory_id)
    return chains


async def chain(session: AsyncSession, memory_id: UUID, *, direction: str) -> list[Memory]:
    """The memories along one memory's links, nearest first."""
    ids = (await chain_ids(session, [memory_id], direction=direction))[memory_id]
    found = await get_many(session, ids)
    return [found[memory_id] for memory_id in ids if memory_id in found]


async def relations(session: AsyncSession, memory_id: UUID) -> list[tuple[MemoryRelation, bool]]:
    """The memory's edges, each with whether it starts at this memory."""
    statement = (
        select(MemoryRelation)
        .where((MemoryRelation.from_memory_id == memory_id) | (MemoryRelation.to_memory_id == memory_id))
        .order_by(MemoryRelation.id)
    )
    return [(edge, edge.from_memory_id == memory_id) for edge in (await session.execute(statement)).scalars()]


async def recent(session: AsyncSession, *, n: int, namespace: str | None) -> list[Memory]:
    statement = select(Memory).order_by(Memory.created_at.desc(), Memory.id).limit(n)
    if namespace is not None:
        statement = statement.where(Memory.namespace == namespace)
    return list((await session.execute(statement)).scalars())


# --- write-rate windows (app.memories.write_rate) ----------------------------------------------


async def lock_write_window(session: AsyncSession, writer: str) -> None:
    await session.execute(select(func.pg_advisory_xact_lock(func.hashtextextended("write-rate:" + writer, 0))))


async def window_counts(session: AsyncSession, writer: str, *, since: int) -> list[tuple[int, int]]:
    """(second, writes) of the writer's window after `since`, oldest first."""
    statement = (
        select(WriteRateCount.second, WriteRateCount.writes)
        .where(WriteRateCount.writer == writer, WriteRateCount.second > since)
        .order_by(WriteRateCount.second)
    )
    return [(int(second), int(writes)) for second, writes in (await session.execute(statement)).all()]


async def add_writes(session: AsyncSession, writer: str, *, second: int, writes: int, before: int) -> None:
    """Add to the writer's current second; its seconds that left the window go."""
    statement = pg_insert(WriteRateCount).values(writer=writer, second=second, writes=writes)
    statement = statement.on_conflict_do_update(
        index_elements=[WriteRateCount.writer, WriteRateCount.second],
        set_={"writes": WriteRateCount.writes + statement.excluded.writes},
    )
    await session.execute(statement)
    await session.execute(delete(WriteRateCount).where(WriteRateCount.writer == writer, WriteRateCount.second <= before))


async def drop_write_counts(session: AsyncSession, *, before: int) -> int:
    result = await session.execute(delete(WriteRateCount).where(WriteRateCount.second <= before))
    return result.rowcount or 0


async def close_write_flag(session: AsyncSession, writer: str) -> None:
    await session.execute(update(WriteRateFlag).where(WriteRateFlag.writer == writer, WriteRateFlag.open).values(open=False))


async def extend_write_flag(session: AsyncSession, writer: str, *, namespace: str, writes: int, last_seen: datetime) -> bool:
    """Update the writer's open flag, if it has one."""
    statement = (
        update(WriteRateFlag)
        .where(WriteRateFlag.writer == writer, WriteRateFlag.open)
        .values(namespace=namespace, writes=func.greatest(WriteRateFlag.writes, writes), last_seen=last_seen)
    )
    return bool((await session.execute(statement)).rowcount)


async def open_write_flag(session: AsyncSession, flag: WriteRateFlag, *, keep: int) -> None:
    """Record a new flag; only the newest `keep` are kept."""
    session.add(flag)
    await session.flush()
    oldest_kept = select(WriteRateFlag.id).order_by(WriteRateFlag.id.desc()).offset(keep - 1).limit(1).scalar_subquery()
    await session.execute(delete(WriteRateFlag).where(WriteRateFlag.id < oldest_kept))


async def write_flags(session: AsyncSession, *, namespace: str | None, limit: int) -> list[WriteRateFlag]:
    statement = select(WriteRateFlag).order_by(WriteRateFlag.id.desc()).limit(limit)
    if namespace is not None:
        statement = statement.where(WriteRateFlag.namespace == namespace)
    return list((await session.execute(statement)).scalars())


# --- rows written behind -------------------------------------------------------------------------
# A change's version row, a judgement's log row and a revision's edges are read back by nothing
# the same transaction does next (what reads them writes them first), so they are held and written
# together, one statement a table, instead of one or two statements a change: before any statement
# of the session that touches their tables (a reader, a purge's redaction, raw SQL), as autoflush
# does for the ORM's rows, and when the transaction commits. A savepoint that ends
# without committing (a rollback, or a failed flush that rolled it back) forgets the rows held
# inside it, and writes again the older ones it had written.

_BEHIND = "hindsight.behind"
_LOGS, _VERSIONS, _EDGES = range(3)  # in foreign-key order: an edge points to its revision's log row


@dataclass(slots=True)
class _Behind:
    # Held rows per kind, and how many of each are written. A log row is read as it is when
    # written: the actions that settle it run before anything writes it.
    rows: tuple[list[Any], list[Any], list[Any]] = field(default_factory=lambda: ([], [], []))
    written: list[int] = field(default_factory=lambda: [0, 0, 0])
    savepoints: dict[Any, tuple[list[int], list[int]]] = field(default_factory=dict)  # (held, written) as each began
    writing: bool = False

    def pending(self) -> bool:
        """Whether any held row is not written yet."""
        return any(len(rows) > written for rows, written in zip(self.rows, self.written, strict=True))


def _behind(session: Session | AsyncSession) -> _Behind:
    return session.info.setdefault(_BEHIND, _Behind())


def hold_log(session: AsyncSession, revision: RevisionLog) -> None:
    _behind(session).rows[_LOGS].append(revision)


def hold_edge(session: AsyncSession, *, source: UUID, target: UUID, kind: str, revision_id: UUID | None) -> None:
    """A relation edge; an edge that already exists is kept as it is."""
    _behind(session).rows[_EDGES].append({"from_memory_id": source, "to_memory_id": target, "type": kind, "revision_id": revision_id})


_LOG_COLUMNS = [(attribute.key, attribute.columns[0].name) for attribute in inspect(RevisionLog).column_attrs]
# Sent with a list of rows: with RETURNING, SQLAlchemy sends them as multi-row statements of up
# to 1,000 rows from one compiled form (its "insertmanyvalues"), where a statement built with
# .values(rows) is compiled anew for every count of rows (about 10 ms each).
_LOG_TABLE, _VERSION_TABLE, _EDGE_TABLE = RevisionLog.__table__, MemoryVersion.__table__, MemoryRelation.__table__
_INSERTS = (
    pg_insert(_LOG_TABLE).returning(_LOG_TABLE.c.id),
    pg_insert(_VERSION_TABLE).returning(_VERSION_TABLE.c.id),
    pg_insert(_EDGE_TABLE).on_conflict_do_nothing(constraint="uq_memory_relations_edge").returning(_EDGE_TABLE.c.id),
)


def _write_behind(session: Session) -> None:
    behind = session.info.get(_BEHIND)
    if behind is None or behind.writing:
        return
    behind.writing = True
    try:
        _write_held(session, behind)
    finally:
        behind.writing = False


def _write_held(session: Session, behind: "_Behind") -> None:
    if session.new or session.dirty or session.deleted:
        session.flush()  # the memories the rows point to
    for kind in range(len(_INSERTS)):
        rows = behind.rows[kind][behind.written[kind] :]
        if kind == _LOGS:
            rows = [{column: getattr(revision, key) for key, column in _LOG_COLUMNS} for revision in rows]
        if rows:
            session.execute(_INSERTS[kind], rows)
        behind.written[kind] = len(behind.rows[kind])
    if not behind.savepoints:
        # No savepoint can roll back to before them: written rows (full snapshots, a judge's
        # prompt and answer) need not stay in memory for the rest of a long transaction.
        for rows in behind.rows:
            rows.clear()
        behind.written = [0, 0, 0]


_HELD_TABLES = (_LOG_TABLE.name, _VERSION_TABLE.name, _EDGE_TABLE.name)
# Whether a statement of a given shape (its cache key, values aside) touches a held table.
# Walking a statement's tree took 1.6 ms for a write's neighbour scan; its key, which compiling
# it computes anyway, a tenth of that. Shapes are the code's few statements; bounded anyway.
_TOUCHES: dict[Any, bool] = {}
_TOUCHES_MAX = 1_024


def _touches_held(statement: Any) -> bool:
    if isinstance(statement, TextClause):
        return any(name in statement.text for name in _HELD_TABLES)
    cache_key = statement._generate_cache_key()
    touches = None if cache_key is None else _TOUCHES.get(cache_key.key)
    if touches is None:
        tables = find_tables(statement, include_crud=True, include_joins=True)
        touches = any(getattr(table, "name", None) in _HELD_TABLES for table in tables)
        if cache_key is not None:
            if len(_TOUCHES) >= _TOUCHES_MAX:
                _TOUCHES.clear()
            _TOUCHES[cache_key.key] = touches
    return touches


@event.listens_for(Session, "do_orm_execute")
def _write_before_touching(state: ORMExecuteState) -> None:
    """Any statement of the session that reads or changes a table rows are held for (a purge's
    redaction, a raw UPDATE) sees them: written first, as autoflush does for the ORM's rows."""
    behind = state.session.info.get(_BEHIND)
    if behind is None or behind.writing or not behind.pending():
        return
    if _touches_held(state.statement):
        _write_behind(state.session)


@event.listens_for(Session, "after_transaction_create")
def _note_savepoint(session: Session, transaction: SessionTransaction) -> None:
    if transaction.nested:
        behind = _behind(session)
        behind.savepoints[transaction] = ([len(rows) for rows in behind.rows], list(behind.written))


@event.listens_for(Session, "before_commit")
def _write_on_commit(session: Session) -> None:
    if not session.in_nested_transaction():
        _write_behind(session)
        session.info.pop(_BEHIND, None)


@event.listens_for(Session, "after_commit")
def _keep_released(session: Session) -> None:
    # A savepoint released: what it held stays held (the transaction it is part of decides).
    behind = session.info.get(_BEHIND)
    if behind is not None and session.in_nested_transaction():
        behind.savepoints.pop(session.get_nested_transaction(), None)


@event.listens_for(Session, "after_transaction_end")
def _forget_ended(session: Session, transaction: SessionTransaction) -> None:
    """Any way a transaction ends without committing (rollback(), a failed flush that rolled the
    savepoint back and only closes it, close()) forgets what it held."""
    behind = session.info.get(_BEHIND)
    if behind is None:
        return
    if transaction.parent is None:
        session.info.pop(_BEHIND, None)
        return
    began = behind.savepoints.pop(transaction, None)
    if began is not None:
        held, written = began
        for rows, count in zip(behind.rows, held, strict=True):
            del rows[count:]
        behind.written = written
