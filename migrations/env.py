"""Alembic environment: async engine; the URL is passed in by hindsight or resolved from settings."""

import asyncio
from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from app.core.database import resolve_database_url
from app.core.settings import Settings
from app.models import Base

config = context.config
if config.config_file_name is not None and not config.attributes.get("skip_logging_config"):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def include_name(name: str | None, type_: str, _parents: dict[str, str | None]) -> bool:
    """Autogenerate compares our tables only: procrastinate's (migration 0005) belong to the queue library."""
    return not (type_ == "table" and name is not None and name.startswith("procrastinate_"))


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, include_name=include_name)
    with context.begin_transaction():
        context.run_migrations()


async def _run_online(url: str) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
    finally:
        await engine.dispose()


url = config.attributes.get("url") or resolve_database_url(Settings())
if context.is_offline_mode():
    context.configure(url=url, target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(_run_online(url))
