"""Business rules of reflections: record a task's events, review an ended task into lessons,
merge or contradict lessons, recall them, and adjust confidence by feedback and decay."""

import json
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any
from uuid import UUID

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.auth import Access
from app.core.errors import Conflict, NotFound
from app.core.settings import Settings
from app.embeddings.provider import EmbeddingProvider
from app.memories import repository as memories
from app.memories.records import content_hash
from app.memories.sensitive import find_sensitive, refuse_sensitive, refuse_sensitive_off_loop
from app.models import Memory, Reflection, TaskEvent, TaskReview
from app.namespaces.tracking import mark_written
from app.recall.scoring import recency
from app.reflections import repository
from app.reflections.lessons import admitted, after_feedback, opposite, seen_again_confidence, stronger_path
from app.reflections.report import markdown
from app.reflections.reviewers import Draft, Reviewer, distinct, nothing_learned
from app.reflections.schemas import (
    DecayReport,
    EventsRequest,
    EventsResponse,
    LessonHit,
    LessonOut,
    LessonScores,
    LessonSearch,
    LessonSearchResponse,
    LessonWrite,
    ReviewOut,
    StoredEvent,
    TaskEvents,
)
from app.reflections.tasks import Task, clip, full_text, triggers


@dataclass(frozen=True, slots=True)
class Origin:
    """Whose lesson it is and where it came from."""

    namespace: str
    agent_role: str | None
    domain: str | None
    occurred_at: datetime
    source_task_id: str | None = None


def _now() -> datetime:
    return datetime.now(timezone.utc)


# ---------------------------------------------------------------- events


def _event_rows(request: EventsRequest, *, first_seq: int, field_limit: int) -> tuple[list[TaskEvent], dict[str, str]]:
    """Rows for the posted events (and the task's end), long fields clipped; the full texts by hash."""
    now = _now()
    posted: list[tuple[str, datetime | None, dict[str, Any]]] = [
        (event.type, event.at, event.model_dump(mode="json", exclude={"type", "at"}, exclude_none=True))
        for event in request.events
    ]
    if request.task_end is not None:
        posted.append(("task_end", None, request.task_end.model_dump(mode="json", exclude_none=True)))
    rows, full_texts = [], {}
    for offset, (kind, at, payload) in enumerate(posted):
        clipped, was_clipped = clip(payload, field_limit)
        digest = None
        if was_clipped:
            text, digest = full_text(payload)
            full_texts[digest] = text
        rows.append(
            TaskEvent(
                namespace=request.namespace,
                task_id=request.task_id,
                seq=first_seq + offset,
                session_id=request.session_id,
                agent_role=request.agent_role,
                domain=request.domain,
                task_type=request.task_type,
                type=kind,
                payload=clipped,
                payload_hash=digest,
                at=at or now,
            )
        )
    return rows, full_texts


async def _stored(session: AsyncSession, *, namespace: str, task_id: str) -> list[tuple[TaskEvent, dict[str, Any]]]:
    """The task's events in order, each with its payload in full."""
    rows = await repository.task_events(session, namespace=namespace, task_id=task_id)
    return [(row, json.loads(text) if text is not None else row.payload) for row, text in rows]


def _latest(values: list[str | None]) -> str | None:
    return next((value for value in reversed(values) if value is not None), None)


def _task(namespace: str, task_id: str, stored: list[tuple[TaskEvent, dict[str, Any]]]) -> Task:
    rows = [row for row, _ in stored]
    return Task(
        namespace=namespace,
        task_id=task_id,
        task_type=_latest([row.task_type for row in rows]),
        agent_role=_latest([row.agent_role for row in rows]),
        domain=_latest([row.domain for row in rows]),
        events=[{"seq": row.seq, "type": row.type, **payload} for row, payload in stored if row.type != "task_end"],
        end=next((payload for row, payload in stored if row.type == "task_end"), None),
    )


