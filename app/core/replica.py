"""Read replicas (HINDSIGHT_READ_DATABASE_URL): search reads from a streaming standby once it
holds the current generation of every namespace it reads, so a caller reads its own writes.

Every committed write bumps its namespace's generation in the same transaction
(app.namespaces.tracking); the generation is read on the primary, and a standby showing at
least that generation has replayed the write's commit. Until it does (briefly: lag on a local
network is milliseconds) search waits, up to `max_wait_seconds`, then reads the primary."""

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.errors import Unavailable
from app.core.metrics import REPLICA_READS
from app.namespaces import repository as namespaces

logger = logging.getLogger(__name__)


class Reads:
    def __init__(
        self, replica: async_sessionmaker[AsyncSession] | None = None, *, max_wait_seconds: float = 0.5, poll_seconds: float = 0.005
    ) -> None:
        self._replica = replica
        self._max_wait = max_wait_seconds
        self._poll = poll_seconds

    @asynccontextmanager
    async def session_for(self, primary: AsyncSession, generations: Mapping[str, int]) -> AsyncIterator[AsyncSession]:
        """A session to read the namespaces from: the standby once it holds `generations`, else
        `primary`."""
        if self._replica is None:
            yield primary
            return
        await primary.commit()  # the primary's connection goes back to its pool meanwhile
        async with self._replica() as standby:
            if await self._caught_up(standby, generations):
                REPLICA_READS.labels(served_by="replica").inc()
                yield standby
                return
        REPLICA_READS.labels(served_by="primary").inc()
        yield primary

    async def _caught_up(self, standby: AsyncSession, generations: Mapping[str, int]) -> bool:
        deadline = time.monotonic() + self._max_wait
        try:
            while True:
                held = await namespaces.generations(standby, list(generations))
                if all(held[name] >= generation for name, generation in generations.items()):
                    return True
                if time.monotonic() >= deadline:
                    return False
                await asyncio.sleep(self._poll)
        except Unavailable:
            logger.warning("the read replica cannot be reached; reading from the primary")
            return False
