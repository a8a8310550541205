"""Shapes of `POST /v1/memories/search` (SPEC sections 5 and 11)."""

from datetime import datetime
from typing import Self
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from app.core.validation import NOT_BLANK, Number, RequestBody, Timestamp, integer
from app.memories.schemas import MemoryOut, MemoryStatus, MemoryType, Namespace


class Weights(BaseModel):
    """Rerank weights; any part left out keeps the configured default."""

    model_config = ConfigDict(extra="forbid")

    semantic: Number | None = Field(default=None, ge=0, le=1)
    recency: Number | None = Field(default=None, ge=0, le=1)
    confidence: Number | None = Field(default=None, ge=0, le=1)
    access: Number | None = Field(default=None, ge=0, le=1)


class QueryScope(RequestBody):
    """A query over exactly one of `namespace` or `namespaces`: what search and context share."""

    # The one-of rule lives in the description and the validator, not in a `oneOf` of partial
    # schemas: client generators (openapi-python-client) drop an operation whose body is one.

    query: str = Field(
        min_length=1, max_length=2_000, json_schema_extra={"pattern": NOT_BLANK}, examples=["What is the user allergic to?"]
    )
    namespace: Namespace | None = Field(default=None, description="The namespace to search; or give `namespaces`.")
    namespaces: list[Namespace] | None = Field(
        default=None, min_length=1, max_length=20, description="Several namespaces at once; or give `namespace`."
    )

    @field_validator("query")
    @classmethod
    def _query_present(cls, query: str) -> str:
        if not query.strip():
            raise ValueError("query must not be empty")
        return query

    @model_validator(mode="after")
    def _one_namespace_field(self) -> Self:
        if (self.namespace is None) == (self.namespaces is None):
            raise ValueError("give exactly one of namespace or namespaces")
        return self

    @property
    def all_namespaces(self) -> list[str]:
        return [self.namespace] if self.namespace is not None else list(dict.fromkeys(self.namespaces or []))


class SearchRequest(QueryScope):
    """Memories relevant to `query`. Give exactly one of `namespace` or `namespaces`."""

    key_prefix: str | None = Field(default=None, min_length=1, max_length=400)
    memory_types: list[MemoryType] | None = Field(default=None, min_length=1)
    statuses: list[MemoryStatus] = Field(default=["active"], min_length=1)
    top_k: integer(ge=1, le=100) = 5
    weights: Weights | None = None
    created_after: Timestamp | None = None
    created_before: Timestamp | None = None
    as_of: Timestamp | None = Field(default=None, description="Answer as the namespace stood at this time.")
    reference_time: Timestamp | None = Field(
        default=None,
        description="When the question is asked (default: `as_of`, else now): recency and time expressions in the "
        "query (\"last Saturday\", \"two weeks ago\") are measured from it. It filters nothing by itself.",
    )
    explain: StrictBool = Field(default=False, description="Report each route's candidates and why some missed the top k.")
    record_access: StrictBool = Field(
        default=True,
        description="Count the hits as accessed (access counts break ties in later rankings); "
        "false for read-only looks such as evaluations.",
    )

    @model_validator(mode="after")
    def _time_range(self) -> Self:
        if self.created_after and self.created_before and self.created_after > self.created_before:
            raise ValueError("created_after is later than created_before")
        return self


class ScoreParts(BaseModel):
    semantic: float
    recency: float
    confidence: float
    access: float
    lexical: float | None = None
    trust: float = Field(default=1.0, description="Weight of the memory's source (user, agent, tool, web); multiplies the rest.")


class Invalidation(BaseModel):
    reason: str
    at: datetime


class SearchHit(BaseModel):
    memory: MemoryOut
    score: float
    scores: ScoreParts
    routes: list[str]
    superseded_by: UUID | None = None
    related: list[UUID] = []
    later_invalidated: Invalidation | None = Field(
        default=None, description="With `as_of`: the memory was believed then and has since been invalidated."
    )


class RouteCandidate(BaseModel):
    memory_id: UUID
    rank: int
    raw_score: float = Field(
        description="The route's own measure: key 1.0 for a key match, vector cosine similarity, lexical text "
        "rank, recency the memory's age in hours, time (when the query names a time) cosine similarity "
        "within its window."
    )


class Miss(BaseModel):
    memory_id: UUID
    final_rank: int
    score: float
    held_back_by: list[str] = Field(description="Score parts where it trailed the last hit that made the top k.")


class Explain(BaseModel):
    routes: dict[str, list[RouteCandidate]]
    weights: dict[str, float]
    misses: list[Miss]


class SearchResponse(BaseModel):
    hits: list[SearchHit]
    took_ms: float
    skipped_other_model: int = Field(
        default=0,
        description="In-scope memories the vector route left out: embedded with another model, awaiting re-embedding.",
    )
    explain: Explain | None = None
