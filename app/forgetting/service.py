"""Forgetting that forgets: purging a memory's text from everywhere it lives, erasing a namespace.

A purge deletes the memory's row (versions, relations, working items go with it by foreign
key), deletes the merges built from it (their other inputs hold again: what remains of the
merge), blanks the judgements about it, and replaces its every text (current and past
versions) by `[purged]` wherever the namespace quotes it: judge prompts and answers of other
judgements, events, lessons (re-embedded), reviews, jobs, other memories' hints and metadata.
A memory that quotes it word for word (a session summary) is a copy and is purged too. Texts
shorter than `forget_quote_min_chars` are too common to hunt as quotes: only what points to
the memory by id is erased for them. What stays is an `erasures` row: id, namespace, who, when,
counts."""

import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.auth import Access
from app.core.errors import NotFound
from app.core.settings import Settings
from app.embeddings.provider import EmbeddingProvider
from app.forgetting import repository
from app.forgetting.repository import ERASE_JOB
from app.forgetting.schemas import ErasureOut
from app.jobs.runner import JobContext, JobRunner, handler
from app.memories import repository as memories
from app.memories.records import content_hash
from app.models import Job, Memory, Reflection
from app.namespaces.tracking import mark_written

MASK = "[purged]"


def requester(access: Access) -> str:
    """Who asked: the key's fingerprint, never the key; `open` when no keys are configured."""
    return access.principal or "open"


def needles(texts: Sequence[str], *, min_chars: int) -> list[str]:
    """Each text as it may be quoted: verbatim, and as it reads inside a JSON string once or
    twice (a judge prompt is JSON holding JSON), longest first so a longer form goes whole."""
    found: set[str] = set()
    for text in texts:
        if len(text) < min_chars:
            continue
        once = json.dumps(text, ensure_ascii=False)[1:-1]
        found |= {text, once, json.dumps(once, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1]}
    return sorted(found, key=len, reverse=True)


def redact_json(value: Any, quotes: Sequence[str]) -> Any:
    """The same JSON with every quote replaced in every string, keys included."""
    if isinstance(value, str):
        for quote in quotes:
            value = value.replace(quote, MASK)
        return value
    if isinstance(value, list):
        return [redact_json(item, quotes) for item in value]
    if isinstance(value, dict):
        return {redact_json(key, quotes): redact_json(item, quotes) for key, item in value.items()}
    return value


def _redact_answer(body: bytes, quotes: Sequence[str]) -> bytes:
    """A stored answer replayed for a repeated Idempotency-Key: the same JSON, quotes redacted."""
    text = body.decode("utf-8", errors="replace")
    try:
        return json.dumps(redact_json(json.loads(text), quotes), ensure_ascii=False, separators=(",", ":")).encode()
    except ValueError:
        return redact_json(text, quotes).encode()


async def _restore_merge_inputs(session: AsyncSession, merges: set[UUID], *, purged: set[UUID], tag: str) -> list[UUID]:
    """A merge purged for quoting the memory: what it had merged with holds again."""
    restored = []
    for memory in await repository.merge_inputs(session, merges, exclude=purged):
        memory.status = "active"
        memory.superseded_by = None
        await memories.save_change(session, memory, changed_by=tag)
        restored.append(memory.id)
    return restored


async def _release_held(session: AsyncSession, purged: set[UUID], *, tag: str) -> list[UUID]:
    """A memory held uncertain only by a judgement against a purged one stands on its own again."""
    released = []
    for memory in await repository.held_back(session, await repository.dismiss_pending_about(session, purged)):
        memory.status = "active"
        await memories.save_change(session, memory, changed_by=tag)
        released.append(memory.id)
    return released


async def _reembed_lessons(session: AsyncSession, lessons: list[Reflection], embedder: EmbeddingProvider) -> None:
    """A redacted lesson's vector and hash follow its new text (a handful of rows at most)."""
    if not lessons:
        return
    for lesson in lessons:
        await session.refresh(lesson)
    vectors = await embedder.embed_passages([lesson.lesson for lesson in lessons])
    for lesson, vector in zip(lessons, vectors, strict=True):
        lesson.embedding = vector
        lesson.embedding_model = embedder.name
        lesson.lesson_hash = content_hash(lesson.lesson)
    await session.flush()


async def _erase_quotes(
    session: AsyncSession, *, namespace: str, quotes: list[str], embedder: EmbeddingProvider
) -> dict[str, int]:
    counts: dict[str, int] = {}
    if not quotes:
        return counts
    lessons = await repository.lessons_quoting(session, namespace=namespace, needles=quotes)
    counts.update(await repository.redact_text_columns(session, namespace=namespace, needles=quotes, mask=MASK))
    for model, column, key, value in await repository.json_rows_quoting(session, namespace=namespace, needles=quotes):
        await repository.write_json(session, model, column, key, redact_json(value, quotes))
        name = f"{model.__tablename__}.{column}"
        counts[name] = counts.get(name, 0) + 1
    for caller, key, body in await repository.answers_quoting(session, quotes):
        await repository.write_answer(session, caller=caller, key=key, body=_redact_answer(body, quotes))
        counts["idempotency_keys.body"] = counts.get("idempotency_keys.body", 0) + 1
    await _reembed_lessons(session, lessons, embedder)
    if dropped := await repository.drop_quoting_working_items(session, namespace=namespace, needles=quotes):
        counts["working_items"] = dropped
    return counts


