"""A database outage: requests answer 503 at once while PostgreSQL is down, and the service
recovers by itself when it returns. The test kills its own embedded server, not the shared one."""

import asyncio
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import pytest
from httpx import ASGITransport, AsyncClient, Response
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.database import _connect_or_unavailable, asyncpg_url, create_engine
from app.core.embedded import EmbeddedPostgres
from app.core.errors import Unavailable
from app.core.migrations import upgrade_to_head
from app.core.settings import Settings
from app.embeddings.provider import EmbeddingProvider
from app.main import attach_runtime, create_app

NAMESPACE = "test:outage"


@pytest.fixture(scope="module")
async def own_server() -> EmbeddedPostgres:
    server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="hindsight-outage-")), keep_data=False)
    await asyncio.to_thread(upgrade_to_head, asyncpg_url(server.uri))  # alembic runs its own event loop
    return server


@asynccontextmanager
async def serving(
    settings: Settings, embedder: EmbeddingProvider, server: EmbeddedPostgres
) -> AsyncIterator[tuple[AsyncClient, AsyncEngine]]:
    engine = create_engine(settings, asyncpg_url(server.uri))
    app = create_app(settings)
    attach_runtime(app, settings=settings, engine=engine, embedder=embedder)
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://test") as http:
        yield http, engine
    await engine.dispose()


@pytest.fixture
async def outage_client(settings: Settings, embedder: EmbeddingProvider, own_server) -> AsyncIterator[AsyncClient]:
    async with serving(settings, embedder, own_server) as (http, _):
        yield http


async def timed(call) -> tuple[Response, float]:
    started = time.perf_counter()
    response = await call
    return response, time.perf_counter() - started


async def test_requests_answer_503_while_the_database_is_down_and_recover_after(outage_client, own_server):
    client = outage_client
    written = await client.post("/v1/memories", json={"namespace": NAMESPACE, "content": "The office is in Lyon."})
    assert written.status_code == 201
    memory_id = written.json()["memory"]["id"]

    own_server.kill()
    during = [
        await timed(client.get(f"/v1/memories/{memory_id}")),
        await timed(client.post("/v1/memories", json={"namespace": NAMESPACE, "content": "The office moved to Paris."})),
        await timed(client.post("/v1/memories:batch", json={"items": [{"namespace": NAMESPACE, "content": "Desk 4."}]})),
        await timed(client.post("/v1/memories/search", json={"namespace": NAMESPACE, "query": "office"})),
        await timed(client.get(f"/v1/memories/{memory_id}")),  # once more: the pool holds no dead connection
    ]
    for response, seconds in during:
        assert response.status_code == 503, response.text
        assert response.json()["type"] == "/problems/unavailable"
        assert response.headers["Retry-After"] == "1"
        assert seconds < 2.0
    ready = await client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["ready"] is False
    scrape = await client.get("/metrics")
    assert scrape.status_code == 200 and "hindsight_revision_queue_depth NaN" in scrape.text

    own_server.restart()
    recovered = await client.get(f"/v1/memories/{memory_id}")
    assert recovered.status_code == 200
    assert recovered.json()["memory"]["content"] == "The office is in Lyon."
    assert (await client.post("/v1/memories", json={"namespace": NAMESPACE, "content": "A desk by the window."})).status_code == 201
    assert (await client.get("/readyz")).json()["ready"] is True


async def test_requests_queued_for_a_connection_also_answer_503_promptly(settings, embedder, own_server):
    """More requests than the pool holds: those waiting for a connection are not woken when an
    attempt fails, so the pool timeout bounds their wait."""
    one_connection = settings.model_copy(update={"db_pool_size": 1, "db_max_overflow": 0})
    async with serving(one_connection, embedder, own_server) as (client, _):
        own_server.kill()
        try:
            answers = await asyncio.gather(
                *(timed(client.get("/debug/recent", params={"namespace": NAMESPACE})) for _ in range(8))
            )
        finally:
            own_server.restart()
    assert [response.status_code for response, _ in answers] == [503] * 8
    assert {response.json()["type"] for response, _ in answers} == {"/problems/unavailable"}
    assert max(seconds for _, seconds in answers) < one_connection.db_pool_timeout_seconds + 1.5


async def test_a_request_that_finds_no_free_connection_answers_503(settings, embedder, own_server):
    one_connection = settings.model_copy(update={"db_pool_size": 1, "db_max_overflow": 0, "db_pool_timeout_seconds": 0.5})
    async with serving(one_connection, embedder, own_server) as (client, engine):
        async with engine.connect():  # the pool's only connection, busy elsewhere
            response, seconds = await timed(client.get("/debug/recent", params={"namespace": NAMESPACE}))
        assert (await client.get("/debug/recent", params={"namespace": NAMESPACE})).status_code == 200
    assert response.status_code == 503 and response.json()["type"] == "/problems/unavailable"
    assert response.headers["Retry-After"] == "1"
    assert seconds < 1.5


def test_a_server_still_starting_up_is_unavailable_even_when_the_driver_error_comes_wrapped():
    class StartingUp:
        def connect(self, *args, **kwargs):
            try:
                raise asyncpg.CannotConnectNowError("the database system is starting up")
            except asyncpg.CannotConnectNowError as error:
                raise RuntimeError("wrapped by the dialect") from error

    with pytest.raises(Unavailable, match="CannotConnectNowError"):
        _connect_or_unavailable(StartingUp(), None, (), {})
