"""Request and response shapes of the memory calls (SPEC section 11); the MCP gateway reuses them."""

import re
from datetime import datetime
from typing import Annotated, Any, Literal, Self
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from app.core.errors import Problem
from app.core.settings import settings
from app.core.validation import INT4_MAX, NOT_BLANK, BoundedObject, Number, PastTimestamp, RequestBody, integer
from app.memories.trust import SOURCE_KINDS
from app.models import Memory

MemoryType = Literal["working", "episodic", "semantic"]
MemoryStatus = Literal["active", "superseded", "uncertain", "archived", "deleted", "invalidated"]

NAMESPACE_PATTERN = r"^[A-Za-z0-9_.\-]+(:[A-Za-z0-9_.\-]+)*$"
# After "<namespace>:", one or more segments such as "phone" or "diet:breakfast"; CJK allowed.
# Matched whole (fullmatch): `$` would also match before a trailing newline.
_KEY_REST = re.compile(r"[\w.\-]+(:[\w.\-]+)*")

Namespace = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=NAMESPACE_PATTERN,
        description="Isolation unit, e.g. `user:u1`, `agent:a1:private`, `shared:billing`.",
        examples=["user:u1"],
    ),
]


def bounded_content(content: str) -> str:
    """Memory text must say something and fit the configured size."""
    if not content.strip():
        raise ValueError("content must not be empty")
    if len(content) > settings.max_content_chars:
        raise ValueError(f"content is longer than {settings.max_content_chars} characters")
    return content


# bounded_content's rules stated in the schema as well, for clients and schema-driven tests.
Content = Annotated[
    str,
    AfterValidator(bounded_content),
    Field(json_schema_extra={"minLength": 1, "maxLength": settings.max_content_chars, "pattern": NOT_BLANK}),
]


class MemoryWrite(RequestBody):
    """One memory to store."""

    namespace: Namespace
    content: Content = Field(description="The memory itself, in any language.", examples=["User is allergic to peanuts."])
    key: str | None = Field(
        default=None,
        max_length=400,
        description="`<namespace>:<subject>:<attribute>`; a newer memory with the same key supersedes the older.",
        examples=["user:u1:allergy"],
    )
    query_hint: str | None = Field(default=None, max_length=1_000, description="What a search for this should say.")
    memory_type: MemoryType = Field(default="semantic", description="working (short-lived), episodic (what happened), semantic (facts).")
    confidence: Number = Field(default=1.0, ge=0, le=1)
    importance: Number = Field(default=0.5, ge=0, le=1)
    ttl_seconds: integer(ge=1, le=INT4_MAX) | None = Field(default=None, description="Forget after this many seconds.")
    session_id: str | None = Field(default=None, max_length=200)
    source: BoundedObject | None = Field(
        default=None,
        description="Where it came from: `kind` (user, agent, tool or web; default agent) sets how far it is "
        "trusted; turn id, agent id, ...",
        examples=[{"kind": "user", "turn_id": "t12"}],
    )
    metadata: BoundedObject | None = None
    created_at: PastTimestamp | None = Field(
        default=None, description="Original time, for imports; defaults to now. Not in the future (beyond a small clock skew)."
    )

    @field_validator("source")
    @classmethod
    def _known_source_kind(cls, source: dict[str, Any] | None) -> dict[str, Any] | None:
        if source is not None and "kind" in source and source["kind"] not in SOURCE_KINDS:
            raise ValueError(f"source.kind must be one of {', '.join(SOURCE_KINDS)}")
        return source

    @field_validator("key")
    @classmethod
    def _key_in_namespace(cls, key: str | None, info: ValidationInfo) -> str | None:
        namespace = info.data.get("namespace")
        if key is None or namespace is None:  # a bad namespace is reported on its own
            return key
        prefix = f"{namespace}:"
        if not key.startswith(prefix) or not _KEY_REST.fullmatch(key[len(prefix) :]):
            raise ValueError(f"key must look like '{namespace}:<subject>:<attribute>' (its namespace must be the memory's)")
        return key


class BatchWrite(BaseModel):
    """Up to the batch limit of writes, applied in order; each item succeeds or fails on its own
    (so not a RequestBody: an unstorable item is refused alone, by its own validation)."""

    model_config = ConfigDict(extra="forbid")

    items: list[dict[str, Any]] = Field(min_length=1, description="Each item has the shape of a single write.")

    @field_validator("items")
    @classmethod
    def _within_limit(cls, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(items) > settings.max_batch_items:
            raise ValueError(f"a batch holds at most {settings.max_batch_items} items")
        return items


class MemoryOut(BaseModel):
    id: UUID
    namespace: str
    key: str | None
    content: str
    query_hint: str | None
    memory_type: MemoryType
    status: MemoryStatus
    version: int
    confidence: float
    importance: float
    supersedes: UUID | None
    superseded_by: UUID | None
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    access_count: int
    last_accessed_at: datetime | None
    embedding_model: str | None
    source: dict[str, Any]
    metadata: dict[str, Any]
    invalidated_reason: str | None = Field(default=None, description="Why it was invalidated (status `invalidated`).")
    invalidated_at: datetime | None = None

    @classmethod
    def of(cls, memory: "Memory") -> Self:
        fields = {name: getattr(memory, name) for name in cls.model_fields if hasattr(memory, name)}
        fields["metadata"] = memory.metadata_
        fields["source"] = {"session_id": memory.session_id, **memory.source} if memory.session_id else memory.source
        return cls(**fields)


class RevisionSummary(BaseModel):
    id: UUID
    trigger: str
    decision: str
    old_memory_id: UUID | None
    status: str


class WriteResponse(BaseModel):
    memory: MemoryOut
    deduplicated: bool
    revisions: list[RevisionSummary] = []


class BatchItemResult(BaseModel):
    """A write response, or the problem that rejected this item alone."""

    index: int
    status: int
    memory: MemoryOut | None = None
    deduplicated: bool | None = None
    revisions: list[RevisionSummary] = []
    error: Problem | None = None


class BatchResponse(BaseModel):
    results: list[BatchItemResult]


class VersionOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    version: int
    content: str
    status: MemoryStatus
    changed_by: str
    created_at: datetime


class RelationOut(BaseModel):
    """One edge, named as seen from this memory: it `supersedes` the other or is
    `superseded_by` it, `refines` (a merge replacing the other) or is `refined_by` it;
    `coexists` and `related` (a likely update held for review) read the same both ways."""

    type: Literal["supersedes", "superseded_by", "refines", "refined_by", "coexists", "related"]
    memory_id: UUID = Field(description="The memory at the other end.")
    direction: Literal["outgoing", "incoming"]
    revision_id: UUID | None = Field(description="The revision that made the edge.")


class MemoryDetail(BaseModel):
    memory: MemoryOut
    versions: list[VersionOut]
    supersedes: list[MemoryOut] = Field(description="What this memory replaced, nearest first.")
    superseded_by: list[MemoryOut] = Field(description="What replaced this memory, nearest first.")
    relations: list[RelationOut]


class RecentMemory(MemoryOut):
    chain: list[UUID] = Field(description="Ids this memory supersedes, nearest first.")


class RecentResponse(BaseModel):
    memories: list[RecentMemory]
