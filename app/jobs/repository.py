"""Every SQL statement about jobs. Each runs in its caller's short transaction: claiming,
reporting and finishing are single UPDATEs guarded by the runner's identity (`owner`), so a
runner that lost its job to another process finds out at its next report."""

from datetime import timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Job


async def add(
    session: AsyncSession, *, kind: str, namespace: str | None, params: dict[str, Any], total: int | None
) -> Job:
    job = Job(kind=kind, namespace=namespace, params=params, progress_total=total, status="queued")
    session.add(job)
    await session.flush()
    await session.refresh(job)
    return job


async def get(session: AsyncSession, job_id: UUID) -> Job | None:
    return await session.get(Job, job_id, populate_existing=True)


def _orphaned(*, stale: timedelta, max_attempts: int):
    """Queued jobs nobody started within the grace, and running jobs whose runner went quiet."""
    cutoff = func.now() - stale
    return (
        ((Job.status == "queued") & (Job.created_at < cutoff))
        | ((Job.status == "running") & (Job.heartbeat_at < cutoff))
    ) & (Job.attempts < max_attempts)


async def claim(session: AsyncSession, job_id: UUID, *, owner: str, stale: timedelta, max_attempts: int) -> Job | None:
    """Take a queued job (or one whose runner went quiet); None if someone else holds it."""
    startable = (Job.status == "queued") | ((Job.status == "running") & (Job.heartbeat_at < func.now() - stale))
    statement = (
        update(Job)
        .where(Job.id == job_id, startable, Job.attempts < max_attempts)
        .values(
            status="running",
            owner=owner,
            attempts=Job.attempts + 1,
            started_at=func.coalesce(Job.started_at, func.now()),
            heartbeat_at=func.now(),
        )
        .returning(Job)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def orphans(session: AsyncSession, *, stale: timedelta, max_attempts: int, limit: int) -> list[UUID]:
    """Ids of jobs to take over, locked against other sweepers until the caller commits."""
    statement = (
        select(Job.id)
        .where(_orphaned(stale=stale, max_attempts=max_attempts))
        .order_by(Job.created_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return list((await session.execute(statement)).scalars())


async def fail_exhausted(session: AsyncSession, *, stale: timedelta, max_attempts: int) -> int:
    """Give up on running jobs that went quiet once too often; how many."""
    statement = (
        update(Job)
        .where(Job.status == "running", Job.heartbeat_at < func.now() - stale, Job.attempts >= max_attempts)
        .values(
            status="failed",
            finished_at=func.now(),
            error=func.concat("gave up after ", Job.attempts, " attempts: the process running it stopped each time"),
        )
    )
    return (await session.execute(statement)).rowcount


def _owned(job_id: UUID, owner: str):
    return (Job.id == job_id) & (Job.owner == owner) & (Job.status == "running")


async def report(session: AsyncSession, job_id: UUID, *, owner: str, done: int | None, total: int | None) -> bool:
    """Progress and heartbeat; False if the job is no longer this runner's."""
    values: dict[str, Any] = {"heartbeat_at": func.now()}
    if done is not None:
        values["progress_done"] = done
    if total is not None:
        values["progress_total"] = total
    result = await session.execute(update(Job).where(_owned(job_id, owner)).values(**values))
    return result.rowcount == 1


async def finish(
    session: AsyncSession, job_id: UUID, *, owner: str, status: str, result: dict[str, Any] | None, error: str | None
) -> bool:
    statement = (
        update(Job)
        .where(_owned(job_id, owner))
        # A finished job keeps no input: it may hold what the namespace stores (a conversation's text).
        .values(status=status, result=result, error=error, params={}, finished_at=func.now(), heartbeat_at=func.now())
    )
    return (await session.execute(statement)).rowcount == 1


async def release(session: AsyncSession, job_id: UUID, *, owner: str) -> None:
    """Back to the queue, this attempt uncounted: the process is shutting down, not failing."""
    statement = (
        update(Job)
        .where(_owned(job_id, owner))
        .values(status="queued", owner=None, attempts=Job.attempts - 1, heartbeat_at=None)
    )
    await session.execute(statement)
