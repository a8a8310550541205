"""Every SQL statement about task events, task reviews and lessons."""

from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import UUID

import numpy as np
from sqlalchemy import ColumnElement, case, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import EventPayload, Reflection, TaskEvent, TaskReview

# ---------------------------------------------------------------- events


async def task_state(session: AsyncSession, *, namespace: str, task_id: str) -> tuple[int, bool]:
    """(the next event's seq, whether the task has already ended)."""
    statement = select(
        func.coalesce(func.max(TaskEvent.seq), 0), func.coalesce(func.bool_or(TaskEvent.type == "task_end"), False)
    ).where(TaskEvent.namespace == namespace, TaskEvent.task_id == task_id)
    last, ended = (await session.execute(statement)).one()
    return int(last) + 1, bool(ended)


async def keep_payloads(session: AsyncSession, payloads: dict[str, str]) -> None:
    """Store full payload texts by hash; one already stored is the same text."""
    if payloads:
        rows = [{"hash": digest, "full_text": text} for digest, text in payloads.items()]
        await session.execute(pg_insert(EventPayload).values(rows).on_conflict_do_nothing(index_elements=["hash"]))


async def add_events(session: AsyncSession, events: Sequence[TaskEvent]) -> None:
    session.add_all(events)
    await session.flush()


async def task_events(session: AsyncSession, *, namespace: str, task_id: str) -> list[tuple[TaskEvent, str | None]]:
    """The task's events in order, each with its full payload text when the row holds a clipped one."""
    statement = (
        select(TaskEvent, EventPayload.full_text)
        .outerjoin(EventPayload, EventPayload.hash == TaskEvent.payload_hash)
        .where(TaskEvent.namespace == namespace, TaskEvent.task_id == task_id)
        .order_by(TaskEvent.seq)
    )
    return [(event, text) for event, text in (await session.execute(statement)).all()]


async def add_review(session: AsyncSession, review: TaskReview) -> None:
    session.add(review)
    await session.flush()


# ---------------------------------------------------------------- lessons


def _same_owner(namespace: str, scope: str, agent_role: str | None, domain: str | None) -> list[ColumnElement[bool]]:
    return [
        Reflection.namespace == namespace,
        Reflection.scope == scope,
        Reflection.agent_role.is_not_distinct_from(agent_role),
        Reflection.domain.is_not_distinct_from(domain),
    ]


