"""Shapes of `POST /v1/conversations` (SPEC section 12); the MCP gateway reuses the request."""

from datetime import datetime, timedelta, timezone
from typing import Annotated, Literal, Self
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from app.core.errors import Problem
from app.core.settings import settings
from app.core.validation import NOT_BLANK, RequestBody, Timestamp
from app.memories.schemas import Namespace, RevisionSummary

Role = Literal["user", "assistant", "system", "tool"]
ExtractMode = Literal["auto", "llm", "rules", "none"]
# A client's clock may run a little ahead of ours; a message from further in the future is refused.
CLOCK_SKEW = timedelta(minutes=5)


def _said_something(content: str) -> str:
    if not content.strip():
        raise ValueError("content must not be empty")
    return content


class Message(BaseModel):
    """One message of the conversation, as chat APIs carry it."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Your id for the message, unique in the session. Re-sending an id stores nothing new; "
        "without one, the id is derived from role, content and `at`.",
    )
    role: Role
    content: Annotated[
        str,
        AfterValidator(_said_something),
        Field(
            min_length=1, max_length=settings.conversation_max_message_chars, json_schema_extra={"pattern": NOT_BLANK}
        ),
    ]
    at: Timestamp | None = Field(
        default=None, description="When it was said; defaults to the previous message's time, or now."
    )
    name: str | None = Field(
        default=None, min_length=1, max_length=100, description="The speaker's name, if not just the role."
    )


class ConversationWrite(RequestBody):
    """Messages to remember: each is kept verbatim as an episodic memory, and facts are extracted."""

    namespace: Namespace
    session_id: str = Field(min_length=1, max_length=200, description="The conversation's session.")
    messages: list[Message] = Field(min_length=1, max_length=settings.conversation_max_messages)
    extract: ExtractMode = Field(
        default="auto",
        description="How to extract keyed memories: `llm` (needs HINDSIGHT_LLM_MODEL), `rules` (offline), "
        "`auto` (the LLM when one is configured, else rules) or `none`.",
    )

    @model_validator(mode="after")
    def _bounded(self) -> Self:
        total = sum(len(message.content) for message in self.messages)
        if total > settings.conversation_max_total_chars:
            raise ValueError(
                f"the messages hold {total} characters; at most {settings.conversation_max_total_chars} per request"
            )
        ids = [message.id for message in self.messages if message.id is not None]
        if len(ids) != len(set(ids)):
            raise ValueError("message ids must be unique within a request")
        latest = datetime.now(timezone.utc) + CLOCK_SKEW
        if any(message.at is not None and message.at > latest for message in self.messages):
            raise ValueError("a message's `at` lies in the future")
        return self


class MessageOutcome(BaseModel):
    index: int
    message_id: str
    status: Literal["stored", "already_stored", "rejected"]
    memory_ids: list[UUID] = Field(
        default=[], description="The episodic memories holding it (several parts when long)."
    )
    problem: Problem | None = None


class ExtractedMemory(BaseModel):
    message_id: str
    key: str | None
    content: str
    status: int = Field(description="201 stored, 200 already known, 4xx refused (see `problem`).")
    memory_id: UUID | None = None
    deduplicated: bool | None = None
    revisions: list[RevisionSummary] = []
    problem: Problem | None = None


class Extraction(BaseModel):
    extractor: str = Field(description="`rules`, `llm:<model>` or `none`.")
    memories: list[ExtractedMemory] = []
    dropped_malformed_keys: int = Field(
        default=0, description="LLM memories dropped for a key not shaped `namespace:subject:attribute`."
    )
    dropped_invalid: int = Field(
        default=0, description="LLM memories dropped for another reason (no text, unknown message, ...)."
    )
    notes: list[str] = []


class WorkingOutcome(BaseModel):
    items: int
    tokens: int
    budget_tokens: int
    evicted: int = Field(description="Items evicted by this call.")
    summaries: list[UUID] = Field(default=[], description="Episodic summaries written for evicted items.")


class ConversationResult(BaseModel):
    namespace: str
    session_id: str
    received: int
    stored: int
    already_stored: int
    rejected: int
    messages: list[MessageOutcome]
    extraction: Extraction
    working: WorkingOutcome
