"""Shapes of `POST /v1/context` (SPEC section 12)."""

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, Field, StrictBool

from app.core.settings import settings
from app.core.validation import NOT_BLANK, integer
from app.memories.schemas import MemoryOut
from app.recall.schemas import QueryScope

PartKind = Literal["working", "memory", "lesson"]


class ContextRequest(QueryScope):
    """What an agent should know for a turn. Give exactly one of `namespace` or `namespaces`."""

    query: str = Field(
        min_length=1,
        max_length=2_000,
        json_schema_extra={"pattern": NOT_BLANK},
        description="What the agent is about to answer or do: the turn's user message, or a summary of it.",
        examples=["Book me a table for dinner on Friday."],
    )
    session_id: str | None = Field(
        default=None, min_length=1, max_length=200, description="Adds this session's working memory."
    )
    budget_tokens: integer(ge=1, le=settings.context_max_budget_tokens) = Field(
        description="The most tokens the context may take, as the configured tokenizer counts them (`tokenizer` in the answer)."
    )
    record_access: StrictBool = Field(
        default=True,
        description="Count what the context uses as accessed (memories' recency and access, working memory's importance); "
        "false for read-only looks such as evaluations.",
    )


class Replaced(BaseModel):
    memory_id: UUID
    content: str
    created_at: datetime


class ContextPart(BaseModel):
    kind: PartKind
    id: str = Field(description="The memory's or lesson's id; for working memory, the item's.")
    text: str = Field(description="The part as it appears in `context`.")
    tokens: int
    score: float = Field(description="How it ranked within its kind: working importance, search score or lesson score.")
    at: datetime | None = None
    memory: MemoryOut | None = None
    replaces: Replaced | None = Field(default=None, description="What this memory superseded.")
    lesson_type: Literal["recommendation", "warning"] | None = None


class ContextResponse(BaseModel):
    context: str = Field(description="Markdown for the model's prompt; empty when nothing fits or nothing is known.")
    tokens: int = Field(description="Tokens of `context`, never more than `budget_tokens`.")
    budget_tokens: int
    tokenizer: str
    parts: list[ContextPart] = Field(description="What `context` holds, in its order.")
    omitted: dict[str, int] = Field(description="Candidates per kind that did not fit.")
