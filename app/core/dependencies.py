"""Request-scoped access to what the lifespan built (see app.main.attach_runtime)."""

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated

from fastapi import Depends, Request
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
