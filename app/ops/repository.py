from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession


async def queued_revisions(connection: AsyncConnection) -> int:
    """Deferred revisions no worker has taken yet (procrastinate's own table)."""
    return await connection.scalar(text("SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'"))


async def take_housekeeping_turn(session: AsyncSession) -> bool:
    """One process sweeps at a time: the others skip their turn (the lock ends with the transaction)."""
    return bool(await session.scalar(text("SELECT pg_try_advisory_xact_lock(hashtextextended('hindsight.housekeeping', 0))")))
