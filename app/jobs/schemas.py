"""Shapes of `GET /v1/jobs/{id}` and of a 202 that started a job."""

from datetime import datetime
from typing import Any, Literal, Self
from uuid import UUID

from pydantic import BaseModel, Field

from app.models import Job

JobStatus = Literal["queued", "running", "succeeded", "failed"]


class Progress(BaseModel):
    done: int
    total: int | None
    fraction: float | None = Field(description="done / total, when the total is known.")


class JobOut(BaseModel):
    id: UUID
    kind: str
    namespace: str | None
    status: JobStatus
    progress: Progress
    result: dict[str, Any] | None = Field(description="The job's answer once it succeeded.")
    error: str | None = Field(description="Why it failed.")
    attempts: int = Field(description="Runs started; more than one means a process running it stopped.")
    created_at: datetime
    started_at: datetime | None
    heartbeat_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, job: Job) -> Self:
        total = job.progress_total
        fraction = round(min(job.progress_done / total, 1.0), 4) if total else None
        return cls(
            id=job.id,
            kind=job.kind,
            namespace=job.namespace,
            status=job.status,
            progress=Progress(done=job.progress_done, total=total, fraction=fraction),
            result=job.result,
            error=job.error,
            attempts=job.attempts,
            created_at=job.created_at,
            started_at=job.started_at,
            heartbeat_at=job.heartbeat_at,
            finished_at=job.finished_at,
        )


class JobAccepted(BaseModel):
    """The work continues as a job: poll `GET /v1/jobs/{id}`."""

    job: JobOut
