"""A session's working memory (seed 001 3.1): what the conversation said lately, scored.

Each item starts at a base importance by who said it (the user 1.0, the agent 0.6, a tool
0.4: settings), loses a factor (0.95) per turn (a user message opens a turn) and gains 0.1,
up to 1, each time a context uses it. Past the session's token budget the lowest scores are
evicted until the rest fit in 80% of it; evicted items are compressed into one episodic
summary (compression.py) written through the normal write path. Messages older than the
working TTL (`default_ttl_working_seconds`) never enter: an imported history is long-term
memory, not the state of a live session.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import groupby
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.settings import Settings
from app.llm import tokens
from app.memories import service as memories
from app.memories.schemas import MemoryWrite
from app.models import WorkingItem
from app.revisions.service import Context
from app.working import compression, repository
from app.working.schemas import WorkingItemOut, WorkingMemory

KIND_OF_ROLE = {"user": "user", "assistant": "agent", "system": "agent", "tool": "tool"}


@dataclass(frozen=True, slots=True)
class NewItem:
    memory_id: UUID | None
    message_id: str | None
    kind: str  # user | agent | tool
    content: str
    at: datetime


@dataclass(frozen=True, slots=True)
class Added:
    items: int
    tokens: int
    evicted: int


def _importance(kind: str, settings: Settings) -> float:
    return {
        "user": settings.working_importance_user,
        "agent": settings.working_importance_agent,
        "tool": settings.working_importance_tool,
    }[kind]


def live_since(now: datetime, settings: Settings) -> datetime | None:
    """The earliest time still in working memory (None: no TTL)."""
    ttl = settings.default_ttl_working_seconds
    return now - timedelta(seconds=ttl) if ttl else None


async def add(
    session: AsyncSession, *, namespace: str, session_id: str, items: list[NewItem], settings: Settings, now: datetime
) -> Added:
    """Add items (in the order said) to the session's working memory and evict past the budget,
    in the caller's transaction. Evicted items wait for `compress` once it commits."""
    since = live_since(now, settings)
    if since is not None:
        items = [item for item in items if item.at >= since]
    if not items:  # an imported history: nothing for working memory, no session row
        held = await repository.active(session, namespace, session_id, since=since)
        return Added(items=len(held), tokens=sum(item.tokens for item in held), evicted=0)
    turn = start = await repository.lock_session(session, namespace, session_id)
    if since is not None:
        await repository.drop_expired(session, namespace, session_id, before=since)
    rows = []
    for item in items:
        turn += item.kind == "user"
        rows.append(
            {
                "namespace": namespace,
                "session_id": session_id,
                "memory_id": item.memory_id,
                "message_id": item.message_id,
                "kind": item.kind,
                "content": item.content,
                "tokens": tokens.count(item.content, tokenizer=settings.context_tokenizer),
                "importance": _importance(item.kind, settings),
                "turn": turn,
                "at": item.at,
            }
        )
    decay = settings.working_decay_per_turn
    if turn > start:
        await repository.decay(session, namespace, session_id, factor=decay ** (turn - start))
        await repository.set_turn(session, namespace, session_id, turn)
    for row in rows:
        row["score"] = row["importance"] * decay ** (turn - row["turn"])
    await repository.add(session, rows)
    return await _evict(session, namespace=namespace, session_id=session_id, settings=settings, now=now)


async def _evict(session: AsyncSession, *, namespace: str, session_id: str, settings: Settings, now: datetime) -> Added:
    held = await repository.active(session, namespace, session_id)
    total = sum(item.tokens for item in held)
    evicted: list[int] = []
    if total > settings.working_budget_tokens:
        target = settings.working_evict_to * settings.working_budget_tokens
        for item in sorted(held, key=lambda item: (item.score, item.id)):  # lowest first; among equals the oldest
            if total <= target:
                break
            evicted.append(item.id)
            total -= item.tokens
        await repository.evict(session, evicted, at=now)
    return Added(items=len(held) - len(evicted), tokens=total, evicted=len(evicted))


def _groups(items: list[WorkingItem], *, most_source_tokens: int) -> list[list[WorkingItem]]:
    """Evicted items by eviction, each cut into runs whose summary fits one memory."""
    groups = []
    for _, evicted_together in groupby(items, key=lambda item: item.evicted_at):
        run: list[WorkingItem] = []
        size = 0
        for item in evicted_together:
            if run and size + item.tokens > most_source_tokens:
                groups.append(run)
                run, size = [], 0
            run.append(item)
            size += item.tokens
        groups.append(run)
    return groups


async def compress(sessions, *, namespace: str, session_id: str, context: Context) -> list[UUID]:
    """Summarise the session's evicted items into episodic memories, one per eviction (cut to
    fit a memory); each summary is stored and its items removed in one transaction, so a crash
    in between leaves them for the next call. The summaries' ids."""
    settings = context.settings
    async with sessions() as session:
        pending = await repository.evicted(session, namespace, session_id)
        await session.commit()
    # A summary of at most max_content_chars characters, at no fewer than one character a token.
    most_source = int(settings.compression_min_ratio * settings.max_content_chars / 4)
    written: list[UUID] = []
    for group in _groups(pending, most_source_tokens=most_source):
        said = [
            compression.Said(kind=item.kind, content=item.content, at=item.at, importance=item.importance)
            for item in group
        ]
        summary = await compression.summarise(said, session_id=session_id, settings=settings)
        request = MemoryWrite(
            namespace=namespace,
            content=summary.content[: settings.max_content_chars],
            memory_type="episodic",
            session_id=session_id,
            created_at=summary.end,
            query_hint=f"what happened in session {session_id} between {summary.start:%Y-%m-%d %H:%M} and {summary.end:%Y-%m-%d %H:%M}",
            source={
                "kind": "agent",
                "compressor": summary.method,
                "summary_of": [item.message_id for item in group if item.message_id],
            },
            metadata={
                "summary": {
                    "from": summary.start.isoformat(),
                    "to": summary.end.isoformat(),
                    "items": len(group),
                    "source_tokens": summary.source_tokens,
                    "tokens": summary.tokens,
                    "ratio": summary.ratio,
                    "note": summary.note,
                }
            },
        )
        async with sessions() as session:
            outcome = await memories.write(session, request=request, context=context)
            if await repository.remove(session, [item.id for item in group]) != len(group):
                await session.rollback()  # another process compressed these first
                continue
            await session.commit()
        written.append(outcome.memory.id)
    return written


async def held(
    session: AsyncSession, *, namespace: str, session_id: str, settings: Settings, now: datetime
) -> list[WorkingItem]:
    """The session's items in working memory now, most important first."""
    return await repository.active(session, namespace, session_id, since=live_since(now, settings))


async def current(
    session: AsyncSession, *, namespace: str, session_id: str, settings: Settings, now: datetime
) -> WorkingMemory:
    items = await held(session, namespace=namespace, session_id=session_id, settings=settings, now=now)
    return WorkingMemory(
        namespace=namespace,
        session_id=session_id,
        items=[WorkingItemOut.of(item) for item in items],
        tokens=sum(item.tokens for item in items),
        budget_tokens=settings.working_budget_tokens,
    )


async def used(session: AsyncSession, item_ids: list[int], *, settings: Settings) -> None:
    """Items a context included count as accessed: their importance rises."""
    await repository.touch(session, item_ids, boost=settings.working_access_boost)
