"""Request-scoped access to what the lifespan built (see app.main.attach_runtime)."""

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.core.settings import Settings
from app.embeddings.provider import EmbeddingProvider


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_embedder(request: Request) -> EmbeddingProvider:
    return request.app.state.embedder


def get_engine(request: Request) -> AsyncEngine:
    return request.app.state.engine


def get_sessionmaker(request: Request) -> async_sessionmaker[AsyncSession]:
    """For jobs that commit in batches instead of once per request (the checkup)."""
    return request.app.state.sessionmaker


def get_read_sessions(request: Request) -> Callable[[], AbstractAsyncContextManager[AsyncSession]]:
    """Opens extra sessions, for work that runs concurrently with the request's own."""
    return request.app.state.read_sessions


SettingsDep = Annotated[Settings, Depends(get_settings)]
EmbedderDep = Annotated[EmbeddingProvider, Depends(get_embedder)]
EngineDep = Annotated[AsyncEngine, Depends(get_engine)]
SessionmakerDep = Annotated[async_sessionmaker[AsyncSession], Depends(get_sessionmaker)]
ReadSessionsDep = Annotated[Callable[[], AbstractAsyncContextManager[AsyncSession]], Depends(get_read_sessions)]


def recent_limit(
    limit: Annotated[int | None, Query(ge=1, le=500, description="How many, newest first (default 50).")] = None,
    n: Annotated[int | None, Query(ge=1, le=500, deprecated=True, description="The former name of `limit`.")] = None,
) -> int:
    """`limit`, the name every listing uses; `n` (the SPEC's first name for it) is still read."""
    if limit is not None and n is not None and limit != n:
        raise RequestValidationError(
            [{"type": "value_error", "loc": ("query", "n"), "msg": "n is the former name of limit: give one", "input": n}]
        )
    return limit or n or 50


RecentLimitDep = Annotated[int, Depends(recent_limit)]
