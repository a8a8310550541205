"""Shapes of purges, namespace erasures and their tombstones."""

from datetime import datetime
from typing import Literal, Self
from uuid import UUID

from pydantic import BaseModel, Field

from app.models import Erasure


class ErasureOut(BaseModel):
    """A tombstone (a purged memory) or the audit record of an erased namespace: never content."""

    id: UUID
    kind: Literal["memory", "namespace"]
    namespace: str
    memory_id: UUID | None = Field(description="The purged memory (kind memory).")
    requested_by: str = Field(description="The API key's fingerprint (`key:...`), or `open` without keys.")
    job_id: UUID | None = Field(description="The job that erased the namespace (kind namespace).")
    counts: dict[str, int] = Field(description="Rows deleted or erased, per table (and column).")
    created_at: datetime
    finished_at: datetime | None
    also_purged: list[UUID] = Field(
        default_factory=list, description="Merges built from the memory and memories quoting it word for word."
    )
    restored: list[UUID] = Field(
        default_factory=list,
        description="Memories active again: inputs of a purged merge, and memories held uncertain only by a "
        "pending judgement against the purged one (that judgement is dismissed).",
    )

    @classmethod
    def of(cls, erasure: Erasure, *, purged: list[UUID] | None = None, restored: list[UUID] | None = None) -> Self:
        return cls(
            id=erasure.id,
            kind=erasure.kind,
            namespace=erasure.namespace,
            memory_id=erasure.memory_id,
            requested_by=erasure.requested_by,
            job_id=erasure.job_id,
            counts=erasure.counts,
            created_at=erasure.created_at,
            finished_at=erasure.finished_at,
            also_purged=purged or [],
            restored=restored or [],
        )


class PurgeResponse(BaseModel):
    erasure: ErasureOut


class ErasureList(BaseModel):
    erasures: list[ErasureOut]
