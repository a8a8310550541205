"""Remembering a conversation: every message kept verbatim as an episodic memory, keyed facts
extracted from it through the normal write path, and the session's working memory updated.

A message is identified within its session by the client's id, or by a hash of its role,
content and time; its row in conversation_messages is claimed with the unique index before its
memory is written, so re-sending (or two requests racing) stores it once. Work runs in chunks,
each its own short transaction with embedding and LLM calls outside it, and is idempotent:
a job that ran again after its process died skips what was stored and what was extracted.
"""

import hashlib
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.auth import OPEN
from app.core.errors import Conflict, SensitiveContent, Unprocessable, problem_of
from app.core.settings import Settings
from app.conversations import llm, repository, rules
from app.conversations.schemas import (
    ConversationResult,
    ConversationWrite,
    ExtractedMemory,
    Extraction,
    MessageOutcome,
    WorkingOutcome,
)
from app.jobs.runner import JobContext, JobRunner, handler
from app.memories import records
from app.memories import repository as memories
from app.memories import service as writes
from app.memories.sensitive import find_sensitive
from app.models import Job
from app.recall.cache import mark_written
from app.recall.lexical import lexemes
from app.revisions.dependencies import context_of
from app.revisions.service import Context
from app.working import service as working

Sessions = Callable[[], AbstractAsyncContextManager[AsyncSession]]
Progress = Callable[[int, int | None], Awaitable[None]]
JOB_KIND = "conversation.ingest"
# source.kind of what a message says (issue 12 gives it a trust weight).
SOURCE_KIND = {"user": "user", "assistant": "agent", "system": "agent", "tool": "tool"}


@dataclass(frozen=True, slots=True)
class Runtime:
    sessions: Sessions  # each step opens one, commits, and closes it
    context: Context  # the revision context: judge, embedder, settings

    @property
    def settings(self) -> Settings:
        return self.context.settings


def runtime_of(state: Any, *, sessions: Sessions) -> Runtime:
    return Runtime(sessions=sessions, context=context_of(state))


@dataclass(slots=True)
class _Message:
    index: int
    message_id: str
    role: str
    content: str
    at: datetime
    name: str | None
    content_hash: str
    outcome: MessageOutcome | None = None

    @property
    def kind(self) -> str:
        return SOURCE_KIND[self.role]


@dataclass(slots=True)
class _Tally:
    working: WorkingOutcome
    done: int = 0
    summaries: list[uuid.UUID] = field(default_factory=list)


def resolve_mode(requested: str, settings: Settings) -> str:
    """`rules`, `llm` or `none`; asking for the LLM without one configured is refused."""
    if requested == "llm" and not settings.llm_model:
        raise Unprocessable("extract=llm needs an LLM (HINDSIGHT_LLM_MODEL); use rules or auto")
    if requested == "auto":
        return "llm" if settings.llm_model else "rules"
    return requested


def _sensitive_problem(index: int, content: str) -> dict[str, Any] | None:
    kind = find_sensitive(content)
    if kind is None:
        return None
    return problem_of(SensitiveContent(f"message {index} contains sensitive data ({kind}); it was not stored"))


def _derived_id(role: str, content: str, at: datetime | None, occurrence: int) -> str:
    """A message's id when the client gave none: the same message sent again gets the same id."""
    stamp = at.isoformat() if at else ""
    digest = hashlib.sha256(f"{role}\x1f{content}\x1f{stamp}\x1f{occurrence}".encode()).hexdigest()
    return f"h:{digest[:32]}"


def _prepare(request: ConversationWrite, *, now: datetime, withheld: dict[int, dict[str, Any]]) -> list[_Message]:
    """Ids and times for every message; a message holding sensitive data is refused alone
    (`withheld`: refused when the job was submitted, its text never kept)."""
    prepared, seen, previous = [], {}, None
    for index, message in enumerate(request.messages):
        # Without a time, a message follows the one before it (or is said now).
        at = message.at or (previous + timedelta(milliseconds=1) if previous else now)
        previous = at
        signature = (message.role, message.content, message.at)
        occurrence = seen[signature] = seen.get(signature, -1) + 1
        item = _Message(
            index=index,
            message_id=message.id or _derived_id(message.role, message.content, message.at, occurrence),
            role=message.role,
            content=message.content,
            at=at,
            name=message.name,
            content_hash=records.content_hash(message.content),
        )
        problem = withheld.get(index) or _sensitive_problem(index, message.content)
        if problem is not None:
            item.outcome = MessageOutcome(index=index, message_id=item.message_id, status="rejected", problem=problem)
        prepared.append(item)
    return prepared


