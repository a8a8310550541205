"""Shapes of the revision calls (SPEC section 11)."""

from datetime import datetime
from typing import Literal, Self
from uuid import UUID

from pydantic import BaseModel, Field, field_validator

from app.core.validation import NOT_BLANK, RequestBody, Timestamp, integer
from app.memories.schemas import Content, MemoryOut, Namespace
from app.models import RevisionLog

RevisionStatus = Literal["applied", "pending", "dismissed", "rolled_back", "logged"]


class RevisionOut(BaseModel):
    id: UUID
    namespace: str
    trigger: str
    decision: str
    status: RevisionStatus
    new_memory_id: UUID | None
    old_memory_id: UUID | None
    merged_memory_id: UUID | None
    similarity: float | None
    confidence: float
    reason: str
    merged_content: str | None
    new_content: str | None
    judge: str
    note: str | None
    created_at: datetime
    resolved_at: datetime | None

    @classmethod
    def of(cls, revision: RevisionLog) -> Self:
        return cls.model_validate(revision, from_attributes=True)


class RevisionDebug(RevisionOut):
    llm_prompt: str | None
    llm_response: str | None


class ReviseRequest(RequestBody):
    content: Content = Field(description="The corrected content.")
    expected_version: integer(ge=1) = Field(description="The version you read; a newer one means someone else changed it (409).")
    reason: str | None = Field(default=None, max_length=2_000)


class ReviseResponse(BaseModel):
    memory: MemoryOut
    revision: RevisionOut


class InvalidateRequest(RequestBody):
    reason: str = Field(
        min_length=1,
        max_length=2_000,
        json_schema_extra={"pattern": NOT_BLANK},
        description="Why the memory was never right; shown on the memory.",
        examples=["The user was joking about moving to Mars."],
    )


    @field_validator("reason")
    @classmethod
    def _reason_present(cls, reason: str) -> str:
        if not reason.strip():
            raise ValueError("reason must not be blank")
        return reason


class InvalidateResponse(BaseModel):
    memory: MemoryOut
    revision: RevisionOut
    restored: list[MemoryOut] = Field(description="Memories it had replaced, active again.")


class ReviewRequest(RequestBody):
    namespace: Namespace
    since: Timestamp | None = None
    limit: integer(ge=1, le=1_000) = 50


class ReviewResponse(BaseModel):
    revisions: list[RevisionOut]
    checked: int


class RevisionList(BaseModel):
    revisions: list[RevisionOut]


class RevisionDebugList(BaseModel):
    revisions: list[RevisionDebug]


class RollbackResponse(BaseModel):
    revision: RevisionOut
    memories: list[MemoryOut]
