"""What the steps of remembering a conversation share: the runtime they work with, and a
message prepared for storing (its id, time and outcome)."""

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.conversations.schemas import MessageOutcome
from app.core.settings import Settings
from app.revisions.dependencies import context_of
from app.revisions.service import Context

Sessions = Callable[[], AbstractAsyncContextManager[AsyncSession]]
Progress = Callable[[int, int | None], Awaitable[None]]
# source.kind of what a message says (issue 12 gives it a trust weight).
SOURCE_KIND = {"user": "user", "assistant": "agent", "system": "agent", "tool": "tool"}


@dataclass(frozen=True, slots=True)
class Runtime:
    sessions: Sessions  # each step opens one, commits, and closes it
    context: Context  # the revision context: judge, embedder, settings

    @property
    def settings(self) -> Settings:
        return self.context.settings


def runtime_of(state: Any, *, sessions: Sessions) -> Runtime:
    return Runtime(sessions=sessions, context=context_of(state))


@dataclass(slots=True)
class Message:
    index: int
    message_id: str
    role: str
    content: str
    at: datetime
    name: str | None
    content_hash: str
    outcome: MessageOutcome | None = None

    @property
    def kind(self) -> str:
        return SOURCE_KIND[self.role]
