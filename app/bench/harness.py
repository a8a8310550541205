"""Runs the real service in process for the benchmarks: its own database, its HTTP layer."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient

from app.core.settings import Settings
from app.main import create_app


@asynccontextmanager
async def running_service(settings: Settings, database_url: str) -> AsyncIterator[tuple[FastAPI, AsyncClient]]:
    app = create_app(settings.model_copy(update={"database_url": database_url}))
    async with app.router.lifespan_context(app):
        async with AsyncClient(transport=ASGITransport(app=app), base_url="http://bench", timeout=120) as client:
            yield app, client
