from typing import Annotated

from fastapi import APIRouter, Query, status
from fastapi.responses import JSONResponse

from app.core.auth import AccessDep
from app.core.database import SessionDep
from app.forgetting import service
from app.forgetting.dependencies import NamespacePath
from app.forgetting.schemas import ErasureList
from app.jobs.dependencies import JobsDep
from app.jobs.schemas import JobAccepted, JobOut

router = APIRouter(prefix="/v1/namespaces", tags=["forgetting"])


@router.delete(
    "/{namespace}",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=JobAccepted,
    responses={202: {"description": "Erasing as a job: poll `GET /v1/jobs/{id}`; its result is the audit record."}},
)
async def erase_namespace(namespace: NamespacePath, jobs: JobsDep, access: AccessDep) -> JSONResponse:
    """Erase every memory, version, relation, revision, lesson, event, conversation message,
    working item and job of a namespace, in batches, as a job; an audit record with counts stays."""
    job = await service.start_erasing(jobs, namespace=namespace, access=access)
    return JSONResponse(
        JobAccepted(job=JobOut.of(job)).model_dump(mode="json"),
        status_code=status.HTTP_202_ACCEPTED,
        headers={"Location": f"/v1/jobs/{job.id}"},
    )


@router.get("/{namespace}/erasures", response_model=ErasureList)
async def list_erasures(
    namespace: NamespacePath,
    session: SessionDep,
    access: AccessDep,
    limit: Annotated[int, Query(ge=1, le=500, description="How many, newest first.")] = 50,
) -> ErasureList:
    """Tombstones of purged memories and audit records of erasures in a namespace, newest first."""
    return ErasureList(erasures=await service.erasures(session, namespace=namespace, access=access, limit=limit))
