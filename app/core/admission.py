"""Bounded, fair use of the database by requests.

A request uses at most one pooled connection at a time; admission bounds how many requests use
the database at once, per lane (reads: searches and lookups; writes: everything that changes
something), below the pool's size, so the pool never makes a request wait and background work
(access counting, periodic reviews) always finds a connection. Requests beyond that wait in one
queue per caller, and the queues are served in turn: a client sending a hundred searches at
once waits behind its own, not in front of everyone else's. A request waits as long as its lane
keeps serving (a burst larger than the slots drains at the rate the machine answers): it answers
503 with Retry-After when no request of its lane finished within the admission wait (the
database or the service is stuck), or after the longest wait in all, instead of holding its
client forever.

A request takes its slot once its body has been read, so a client trickling its body in never
holds one."""

import asyncio
import hashlib
import math
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager

from starlette.types import ASGIApp, Receive, Scope, Send

from app.core.asgi import read_body, replaying
from app.core.errors import Unavailable, problem_of, problem_response
from app.core.metrics import ADMISSION_REFUSED, ADMISSION_WAIT_SECONDS

# Paths that never touch the database, or must answer even when it is saturated.
_UNGATED = frozenset({"/healthz", "/metrics", "/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"})
# POSTs that only read: searches.
READING_POSTS = frozenset({"/v1/memories/search", "/v1/reflections/search"})


class Busy(Exception):
    """No slot came within the admission wait."""


class _Lane:
    def __init__(self, slots: int) -> None:
        self.free = slots
        self.waiting: OrderedDict[Hashable, deque[asyncio.Future[None]]] = OrderedDict()
        self.served_at = time.monotonic()  # when a request last gave its slot back

    async def acquire(self, caller: Hashable, *, stall: float, limit: float) -> None:
        """Take a slot, waiting in the caller's queue while the lane serves: give up (Busy) when
        no request of the lane finished for `stall` seconds, or after `limit` seconds in all."""
        if self.free > 0 and not self.waiting:
            self.free -= 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(caller, deque()).append(turn)
        began = time.monotonic()
        try:
            while True:
                now = time.monotonic()
                left = min(max(self.served_at, began) + stall, began + limit) - now
                if left <= 0:
                    raise TimeoutError
                try:
                    await asyncio.wait_for(asyncio.shield(turn), timeout=left)
                    return
                except TimeoutError:
                    if turn.done():
                        raise
                    continue  # the lane served someone meanwhile: keep waiting
        except BaseException as stopped:
            if turn.done() and not turn.cancelled():
                # The slot was handed over in the same instant the wait ended.
                if isinstance(stopped, TimeoutError):
                    return
                self.release()
            else:
                self._forget(caller, turn)
            if isinstance(stopped, TimeoutError):
                raise Busy from None
            raise

    def release(self) -> None:
        """Give the slot to the next caller in turn, or back to the lane."""
        self.served_at = time.monotonic()
        while self.waiting:
            caller, queue = next(iter(self.waiting.items()))
            turn = queue.popleft()
            if queue:
                self.waiting.move_to_end(caller)  # the other callers go first next time
            else:
                del self.waiting[caller]
            if not turn.done():
                turn.set_result(None)
                return
        self.free += 1

    def _forget(self, caller: Hashable, turn: asyncio.Future[None]) -> None:
        queue = self.waiting.get(caller)
        if queue is not None and turn in queue:
            queue.remove(turn)
            if not queue:
                del self.waiting[caller]


class Admission:
    def __init__(self, *, read_slots: int, write_slots: int, wait_seconds: float, max_wait_seconds: float | None = None) -> None:
        self._lanes = {"read": _Lane(read_slots), "write": _Lane(write_slots)}
        self.wait_seconds = wait_seconds
        self.max_wait_seconds = max(wait_seconds, max_wait_seconds or wait_seconds)

    @asynccontextmanager
    async def slot(self, lane: str, caller: Hashable) -> AsyncIterator[None]:
        began = time.perf_counter()
        try:
            await self._lanes[lane].acquire(caller, stall=self.wait_seconds, limit=self.max_wait_seconds)
        except Busy:
            ADMISSION_REFUSED.labels(lane=lane).inc()
            raise
        ADMISSION_WAIT_SECONDS.labels(lane=lane).observe(time.perf_counter() - began)
        try:
            yield
        finally:
            self._lanes[lane].release()


def lane_of(scope: Scope) -> str | None:
    path = scope["path"]
    if path in _UNGATED:
        return None
    return "read" if scope["method"] in ("GET", "HEAD") or path in READING_POSTS else "write"


def caller_of(scope: Scope) -> str:
    """Who is asking: the bearer token (hashed, never kept), or the client's address."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            return "key:" + hashlib.sha256(value).hexdigest()[:16]
    client = scope.get("client")
    return f"addr:{client[0]}" if client else "addr:unknown"


class AdmissionMiddleware:
    def __init__(self, app: ASGIApp, *, admission: Admission) -> None:
        self.app = app
        self.admission = admission

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        lane = lane_of(scope) if scope["type"] == "http" else None
        if lane is None:
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)  # a client trickling its body in holds no slot meanwhile
        try:
            async with self.admission.slot(lane, caller_of(scope)):
                await self.app(scope, replaying(body, receive), send)
        except Busy:
            wait = self.admission.wait_seconds
            busy = Unavailable(f"the service is busy: no database slot came (none freed for {wait:g} s); retry shortly")
            await problem_response(problem_of(busy), headers={"Retry-After": str(max(1, math.ceil(wait / 4)))})(
                scope, receive, send
            )
