"""Extracting keyed memories from stored messages, window by window: rules (rules.py) or an
LLM (llm.py), written through the normal write path. Each window's writes and its messages'
`extracted_by` mark commit together, so a rerun extracts only what is left."""

from datetime import datetime, timezone
from typing import Any

from app.conversations import llm, repository, rules
from app.conversations.messages import Message, Progress, Runtime
from app.conversations.schemas import ConversationWrite, ExtractedMemory, Extraction
from app.core.auth import OPEN
from app.core.settings import Settings
from app.memories import repository as memories
from app.memories import service as writes


def _write_item(
    request: ConversationWrite,
    message: Message,
    *,
    content: str,
    key: str,
    query_hint: str | None,
    memory_type: str,
    confidence: float,
    extractor: str,
    **source: Any,
) -> dict[str, Any]:
    return {
        "namespace": request.namespace,
        "content": content,
        "key": key,
        "query_hint": query_hint,
        "memory_type": memory_type,
        "confidence": confidence,
        "created_at": message.at.isoformat(),
        "source": {
            "kind": message.kind,
            "message_id": message.message_id,
            "session_id": request.session_id,
            "extractor": extractor,
            **source,
        },
    }


def _by_rules(
    request: ConversationWrite, window: list[Message], settings: Settings
) -> list[tuple[Message, dict[str, Any]]]:
    found = []
    for message in window:
        for fact in rules.extract(
            message.content, from_user=message.role == "user", max_chars=settings.extraction_rule_max_chars
        ):
            item = _write_item(
                request,
                message,
                content=fact.content,
                key=f"{request.namespace}:user:{fact.key}",
                query_hint=fact.query_hint,
                memory_type="semantic",
                confidence=settings.extraction_rule_confidence,
                extractor="rules",
                evidence=fact.evidence[:300],
            )
            found.append((message, item))
    return found


async def _by_llm(
    runtime: Runtime, request: ConversationWrite, window: list[Message], extraction: Extraction
) -> tuple[str, list[tuple[Message, dict[str, Any]]]]:
    settings, model = runtime.settings, runtime.settings.llm_model
    assert model is not None
    async with runtime.sessions() as session:
        keys = await repository.known_keys(
            session, namespace=request.namespace, limit=settings.extraction_llm_known_keys
        )
        await session.commit()
    said = (
        " ".join(message.content for message in window if message.role == "user")[: settings.embedding_max_chars]
        or window[-1].content
    )
    probe = await runtime.context.embedder.embed_query(said)
    async with runtime.sessions() as session:
        near = await memories.nearest_active(
            session,
            namespace=request.namespace,
            embedding=probe,
            limit=settings.extraction_llm_nearest_memories,
            memory_types=["semantic"],
        )
        await session.commit()
    answer = await llm.extract(
        model=model,
        namespace=request.namespace,
        window=[llm.WindowMessage(m.message_id, m.role, m.content, m.at.isoformat()) for m in window],
        known_keys=keys,
        nearest=[
            {"key": memory.key, "value": memory.content, "at": memory.created_at.isoformat()} for memory, _ in near
        ],
        max_chars=settings.max_content_chars,
        timeout_seconds=settings.llm_timeout_seconds,
        retries=settings.llm_retries,
    )
    if answer.error is not None:
        extraction.notes.append(
            f"llm:{model} gave no usable answer ({answer.error}); rules extracted messages {window[0].index}-{window[-1].index}"
        )
        return "rules", _by_rules(request, window, settings)
    extraction.dropped_malformed_keys += answer.malformed_keys
    extraction.dropped_invalid += answer.invalid
    by_id = {message.message_id: message for message in window}
    found = []
    for item in answer.items:
        message = by_id[item.message_id]  # type: ignore[index]  (checked by llm.extract)
        found.append(
            (
                message,
                _write_item(
                    request,
                    message,
                    content=item.value,
                    key=item.key,
                    query_hint=item.query,
                    memory_type=item.memory_type,
                    confidence=item.confidence,
                    extractor=f"llm:{model}",
                ),
            )
        )
    return f"llm:{model}", found


async def extract(
    runtime: Runtime,
    request: ConversationWrite,
    messages: list[Message],
    mode: str,
    progress: Progress,
    done: int,
    total: int,
) -> Extraction:
    """Extract keyed memories from the messages not extracted yet, window by window; each
    window's writes and its messages' marks commit together. Progress counts on from `done`."""
    settings = runtime.settings
    extraction = Extraction(
        extractor="none" if mode == "none" else ("rules" if mode == "rules" else f"llm:{settings.llm_model}")
    )
    if mode == "none":
        return extraction
    async with runtime.sessions() as session:
        known = await repository.known(
            session,
            namespace=request.namespace,
            session_id=request.session_id,
            message_ids=[m.message_id for m in messages],
        )
        await session.commit()
    pending = [m for m in messages if m.message_id in known and known[m.message_id].extracted_by is None]
    done += len(messages) - len(pending)
    size = settings.extraction_llm_window_messages if mode == "llm" else settings.conversation_chunk_messages
    for start in range(0, len(pending), size):
        window = pending[start : start + size]
        if mode == "llm":
            extractor, found = await _by_llm(runtime, request, window, extraction)
        else:
            extractor, found = "rules", _by_rules(request, window, settings)
        async with runtime.sessions() as session:
            results = (
                await writes.write_batch(
                    session, items=[item for _, item in found], context=runtime.context, access=OPEN
                )
                if found
                else []
            )
            await repository.mark_extracted(
                session,
                namespace=request.namespace,
                session_id=request.session_id,
                message_ids=[m.message_id for m in window],
                by=extractor,
                at=datetime.now(timezone.utc),
            )
            await session.commit()
        for (message, item), result in zip(found, results, strict=True):
            extraction.memories.append(
                ExtractedMemory(
                    message_id=message.message_id,
                    key=item["key"],
                    content=item["content"],
                    status=result.status,
                    memory_id=result.memory.id if result.memory else None,
                    deduplicated=result.deduplicated,
                    revisions=result.revisions,
                    problem=result.error,
                )
            )
        done += len(window)
        await progress(done, total)
    return extraction
