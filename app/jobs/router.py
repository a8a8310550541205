from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Path

from app.core.auth import AccessDep
from app.core.database import SessionDep
from app.core.errors import NotFound, problem_responses
from app.jobs import service
from app.jobs.schemas import JobOut

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

JobID = Annotated[UUID, Path(description="The job's id, from the 202 that started it.")]


@router.get("/{job_id:uuid}", response_model=JobOut, responses=problem_responses(NotFound))
async def get_job(job_id: JobID, session: SessionDep, access: AccessDep) -> JobOut:
    """A job's status and progress, and its result once it succeeded."""
    return await service.status(session, job_id=job_id, access=access)
