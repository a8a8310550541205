"""Shapes of the event, lesson and feedback calls (SPEC sections 6 and 11); the MCP gateway reuses them."""

from datetime import datetime
from typing import Annotated, Any, Literal, Self
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from app.core.settings import settings
from app.core.validation import WHITESPACE, Number, PastTimestamp, RequestBody, integer, json_size
from app.memories.schemas import MemoryOut, Namespace
from app.models import Reflection

Attribution = Literal["param_error", "tool_limit", "planning_flaw", "external_env", "unverified"]
PathType = Literal["verified", "falsified", "tentative"]
LessonStatus = Literal["observing", "active", "deprecated"]

Scope = Annotated[
    str,
    Field(
        min_length=6,
        max_length=300,
        pattern=f"^(tool|task):[^{WHITESPACE}]+$",
        description="`tool:<name>` or `task:<type>`: recall filters on it first.",
        examples=["tool:query_order"],
    ),
]
Label = Annotated[str, Field(min_length=1, max_length=200)]


class _Event(BaseModel):
    # Fields beyond the documented ones are kept: the stream is stored for replay.
    model_config = ConfigDict(extra="allow")

    at: PastTimestamp | None = Field(default=None, description="When it happened; defaults to when it was received.")


class ToolCall(_Event):
    type: Literal["tool_call"]
    tool: str = Field(min_length=1, max_length=200)
    args: dict[str, Any] = Field(default_factory=dict)
    status: Literal["ok", "error", "timeout"]
    result: Any = None
    error: str | None = None
    latency_ms: Number | None = Field(default=None, ge=0)
    input_schema: dict[str, Any] | None = Field(
        default=None,
        description="The tool's JSON schema for its arguments (at most `HINDSIGHT_MAX_INPUT_SCHEMA_BYTES` as JSON). "
        "References are never fetched: only `#...` within the schema resolve.",
    )
    attempt: integer(ge=1) | None = Field(default=None, description="2 and up: a retry.")

    @field_validator("input_schema")
    @classmethod
    def _schema_size(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None and json_size(schema) > settings.max_input_schema_bytes:
            raise ValueError(f"input_schema is larger than {settings.max_input_schema_bytes} bytes as JSON")
        return schema


class PlanStep(_Event):
    type: Literal["plan_step"]
    step: str = Field(min_length=1)
    expected: str | None = None
    actual: str | None = None


class Observation(_Event):
    type: Literal["observation"]
    text: str


class UserFeedback(_Event):
    type: Literal["user_feedback"]
    sentiment: Literal["positive", "negative"]
    text: str | None = None


class LLMRequest(_Event):
    type: Literal["llm_request"]
    model: str
    prompt: str | None = None
    response: str | None = None
    tokens: integer(ge=0) | None = None
    latency_ms: Number | None = Field(default=None, ge=0)


Event = Annotated[ToolCall | PlanStep | Observation | UserFeedback | LLMRequest, Field(discriminator="type")]


class TaskEnd(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["success", "failure", "partial", "aborted"]
    expected: str | None = None
    actual: str | None = None


class EventsRequest(RequestBody):
    """A task's events, in order; more can follow in later calls until `task_end`. Send at
    least one event or the `task_end`."""

    namespace: Namespace
    task_id: str = Field(min_length=1, max_length=200)
    session_id: str | None = Field(default=None, max_length=200)
    agent_role: Label | None = None
    domain: Label | None = None
    task_type: Label | None = Field(default=None, description="Names the `task:<type>` scope of task-wide lessons.")
    events: list[Event] = Field(default_factory=list, max_length=1_000)
    task_end: TaskEnd | None = None

    @model_validator(mode="after")
    def _says_something(self) -> Self:
        if not self.events and self.task_end is None:
            raise ValueError("send at least one event or the task_end")
        return self


class LessonOut(BaseModel):
    id: UUID
    namespace: str
    situation: str
    action: str
    outcome: str
    attribution: Attribution
    lesson: str
    scope: str
    path_type: PathType
    agent_role: str | None
    domain: str | None
    confidence: float
    occurrences: int
    status: LessonStatus
    conflict_flag: bool
    conflicts_with: list[UUID] = Field(description="Lessons this one contradicts (or is contradicted by).")
    hit_count: int
    useful_count: int
    hit_penalty: float
    source_task_id: str | None
    occurred_at: datetime
    last_used_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, lesson: Reflection) -> Self:
        fields = {name: getattr(lesson, name) for name in cls.model_fields if hasattr(lesson, name)}
        fields["conflicts_with"] = lesson.metadata_.get("conflicts_with", [])
        return cls(**fields)


class ReviewOut(BaseModel):
    triggers: list[str]
    reviewer: str
    note: str | None


class EventsResponse(BaseModel):
    accepted: int
    lessons: list[LessonOut]
    review: ReviewOut | None = Field(default=None, description="Set when the task ended and a trigger held.")


class StoredEvent(BaseModel):
    seq: int
    type: str
    at: datetime
    session_id: str | None
    payload: dict[str, Any] = Field(description="The event as sent, long fields restored in full.")


class TaskEvents(BaseModel):
    namespace: str
    task_id: str
    events: list[StoredEvent]


class LessonWrite(RequestBody):
    """A lesson written by hand or by the agent itself."""

    namespace: Namespace
    lesson: str = Field(min_length=1, max_length=2_000, examples=["When calling query_order, pass `order_id` as a string."])
    scope: Scope
    situation: str = Field(default="", max_length=2_000)
    action: str = Field(default="", max_length=2_000)
    outcome: str = Field(default="", max_length=2_000)
    attribution: Attribution = "unverified"
    path_type: PathType = "tentative"
    agent_role: Label | None = None
    domain: Label | None = None
    confidence: Number = Field(default=0.5, ge=0, le=1, description="At or above the admission threshold it is recalled at once.")
    source_task_id: str | None = Field(default=None, max_length=200)
    occurred_at: PastTimestamp | None = None


class LessonWriteResponse(BaseModel):
    lesson: LessonOut
    merged_into: UUID | None = Field(default=None, description="The existing lesson this one was merged into.")


class LessonResponse(BaseModel):
    lesson: LessonOut


class LessonSearch(RequestBody):
    query: str = Field(min_length=1, max_length=2_000, examples=["about to call query_order"])
    namespace: Namespace
    scope: Scope | None = None
    scopes: list[Scope] | None = Field(default=None, min_length=1, max_length=20, description="Several scopes at once.")
    agent_role: Label | None = Field(default=None, description="Only this role's lessons and lessons with no role.")
    domain: Label | None = Field(default=None, description="Only this domain's lessons and lessons with no domain.")
    top_k: integer(ge=1, le=50) = 5

    @property
    def all_scopes(self) -> list[str]:
        return [*([self.scope] if self.scope else []), *(self.scopes or [])]


class LessonScores(BaseModel):
    similarity: float
    confidence: float
    recency: float
    hit_penalty: float


class LessonHit(LessonOut):
    score: float
    scores: LessonScores


class LessonSearchResponse(BaseModel):
    recommendations: list[LessonHit] = Field(description="Verified (and tentative) lessons: what to do.")
    warnings: list[LessonHit] = Field(description="Falsified lessons: what failed before.")
    observing: int = Field(
        default=0,
        description="Lessons matching the filters held back as `observing`: recalled once seen again or confident enough.",
    )


class LessonFeedback(RequestBody):
    useful: StrictBool


class MemoryFeedback(RequestBody):
    useful: StrictBool
    session_id: str | None = Field(default=None, max_length=200)


class MemoryFeedbackResponse(BaseModel):
    memory: MemoryOut


class DecayReport(BaseModel):
    decayed: int = Field(description="Lessons whose confidence stepped down.")
    more: bool = Field(description="The batch limit was reached: call again.")
