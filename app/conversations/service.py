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
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from app.conversations import repository
from app.conversations.extraction import extract
from app.conversations.messages import Message, Progress, Runtime, runtime_of
from app.conversations.schemas import ConversationResult, ConversationWrite, MessageOutcome, WorkingOutcome
from app.conversations.schemas import Message as ConversationMessage
from app.core.errors import Conflict, SensitiveContent, Unprocessable, problem_of
from app.core.settings import Settings
from app.embeddings import chunking
from app.embeddings import repository as chunk_vectors
from app.jobs.runner import JobContext, JobRunner, handler
from app.memories import records
from app.memories import repository as memories
from app.memories.sensitive import find_sensitive
from app.models import Job
from app.namespaces.tracking import mark_written
from app.working import service as working

JOB_KIND = "conversation.ingest"


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


def _sensitive_problem(index: int, message: ConversationMessage) -> dict[str, Any] | None:
    """Why a message cannot be stored: sensitive data in any of its stored fields."""
    kind = next(filter(None, (find_sensitive(text or "") for text in (message.content, message.name, message.id))), None)
    if kind is None:
        return None
    return problem_of(SensitiveContent(f"message {index} contains sensitive data ({kind}); it was not stored"))


def _refuse_sensitive_session(request: ConversationWrite) -> None:
    if kind := find_sensitive(request.session_id):
        raise SensitiveContent(f"the session id contains sensitive data ({kind}); nothing was stored")


def _derived_id(role: str, content: str, at: datetime | None, occurrence: int) -> str:
    """A message's id when the client gave none: the same message sent again gets the same id."""
    stamp = at.isoformat() if at else ""
    digest = hashlib.sha256(f"{role}\x1f{content}\x1f{stamp}\x1f{occurrence}".encode()).hexdigest()
    return f"h:{digest[:32]}"


def _prepare(request: ConversationWrite, *, now: datetime, withheld: dict[int, dict[str, Any]]) -> list[Message]:
    """Ids and times for every message; a message holding sensitive data is refused alone
    (`withheld`: refused when the job was submitted, its text never kept)."""
    prepared, seen, previous = [], {}, None
    for index, message in enumerate(request.messages):
        # Without a time, a message follows the one before it (or is said now).
        at = message.at or (previous + timedelta(milliseconds=1) if previous else now)
        previous = at
        signature = (message.role, message.content, message.at)
        occurrence = seen[signature] = seen.get(signature, -1) + 1
        item = Message(
            index=index,
            message_id=message.id or _derived_id(message.role, message.content, message.at, occurrence),
            role=message.role,
            content=message.content,
            at=at,
            name=message.name,
            content_hash=records.content_hash(message.content),
        )
        problem = withheld.get(index) or _sensitive_problem(index, message)
        if problem is not None:
            # The answer (kept as a job's result) must not echo the sensitive text back.
            item.message_id = f"withheld:{index}"
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


def _memory_rows(
    message: Message,
    parts: list[str],
    vectors: list[Any],
    *,
    namespace: str,
    session_id: str,
    model: str,
    now: datetime,
) -> list[dict[str, Any]]:
    rows = []
    for position, (text, vector) in enumerate(zip(parts, vectors, strict=True)):
        source = {
            "kind": message.kind,
            "role": message.role,
            "speaker": message.name or message.role,
            "message_id": message.message_id,
        }
        if len(parts) > 1:
            source["part"] = f"{position + 1}/{len(parts)}"
        rows.append(
            {
                "id": uuid.uuid4(),
                "namespace": namespace,
                "content": text,
                "memory_type": "episodic",
                "embedding": vector,
                "embedding_model": model,
                "session_id": session_id,
                "source": source,
                "created_at": message.at + timedelta(microseconds=position),
                "updated_at": now,
            }
        )
    return rows


