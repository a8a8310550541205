"""The real API on a loopback port (test database, committed data) and the gateway in front of it."""

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import uvicorn
from sqlalchemy import text

from app.core.settings import Settings
from app.gateway.api import Api
from app.gateway.server import build_server
from tests.conftest import _app


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve an ASGI app on a free loopback port for the block; yields its base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@pytest.fixture
def tag() -> str:
    """Makes this test's namespaces unique: its data is committed, then removed."""
    return f"gw{uuid.uuid4().hex[:10]}"


@pytest.fixture
def api_keys() -> dict[str, list[str]]:
    """Open by default; auth tests override this."""
    return {}


@pytest.fixture
async def api_url(settings: Settings, engine, embedder, tag: str, api_keys) -> AsyncIterator[str]:
    app = _app(settings.model_copy(update={"api_keys": api_keys}), engine, embedder)
    # The lifespan would build its own engine; the test's one is already attached.
    app.router.lifespan_context = _no_lifespan
    async with serving(app) as url:
        yield url
    async with engine.begin() as connection:
        pattern = {"pattern": f"%{tag}%"}
        await connection.execute(text("DELETE FROM revision_log WHERE namespace LIKE :pattern"), pattern)
        await connection.execute(text("DELETE FROM memories WHERE namespace LIKE :pattern"), pattern)
        await connection.execute(text("DELETE FROM reflections WHERE namespace LIKE :pattern"), pattern)


@asynccontextmanager
async def _no_lifespan(_: Any) -> AsyncIterator[None]:
    yield


@asynccontextmanager
async def gateway(settings: Settings, api_url: str, *, timeout_seconds: float = 5.0) -> AsyncIterator[str]:
    """The gateway over streamable HTTP; yields its MCP endpoint URL."""
    api = Api(api_url, timeout_seconds=timeout_seconds)
    server = build_server(settings, api)
    try:
        async with serving(server.streamable_http_app(streamable_http_path="/mcp")) as url:
            yield f"{url}/mcp"
    finally:
        await api.aclose()
