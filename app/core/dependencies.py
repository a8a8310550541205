"""Request-scoped access to what the lifespan built (see app.main.attach_runtime)."""

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.core.background import Background
from app.core.replica import Reads
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


# Sessions on the primary beside the request's own: work after the answer (counting access).
Sessions = Callable[[], AbstractAsyncContextManager[AsyncSession]]


def get_sessions(request: Request) -> Sessions:
    return request.app.state.sessions


def get_reads(request: Request) -> Reads:
    return request.app.state.reads


def get_background(request: Request) -> Background:
    return request.app.state.background


SettingsDep = Annotated[Settings, Depends(get_settings)]
EmbedderDep = Annotated[EmbeddingProvider, Depends(get_embedder)]
EngineDep = Annotated[AsyncEngine, Depends(get_engine)]
SessionmakerDep = Annotated[async_sessionmaker[AsyncSession], Depends(get_sessionmaker)]
SessionsDep = Annotated[Sessions, Depends(get_sessions)]
ReadsDep = Annotated[Reads, Depends(get_reads)]
BackgroundDep = Annotated[Background, Depends(get_background)]


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
