"""What each viewer page shows, and the actions its forms take: the same services as the API,
so a change made in the viewer is the change the API would make (versions, revisions, guard)."""

from collections import defaultdict
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.auth import Access
from app.core.errors import AppError, NotFound
from app.embeddings.provider import EmbeddingProvider
from app.forgetting import service as forgetting
from app.core.settings import Settings
from app.memories import service as memories
from app.memories.trust import kind_of, trust_of
from app.recall import service as recall
from app.recall.schemas import SearchRequest, SearchResponse
from app.reflections import service as reflections
from app.revisions import operations
from app.revisions.schemas import InvalidateRequest, ReviseRequest
from app.revisions.service import Context
from app.ui import repository


@dataclass
class NamespaceSummary:
    namespace: str
    by_status: dict[str, int]
    by_type: dict[str, int]
    total: int
    pending: int


async def overview(session: AsyncSession, access: Access) -> dict[str, Any]:
    """Namespaces with counts by status and type, recent writes and revisions."""
    summaries: dict[str, NamespaceSummary] = {}
    pending = await repository.pending_counts(session, access)
    for namespace, status, memory_type, count in await repository.namespace_counts(session, access):
        summary = summaries.setdefault(
            namespace, NamespaceSummary(namespace, defaultdict(int), defaultdict(int), 0, pending.get(namespace, 0))
        )
        summary.by_status[status] += count
        summary.by_type[memory_type] += count
        summary.total += count
    return {
        "namespaces": list(summaries.values()),
        "recent": await repository.recent_memories(session, access, namespace=None, limit=10),
        "revisions": await repository.recent_revisions(session, access, namespace=None, status=None, limit=10),
    }


async def search(
    session: AsyncSession,
    *,
    query: str,
    namespace: str,
    embedder: EmbeddingProvider,
    settings: Any,
    reads: Any,
    sessions: Any,
    cache: Any,
) -> SearchResponse:
    """The real search, with `explain`, as the API answers it (the viewer's look counts as no access)."""
    request = SearchRequest(query=query, namespace=namespace, top_k=10, explain=True, record_access=False)
    return await recall.search(
        session,
        request=request,
        embedder=embedder,
        settings=settings,
        reads=reads,
        sessions=sessions,
        cache=cache,
        after_answer=lambda *args, **kwargs: None,
    )


async def memory_page(session: AsyncSession, *, memory_id: UUID, access: Access, settings: Settings) -> dict[str, Any]:
    detail = await memories.detail(session, memory_id=memory_id, access=access)
    revisions = await repository.revisions_touching(session, memory_id)
    ids = (
        {r.new_memory_id for r in revisions}
        | {r.old_memory_id for r in revisions}
        | {r.merged_memory_id for r in revisions}
    )
    ids |= {relation.memory_id for relation in detail.relations}
    others = await repository.memories_by_id(session, {i for i in ids if i is not None})
    return {
        "detail": detail,
        "revisions": revisions,
        "others": others,
        "namespace": detail.memory.namespace,
        "kind": kind_of(detail.memory.source),
        "trust": trust_of(detail.memory.source, settings),
    }


async def pending(session: AsyncSession, *, namespace: str | None, access: Access) -> dict[str, Any]:
    revisions = await repository.recent_revisions(
        session, access, namespace=namespace, status="pending", limit=repository.LISTED
    )
    ids = {r.new_memory_id for r in revisions} | {r.old_memory_id for r in revisions}
    return {
        "revisions": revisions,
        "others": await repository.memories_by_id(session, {i for i in ids if i is not None}),
    }


def _message(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors())
    return error.detail if isinstance(error, AppError) else str(error)


@dataclass
class Runtime:
    session: AsyncSession
    access: Access
    context: Context


async def act(runtime: Runtime, *, action: str, target: UUID, form: dict[str, str]) -> tuple[bool, str]:
    """Run one form's action in a savepoint: (done, what to tell the viewer). A refused action
    (stale version, sensitive text, out of scope ...) changes nothing and says why."""
    session, access, context = runtime.session, runtime.access, runtime.context
    try:
        async with session.begin_nested():
            if action == "revise":
                version = form.get("expected_version", "")  # a form sends text; the API's model takes integers only
                body = ReviseRequest.model_validate(
                    {
                        "content": form.get("content", ""),
                        "expected_version": int(version) if version.isdigit() and len(version) < 10 else version,
                        "reason": form.get("reason") or None,
                    }
                )
                memory, _ = await operations.revise(
                    session,
                    memory_id=target,
                    content=body.content,
                    expected_version=body.expected_version,
                    reason=body.reason,
                    context=context,
                    access=access,
                )
                return True, f"Revised: now version {memory.version}."
            if action == "invalidate":
                body = InvalidateRequest.model_validate({"reason": form.get("reason", "")})
                await operations.invalidate(
                    session, memory_id=target, reason=body.reason, context=context, access=access
                )
                return True, "Invalidated: it was never right."
            if action == "forget":
                await memories.forget(session, memory_id=target, access=access)
                return True, "Forgotten (soft delete: history kept)."
            if action == "purge":
                erased = await forgetting.purge(
                    session, memory_id=target, access=access, embedder=context.embedder, settings=context.settings
                )
                return True, f"Purged: its text is gone everywhere; tombstone {erased.id}."
            if action in ("useful", "not-useful"):
                await reflections.memory_feedback(
                    session, memory_id=target, useful=action == "useful", settings=context.settings, access=access
                )
                return True, "Feedback noted."
            if action in ("apply", "dismiss"):
                await operations.resolve_pending(
                    session, revision_id=target, accept=action == "apply", context=context, access=access
                )
                return True, "Applied." if action == "apply" else "Dismissed."
            if action == "rollback":
                await operations.rollback(session, revision_id=target, context=context, access=access)
                return True, "Rolled back."
            if action in ("lesson-useful", "lesson-not-useful"):
                await reflections.lesson_feedback(
                    session,
                    lesson_id=target,
                    useful=action == "lesson-useful",
                    settings=context.settings,
                    access=access,
                )
                return True, "Feedback noted."
    except (AppError, ValidationError) as error:
        return False, _message(error)
    raise NotFound(f"no action {action!r}")
