"""Work a request starts and does not wait for (a periodic review): tracked, so shutdown waits
for it and tests can run it to the end; one job per key at a time."""

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable

logger = logging.getLogger(__name__)

Job = Callable[[], Awaitable[object]]


class Background:
    def __init__(self, *, start_at_once: bool = True) -> None:
        # Tests share one database session between requests: there, jobs wait for drain().
        self._start_at_once = start_at_once
        self._running: dict[Hashable, asyncio.Task] = {}
        self._waiting: dict[Hashable, Job] = {}

    def start(self, key: Hashable, job: Job) -> None:
        """Run `job` unless one with this key is already running or waiting."""
        if key in self._running or key in self._waiting:
            return
        if self._start_at_once:
            self._running[key] = asyncio.get_running_loop().create_task(self._run(key, job))
        else:
            self._waiting[key] = job

    async def _run(self, key: Hashable, job: Job) -> None:
        try:
            await job()
        except Exception:
            logger.exception("background job %r failed", key)
        finally:
            self._running.pop(key, None)

    async def drain(self) -> None:
        """Run what waits and wait for what runs, until nothing is left (a job may start another)."""
        while self._running or self._waiting:
            for key, job in list(self._waiting.items()):
                del self._waiting[key]
                self._running[key] = asyncio.get_running_loop().create_task(self._run(key, job))
            await asyncio.gather(*self._running.values(), return_exceptions=True)

    async def close(self, *, timeout: float) -> None:
        """At shutdown: let running jobs finish within `timeout`, then cancel them."""
        self._waiting.clear()
        if not self._running:
            return
        _, pending = await asyncio.wait(list(self._running.values()), timeout=timeout)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