async def purge(
    session: AsyncSession, *, memory_id: UUID, access: Access, embedder: EmbeddingProvider, settings: Settings
) -> ErasureOut:
    """Erase a memory's text everywhere; a second purge of the same id answers the same tombstone."""
    memory = await memories.get(session, memory_id)
    if memory is None:
        tombstone = await repository.erasure_of_memory(session, memory_id)
        if tombstone is None:
            raise NotFound(f"no memory with id {memory_id}")
        access.check(tombstone.namespace)
        return ErasureOut.of(tombstone)
    access.check(memory.namespace)
    namespace = memory.namespace
    # Writers and revisions of the namespace wait: none may quote the memory while it goes.
    await memories.lock_namespace(session, namespace)
    erasure = await repository.add_erasure(
        session, kind="memory", namespace=namespace, memory_id=memory_id, requested_by=requester(access)
    )
    merges = await repository.lineage(session, {memory_id}) - {memory_id}
    texts = await repository.texts_of(session, {memory_id} | merges)
    quotes = needles(sorted(texts), min_chars=settings.forget_quote_min_chars)
    purged = {memory_id} | merges
    purged |= await repository.quoting_memories(session, namespace=namespace, needles=quotes, exclude=purged)
    counts: dict[str, int] = {}
    restored = await _restore_merge_inputs(session, merges, purged=purged, tag=f"purge:{erasure.id}")
    restored += await _release_held(session, purged, tag=f"purge:{erasure.id}")
    counts["revision_log.blanked"] = await repository.blank_revisions_of(session, purged)
    counts |= await _erase_quotes(session, namespace=namespace, quotes=quotes, embedder=embedder)
    counts["conversation_messages"] = await repository.drop_messages_of(session, namespace=namespace, memory_ids=purged)
    counts["memory_versions.links"] = await repository.unlink_history(session, namespace=namespace, memory_ids=purged)
    counts["memories"] = await repository.delete_memories(session, purged)
    erasure.counts = {**counts, "restored": len(restored)}
    erasure.finished_at = datetime.now(timezone.utc)
    await session.flush()
    mark_written(session, [namespace])
    return ErasureOut.of(erasure, purged=sorted(purged - {memory_id}), restored=restored)


async def erasures(session: AsyncSession, *, namespace: str, access: Access, limit: int) -> list[ErasureOut]:
    access.check(namespace)
    return [ErasureOut.of(erasure) for erasure in await repository.erasures(session, namespace=namespace, limit=limit)]


async def start_erasing(jobs: JobRunner, *, namespace: str, access: Access) -> Job:
    """Erase a namespace as a job (batches, progress); its result is the audit record."""
    access.check(namespace)
    return await jobs.submit(
        kind=ERASE_JOB, namespace=namespace, params={"namespace": namespace, "requested_by": requester(access)}
    )


@handler(ERASE_JOB)
async def run_erase(job: JobContext) -> dict[str, Any]:
    """Delete the namespace's rows table by table, in batches, each batch its own transaction.
    Idempotent: a run taken over after a crash deletes what is left. Passes repeat until one
    finds nothing, so writes that raced the first pass go too."""
    namespace = job.params["namespace"]
    sessions = job.state.sessionmaker
    batch = job.state.settings.forget_batch_size
    async with sessions.begin() as session:
        erasure = await repository.erasure_of_job(session, job.job_id) or await repository.add_erasure(
            session, kind="namespace", namespace=namespace, requested_by=job.params["requested_by"], job_id=job.job_id
        )
        remaining = await repository.namespace_counts(session, namespace=namespace)
    total = sum(remaining.values())
    done = 0
    counts: dict[str, int] = defaultdict(int)
    await job.progress(0, total)
    for _ in range(3):
        deleted_in_pass = 0
        for model in repository.NAMESPACED:
            while True:
                async with sessions.begin() as session:
                    # The writers' lock, a batch at a time: no write or revision of the namespace
                    # sees rows vanish under it, and none waits for the whole erasure.
                    await memories.lock_namespace(session, namespace)
                    deleted, hashes = await repository.delete_batch(session, model, namespace=namespace, limit=batch)
                    counts["event_payloads"] += await repository.delete_orphan_payloads(session, hashes)
                    if model is Memory:
                        mark_written(session, [namespace])
                counts[model.__tablename__] += deleted
                done += deleted
                deleted_in_pass += deleted
                total = max(total, done)
                await job.progress(done, total)
                if deleted < batch:
                    break
        if not deleted_in_pass:
            break
    async with sessions.begin() as session:
        counts["idempotency_keys"] += await repository.drop_answers_of(session, namespace)
        erasure = await repository.get_erasure(session, erasure.id)
        erasure.counts = dict(counts)
        erasure.finished_at = datetime.now(timezone.utc)
    return {"erasure": ErasureOut.of(erasure).model_dump(mode="json")}
