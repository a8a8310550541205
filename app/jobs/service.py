"""Reading jobs for clients; running them is app/jobs/runner.py."""

from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.auth import Access
from app.core.errors import NotFound
from app.jobs import repository
from app.jobs.schemas import JobOut


async def status(session: AsyncSession, *, job_id: UUID, access: Access) -> JobOut:
    """A job's status, progress and result, if the caller may see its namespace."""
    job = await repository.get(session, job_id)
    if job is None:
        raise NotFound(f"no job with id {job_id}")
    access.check(job.namespace)
    return JobOut.of(job)