async def record_events(
    session: AsyncSession, *, request: EventsRequest, settings: Settings, embedder: EmbeddingProvider, reviewer: Reviewer
) -> EventsResponse:
    """Store the events; when the task ends and a review trigger holds, review it into lessons."""
    # Every field is returned by GET /v1/events and may reach a lesson: all of it is guarded.
    await refuse_sensitive_off_loop(request, what="the events")
    await memories.lock_namespace(session, f"task:{request.namespace}:{request.task_id}")
    next_seq, ended = await repository.task_state(session, namespace=request.namespace, task_id=request.task_id)
    if ended:
        raise Conflict(f"task {request.task_id} has already ended; its events can no longer change")
    rows, full_texts = _event_rows(request, first_seq=next_seq, field_limit=settings.event_field_max_chars)
    await repository.keep_payloads(session, full_texts)
    await repository.add_events(session, rows)
    accepted = len(request.events)
    if request.task_end is None:
        return EventsResponse(accepted=accepted, lessons=[])
    stored = await _stored(session, namespace=request.namespace, task_id=request.task_id)
    task = _task(request.namespace, request.task_id, stored)
    reasons = triggers(task, min_steps=settings.review_min_steps)
    if not reasons:
        return EventsResponse(accepted=accepted, lessons=[])
    review = await reviewer.review(task)
    origin = Origin(
        namespace=task.namespace,
        agent_role=task.agent_role,
        domain=task.domain,
        occurred_at=rows[-1].at,
        source_task_id=task.task_id,
    )
    drafts = [safe for draft in distinct(review.items) if (safe := _without_secrets(draft)) is not None]
    lessons = await _learn_all(session, drafts, origin=origin, settings=settings, embedder=embedder)
    note = review.note if lessons else nothing_learned(task, review)
    await repository.add_review(
        session,
        TaskReview(
            namespace=task.namespace,
            task_id=task.task_id,
            triggers=reasons,
            reviewer=review.decided_by,
            lesson_ids=[str(lesson.id) for lesson, _ in lessons],
            llm_prompt=review.prompt,
            llm_response=review.response,
            note=note,
        ),
    )
    return EventsResponse(
        accepted=accepted,
        lessons=[LessonOut.of(lesson) for lesson, _ in lessons],
        review=ReviewOut(triggers=reasons, reviewer=review.decided_by, note=note),
    )


async def replay(session: AsyncSession, *, namespace: str, task_id: str) -> TaskEvents:
    """A task's events in order, as they were sent."""
    stored = await _stored(session, namespace=namespace, task_id=task_id)
    if not stored:
        raise NotFound(f"no events for task {task_id} in {namespace}")
    return TaskEvents(
        namespace=namespace,
        task_id=task_id,
        events=[
            StoredEvent(seq=row.seq, type=row.type, at=row.at, session_id=row.session_id, payload=payload)
            for row, payload in stored
        ],
    )


# ---------------------------------------------------------------- lessons

_WITHHELD = "(withheld: it held sensitive data)"


def _without_secrets(draft: Draft) -> Draft | None:
    """A reviewer's lesson as it may be stored: its situation, action and outcome copy tool
    arguments and error texts (and an LLM may write anything), so a part holding sensitive data
    is withheld; a lesson whose own text holds some is dropped."""
    if find_sensitive(draft.lesson):
        return None
    parts = {name: _WITHHELD for name in ("situation", "action", "outcome") if find_sensitive(getattr(draft, name))}
    return replace(draft, **parts) if parts else draft



def _new_lesson(draft: Draft, *, origin: Origin, embedding: np.ndarray, model: str) -> Reflection:
    return Reflection(
        namespace=origin.namespace,
        situation=draft.situation,
        action=draft.action,
        outcome=draft.outcome,
        attribution=draft.attribution,
        lesson=draft.lesson,
        lesson_hash=content_hash(draft.lesson),
        scope=draft.scope,
        path_type=draft.path_type,
        agent_role=origin.agent_role,
        domain=origin.domain,
        confidence=draft.confidence,
        status="observing",
        embedding=embedding,
        embedding_model=model,
        source_task_id=origin.source_task_id,
        occurred_at=origin.occurred_at,
    )


def _seen_again(lesson: Reflection, draft: Draft, *, origin: Origin, settings: Settings) -> Reflection:
    lesson.occurrences += 1
    lesson.confidence = seen_again_confidence(
        max(lesson.confidence, draft.confidence), lesson.occurrences, cap=settings.feedback_confidence_cap
    )
    lesson.occurred_at = max(lesson.occurred_at, origin.occurred_at)
    lesson.updated_at = _now()
    lesson.path_type = stronger_path(lesson.path_type, draft.path_type)
    if lesson.status == "deprecated":
        lesson.status = "observing"  # seen again: it competes anew, and the newest wins again
    return lesson