async def _store(
    runtime: Runtime, request: ConversationWrite, chunk: list[Message], tally: _Tally, *, now: datetime
) -> None:
    """Store a chunk's new messages as episodic memories and add them to working memory."""
    settings, namespace, session_id = runtime.settings, request.namespace, request.session_id
    async with runtime.sessions() as session:
        known = await repository.known(
            session, namespace=namespace, session_id=session_id, message_ids=[m.message_id for m in chunk]
        )
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
            problem = Conflict(
                f"message id {message.message_id!r} was stored before with other content; it was not stored again"
            )
            message.outcome = MessageOutcome(
                index=message.index, message_id=message.message_id, status="rejected", problem=problem_of(problem)
            )
    parts = {message.message_id: _parts(message.content, settings.max_content_chars) for message in fresh}
    texts = [text for message in fresh for text in parts[message.message_id]]
    embedded = await chunking.embed(
        runtime.context.embedder, texts, max_chars=settings.embedding_max_chars, chunks=settings.embedding_chunks
    )
    vectors, windows = iter(embedded.vectors), iter(embedded.chunks)
    by_message = {message.message_id: [next(vectors) for _ in parts[message.message_id]] for message in fresh}
    windows_of = {message.message_id: [next(windows) for _ in parts[message.message_id]] for message in fresh}

    async with runtime.sessions() as session:
        claimed = await repository.claim(
            session,
            [
                {
                    "namespace": namespace,
                    "session_id": session_id,
                    "message_id": m.message_id,
                    "content_hash": m.content_hash,
                    "role": m.role,
                    "at": m.at,
                }
                for m in fresh
            ],
        )
        rows: dict[str, list[dict[str, Any]]] = {}
        for message in fresh:
            if message.message_id not in claimed:  # a concurrent request stored it a moment ago
                message.outcome = MessageOutcome(
                    index=message.index, message_id=message.message_id, status="already_stored"
                )
                continue
            rows[message.message_id] = _memory_rows(
                message,
                parts[message.message_id],
                by_message[message.message_id],
                namespace=namespace,
                session_id=session_id,
                model=runtime.context.embedder.name,
                now=now,
            )
            message.outcome = MessageOutcome(
                index=message.index,
                message_id=message.message_id,
                status="stored",
                memory_ids=[row["id"] for row in rows[message.message_id]],
            )
        if rows:
            await memories.insert_many(session, [row for message_rows in rows.values() for row in message_rows])
            await chunk_vectors.replace_chunks(
                session,
                {
                    row["id"]: (namespace, part_windows)
                    for message_id, message_rows in rows.items()
                    for row, part_windows in zip(message_rows, windows_of[message_id], strict=True)
                    if len(part_windows)
                },
                model=runtime.context.embedder.name,
            )
            mark_written(session, [namespace])
            await repository.set_memories(
                session,
                namespace=namespace,
                session_id=session_id,
                memory_ids={
                    message_id: [str(row["id"]) for row in message_rows] for message_id, message_rows in rows.items()
                },
            )
        new_items = [
            working.NewItem(
                memory_id=rows[m.message_id][0]["id"],
                message_id=m.message_id,
                kind=working.KIND_OF_ROLE[m.role],
                content=m.content,
                at=m.at,
            )
            for m in fresh
            if m.message_id in rows
        ]
        added = await working.add(
            session, namespace=namespace, session_id=session_id, items=new_items, settings=settings, now=now
        )
        await session.commit()
    tally.working = WorkingOutcome(
        items=added.items,
        tokens=added.tokens,
        budget_tokens=settings.working_budget_tokens,
        evicted=tally.working.evicted + added.evicted,
        summaries=tally.working.summaries,
    )
    if added.evicted:
        tally.working.summaries.extend(
            await working.compress(
                runtime.sessions, namespace=namespace, session_id=session_id, context=runtime.context
            )
        )


async def ingest(
    runtime: Runtime,
    request: ConversationWrite,
    *,
    progress: Progress,
    withheld: dict[int, dict[str, Any]] | None = None,
) -> ConversationResult:
    """Store, extract, update working memory; see the module docstring."""
    settings = runtime.settings
    mode = resolve_mode(request.extract, settings)
    _refuse_sensitive_session(request)
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
    extraction = await extract(runtime, request, kept, mode, progress=progress, done=tally.done, total=total)
    tally.working.summaries.extend(
        await working.compress(
            runtime.sessions, namespace=request.namespace, session_id=request.session_id, context=runtime.context
        )
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
    _refuse_sensitive_session(request)
    if len(request.messages) <= settings.conversation_inline_max_messages:
        return await ingest(runtime, request, progress=_no_progress)
    # A job's parameters are stored: messages refused for sensitive data go in as placeholders.
    withheld = {
        index: problem
        for index, message in enumerate(request.messages)
        if (problem := _sensitive_problem(index, message))
    }
    body = request.model_dump(mode="json")
    for index in withheld:
        body["messages"][index] |= {"id": None, "name": None, "content": "[withheld: sensitive data]"}
    params = {"request": body, "withheld": {str(index): problem for index, problem in withheld.items()}}
    return await jobs.submit(kind=JOB_KIND, namespace=request.namespace, params=params, total=len(request.messages))


@handler(JOB_KIND)
async def run_job(job: JobContext) -> dict[str, Any]:
    """A long conversation, as a job: the same ingest, reporting progress on the job."""
    request = ConversationWrite.model_validate(job.params["request"])
    withheld = {int(index): problem for index, problem in job.params["withheld"].items()}
    runtime = runtime_of(job.state, sessions=job.state.sessionmaker)
    return (await ingest(runtime, request, progress=job.progress, withheld=withheld)).model_dump(mode="json")
