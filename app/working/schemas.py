"""Shapes of a session's working memory, as `GET /v1/sessions/{id}/working` shows it."""

from datetime import datetime
from typing import Literal, Self
from uuid import UUID

from pydantic import BaseModel, Field

from app.models import WorkingItem


class WorkingItemOut(BaseModel):
    kind: Literal["user", "agent", "tool"] = Field(description="Who said it: the user, the agent, or a tool.")
    content: str
    at: datetime
    tokens: int
    importance: float = Field(description="Base importance by kind.")
    score: float = Field(description="Importance after decay per turn and boosts per use.")
    turn: int
    access_count: int
    memory_id: UUID | None
    message_id: str | None

    @classmethod
    def of(cls, item: WorkingItem) -> Self:
        return cls.model_validate(item, from_attributes=True)


class WorkingMemory(BaseModel):
    namespace: str
    session_id: str
    items: list[WorkingItemOut] = Field(description="Most important first.")
    tokens: int
    budget_tokens: int
