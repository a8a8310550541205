"""Work a user waits for (a search, a query's embedding), counted in this process, and bulk work
stepping aside for it.

A batch import stores its items on the event loop that also answers searches, and embeds them
on passage threads that share the cores: judging an item is a few milliseconds of Python that
each step of a search would otherwise wait behind, and a passage chunk seconds of CPU. So a
batch's next item, a review's next memory (`step_aside`, on the event loop) and a passage chunk
(`wait_quiet`, on its thread) wait while such work runs here, each at most a bounded time
(`settings.embedding_yield_seconds`), which a stream of searches cannot stretch into starving
the import. A search request counts from its arrival (`ForegroundMiddleware`). Per process by
nature: it is this process's loop and cores that are shared."""

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from starlette.types import ASGIApp, Receive, Scope, Send

_waiting = 0
_quiet = threading.Condition()  # passage threads wait on it


@contextmanager
def user_waiting() -> Iterator[None]:
    global _waiting
    with _quiet:
        _waiting += 1
    try:
        yield
    finally:
        with _quiet:
            _waiting -= 1
            _quiet.notify_all()


def waiting() -> bool:
    return _waiting > 0


async def step_aside(limit: float) -> None:
    """On the event loop: return once no work a user waits for runs, or after `limit` seconds."""
    deadline = time.monotonic() + limit
    while _waiting and time.monotonic() < deadline:
        await asyncio.sleep(0.002)


def wait_quiet(limit: float) -> None:
    """On a thread: the same, blocking it."""
    with _quiet:
        _quiet.wait_for(lambda: _waiting == 0, timeout=limit)


class ForegroundMiddleware:
    """A request to one of `paths` (searches) counts as work a user waits for from the moment it
    arrives: reading its body, waiting for a database slot and routing come before the handler,
    and a batch storing items on the same loop would otherwise run two or three of them
    meanwhile."""

    def __init__(self, app: ASGIApp, *, paths: frozenset[str]) -> None:
        self.app = app
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        with user_waiting():
            await self.app(scope, receive, send)
