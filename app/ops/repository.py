from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


async def queued_revisions(connection: AsyncConnection) -> int:
    """Deferred revisions no worker has taken yet (procrastinate's own table)."""
    return await connection.scalar(text("SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'"))
