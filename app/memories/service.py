"""Business rules of writing, reading and forgetting memories."""

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from uuid import UUID

import numpy as np
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from app.core import foreground
from app.core.auth import Access
from app.core.errors import AppError, NotFound, Unavailable, VersionConflict, problem_of, validation_problem
from app.core.metrics import WRITES
from app.core.settings import Settings
from app.embeddings import chunking
from app.embeddings import repository as chunk_vectors
from app.memories import records, repository
from app.memories.schemas import (
    BatchItemResult,
    MemoryDetail,
    MemoryOut,
    MemoryWrite,
    RecentMemory,
    RelationOut,
    RevisionSummary,
    VersionOut,
    WriteResponse,
)
from app.memories.sensitive import refuse_sensitive
from app.models import Memory, MemoryRelation
from app.namespaces import tracking
from app.revisions.service import (
    SCAN_SPARE,
    STALE_RETRIES,
    Context,
    Ruled,
    Scan,
    Triggered,
    find_triggers,
    revise_new_memory,
    rule,
    rule_under_lock,
    run_again_whole,
    still_holds,
)


@dataclass(slots=True)
class WriteOutcome:
    memory: Memory
    deduplicated: bool
    revisions: list[RevisionSummary] = field(default_factory=list)

    def response(self) -> WriteResponse:
        return WriteResponse(memory=MemoryOut.of(self.memory), deduplicated=self.deduplicated, revisions=self.revisions)


def _find_duplicate(request: MemoryWrite, *, same_text: Memory | None, scanned: Scan, settings: Settings) -> Memory | None:
    """The active memory this write repeats: the same normalised text (`same_text`), or
    near-identical text carrying the same numbers. A keyed write only repeats a memory with that
    key, so its key is never lost to a keyless twin."""
    if same_text is not None:
        return same_text
    for memory, similarity in scanned.rows[:1]:
        repeats = similarity >= settings.dedup_cosine_threshold and records.same_numbers(memory.content, request.content)
        if repeats and request.key in (None, memory.key):
            return memory
    return None


def _new_memory(request: MemoryWrite, *, embedding: np.ndarray, model: str, settings: Settings) -> Memory:
    now = datetime.now(timezone.utc)
    memory = records.new_memory(
        namespace=request.namespace,
        content=request.content,
        embedding=embedding,
        embedding_model=model,
        created_at=request.created_at or now,
        updated_at=now,
        key=request.key,
        query_hint=request.query_hint,
        memory_type=request.memory_type,
        confidence=request.confidence,
        importance=request.importance,
        session_id=request.session_id,
        source=request.source,
        metadata=request.metadata,
        ttl_seconds=request.ttl_seconds or settings.default_ttl(request.memory_type),
    )
    memory.id = uuid.uuid4()  # judged before it is stored
    return memory


@dataclass(frozen=True, slots=True)
class _Unjudged:
    """The memory has candidates that no ruling still holds for: the caller releases the
    namespace lock, asks the judge (`rule`) and tries again."""

    new: Memory
    candidates: list[Triggered]


