"""Run alembic from code, and tell whether the database is at the latest revision."""

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import psycopg

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.core.database import asyncpg_url, libpq_url
from app.core.embedded import start_embedded_postgres

ALEMBIC_INI = Path(__file__).resolve().parents[2] / "alembic.ini"


def alembic_config(url: str) -> Config:
    config = Config(str(ALEMBIC_INI))
    config.attributes["url"] = url
    config.attributes["skip_logging_config"] = True
    return config


# Held by whichever process migrates, so API replicas starting together take turns: the first
# migrates, the others find the database at head.
MIGRATION_LOCK = "hashtextextended('hindsight.migrations', 0)"


@contextmanager
def migration_lock(url: str) -> Iterator[None]:
    """PostgreSQL's session advisory lock for migrations, held for the block (sync)."""
    with psycopg.connect(libpq_url(url), autocommit=True) as connection:
        connection.execute(f"SELECT pg_advisory_lock({MIGRATION_LOCK})")
        try:
            yield
        finally:
            connection.execute(f"SELECT pg_advisory_unlock({MIGRATION_LOCK})")


def upgrade_to_head(url: str, *, then: Callable[[], None] | None = None) -> None:
    """Apply every pending migration, and `then` what else must not run twice at once (the vector
    columns' dimension), under the migration lock (sync: call it before the event loop starts)."""
    with migration_lock(url):
        command.upgrade(alembic_config(url), "head")
        if then is not None:
            then()


def scratch_database(database_url: str | None, *, purpose: str, keep_in: Path | None = None) -> str:
    """A migrated database for tests or benchmarks: the given server, else an embedded one kept
    in `keep_in` between runs, else a fresh embedded one in a temporary directory that is
    deleted when the process ends."""
    if database_url:
        url = asyncpg_url(database_url)
    elif keep_in is not None:
        url = asyncpg_url(start_embedded_postgres(keep_in.resolve(), keep_data=True))
    else:
        url = asyncpg_url(start_embedded_postgres(Path(tempfile.mkdtemp(prefix=f"hindsight-{purpose}-")), keep_data=False))
    upgrade_to_head(url)
    return url


@cache  # the scripts on disk do not change while the process runs
def head_revision() -> str:
    script = ScriptDirectory.from_config(Config(str(ALEMBIC_INI)))
    head = script.get_current_head()
    assert head is not None, "migrations/ has no revision"
    return head


async def current_revision(connection: AsyncConnection) -> str | None:
    result = await connection.execute(text("SELECT version_num FROM alembic_version"))
    return result.scalar_one_or_none()
