"""Business rules of writing, reading and forgetting memories."""

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any
from uuid import UUID

import numpy as np
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import AppError, NotFound, SensitiveContent, problem_body, problem_of, validation_errors
from app.core.settings import Settings
from app.embeddings.provider import EmbeddingProvider
from app.memories import repository
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
from app.memories.sensitive import find_sensitive
from app.models import Memory

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


def normalise(content: str) -> str:
    """Case, width and whitespace folded: the form two writes must share to be 'the same'."""
    return " ".join(unicodedata.normalize("NFKC", content).casefold().split())


def content_hash(content: str) -> str:
    return hashlib.sha256(normalise(content).encode()).hexdigest()


def same_numbers(first: str, second: str) -> bool:
    """Near-identical texts that differ in a number (8月15日 / 8月16日) are an update, not a repeat."""
    return sorted(_NUMBER.findall(normalise(first))) == sorted(_NUMBER.findall(normalise(second)))


@dataclass(slots=True)
class WriteOutcome:
    memory: Memory
    deduplicated: bool
    revisions: list[RevisionSummary] = field(default_factory=list)

    def response(self) -> WriteResponse:
        return WriteResponse(memory=MemoryOut.of(self.memory), deduplicated=self.deduplicated, revisions=self.revisions)


def _guard_sensitive(request: MemoryWrite) -> None:
    for text in (request.content, request.query_hint or ""):
        kind = find_sensitive(text)
        if kind is not None:
            raise SensitiveContent(f"the memory contains sensitive data ({kind}); it was not stored")


async def _find_duplicate(
    session: AsyncSession, *, request: MemoryWrite, embedding: np.ndarray, settings: Settings
) -> Memory | None:
    exact = await repository.find_active_by_hash(
        session, namespace=request.namespace, content_hash=content_hash(request.content)
    )
    if exact is not None:
        return exact
    nearest = await repository.nearest_active(session, namespace=request.namespace, embedding=embedding, limit=1)
    for memory, similarity in nearest:
        if similarity >= settings.dedup_cosine_threshold and same_numbers(memory.content, request.content):
            return memory
    return None


def _new_memory(request: MemoryWrite, *, embedding: np.ndarray, model: str) -> Memory:
    now = datetime.now(timezone.utc)
    created_at = request.created_at or now
    return Memory(
        namespace=request.namespace,
        key=request.key,
        content=request.content,
        content_hash=content_hash(request.content),
        query_hint=request.query_hint,
        memory_type=request.memory_type,
        embedding=embedding,
        embedding_model=model,
        embedding_dim=int(embedding.shape[0]),
        confidence=request.confidence,
        importance=request.importance,
        session_id=request.session_id,
        source=request.source or {},
        metadata_=request.metadata or {},
        ttl_seconds=request.ttl_seconds,
        expires_at=created_at + timedelta(seconds=request.ttl_seconds) if request.ttl_seconds else None,
        created_at=created_at,
        updated_at=now,
    )


async def _store(
    session: AsyncSession, *, request: MemoryWrite, embedding: np.ndarray, embedder: EmbeddingProvider, settings: Settings
) -> WriteOutcome:
    await repository.lock_namespace(session, request.namespace)
    duplicate = await _find_duplicate(session, request=request, embedding=embedding, settings=settings)
    if duplicate is not None:
        await repository.touch(session, duplicate)
        return WriteOutcome(memory=duplicate, deduplicated=True)
    memory = await repository.insert(session, _new_memory(request, embedding=embedding, model=embedder.name))
    await repository.add_version(session, memory, changed_by="api")
    return WriteOutcome(memory=memory, deduplicated=False)


async def write(
    session: AsyncSession, *, request: MemoryWrite, embedder: EmbeddingProvider, settings: Settings
) -> WriteOutcome:
    """Store one memory, or return the active memory it repeats."""
    _guard_sensitive(request)
    embedding = (await embedder.embed_passages([request.content]))[0]
    return await _store(session, request=request, embedding=embedding, embedder=embedder, settings=settings)


def _parse_item(raw: dict[str, Any]) -> MemoryWrite:
    try:
        request = MemoryWrite.model_validate(raw)
    except ValidationError as error:
        errors = validation_errors(error.errors())
        first = errors[0]
        raise _ItemRejected(
            problem_body(
                type="/problems/validation",
                title="Validation failed",
                status=422,
                detail=f"{'.'.join(first['loc']) or 'item'}: {first['msg']}",
                errors=errors,
            )
        ) from error
    try:
        _guard_sensitive(request)
    except AppError as error:
        raise _ItemRejected(problem_of(error)) from error
    return request


class _ItemRejected(Exception):
    def __init__(self, problem: dict[str, Any]) -> None:
        super().__init__(problem["detail"])
        self.problem = problem


async def write_batch(
    session: AsyncSession, *, items: list[dict[str, Any]], embedder: EmbeddingProvider, settings: Settings
) -> list[BatchItemResult]:
    """Write items in order; a rejected item is reported and rejects nothing else."""
    parsed: dict[int, MemoryWrite] = {}
    results: dict[int, BatchItemResult] = {}
    for index, raw in enumerate(items):
        try:
            parsed[index] = _parse_item(raw)
        except _ItemRejected as rejected:
            results[index] = BatchItemResult(index=index, status=rejected.problem["status"], error=rejected.problem)
    embeddings = await embedder.embed_passages([request.content for request in parsed.values()])
    for (index, request), embedding in zip(parsed.items(), embeddings, strict=True):
        # Each item in its own savepoint: a failure rolls back that item only.
        async with session.begin_nested():
            outcome = await _store(session, request=request, embedding=embedding, embedder=embedder, settings=settings)
        results[index] = BatchItemResult(
            index=index,
            status=200 if outcome.deduplicated else 201,
            **outcome.response().model_dump(),
        )
    return [results[index] for index in range(len(items))]


async def _existing(session: AsyncSession, memory_id: UUID) -> Memory:
    memory = await repository.get(session, memory_id)
    if memory is None:
        raise NotFound(f"no memory with id {memory_id}")
    return memory


async def detail(session: AsyncSession, *, memory_id: UUID) -> MemoryDetail:
    """A memory with its full history, its supersede chain both ways, and its relations."""
    memory = await _existing(session, memory_id)
    return MemoryDetail(
        memory=MemoryOut.of(memory),
        versions=[VersionOut.model_validate(version, from_attributes=True) for version in await repository.versions(session, memory_id)],
        supersedes=[MemoryOut.of(older) for older in await repository.chain(session, memory_id, direction="back")],
        superseded_by=[MemoryOut.of(newer) for newer in await repository.chain(session, memory_id, direction="forward")],
        relations=[RelationOut(type=kind, memory_id=other) for kind, other in await repository.relations(session, memory_id)],
    )


async def forget(session: AsyncSession, *, memory_id: UUID) -> None:
    """Soft delete: the memory leaves search but stays readable with its history."""
    memory = await repository.get(session, memory_id, for_update=True)
    if memory is None:
        raise NotFound(f"no memory with id {memory_id}")
    if memory.status != "deleted":
        await repository.set_status(session, memory, status="deleted", changed_by="api")


async def recent(session: AsyncSession, *, n: int, namespace: str | None) -> list[RecentMemory]:
    memories = await repository.recent(session, n=n, namespace=namespace)
    return [
        RecentMemory(
            **MemoryOut.of(memory).model_dump(),
            chain=[older.id for older in await repository.chain(session, memory.id, direction="back")],
        )
        for memory in memories
    ]
