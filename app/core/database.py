"""Database wiring: which server to use, the async engine, and the per-request session."""

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from functools import lru_cache
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import Row, event, text
from sqlalchemy.engine import Dialect, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.compiler import Compiled

from app.core.embedded import start_embedded_postgres
from app.core.errors import Unavailable
from app.core.settings import Settings

logger = logging.getLogger(__name__)


class DatabaseUnreachable(RuntimeError):
    """The configured database cannot be reached; the service refuses to start."""


def asyncpg_url(url: str) -> str:
    """Normalise any postgres URL to the SQLAlchemy asyncpg dialect."""
    parsed = make_url(url)
    return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def libpq_url(url: str) -> str:
    """The same server as libpq (psycopg) spells it."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def resolve_database_url(settings: Settings) -> str:
    """The configured server's URL, or the embedded server's (started on demand)."""
    if settings.database_url:
        return asyncpg_url(settings.database_url)
    return asyncpg_url(start_embedded_postgres(settings.data_dir))


def describe_database(settings: Settings, url: str) -> str:
    """A log line naming the database in use, without secrets."""
    if settings.database_url:
        return f"using DATABASE_URL {make_url(url).render_as_string(hide_password=True)}"
    return f"using embedded PostgreSQL, data in {settings.data_dir / 'postgres'}"


def create_engine(settings: Settings, url: str) -> AsyncEngine:
    engine = create_async_engine(
        url,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        # The pool does not wake a waiting request when a connect attempt fails, so during an
        # outage requests queued for a connection would wait all of it (30 s by default).
        pool_timeout=settings.db_pool_timeout_seconds,
        # No ping per checkout: a search checks out five connections, and the pings cost a
        # fifth of its time (mean 46 -> 36 ms at 10k memories). A connection that died with
        # the server fails once, answers 503 (app.core.errors) and leaves the pool.
        pool_pre_ping=False,
        connect_args={
            "timeout": settings.db_connect_timeout_seconds,
            "server_settings": {
                "application_name": "hindsight",
                "statement_timeout": str(settings.db_statement_timeout_ms),
                # pgvector's search settings for every connection, not per query (a round
                # trip saved per search). Iterative scans keep probing when filters (namespace,
                # status) drop rows, so a small namespace in a big table still fills its top k.
                "ivfflat.probes": str(settings.ivfflat_probes),
                "ivfflat.iterative_scan": "relaxed_order",
                # Plan every statement for its actual values: a generic plan cannot see that a
                # query of common words matches most rows (lexical route 11 ms generic, 2.6 custom).
                "plan_cache_mode": "force_custom_plan",
                # No parallel workers: a request's statements are small, and starting workers
                # cost 5 ms even for a scan a one-time filter then skips (the vector route's
                # exact scan of a small namespace, app/recall/repository.py).
                "max_parallel_workers_per_gather": "0",
            },
        },
    )
    event.listen(engine.sync_engine, "do_connect", _connect_or_unavailable)
    return engine


def _connect_or_unavailable(dialect: Dialect, _record: object, cargs: tuple, cparams: dict) -> object:
    """Open a connection, or say the database is unavailable. Refused, missing socket, timed
    out, starting up (crash recovery), full: each means "retry shortly", so the request answers
    503 and the pool, which keeps no dead connection, reconnects by itself once the server is
    back. They arrive as OS errors, raw asyncpg errors or SQLAlchemy's wrapping of them (a
    server "starting up" came wrapped under `make load FAULT=1`), so any failure to connect counts."""
    try:
        return dialect.connect(*cargs, **cparams)
    except Exception as exc:
        cause = exc.__cause__ or exc
        logger.warning("cannot connect to the database: %s", type(cause).__name__)
        raise Unavailable(f"the database cannot be reached ({type(cause).__name__}); retry shortly") from exc


async def check_reachable(engine: AsyncEngine) -> None:
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except Exception as exc:  # any driver/OS error means the same thing here
        url = engine.url.render_as_string(hide_password=True)
        raise DatabaseUnreachable(
            f"cannot reach the database at {url}: {exc}. "
            "hindsight does not fall back to its embedded database when DATABASE_URL is set."
        ) from exc


async def probe(settings: Settings, url: str) -> None:
    """Fail with DatabaseUnreachable unless the server at url answers."""
    engine = create_engine(settings, url)
    try:
        await check_reachable(engine)
    finally:
        await engine.dispose()


@lru_cache(maxsize=512)
def _compiled(statement: Executable, dialect: Dialect) -> tuple[Compiled, dict[str, Callable[[Any], Any]]]:
    """A statement compiled once, with its parameters' value processors (a vector's text form)."""
    compiled = statement.compile(dialect=dialect)
    processors = {
        name: processor
        for name, bound in compiled.binds.items()
        if (processor := bound.type.dialect_impl(dialect).bind_processor(dialect)) is not None
    }
    return compiled, processors


async def fetch(session: AsyncSession, statement: Executable, parameters: dict[str, Any] | None = None) -> Sequence[Row[Any]]:
    """The rows of a statement built once (a module constant or lru_cached: it is compiled once
    per statement object), run as its compiled SQL. The ORM's execute walks the whole statement
    for its cache key and processes results column by column: about 1 ms of CPU a statement,
    4 ms for a search's few hundred candidates; as driver SQL a fraction of that. Errors,
    invalidation and transactions stay SQLAlchemy's (`exec_driver_sql`)."""
    connection = await session.connection()
    compiled, processors = _compiled(statement, connection.dialect)
    state = compiled.construct_expanded_state(parameters)
    if state.processors:  # expanded lists' elements
        processors = processors | dict(state.processors)
    arguments = tuple(
        processors[name](value) if name in processors else value
        for name, value in zip(state.positiontup or (), state.positional_parameters, strict=True)
    )
    return (await connection.exec_driver_sql(state.statement, arguments)).all()


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


# Request scope keys: what must run in the request's last transaction before it commits (an
# Idempotency-Key marked applied with it), and whether that commit happened.
BEFORE_COMMIT = "hindsight.before_commit"
COMMITTED = "hindsight.committed"


async def commit_request(request: Request, session: AsyncSession) -> None:
    """Commit the request's transaction, with what must commit in it."""
    for hook in request.scope.get(BEFORE_COMMIT, ()):
        await hook(session)
    await session.commit()
    request.scope[COMMITTED] = True


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    """One session per request: committed on success, rolled back on error."""
    async with request.app.state.sessionmaker() as session:
        try:
            yield session
        except Exception:
            await session.rollback()
            raise
        else:
            await commit_request(request, session)


# "function" scope commits before the response leaves, so a client never reads ahead of a commit.
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]


async def get_read_session(request: Request) -> AsyncIterator[AsyncSession]:
    """One session per request that only reads, each statement committing by itself
    (autocommit): no BEGIN and COMMIT round trips, two of a search's dozen. What it reads does
    not change: under READ COMMITTED, PostgreSQL's default and ours, each statement of a
    transaction reads its own snapshot anyway."""
    async with request.app.state.sessionmaker() as session:
        await session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
        yield session


ReadSessionDep = Annotated[AsyncSession, Depends(get_read_session, scope="function")]
