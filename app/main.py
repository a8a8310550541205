"""The FastAPI application: lifespan (engine, embedder), routers, error handlers."""

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi_offline import FastAPIOffline
from sqlalchemy.ext.asyncio import AsyncEngine

from app import __version__
from app.context.router import router as context_router
from app.conversations.router import router as conversations_router
from app.core.auth import AUTHENTICATED_PROBLEMS, get_access, warn_if_open
from app.core.body_limit import BodyLimitMiddleware
from app.core.database import (
    check_reachable,
    create_engine,
    create_sessionmaker,
    describe_database,
    resolve_database_url,
)
from app.core.errors import install_error_handlers
from app.core.logging import RequestIdMiddleware
from app.core.metrics import RequestMetricsMiddleware, count_search
from app.core.retry import RetryOnConflictMiddleware
from app.core.settings import Settings
from app.core.settings import settings as default_settings
from app.core.unread_input import refuse_unread_input
from app.embeddings.provider import EmbeddingProvider, build_provider
from app.forgetting.router import router as forgetting_router
from app.transfer.router import router as transfer_router
from app.ui.router import router as ui_router
from app.maintenance import dimension
from app.jobs.router import router as jobs_router
from app.jobs.runner import JobRunner
from app.maintenance.router import router as maintenance_router
from app.memories.router import router as memories_router
from app.memories.write_rate import WriteRate
from app.ops.router import router as ops_router
from app.recall.cache import SearchCache
from app.recall.router import router as recall_router
from app.reflections.schema_check import SchemaChecker
from app.reflections.router import router as reflections_router
from app.revisions import queue
from app.revisions.judges import build_judge
from app.revisions.router import router as revisions_router
from app.working.router import router as working_router

logger = logging.getLogger("hindsight")


def build_schema_checker(settings: Settings) -> SchemaChecker:
    return SchemaChecker(
        workers=settings.schema_check_workers,
        timeout_seconds=settings.schema_check_timeout_seconds,
        memory_bytes=settings.schema_check_memory_mb * 2**20,
        max_args_bytes=settings.schema_check_max_args_bytes,
    )


def attach_runtime(
    app: FastAPI,
    *,
    settings: Settings,
    engine: AsyncEngine,
    embedder: EmbeddingProvider,
    schema_checker: SchemaChecker | None = None,
) -> None:
    """What requests reach through app.state: settings, database, embedder, judge, the
    workers that check clients' JSON Schemas (they start on first use)."""
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = create_sessionmaker(engine)
    app.state.read_sessions = app.state.sessionmaker
    app.state.embedder = embedder
    app.state.judge = build_judge(settings)
    app.state.schema_checker = schema_checker or build_schema_checker(settings)
    app.state.jobs = JobRunner(sessions=app.state.sessionmaker, state=app.state, settings=settings)


def create_app(settings: Settings = default_settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        url = resolve_database_url(settings)
        logger.info(describe_database(settings, url))
        warn_if_open(settings.api_keys)
        engine = create_engine(settings, url)
        try:
            await check_reachable(engine)
            embedder = build_provider(settings)
            await dimension.check(engine, embedder)
            attach_runtime(app, settings=settings, engine=engine, embedder=embedder)
            async with AsyncExitStack() as stack:
                stack.push_async_callback(app.state.schema_checker.close)
                if settings.revision_mode == "async":
                    app.state.revision_queue = await stack.enter_async_context(queue.connected(url))
                await stack.enter_async_context(app.state.jobs.running())
                yield
        finally:
            await engine.dispose()

    # /docs and /redoc with Swagger UI and ReDoc served from the installed package, not a CDN.
    app = FastAPIOffline(
        title="hindsight",
        summary="Long-term memory for LLM agents that corrects itself after the fact.",
        version=__version__,
        lifespan=lifespan,
        dependencies=[Depends(refuse_unread_input)],
        # operationIds are the endpoints' names (write_memory, search_memories): what generated
        # clients call their functions.
        generate_unique_id_function=lambda route: route.name,
    )
    # The cache learns of writes from this process's commits only; in async mode the worker
    # process revises memories behind its back, so the cache stays off there.
    cache_seconds = 0 if settings.revision_mode == "async" else settings.search_cache_seconds
    app.state.search_cache = SearchCache(ttl_seconds=cache_seconds, max_entries=settings.search_cache_entries)
    app.state.write_rate = WriteRate(
        flag_above=settings.write_rate_flag_per_minute,
        limit=settings.write_rate_limit_per_minute,
        flags_kept=settings.write_rate_flags_kept,
    )
    install_error_handlers(app)
    app.add_middleware(RetryOnConflictMiddleware, retries=settings.conflict_retries)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_request_bytes)
    app.add_middleware(RequestMetricsMiddleware)
    app.add_middleware(RequestIdMiddleware)
    # Every route needs a valid key when keys are configured; ops checks its own (health stays open).
    authenticated = [Depends(get_access)]
    app.include_router(recall_router, dependencies=[*authenticated, Depends(count_search)], responses=AUTHENTICATED_PROBLEMS)
    app.include_router(memories_router, dependencies=authenticated, responses=AUTHENTICATED_PROBLEMS)
    app.include_router(reflections_router, dependencies=authenticated, responses=AUTHENTICATED_PROBLEMS)
    app.include_router(revisions_router, dependencies=authenticated, responses=AUTHENTICATED_PROBLEMS)
    app.include_router(maintenance_router, dependencies=authenticated, responses=AUTHENTICATED_PROBLEMS)
    for router in (conversations_router, working_router, context_router, jobs_router, forgetting_router, transfer_router):
        app.include_router(router, dependencies=authenticated, responses=AUTHENTICATED_PROBLEMS)
    app.include_router(ops_router)
    # The viewer signs its users in itself (a cookie), so it is not behind the bearer check.
    app.include_router(ui_router)
    return app
