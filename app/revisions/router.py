from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Path, Query

from app.core.auth import AccessDep
from app.core.database import SessionDep
from app.core.dependencies import RecentLimitDep
from app.core.errors import Conflict, NotFound, SensitiveContent, Unprocessable, VersionConflict, problem_responses
from app.core.links import MEMORY, REVISION, links
from app.idempotency.middleware import IDEMPOTENT
from app.memories.schemas import MemoryOut, Namespace
from app.revisions import operations
from app.revisions.dependencies import RevisionContextDep
from app.revisions.schemas import (
    InvalidateRequest,
    InvalidateResponse,
    ReviewRequest,
    ReviewResponse,
    ReviseRequest,
    ReviseResponse,
    RevisionDebug,
    RevisionDebugList,
    RevisionList,
    RevisionOut,
    RevisionStatus,
    RollbackResponse,
)

router = APIRouter(tags=["revisions"])

RevisionID = Annotated[UUID, Path(description="The revision's id.")]
# Deciding on a revision: it may be missing, already decided, or its memories changed meanwhile.
DECISION_PROBLEMS = problem_responses(NotFound, Conflict, VersionConflict)
LISTED_REVISION_LINKS = links(REVISION.at("/revisions/0"))


@router.post(
    "/v1/memories/{memory_id:uuid}/revise",
    response_model=ReviseResponse,
    responses={
        200: links(MEMORY.at("/memory"), REVISION.at("/revision")),
        **problem_responses(NotFound, Conflict, VersionConflict, Unprocessable, SensitiveContent),
    },
    dependencies=[IDEMPOTENT],
)
async def revise_memory(
    memory_id: Annotated[UUID, Path()],
    body: ReviseRequest,
    session: SessionDep,
    context: RevisionContextDep,
    access: AccessDep,
) -> ReviseResponse:
    """Correct a memory's content; 409 if `expected_version` is not its current version."""
    memory, revision = await operations.revise(
        session,
        memory_id=memory_id,
        content=body.content,
        expected_version=body.expected_version,
        reason=body.reason,
        context=context,
        access=access,
    )
    return ReviseResponse(memory=MemoryOut.of(memory), revision=RevisionOut.of(revision))


@router.post(
    "/v1/memories/{memory_id:uuid}/invalidate",
    response_model=InvalidateResponse,
    responses={
        200: links(MEMORY.at("/memory"), REVISION.at("/revision")),
        **problem_responses(NotFound, Conflict, VersionConflict, Unprocessable, SensitiveContent),
    },
    dependencies=[IDEMPOTENT],
)
async def invalidate_memory(
    memory_id: Annotated[UUID, Path()],
    body: InvalidateRequest,
    session: SessionDep,
    context: RevisionContextDep,
    access: AccessDep,
) -> InvalidateResponse:
    """Mark a memory as never right: it leaves search, keeps its history and the reason, and
    what it replaced holds again; roll the returned revision back to undo."""
    memory, revision, restored = await operations.invalidate(
        session, memory_id=memory_id, reason=body.reason, context=context, access=access
    )
    return InvalidateResponse(
        memory=MemoryOut.of(memory), revision=RevisionOut.of(revision), restored=[MemoryOut.of(m) for m in restored]
    )


@router.post(
    "/v1/review",
    response_model=ReviewResponse,
    responses={200: LISTED_REVISION_LINKS, **problem_responses(VersionConflict)},
    dependencies=[IDEMPOTENT],
)
async def review_namespace(
    body: ReviewRequest, session: SessionDep, context: RevisionContextDep, access: AccessDep
) -> ReviewResponse:
    """Scan a namespace's recent memories for inconsistencies with older ones, in one batch."""
    access.check(body.namespace)
    revisions, checked = await operations.review(
        session, namespace=body.namespace, since=body.since, limit=body.limit, context=context
    )
    return ReviewResponse(revisions=[RevisionOut.of(revision) for revision in revisions], checked=checked)


@router.get("/v1/revisions", response_model=RevisionList, responses={200: LISTED_REVISION_LINKS})
async def list_revisions(
    session: SessionDep,
    access: AccessDep,
    namespace: Annotated[Namespace | None, Query()] = None,
    status: RevisionStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=1_000)] = 100,
) -> RevisionList:
    """Revisions, newest first; `status=pending` lists the judgements waiting for a decision."""
    access.check(namespace)
    revisions = await operations.listing(session, namespace=namespace, status=status, limit=limit)
    return RevisionList(revisions=[RevisionOut.of(revision) for revision in revisions])


@router.post(
    "/v1/revisions/{revision_id:uuid}/apply",
    response_model=RevisionOut,
    responses={200: links(REVISION.at("")), **DECISION_PROBLEMS},
    dependencies=[IDEMPOTENT],
)
async def apply_revision(
    revision_id: RevisionID, session: SessionDep, context: RevisionContextDep, access: AccessDep
) -> RevisionOut:
    """Apply a pending judgement."""
    revision = await operations.resolve_pending(session, revision_id=revision_id, accept=True, context=context, access=access)
    return RevisionOut.of(revision)


@router.post(
    "/v1/revisions/{revision_id:uuid}/dismiss",
    response_model=RevisionOut,
    responses={200: links(REVISION.at("")), **DECISION_PROBLEMS},
    dependencies=[IDEMPOTENT],
)
async def dismiss_revision(
    revision_id: RevisionID, session: SessionDep, context: RevisionContextDep, access: AccessDep
) -> RevisionOut:
    """Dismiss a pending judgement; the memories stay as they are."""
    revision = await operations.resolve_pending(session, revision_id=revision_id, accept=False, context=context, access=access)
    return RevisionOut.of(revision)


@router.post(
    "/v1/revisions/{revision_id:uuid}/rollback",
    response_model=RollbackResponse,
    responses={200: links(REVISION.at("/revision"), MEMORY.at("/memories/0")), **DECISION_PROBLEMS},
    dependencies=[IDEMPOTENT],
)
async def rollback_revision(
    revision_id: RevisionID, session: SessionDep, context: RevisionContextDep, access: AccessDep
) -> RollbackResponse:
    """Undo a revision: every memory it changed is restored exactly, from its versions."""
    revision, restored = await operations.rollback(session, revision_id=revision_id, context=context, access=access)
    return RollbackResponse(revision=RevisionOut.of(revision), memories=[MemoryOut.of(memory) for memory in restored])


@router.get("/debug/revisions", response_model=RevisionDebugList)
async def debug_revisions(
    session: SessionDep,
    access: AccessDep,
    limit: RecentLimitDep,
    namespace: Annotated[Namespace | None, Query()] = None,
) -> RevisionDebugList:
    """The revision log with each judge's full input and output."""
    access.check(namespace)
    revisions = await operations.listing(session, namespace=namespace, status=None, limit=limit)
    return RevisionDebugList(revisions=[RevisionDebug.model_validate(r, from_attributes=True) for r in revisions])
