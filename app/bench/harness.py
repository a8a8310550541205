"""Runs the real service in process for the benchmarks: its own database, its HTTP layer."""

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient

from app.core.database import asyncpg_url, start_embedded_postgres
from app.core.migrations import upgrade_to_head
from app.core.settings import Settings
from app.main import create_app


def bench_database(database_url: str | None) -> str:
    """The given server, or a fresh embedded one that is deleted when the run ends."""
    if database_url:
        url = asyncpg_url(database_url)
    else:
        url = asyncpg_url(start_embedded_postgres(Path(tempfile.mkdtemp(prefix="hindsight-bench-")), keep_data=False))
    upgrade_to_head(url)
    return url


@asynccontextmanager
async def running_service(settings: Settings, database_url: str) -> AsyncIterator[tuple[FastAPI, AsyncClient]]:
    app = create_app(settings.model_copy(update={"database_url": database_url}))
    async with app.router.lifespan_context(app):
        async with AsyncClient(transport=ASGITransport(app=app), base_url="http://bench", timeout=120) as client:
            yield app, client
