"""Searches being answered in this process, and bulk work stepping aside for them.

A batch import stores its items on the event loop that also answers searches: judging an item
is a few milliseconds of Python that each step of a search would otherwise wait behind. So
between items a batch waits while a search runs here, at most a bounded time at each item
(`settings.embedding_yield_seconds`), which a stream of searches cannot stretch into starving
the import. Per process by nature: it is this process's event loop that is shared. (The
passage workers yield to searches the same way: `EmbeddingProvider.foreground`.)"""

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager

_answering = 0


@contextmanager
def search_running() -> Iterator[None]:
    global _answering
    _answering += 1
    try:
        yield
    finally:
        _answering -= 1


def answering() -> bool:
    return _answering > 0


async def step_aside(limit: float) -> None:
    """Return once no search is being answered in this process, or after `limit` seconds."""
    deadline = time.monotonic() + limit
    while _answering and time.monotonic() < deadline:
        await asyncio.sleep(0.002)