async def _store_locked(
    session: AsyncSession,
    *,
    request: MemoryWrite,
    new: Memory,
    embedding: np.ndarray,
    context: Context,
    ruled: Ruled | None,
    last: bool,
) -> WriteOutcome | _Unjudged:
    """Under the namespace lock: deduplicate, or find the revision triggers and, if `ruled`
    still holds for them, a quick judge can rule on them here (`rule_under_lock`), or this is the
    `last` attempt (which asks the judge here), store the memory and apply the revisions."""
    if request.created_at is None:
        # Stamped under the lock: whatever committed before is older and is among the
        # candidates; whatever commits after finds this memory among its own.
        now = datetime.now(timezone.utc)
        if new.expires_at is not None:
            new.expires_at += now - new.created_at
        new.created_at = new.updated_at = now
    # One neighbour scan for deduplication and the triggers (SCAN_SPARE rows more than they need).
    limit = max(context.settings.strong_trigger_candidates, context.settings.weak_trigger_candidates) + SCAN_SPARE
    rows, same_text = await repository.write_scan(
        session,
        namespace=request.namespace,
        embedding=embedding,
        limit=limit,
        content_hash=records.content_hash(request.content),
        key=request.key,
        approximate=repository.namespace_size(session, request.namespace) > context.settings.neighbour_scan_exact_max,
    )
    scanned = Scan(rows, complete=len(rows) < limit)
    duplicate = _find_duplicate(request, same_text=same_text, scanned=scanned, settings=context.settings)
    if duplicate is not None:
        await repository.touch(session, duplicate)
        WRITES.labels(outcome="deduplicated").inc()
        return WriteOutcome(memory=duplicate, deduplicated=True)
    triggers = None
    if context.defer is None:
        triggers = await find_triggers(session, new, embedding=embedding, context=context, scanned=scanned)
        if triggers.candidates and not last and not still_holds(ruled, triggers.candidates):
            ruled = await rule_under_lock(new, triggers.candidates, context=context)
            if ruled is None:
                return _Unjudged(new, triggers.candidates)
    memory = await repository.insert(session, new)
    repository.add_version(session, memory, changed_by="api", at=memory.created_at)
    if context.defer is not None:
        await context.defer(session, memory.id)  # async mode: the worker revises it once this commits
        revisions = []
    else:
        revisions = await revise_new_memory(session, memory, embedding=embedding, context=context, triggers=triggers, ruled=ruled)
    tracking.count_new(
        session, memory.namespace, 1, review_every=context.settings.review_every_writes, on_review_due=context.review_later
    )
    await session.flush()
    summaries = [
        RevisionSummary(id=r.id, trigger=r.trigger, decision=r.decision, old_memory_id=r.old_memory_id, status=r.status)
        for r in revisions
    ]
    WRITES.labels(outcome="new").inc()
    return WriteOutcome(memory=memory, deduplicated=False, revisions=summaries)


async def _store(session: AsyncSession, *, request: MemoryWrite, embedding: np.ndarray, context: Context) -> WriteOutcome:
    """Store (or deduplicate) one memory and revise what it changes. The namespace lock is held
    only for database work and a quick judge: when the candidates need a slow judge or a merged
    text embedded, the lock is released (nothing is written yet), the judge asked and the merge
    embedded, and the lock taken again; the ruling is applied
    if the candidates are still the same, at the same versions, else asked again
    (settings.revision_judge_attempts; the last attempt asks under the lock)."""
    new = _new_memory(request, embedding=embedding, model=context.embedder.name, settings=context.settings)
    ruled = None
    attempts = context.settings.revision_judge_attempts
    for attempt in range(attempts):
        await repository.lock_namespace(session, request.namespace)
        stored = await _store_locked(
            session, request=request, new=new, embedding=embedding, context=context, ruled=ruled, last=attempt == attempts - 1
        )
        if isinstance(stored, WriteOutcome):
            return stored
        await session.commit()  # nothing written yet: this only releases the lock
        ruled = await rule(stored.new, stored.candidates, context=context)
    raise AssertionError("the last attempt stores")


def _refuse_sensitive(request: MemoryWrite) -> None:
    """Every stored field: content, hint, key, session, source, metadata. A key (and namespace)
    is read segment by segment: its colons separate names ("user:u1:password:hint"), they do
    not introduce a value."""
    fields = request.model_dump(mode="json", exclude_none=True)
    for name in ("namespace", "key"):
        if name in fields:
            fields[name] = fields[name].replace(":", " ")
    refuse_sensitive(fields)


def _embed(context: Context, texts: list[str]) -> asyncio.Future[chunking.Embedded]:
    settings = context.settings
    return asyncio.ensure_future(
        chunking.embed(context.embedder, texts, max_chars=settings.embedding_max_chars, chunks=settings.embedding_chunks)
    )


async def _store_chunks(session: AsyncSession, outcome: WriteOutcome, *, request: MemoryWrite, vectors: np.ndarray, context: Context) -> None:
    """A new long memory's later windows (app/embeddings/chunking.py), when it holds the text
    they were cut from (a merge at write time gives it another)."""
    memory = outcome.memory
    if len(vectors) and not outcome.deduplicated and memory.content == request.content:
        await chunk_vectors.replace_chunks(session, {memory.id: (memory.namespace, vectors)}, model=context.embedder.name)