def _parts(content: str, limit: int) -> list[str]:
    """A message longer than a memory may be, cut at whitespace into consecutive parts."""
    parts = []
    while len(content) > limit:
        cut = content.rfind(" ", limit // 2, limit)
        cut = cut if cut > 0 else limit
        parts.append(content[:cut])
        content = content[cut:].lstrip()
    return [*parts, content] if content else parts


def _memory_rows(message: _Message, parts: list[str], vectors: list[Any], *, namespace: str, session_id: str, model: str, now: datetime) -> list[dict[str, Any]]:
    rows = []
    for position, (text, vector) in enumerate(zip(parts, vectors, strict=True)):
        source = {"kind": message.kind, "role": message.role, "speaker": message.name or message.role, "message_id": message.message_id}
        if len(parts) > 1:
            source["part"] = f"{position + 1}/{len(parts)}"
        rows.append(
            {
                "id": uuid.uuid4(),
                "namespace": namespace,
                "content": text,
                "content_hash": records.content_hash(text),
                "memory_type": "episodic",
                "embedding": vector,
                "embedding_model": model,
                "embedding_dim": len(vector),
                "session_id": session_id,
                "source": source,
                "created_at": message.at + timedelta(microseconds=position),
                "updated_at": now,
                "lexeme_text": " ".join(lexemes(text)),
            }
        )
    return rows


async def _store(runtime: Runtime, request: ConversationWrite, chunk: list[_Message], tally: _Tally, *, now: datetime) -> None:
    """Store a chunk's new messages as episodic memories and add them to working memory."""
    settings, namespace, session_id = runtime.settings, request.namespace, request.session_id
    async with runtime.sessions() as session:
        known = await repository.known(session, namespace=namespace, session_id=session_id, message_ids=[m.message_id for m in chunk])
        await session.commit()
    fresh = []
    for message in chunk:
        row = known.get(message.message_id)
        if row is None:
            fresh.append(message)
        elif row.content_hash == message.content_hash:
            message.outcome = MessageOutcome(
                index=message.index, message_id=message.message_id, status="already_stored", memory_ids=row.memory_ids
            )
        else:
            problem = Conflict(f"message id {message.message_id!r} was stored before with other content; it was not stored again")
            message.outcome = MessageOutcome(index=message.index, message_id=message.message_id, status="rejected", problem=problem_of(problem))
    parts = {message.message_id: _parts(message.content, settings.max_content_chars) for message in fresh}
    texts = [text for message in fresh for text in parts[message.message_id]]
    vectors = iter(await runtime.context.embedder.embed_passages(texts)) if texts else iter(())
    by_message = {message.message_id: [next(vectors) for _ in parts[message.message_id]] for message in fresh}

    async with runtime.sessions() as session:
        claimed = await repository.claim(
            session,
            [
                {"namespace": namespace, "session_id": session_id, "message_id": m.message_id, "content_hash": m.content_hash, "role": m.role, "at": m.at}
                for m in fresh
            ],
        )
        rows: dict[str, list[dict[str, Any]]] = {}
        for message in fresh:
            if message.message_id not in claimed:  # a concurrent request stored it a moment ago
                message.outcome = MessageOutcome(index=message.index, message_id=message.message_id, status="already_stored")
                continue
            rows[message.message_id] = _memory_rows(
                message, parts[message.message_id], by_message[message.message_id],
                namespace=namespace, session_id=session_id, model=runtime.context.embedder.name, now=now,
            )
            message.outcome = MessageOutcome(
                index=message.index, message_id=message.message_id, status="stored", memory_ids=[row["id"] for row in rows[message.message_id]]
            )
        if rows:
            await memories.insert_many(session, [row for message_rows in rows.values() for row in message_rows])
            mark_written(session, [namespace])
            await repository.set_memories(
                session, namespace=namespace, session_id=session_id,
                memory_ids={message_id: [str(row["id"]) for row in message_rows] for message_id, message_rows in rows.items()},
            )
        new_items = [
            working.NewItem(memory_id=rows[m.message_id][0]["id"], message_id=m.message_id, kind=working.KIND_OF_ROLE[m.role], content=m.content, at=m.at)
            for m in fresh
            if m.message_id in rows
        ]
        added = await working.add(session, namespace=namespace, session_id=session_id, items=new_items, settings=settings, now=now)
        await session.commit()
    tally.working = WorkingOutcome(
        items=added.items, tokens=added.tokens, budget_tokens=settings.working_budget_tokens,
        evicted=tally.working.evicted + added.evicted, summaries=tally.working.summaries,
    )
    if added.evicted:
        tally.working.summaries.extend(await working.compress(runtime.sessions, namespace=namespace, session_id=session_id, context=runtime.context))


def _write_item(request: ConversationWrite, message: _Message, *, content: str, key: str, query_hint: str | None,
                memory_type: str, confidence: float, extractor: str, **source: Any) -> dict[str, Any]:
    return {
        "namespace": request.namespace,
        "content": content,
        "key": key,
        "query_hint": query_hint,
        "memory_type": memory_type,
        "confidence": confidence,
        "created_at": message.at.isoformat(),
        "source": {"kind": message.kind, "message_id": message.message_id, "session_id": request.session_id, "extractor": extractor, **source},
    }


def _by_rules(request: ConversationWrite, window: list[_Message], settings: Settings) -> list[tuple[_Message, dict[str, Any]]]:
    found = []
    for message in window:
        for fact in rules.extract(message.content, from_user=message.role == "user", max_chars=settings.extraction_rule_max_chars):
            item = _write_item(
                request, message, content=fact.content, key=f"{request.namespace}:user:{fact.key}", query_hint=fact.query_hint,
                memory_type="semantic", confidence=settings.extraction_rule_confidence, extractor="rules", evidence=fact.evidence[:300],
            )
            found.append((message, item))
    return found


async def _by_llm(runtime: Runtime, request: ConversationWrite, window: list[_Message], extraction: Extraction) -> tuple[str, list[tuple[_Message, dict[str, Any]]]]:
    settings, model = runtime.settings, runtime.settings.llm_model
    assert model is not None
    async with runtime.sessions() as session:
        keys = await repository.known_keys(session, namespace=request.namespace, limit=settings.extraction_llm_known_keys)
        await session.commit()
    said = " ".join(message.content for message in window if message.role == "user")[: settings.embedding_max_chars] or window[-1].content
    probe = await runtime.context.embedder.embed_query(said)
    async with runtime.sessions() as session:
        near = await memories.nearest_active(
            session, namespace=request.namespace, embedding=probe, limit=settings.extraction_llm_nearest_memories, memory_types=["semantic"]
        )
        await session.commit()
    answer = await llm.extract(
        model=model,
        namespace=request.namespace,
        window=[llm.WindowMessage(m.message_id, m.role, m.content, m.at.isoformat()) for m in window],
        known_keys=keys,
        nearest=[{"key": memory.key, "value": memory.content, "at": memory.created_at.isoformat()} for memory, _ in near],
        max_chars=settings.max_content_chars,
        timeout_seconds=settings.llm_timeout_seconds,
        retries=settings.llm_retries,
    )
    if answer.error is not None:
        extraction.notes.append(f"llm:{model} gave no usable answer ({answer.error}); rules extracted messages {window[0].index}-{window[-1].index}")
        return "rules", _by_rules(request, window, settings)
    extraction.dropped_malformed_keys += answer.malformed_keys
    extraction.dropped_invalid += answer.invalid
    by_id = {message.message_id: message for message in window}
    found = []
    for item in answer.items:
        message = by_id[item.message_id]  # type: ignore[index]  (checked by llm.extract)
        found.append(
            (message, _write_item(request, message, content=item.value, key=item.key, query_hint=item.query,
                                  memory_type=item.memory_type, confidence=item.confidence, extractor=f"llm:{model}"))
        )
    return f"llm:{model}", found


async def _extract(runtime: Runtime, request: ConversationWrite, messages: list[_Message], mode: str, tally: _Tally, progress: Progress, total: int) -> Extraction:
    """Extract keyed memories from the messages not extracted yet, window by window; each
    window's writes and its messages' marks commit together."""
    settings = runtime.settings
    extraction = Extraction(extractor="none" if mode == "none" else ("rules" if mode == "rules" else f"llm:{settings.llm_model}"))
    if mode == "none":
        return extraction
    async with runtime.sessions() as session:
        known = await repository.known(session, namespace=request.namespace, session_id=request.session_id, message_ids=[m.message_id for m in messages])
        await session.commit()
    pending = [m for m in messages if m.message_id in known and known[m.message_id].extracted_by is None]
    tally.done += len(messages) - len(pending)
    size = settings.extraction_llm_window_messages if mode == "llm" else settings.conversation_chunk_messages
    for start in range(0, len(pending), size):
        window = pending[start : start + size]
        if mode == "llm":
            extractor, found = await _by_llm(runtime, request, window, extraction)
        else:
            extractor, found = "rules", _by_rules(request, window, settings)
        async with runtime.sessions() as session:
            results = await writes.write_batch(session, items=[item for _, item in found], context=runtime.context, access=OPEN) if found else []
            await repository.mark_extracted(
                session, namespace=request.namespace, session_id=request.session_id,
                message_ids=[m.message_id for m in window], by=extractor, at=datetime.now(timezone.utc),
            )
            await session.commit()
        for (message, item), result in zip(found, results, strict=True):
            extraction.memories.append(
                ExtractedMemory(
                    message_id=message.message_id, key=item["key"], content=item["content"], status=result.status,
                    memory_id=result.memory.id if result.memory else None, deduplicated=result.deduplicated,
                    revisions=result.revisions, problem=result.error,
                )
            )
        tally.done += len(window)
        await progress(tally.done, total)
    return extraction


async def ingest(
    runtime: Runtime, request: ConversationWrite, *, progress: Progress, withheld: dict[int, dict[str, Any]] | None = None
) -> ConversationResult:
    """Store, extract, update working memory; see the module docstring."""
    settings = runtime.settings
    mode = resolve_mode(request.extract, settings)
    now = datetime.now(timezone.utc)
    prepared = _prepare(request, now=now, withheld=withheld or {})
    accepted = [message for message in prepared if message.outcome is None]
    total = len(accepted) * (1 if mode == "none" else 2)
    tally = _Tally(working=WorkingOutcome(items=0, tokens=0, budget_tokens=settings.working_budget_tokens, evicted=0))
    await progress(0, total)
    for start in range(0, len(accepted), settings.conversation_chunk_messages):
        chunk = accepted[start : start + settings.conversation_chunk_messages]
        await _store(runtime, request, chunk, tally, now=now)
        tally.done += len(chunk)
        await progress(tally.done, total)
    kept = [message for message in accepted if message.outcome is not None and message.outcome.status != "rejected"]
    extraction = await _extract(runtime, request, kept, mode, tally, progress, total)
    tally.working.summaries.extend(
        await working.compress(runtime.sessions, namespace=request.namespace, session_id=request.session_id, context=runtime.context)
    )
    outcomes = [message.outcome for message in prepared if message.outcome is not None]
    return ConversationResult(
        namespace=request.namespace,
        session_id=request.session_id,
        received=len(prepared),
        stored=sum(outcome.status == "stored" for outcome in outcomes),
        already_stored=sum(outcome.status == "already_stored" for outcome in outcomes),
        rejected=sum(outcome.status == "rejected" for outcome in outcomes),
        messages=outcomes,
        extraction=extraction,
        working=tally.working,
    )


async def _no_progress(done: int, total: int | None) -> None:
    return None


async def remember(runtime: Runtime, request: ConversationWrite, *, jobs: JobRunner) -> ConversationResult | Job:
    """A short conversation is remembered at once; a long one becomes a job (returned queued)."""
    settings = runtime.settings
    resolve_mode(request.extract, settings)  # refuse what cannot run before accepting it
    if len(request.messages) <= settings.conversation_inline_max_messages:
        return await ingest(runtime, request, progress=_no_progress)
    # A job's parameters are stored: messages refused for sensitive data go in as placeholders.
    withheld = {
        index: problem for index, message in enumerate(request.messages) if (problem := _sensitive_problem(index, message.content))
    }
    body = request.model_dump(mode="json")
    for index in withheld:
        body["messages"][index]["content"] = "[withheld: sensitive data]"
    params = {"request": body, "withheld": {str(index): problem for index, problem in withheld.items()}}
    return await jobs.submit(kind=JOB_KIND, namespace=request.namespace, params=params, total=len(request.messages))


@handler(JOB_KIND)
async def run_job(job: JobContext) -> dict[str, Any]:
    """A long conversation, as a job: the same ingest, reporting progress on the job."""
    request = ConversationWrite.model_validate(job.params["request"])
    withheld = {int(index): problem for index, problem in job.params["withheld"].items()}
    runtime = runtime_of(job.state, sessions=job.state.sessionmaker)
    return (await ingest(runtime, request, progress=job.progress, withheld=withheld)).model_dump(mode="json")