def _link(lesson: Reflection, other: Reflection) -> None:
    known = lesson.metadata_.get("conflicts_with", [])
    if str(other.id) not in known:
        lesson.metadata_ = {**lesson.metadata_, "conflicts_with": [*known, str(other.id)]}
    lesson.conflict_flag = True


def _admit_and_settle(lesson: Reflection, opposed: list[Reflection], settings: Settings) -> None:
    """Admit the lesson if it has earned it; flag its contradictions, and once it is active,
    deprecate them: the newest admitted lesson wins."""
    if lesson.status == "observing" and admitted(lesson, settings):
        lesson.status = "active"
    for older in opposed:
        _link(lesson, older)
        _link(older, lesson)
        if lesson.status == "active":
            older.status = "deprecated"
            older.updated_at = _now()


async def _learn(
    session: AsyncSession, draft: Draft, embedding: np.ndarray, *, origin: Origin, settings: Settings, model: str
) -> tuple[Reflection, bool]:
    """Store a lesson, or merge it into the one it repeats; (lesson, merged)."""
    owner = {"namespace": origin.namespace, "scope": draft.scope, "agent_role": origin.agent_role, "domain": origin.domain}
    near = await repository.nearest_in_scope(
        session,
        **owner,
        embedding=embedding,
        model=model,
        min_similarity=min(settings.lesson_conflict_similarity, settings.lesson_dedup_similarity),
    )
    exact = await repository.find_by_hash(session, **owner, lesson_hash=content_hash(draft.lesson))
    close = [(lesson, similarity) for lesson, similarity in near if lesson is not exact]
    if exact is not None:
        close.insert(0, (exact, 1.0))
    opposed = [
        lesson
        for lesson, similarity in close
        if similarity >= settings.lesson_conflict_similarity and opposite(draft.lesson, lesson.lesson)
    ]
    target = next(
        (lesson for lesson, similarity in close if similarity >= settings.lesson_dedup_similarity and lesson not in opposed),
        None,
    )
    if target is not None:
        lesson = _seen_again(target, draft, origin=origin, settings=settings)
    else:
        lesson = await repository.add_lesson(session, _new_lesson(draft, origin=origin, embedding=embedding, model=model))
    _admit_and_settle(lesson, opposed, settings)
    await session.flush()
    return lesson, target is not None


async def _learn_all(
    session: AsyncSession, drafts: list[Draft], *, origin: Origin, settings: Settings, embedder: EmbeddingProvider
) -> list[tuple[Reflection, bool]]:
    if not drafts:
        return []
    await memories.lock_namespace(session, f"lessons:{origin.namespace}")
    embeddings = await embedder.embed_passages([draft.lesson for draft in drafts])
    return [
        await _learn(session, draft, embedding, origin=origin, settings=settings, model=embedder.name)
        for draft, embedding in zip(drafts, embeddings, strict=True)
    ]


async def write_lesson(
    session: AsyncSession, *, request: LessonWrite, settings: Settings, embedder: EmbeddingProvider
) -> tuple[Reflection, bool]:
    """Store a lesson written by hand or by the agent; (lesson, merged into an existing one)."""
    refuse_sensitive(request, what="the lesson")
    draft = Draft(**request.model_dump(include=set(Draft.__dataclass_fields__)))
    origin = Origin(
        namespace=request.namespace,
        agent_role=request.agent_role,
        domain=request.domain,
        occurred_at=request.occurred_at or _now(),
        source_task_id=request.source_task_id,
    )
    [learned] = await _learn_all(session, [draft], origin=origin, settings=settings, embedder=embedder)
    return learned


async def get_lesson(session: AsyncSession, *, lesson_id: UUID, access: Access, for_update: bool = False) -> Reflection:
    lesson = await repository.get_lesson(session, lesson_id, for_update=for_update)
    if lesson is None:
        raise NotFound(f"no lesson with id {lesson_id}")
    access.check(lesson.namespace)
    return lesson


