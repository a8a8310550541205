"""What the shared tables shed over time, swept by whichever API process gets there first:
write-rate seconds that left every window, and answers to Idempotency-Keys past their day."""

import asyncio
import logging

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.errors import Unavailable
from app.idempotency import repository as idempotency
from app.memories.write_rate import WriteRate
from app.ops import repository

logger = logging.getLogger(__name__)

SWEEP_EVERY_SECONDS = 60.0


async def sweep(sessions: async_sessionmaker[AsyncSession], *, write_rate: WriteRate, keep_answers_seconds: float) -> bool:
    """One sweep; False if another process was sweeping."""
    async with sessions.begin() as session:
        if not await repository.take_housekeeping_turn(session):
            return False
        windows = await write_rate.forget_idle(session)
        answers = await idempotency.forget_older_than(session, keep_answers_seconds)
    logger.debug("housekeeping: %d write-rate seconds, %d idempotency answers dropped", windows, answers)
    return True


async def keep_tidy(sessions: async_sessionmaker[AsyncSession], *, write_rate: WriteRate, keep_answers_seconds: float) -> None:
    """Sweep every minute until cancelled; a database that is away skips a turn."""
    while True:
        await asyncio.sleep(SWEEP_EVERY_SECONDS)
        try:
            await sweep(sessions, write_rate=write_rate, keep_answers_seconds=keep_answers_seconds)
        except (DBAPIError, Unavailable) as error:
            logger.warning("housekeeping skipped: %s", type(error).__name__)
