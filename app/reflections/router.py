from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Path, Query, status
from fastapi.responses import JSONResponse, PlainTextResponse

from app.core.auth import AccessDep
from app.core.database import SessionDep
from app.core.dependencies import EmbedderDep, SettingsDep
from app.core.errors import Conflict, NotFound, VersionConflict, problem_responses
from app.core.links import LESSON, MEMORY, links
from app.core.validation import StorableText
from app.idempotency.middleware import IDEMPOTENT
from app.memories.schemas import MemoryOut, Namespace
from app.reflections import service
from app.reflections.dependencies import ReviewerDep
from app.reflections.schemas import (
    DecayReport,
    EventsRequest,
    EventsResponse,
    LessonFeedback,
    LessonOut,
    LessonResponse,
    LessonSearch,
    LessonSearchResponse,
    LessonWrite,
    LessonWriteResponse,
    MemoryFeedback,
    MemoryFeedbackResponse,
    TaskEvents,
)

router = APIRouter(tags=["reflections"])

# Ids match as UUIDs only (`:uuid`), so `/v1/reflections/search` and `/report` are never taken for ids.
LessonID = Annotated[UUID, Path(description="The lesson's id.")]
LESSON_LINKS = links(LESSON.at("/lesson"))


class MarkdownResponse(PlainTextResponse):
    media_type = "text/markdown"


@router.post(
    "/v1/events",
    response_model=EventsResponse,
    responses={200: links(LESSON.at("/lessons/0")), **problem_responses(Conflict)},
    dependencies=[IDEMPOTENT],
)
async def record_events(
    body: EventsRequest,
    session: SessionDep,
    settings: SettingsDep,
    embedder: EmbedderDep,
    reviewer: ReviewerDep,
    access: AccessDep,
) -> EventsResponse:
    """Record a task's events; at the task's end, review it into lessons if a trigger holds."""
    access.check(body.namespace)
    return await service.record_events(session, request=body, settings=settings, embedder=embedder, reviewer=reviewer)


@router.get("/v1/events", response_model=TaskEvents, responses=problem_responses(NotFound))
async def replay_task(
    session: SessionDep,
    namespace: Annotated[Namespace, Query()],
    task_id: Annotated[StorableText, Query(min_length=1, max_length=200)],
    access: AccessDep,
) -> TaskEvents:
    """A task's events in order, long payloads restored in full, for replay."""
    access.check(namespace)
    return await service.replay(session, namespace=namespace, task_id=task_id)


@router.post(
    "/v1/reflections",
    status_code=status.HTTP_201_CREATED,
    response_model=LessonWriteResponse,
    responses={
        201: LESSON_LINKS,
        200: {
            "model": LessonWriteResponse,
            "description": "Merged into the existing lesson it repeats.",
            **LESSON_LINKS,
        },
    },
    dependencies=[IDEMPOTENT],
)
async def write_lesson(
    body: LessonWrite, session: SessionDep, settings: SettingsDep, embedder: EmbedderDep, access: AccessDep
) -> JSONResponse:
    """Store a lesson; one that repeats an existing lesson is merged into it (200, merged_into)."""
    access.check(body.namespace)
    lesson, merged = await service.write_lesson(session, request=body, settings=settings, embedder=embedder)
    response = LessonWriteResponse(lesson=LessonOut.of(lesson), merged_into=lesson.id if merged else None)
    code = status.HTTP_200_OK if merged else status.HTTP_201_CREATED
    return JSONResponse(response.model_dump(mode="json"), status_code=code)


@router.post("/v1/reflections/search", response_model=LessonSearchResponse)
async def search_lessons(
    body: LessonSearch, session: SessionDep, settings: SettingsDep, embedder: EmbedderDep, access: AccessDep
) -> LessonSearchResponse:
    """Recall active lessons for what the agent is about to do: recommendations and warnings."""
    access.check(body.namespace)
    return await service.search(session, request=body, settings=settings, embedder=embedder)


@router.get("/v1/reflections/report", response_class=MarkdownResponse)
async def lessons_report(
    session: SessionDep, namespace: Annotated[Namespace, Query()], access: AccessDep
) -> MarkdownResponse:
    """The namespace's lessons as Markdown, by scope, with counts, confidence and conflicts."""
    access.check(namespace)
    return MarkdownResponse(await service.report(session, namespace=namespace))


@router.get(
    "/v1/reflections/{lesson_id:uuid}",
    response_model=LessonResponse,
    responses={200: LESSON_LINKS, **problem_responses(NotFound)},
)
async def get_lesson(lesson_id: LessonID, session: SessionDep, access: AccessDep) -> LessonResponse:
    """One lesson."""
    return LessonResponse(lesson=LessonOut.of(await service.get_lesson(session, lesson_id=lesson_id, access=access)))


@router.post(
    "/v1/reflections/{lesson_id:uuid}/feedback",
    response_model=LessonResponse,
    responses={200: LESSON_LINKS, **problem_responses(NotFound)},
    dependencies=[IDEMPOTENT],
)
async def lesson_feedback(
    lesson_id: LessonID, body: LessonFeedback, session: SessionDep, settings: SettingsDep, access: AccessDep
) -> LessonResponse:
    """Say whether a recalled lesson helped: useful raises its confidence, not useful lowers it more."""
    lesson = await service.lesson_feedback(session, lesson_id=lesson_id, useful=body.useful, settings=settings, access=access)
    return LessonResponse(lesson=LessonOut.of(lesson))


@router.post(
    "/v1/memories/{memory_id:uuid}/feedback",
    response_model=MemoryFeedbackResponse,
    responses={200: links(MEMORY.at("/memory")), **problem_responses(NotFound, VersionConflict)},
    dependencies=[IDEMPOTENT],
)
async def memory_feedback(
    memory_id: Annotated[UUID, Path(description="The memory's id.")],
    body: MemoryFeedback,
    session: SessionDep,
    settings: SettingsDep,
    access: AccessDep,
) -> MemoryFeedbackResponse:
    """Say whether a recalled memory helped; its confidence, and so its search rank, follows."""
    memory = await service.memory_feedback(session, memory_id=memory_id, useful=body.useful, settings=settings, access=access)
    return MemoryFeedbackResponse(memory=MemoryOut.of(memory))


@router.post("/v1/maintenance/decay", response_model=DecayReport, dependencies=[IDEMPOTENT])
async def decay_lessons(
    session: SessionDep, settings: SettingsDep, access: AccessDep, namespace: Annotated[Namespace | None, Query()] = None
) -> DecayReport:
    """Step down the confidence of lessons unused for the idle period (30 days); never deletes."""
    access.check(namespace)
    return await service.decay(session, namespace=namespace, settings=settings)