async def write(session: AsyncSession, *, request: MemoryWrite, context: Context) -> WriteOutcome:
    """Store one memory, or return the active memory it repeats."""
    _refuse_sensitive(request)
    embedded = await _embed(context, [request.content])
    outcome = await _store(session, request=request, embedding=embedded.vectors[0], context=context)
    await _store_chunks(session, outcome, request=request, vectors=embedded.chunks[0], context=context)
    return outcome


class _ItemRejected(Exception):
    def __init__(self, problem: dict[str, Any]) -> None:
        super().__init__(problem["detail"])
        self.problem = problem


def _parse_item(raw: dict[str, Any]) -> MemoryWrite:
    try:
        request = MemoryWrite.model_validate(raw)
    except ValidationError as error:
        raise _ItemRejected(validation_problem(error.errors())) from error
    try:
        _refuse_sensitive(request)
    except AppError as error:
        raise _ItemRejected(problem_of(error)) from error
    return request


# A batch's embeddings are computed in chunks of this many texts, the next chunk while the
# previous one is stored, so storing overlaps embedding.
_BATCH_EMBEDDING_CHUNK = 16


class _BatchLock:
    """The namespace a batch holds, and since when. A batch commits what it stored and lets the
    lock go whenever it would wait for slow work (an embedding not ready, a judge), change
    namespace, or pass settings.batch_lock_seconds: a large import never holds a namespace for
    long, and holding one namespace at a time it cannot deadlock with another batch."""

    def __init__(self, session: AsyncSession, *, hold_seconds: float) -> None:
        self._session = session
        self._hold = hold_seconds
        self.namespace: str | None = None
        self._since = 0.0

    async def take(self, namespace: str) -> None:
        if self.namespace is not None and (self.namespace != namespace or time.monotonic() - self._since > self._hold):
            await self.release()
        if self.namespace is None:
            await repository.lock_namespace(self._session, namespace)
            self.namespace, self._since = namespace, time.monotonic()

    async def release(self) -> None:
        if self.namespace is not None:
            await self._session.commit()
            self.namespace = None


async def _store_in_batch(
    session: AsyncSession, lock: _BatchLock, *, request: MemoryWrite, embedding: np.ndarray, context: Context
) -> WriteOutcome:
    """One batch item, as `_store` does it, in a savepoint of its own (a refused item rolls back
    alone), the lock released around a judge. A memory it changes that another writer changed
    meanwhile rolls the item back, and it runs again from a fresh scan (`run_again_whole`)."""
    new = _new_memory(request, embedding=embedding, model=context.embedder.name, settings=context.settings)
    ruled = None
    attempts = context.settings.revision_judge_attempts
    attempt = conflicts = 0
    while True:
        await lock.take(request.namespace)
        try:
            async with session.begin_nested():
                with run_again_whole(session):
                    stored = await _store_locked(
                        session, request=request, new=new, embedding=embedding, context=context, ruled=ruled, last=attempt == attempts - 1
                    )
        except VersionConflict:
            conflicts += 1
            if conflicts == STALE_RETRIES:
                raise
            # The rollback took the memory out of the session, with what was done to it.
            new = _new_memory(request, embedding=embedding, model=context.embedder.name, settings=context.settings)
            continue
        if isinstance(stored, WriteOutcome):
            return stored
        await lock.release()
        ruled = await rule(stored.new, stored.candidates, context=context)
        attempt += 1