def _hit(lesson: Reflection, similarity: float, *, at: datetime, settings: Settings) -> LessonHit:
    scores = LessonScores(
        similarity=similarity,
        confidence=lesson.confidence,
        recency=recency(said_at=lesson.occurred_at, at=at, decay_per_hour=settings.lesson_recency_lambda_per_hour),
        hit_penalty=lesson.hit_penalty,
    )
    score = (
        settings.lesson_weight_similarity * scores.similarity
        + settings.lesson_weight_confidence * scores.confidence
        + settings.lesson_weight_recency * scores.recency
        - settings.lesson_weight_hit_penalty * scores.hit_penalty
    )
    return LessonHit(**LessonOut.of(lesson).model_dump(), score=round(score, 6), scores=scores)


async def search(
    session: AsyncSession, *, request: LessonSearch, settings: Settings, embedder: EmbeddingProvider
) -> LessonSearchResponse:
    """Active lessons in scope, ranked by the weighted score; verified as recommendations,
    falsified as warnings. The hits count as recalled."""
    at = _now()
    candidates = await repository.recall_candidates(
        session,
        namespace=request.namespace,
        scopes=request.all_scopes,
        agent_role=request.agent_role,
        domain=request.domain,
        embedding=await embedder.embed_query(request.query),
        model=embedder.name,
        limit=settings.lesson_search_candidates,
    )
    scored = (_hit(lesson, similarity, at=at, settings=settings) for lesson, similarity in candidates)
    hits = sorted(scored, key=lambda hit: hit.score, reverse=True)[: request.top_k]
    await repository.record_hits(
        session,
        [hit.id for hit in hits],
        at=at,
        penalty_after=settings.lesson_penalty_after_hits,
        penalty_step=settings.lesson_penalty_step,
    )
    observing = await repository.count_observing(
        session, namespace=request.namespace, scopes=request.all_scopes, agent_role=request.agent_role, domain=request.domain
    )
    return LessonSearchResponse(
        recommendations=[hit for hit in hits if hit.path_type != "falsified"],
        warnings=[hit for hit in hits if hit.path_type == "falsified"],
        observing=observing,
    )


async def lesson_feedback(
    session: AsyncSession, *, lesson_id: UUID, useful: bool, settings: Settings, access: Access
) -> Reflection:
    """Useful +step, not useful -larger step, capped; useful also clears the hit penalty."""
    lesson = await get_lesson(session, lesson_id=lesson_id, access=access, for_update=True)
    lesson.confidence = after_feedback(lesson.confidence, useful=useful, settings=settings)
    if useful:
        lesson.useful_count += 1
        lesson.hit_penalty = 0.0
    lesson.last_used_at = lesson.updated_at = _now()
    if lesson.status == "observing":  # feedback may lift it over the admission threshold
        opposed = await repository.get_lessons(session, [UUID(other) for other in lesson.metadata_.get("conflicts_with", [])])
        _admit_and_settle(lesson, [other for other in opposed if other.status != "deprecated"], settings)
    await session.flush()
    return lesson


async def memory_feedback(
    session: AsyncSession, *, memory_id: UUID, useful: bool, settings: Settings, access: Access
) -> Memory:
    """Feedback moves a memory's confidence, which the search rerank weighs: a ranking signal,
    so neither a new version nor anything a rollback must undo."""
    memory = await memories.get(session, memory_id)
    if memory is None:
        raise NotFound(f"no memory with id {memory_id}")
    access.check(memory.namespace)
    step = settings.feedback_useful_step if useful else settings.feedback_not_useful_step
    memory = await memories.adjust_confidence(session, memory, useful=useful, step=step, cap=settings.feedback_confidence_cap)
    mark_written(session, [memory.namespace])  # cached searches ranked it with the old confidence
    return memory


async def decay(session: AsyncSession, *, namespace: str | None, settings: Settings) -> DecayReport:
    """One step down for lessons unused for the idle period; never deletes."""
    decayed = await repository.decay(
        session,
        namespace=namespace,
        at=_now(),
        idle=timedelta(days=settings.lesson_decay_after_days),
        step=settings.lesson_decay_step,
        batch=settings.lesson_decay_batch,
    )
    return DecayReport(decayed=decayed, more=decayed >= settings.lesson_decay_batch)


async def report(session: AsyncSession, *, namespace: str) -> str:
    """The namespace's lessons as Markdown, by scope."""
    return markdown(namespace, await repository.lessons_of(session, namespace))
