from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Path, Response, status
from fastapi.responses import JSONResponse

from app.core.auth import AccessDep
from app.core.database import SessionDep
from app.memories import service
from app.memories.dependencies import WriteRateDep
from app.memories.schemas import BatchResponse, BatchWrite, MemoryDetail, MemoryWrite, WriteResponse
from app.memories.write_rate import writers_of
from app.revisions.dependencies import RevisionContextDep

router = APIRouter(prefix="/v1/memories", tags=["memories"])

MemoryID = Annotated[UUID, Path(description="The memory's id.")]


@router.post("", status_code=status.HTTP_201_CREATED, response_model=WriteResponse)
async def write_memory(
    body: MemoryWrite, session: SessionDep, context: RevisionContextDep, access: AccessDep, write_rate: WriteRateDep
) -> JSONResponse:
    """Store a memory and run the revision triggers; the same content already active in the
    namespace is returned instead (200, deduplicated)."""
    access.check(body.namespace)
    write_rate.admit([(body.session_id, body.namespace)])
    outcome = await service.write(session, request=body, context=context)
    code = status.HTTP_200_OK if outcome.deduplicated else status.HTTP_201_CREATED
    return JSONResponse(outcome.response().model_dump(mode="json"), status_code=code)


@router.post(":batch", response_model=BatchResponse)
async def write_batch(
    body: BatchWrite, session: SessionDep, context: RevisionContextDep, access: AccessDep, write_rate: WriteRateDep
) -> BatchResponse:
    """Store up to 500 memories in order; each item reports its own result or problem."""
    write_rate.admit(writers_of(body.items))
    results = await service.write_batch(session, items=body.items, context=context, access=access)
    return BatchResponse(results=results)


@router.get("/{memory_id}", response_model=MemoryDetail)
async def get_memory(memory_id: MemoryID, session: SessionDep, access: AccessDep) -> MemoryDetail:
    """A memory with its versions, its supersede chain in both directions and its relations."""
    return await service.detail(session, memory_id=memory_id, access=access)


@router.delete("/{memory_id}", status_code=status.HTTP_204_NO_CONTENT)
async def forget_memory(memory_id: MemoryID, session: SessionDep, access: AccessDep) -> Response:
    """Forget a memory (soft delete: it stays readable by id, with its history)."""
    await service.forget(session, memory_id=memory_id, access=access)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
