from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Path, Response, status
from fastapi.responses import JSONResponse

from app.core.auth import AccessDep
from app.core.database import SessionDep
from app.core.errors import NotFound, RateLimited, SensitiveContent, Unprocessable, VersionConflict, problem_responses
from app.core.links import MEMORY, REVISION, links
from app.idempotency.middleware import IDEMPOTENT
from app.memories import service
from app.memories.dependencies import WriteRateDep
from app.memories.schemas import BatchResponse, BatchWrite, MemoryDetail, MemoryWrite, WriteResponse
from app.memories.write_rate import writer, writers_of
from app.revisions.dependencies import RevisionContextDep

router = APIRouter(prefix="/v1/memories", tags=["memories"])

# Path ids match as UUIDs only (`:uuid`): `GET /v1/memories/search` is then a 405 for the
# search route, not a malformed id, and an id that is no UUID names nothing (404).
MemoryID = Annotated[UUID, Path(description="The memory's id.")]
# A write answers with the memory and the revisions it triggered (a same-key supersede, ...).
WRITTEN_LINKS = links(MEMORY.at("/memory"), REVISION.at("/revisions/0"))


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=WriteResponse,
    responses={
        201: WRITTEN_LINKS,
        200: {
            "model": WriteResponse,
            "description": "The same content was already active: that memory.",
            **WRITTEN_LINKS,
        },
        **problem_responses(VersionConflict, Unprocessable, SensitiveContent, RateLimited),
    },
    dependencies=[IDEMPOTENT],
)
async def write_memory(
    body: MemoryWrite, session: SessionDep, context: RevisionContextDep, access: AccessDep, write_rate: WriteRateDep
) -> JSONResponse:
    """Store a memory and run the revision triggers; the same content already active in the
    namespace is returned instead (200, deduplicated)."""
    access.check(body.namespace)
    await write_rate.admit(session, [writer(access, body.session_id, body.namespace)])
    outcome = await service.write(session, request=body, context=context)
    code = status.HTTP_200_OK if outcome.deduplicated else status.HTTP_201_CREATED
    return JSONResponse(outcome.response().model_dump(mode="json"), status_code=code)


@router.post(
    ":batch",
    response_model=BatchResponse,
    responses=problem_responses(RateLimited),
    dependencies=[IDEMPOTENT],
)
async def write_batch(
    body: BatchWrite, session: SessionDep, context: RevisionContextDep, access: AccessDep, write_rate: WriteRateDep
) -> BatchResponse:
    """Store up to 500 memories in order; each item reports its own result or problem."""
    await write_rate.admit(session, writers_of(access, body.items))
    results = await service.write_batch(session, items=body.items, context=context, access=access)
    return BatchResponse(results=results)


@router.get(
    "/{memory_id:uuid}",
    response_model=MemoryDetail,
    responses={200: links(MEMORY.at("/memory")), **problem_responses(NotFound)},
)
async def get_memory(memory_id: MemoryID, session: SessionDep, access: AccessDep) -> MemoryDetail:
    """A memory with its versions, its supersede chain in both directions and its relations."""
    return await service.detail(session, memory_id=memory_id, access=access)


@router.delete(
    "/{memory_id:uuid}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(NotFound, VersionConflict),
    dependencies=[IDEMPOTENT],
)
async def forget_memory(memory_id: MemoryID, session: SessionDep, access: AccessDep) -> Response:
    """Forget a memory (soft delete: it stays readable by id, with its history)."""
    await service.forget(session, memory_id=memory_id, access=access)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