async def find_by_hash(
    session: AsyncSession, *, namespace: str, scope: str, agent_role: str | None, domain: str | None, lesson_hash: str
) -> Reflection | None:
    statement = (
        select(Reflection)
        .where(*_same_owner(namespace, scope, agent_role, domain), Reflection.lesson_hash == lesson_hash)
        .order_by(Reflection.created_at.desc())
        .limit(1)
        .with_for_update()
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def nearest_in_scope(
    session: AsyncSession,
    *,
    namespace: str,
    scope: str,
    agent_role: str | None,
    domain: str | None,
    embedding: np.ndarray,
    model: str,
    min_similarity: float,
) -> list[tuple[Reflection, float]]:
    """Lessons of the same scope and owner at least this close, nearest first, every status;
    lessons embedded with another model are not comparable until re-embedded."""
    similarity = (1 - Reflection.embedding.cosine_distance(embedding)).label("similarity")
    statement = (
        select(Reflection, similarity)
        .where(
            *_same_owner(namespace, scope, agent_role, domain),
            Reflection.embedding_model == model,
            similarity >= min_similarity,
        )
        .order_by(similarity.desc())
        .with_for_update(of=Reflection)
    )
    return [(lesson, float(score)) for lesson, score in (await session.execute(statement)).all()]


async def add_lesson(session: AsyncSession, lesson: Reflection) -> Reflection:
    session.add(lesson)
    await session.flush()
    await session.refresh(lesson)
    return lesson


async def get_lesson(session: AsyncSession, lesson_id: UUID, *, for_update: bool = False) -> Reflection | None:
    statement = select(Reflection).where(Reflection.id == lesson_id)
    if for_update:
        statement = statement.with_for_update()
    return (await session.execute(statement)).scalar_one_or_none()


async def get_lessons(session: AsyncSession, lesson_ids: Sequence[UUID]) -> list[Reflection]:
    if not lesson_ids:
        return []
    return list((await session.execute(select(Reflection).where(Reflection.id.in_(lesson_ids)).with_for_update())).scalars())


async def recall_candidates(
    session: AsyncSession,
    *,
    namespace: str,
    scopes: Sequence[str],
    agent_role: str | None,
    domain: str | None,
    embedding: np.ndarray,
    model: str,
    limit: int,
) -> list[tuple[Reflection, float]]:
    """Active lessons in the scopes (the hard filter) embedded with the model, nearest first."""
    similarity = (1 - Reflection.embedding.cosine_distance(embedding)).label("similarity")
    conditions = [*_recallable(namespace, scopes, agent_role, domain, status="active"), Reflection.embedding_model == model]
    statement = select(Reflection, similarity).where(*conditions).order_by(similarity.desc()).limit(limit)
    return [(lesson, float(score)) for lesson, score in (await session.execute(statement)).all()]


async def count_observing(
    session: AsyncSession, *, namespace: str, scopes: Sequence[str], agent_role: str | None, domain: str | None
) -> int:
    """Lessons a recall with these filters holds back because they are still observing."""
    conditions = _recallable(namespace, scopes, agent_role, domain, status="observing")
    return int(await session.scalar(select(func.count()).select_from(Reflection).where(*conditions)) or 0)


def _recallable(
    namespace: str, scopes: Sequence[str], agent_role: str | None, domain: str | None, *, status: str
) -> list[ColumnElement[bool]]:
    """A recall's filters. A role or domain keeps that agent's lessons and the ones no agent owns."""
    conditions: list[ColumnElement[bool]] = [Reflection.namespace == namespace, Reflection.status == status]
    if scopes:
        conditions.append(Reflection.scope.in_(scopes))
    if agent_role is not None:
        conditions.append(or_(Reflection.agent_role == agent_role, Reflection.agent_role.is_(None)))
    if domain is not None:
        conditions.append(or_(Reflection.domain == domain, Reflection.domain.is_(None)))
    return conditions


async def record_hits(
    session: AsyncSession, lesson_ids: Sequence[UUID], *, at: datetime, penalty_after: int, penalty_step: float
) -> None:
    """Recalled lessons count a hit; a lesson recalled `penalty_after` times or more and never
    found useful takes a growing penalty (capped at 1)."""
    if not lesson_ids:
        return
    hits = Reflection.hit_count + 1
    penalty = case(
        ((Reflection.useful_count == 0) & (hits >= penalty_after), func.least(1.0, Reflection.hit_penalty + penalty_step)),
        else_=Reflection.hit_penalty,
    )
    await session.execute(
        update(Reflection)
        .where(Reflection.id.in_(lesson_ids))
        .values(hit_count=hits, hit_penalty=penalty, last_used_at=at)
        .execution_options(synchronize_session="fetch")
    )


async def decay(
    session: AsyncSession, *, namespace: str | None, at: datetime, idle: timedelta, step: float, batch: int
) -> int:
    """Step down, once per idle period, every lesson neither recalled, useful, seen again nor
    decayed within it; nothing is deleted."""
    last_touched = func.greatest(Reflection.occurred_at, Reflection.last_used_at, Reflection.decayed_at)
    due = select(Reflection.id).where(Reflection.status != "deprecated", Reflection.confidence > 0, last_touched < at - idle)
    if namespace is not None:
        due = due.where(Reflection.namespace == namespace)
    statement = (
        update(Reflection)
        .where(Reflection.id.in_(due.order_by(last_touched).limit(batch).scalar_subquery()))
        .values(confidence=func.greatest(0.0, Reflection.confidence - step), decayed_at=at, updated_at=at)
        .execution_options(synchronize_session="fetch")
    )
    return (await session.execute(statement)).rowcount


async def lessons_of(session: AsyncSession, namespace: str) -> list[Reflection]:
    statement = (
        select(Reflection)
        .where(Reflection.namespace == namespace)
        .order_by(Reflection.scope, Reflection.status, Reflection.confidence.desc(), Reflection.created_at)
    )
    return list((await session.execute(statement)).scalars())
