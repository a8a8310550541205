"""Request-scoped access to what the lifespan built: settings and the embedding provider."""

from typing import Annotated

from fastapi import Depends, Request

from app.core.settings import Settings
from app.embeddings.provider import EmbeddingProvider


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_embedder(request: Request) -> EmbeddingProvider:
    return request.app.state.embedder


SettingsDep = Annotated[Settings, Depends(get_settings)]
EmbedderDep = Annotated[EmbeddingProvider, Depends(get_embedder)]
