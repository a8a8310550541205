"""What an agent should know before a turn: the session's working memory, recalled long-term
memories (dated, with what they replaced) and lessons, packed under a token budget."""

from collections.abc import Callable
from datetime import datetime, timezone

from sqlalchemy.ext.asyncio import AsyncSession

from app.context import packing
from app.context.packing import Candidate
from app.context.schemas import ContextPart, ContextRequest, ContextResponse, Replaced
from app.core.dependencies import Sessions
from app.core.replica import Reads
from app.core.settings import Settings
from app.embeddings.provider import EmbeddingProvider
from app.memories import repository as memories
from app.models import Memory, WorkingItem
from app.recall import service as recall
from app.recall.cache import SearchCache
from app.recall.schemas import SearchHit, SearchRequest
from app.reflections import service as reflections
from app.reflections.schemas import LessonHit, LessonSearch
from app.working import service as working
from app.working.compression import SPEAKERS


def _one_line(text: str) -> str:
    return " ".join(text.split())


def working_line(item: WorkingItem) -> str:
    return f"- [{SPEAKERS[item.kind]}, {item.at:%Y-%m-%d %H:%M}] {_one_line(item.content)}"


def memory_line(memory: Memory | SearchHit, replaced: Memory | None = None) -> str:
    """A recalled memory as the context shows it: its date, its text, and what it replaced."""
    record = memory.memory if isinstance(memory, SearchHit) else memory
    line = f"- {record.created_at:%Y-%m-%d}: {_one_line(record.content)}"
    if replaced is not None:
        line += f' (replaces "{_one_line(replaced.content)}" from {replaced.created_at:%Y-%m-%d})'
    return line


def lesson_line(lesson: LessonHit, *, warning: bool) -> str:
    return f"- {'Avoid' if warning else 'Do'}: {_one_line(lesson.lesson)} ({lesson.scope})"


async def _working(
    session: AsyncSession, request: ContextRequest, settings: Settings, now: datetime
) -> list[Candidate]:
    if request.session_id is None:
        return []
    found = []
    for namespace in request.all_namespaces:
        items = await working.held(
            session, namespace=namespace, session_id=request.session_id, settings=settings, now=now
        )
        found += [Candidate("working", str(item.id), working_line(item), item.score, {"item": item}) for item in items]
    return found


async def _memories(
    session: AsyncSession,
    request: ContextRequest,
    *,
    exclude: set[str],
    embedder: EmbeddingProvider,
    settings: Settings,
    reads: Reads,
    sessions: Sessions,
    cache: SearchCache,
    after_answer: Callable[..., None],
) -> list[Candidate]:
    search = SearchRequest(
        query=request.query,
        namespaces=request.all_namespaces,
        top_k=settings.context_memory_candidates,
        record_access=False,
    )
    hits = (
        await recall.search(
            session,
            request=search,
            embedder=embedder,
            settings=settings,
            reads=reads,
            sessions=sessions,
            cache=cache,
            after_answer=after_answer,
        )
    ).hits
    hits = [hit for hit in hits if str(hit.memory.id) not in exclude]  # already in working memory
    older = await memories.get_many(session, [hit.memory.supersedes for hit in hits if hit.memory.supersedes])
    return [
        Candidate(
            "memory",
            str(hit.memory.id),
            memory_line(hit, older.get(hit.memory.supersedes)),
            hit.score,
            {"hit": hit, "replaced": older.get(hit.memory.supersedes)},
        )
        for hit in hits
    ]


async def _lessons(
    session: AsyncSession, request: ContextRequest, *, embedder: EmbeddingProvider, settings: Settings
) -> list[Candidate]:
    if not settings.context_lesson_candidates:
        return []
    found = []
    for namespace in request.all_namespaces:
        asked = LessonSearch(query=request.query, namespace=namespace, top_k=settings.context_lesson_candidates)
        answer = await reflections.search(session, request=asked, settings=settings, embedder=embedder)
        for warning, lessons in ((False, answer.recommendations), (True, answer.warnings)):
            found += [
                Candidate(
                    "lesson",
                    str(hit.id),
                    lesson_line(hit, warning=warning),
                    hit.score,
                    {"lesson": hit, "warning": warning},
                )
                for hit in lessons
            ]
    return found


def _part(candidate: Candidate) -> ContextPart:
    part = ContextPart(
        kind=candidate.kind,
        id=candidate.id,
        text=candidate.text,
        tokens=candidate.tokens,
        score=round(candidate.score, 6),
    )
    if candidate.kind == "working":
        part.at = candidate.payload["item"].at
    elif candidate.kind == "memory":
        hit, replaced = candidate.payload["hit"], candidate.payload["replaced"]
        part.memory, part.at = hit.memory, hit.memory.created_at
        if replaced is not None:
            part.replaces = Replaced(memory_id=replaced.id, content=replaced.content, created_at=replaced.created_at)
    else:
        part.lesson_type = "warning" if candidate.payload["warning"] else "recommendation"
    return part


async def build(
    session: AsyncSession,
    *,
    request: ContextRequest,
    embedder: EmbeddingProvider,
    settings: Settings,
    reads: Reads,
    sessions: Sessions,
    cache: SearchCache,
    after_answer: Callable[..., None],
) -> ContextResponse:
    """Gather the candidates, pack them under the budget, and count what was used as accessed."""
    now = datetime.now(timezone.utc)
    held = await _working(session, request, settings, now)
    in_working = {str(candidate.payload["item"].memory_id) for candidate in held}
    recalled = await _memories(
        session,
        request,
        exclude=in_working,
        embedder=embedder,
        settings=settings,
        reads=reads,
        sessions=sessions,
        cache=cache,
        after_answer=after_answer,
    )
    lessons = await _lessons(session, request, embedder=embedder, settings=settings)
    candidates = held + recalled + lessons
    shares = {"working": settings.context_share_working, "lesson": settings.context_share_lessons}
    text, chosen = packing.pack(
        candidates, budget=request.budget_tokens, shares=shares, tokenizer=settings.context_tokenizer
    )
    if request.record_access:
        await working.used(
            session,
            [candidate.payload["item"].id for candidate in chosen if candidate.kind == "working"],
            settings=settings,
        )
        used_memories = [candidate.payload["hit"].memory.id for candidate in chosen if candidate.kind == "memory"]
        if used_memories:
            after_answer(recall.count_access, sessions, used_memories, at=now)
    omitted = {
        kind: sum(c.kind == kind for c in candidates) - sum(c.kind == kind for c in chosen) for kind in packing.SECTIONS
    }
    return ContextResponse(
        context=text,
        tokens=packing.tokens.count(text, tokenizer=settings.context_tokenizer),
        budget_tokens=request.budget_tokens,
        tokenizer=settings.context_tokenizer,
        parts=[_part(candidate) for candidate in chosen],
        omitted=omitted,
    )