async def write_batch(
    session: AsyncSession, *, items: list[dict[str, Any]], context: Context, access: Access
) -> list[BatchItemResult]:
    """Write items in order; a rejected item is reported and rejects nothing else. What is
    stored is committed in steps (see `_BatchLock`): if the database goes away midway, the items
    before are kept, and the batch sent again finds them as duplicates."""
    parsed: dict[int, MemoryWrite] = {}
    results: dict[int, BatchItemResult] = {}
    for index, raw in enumerate(items):
        try:
            parsed[index] = _parse_item(raw)
        except _ItemRejected as rejected:
            results[index] = BatchItemResult(index=index, status=rejected.problem["status"], error=rejected.problem)
        await asyncio.sleep(0)  # a large batch is read item by item, letting other requests in between
    order = list(parsed.items())
    chunks = [
        _embed(context, [request.content for _, request in order[start : start + _BATCH_EMBEDDING_CHUNK]])
        for start in range(0, len(order), _BATCH_EMBEDDING_CHUNK)
    ]
    lock = _BatchLock(session, hold_seconds=context.settings.batch_lock_seconds)
    try:
        for position, (index, request) in enumerate(order):
            chunk = chunks[position // _BATCH_EMBEDDING_CHUNK]
            if not chunk.done():
                await lock.release()  # no lock is held while embeddings are computed
            embedded = await chunk
            if foreground.waiting():
                await lock.release()  # nor while it steps aside for a search (app/core/foreground.py)
                await foreground.step_aside(context.settings.embedding_yield_seconds)
            offset = position % _BATCH_EMBEDDING_CHUNK
            try:
                access.check(request.namespace)
                outcome = await _store_in_batch(session, lock, request=request, embedding=embedded.vectors[offset], context=context)
                await _store_chunks(session, outcome, request=request, vectors=embedded.chunks[offset], context=context)
            except Unavailable:
                raise  # the database is away: the batch answers 503
            except AppError as error:
                results[index] = BatchItemResult(index=index, status=error.status_code, error=problem_of(error))
                continue
            results[index] = BatchItemResult(
                index=index,
                status=200 if outcome.deduplicated else 201,
                **outcome.response().model_dump(),
            )
    finally:
        for chunk in chunks:
            chunk.cancel()  # embeddings nobody will read (the batch failed)
    return [results[index] for index in range(len(items))]


async def _existing(session: AsyncSession, memory_id: UUID) -> Memory:
    memory = await repository.get(session, memory_id)
    if memory is None:
        raise NotFound(f"no memory with id {memory_id}")
    return memory


async def detail(session: AsyncSession, *, memory_id: UUID, access: Access) -> MemoryDetail:
    """A memory with its full history, its supersede chain both ways, and its relations."""
    memory = await _existing(session, memory_id)
    access.check(memory.namespace)
    return MemoryDetail(
        memory=MemoryOut.of(memory),
        versions=[VersionOut.model_validate(version, from_attributes=True) for version in await repository.versions(session, memory_id)],
        supersedes=[MemoryOut.of(older) for older in await repository.chain(session, memory_id, direction="back")],
        superseded_by=[MemoryOut.of(newer) for newer in await repository.chain(session, memory_id, direction="forward")],
        relations=[_relation(edge, outgoing) for edge, outgoing in await repository.relations(session, memory_id)],
    )


# How an edge reads from its far end.
_INCOMING = {"supersedes": "superseded_by", "refines": "refined_by"}


def _relation(edge: MemoryRelation, outgoing: bool) -> RelationOut:
    return RelationOut(
        type=edge.type if outgoing else _INCOMING.get(edge.type, edge.type),
        memory_id=edge.to_memory_id if outgoing else edge.from_memory_id,
        direction="outgoing" if outgoing else "incoming",
        revision_id=edge.revision_id,
    )


async def forget(session: AsyncSession, *, memory_id: UUID, access: Access) -> None:
    """Soft delete: the memory leaves search but stays readable with its history."""
    memory = await repository.get(session, memory_id, for_update=True)
    if memory is None:
        raise NotFound(f"no memory with id {memory_id}")
    access.check(memory.namespace)
    if memory.status != "deleted":
        memory.status = "deleted"
        await repository.save_change(session, memory, changed_by="api")


async def recent(session: AsyncSession, *, n: int, namespace: str | None) -> list[RecentMemory]:
    memories = await repository.recent(session, n=n, namespace=namespace)
    chains = await repository.chain_ids(session, [memory.id for memory in memories], direction="back")
    return [RecentMemory(**MemoryOut.of(memory).model_dump(), chain=chains[memory.id]) for memory in memories]
