"""The Idempotency-Key header on every write (POST, PUT, PATCH, DELETE but the searches).

The first request with a key claims it (its own short transaction) and runs; the transaction
that applies it marks the key applied as it commits (app.core.database runs the request's
before-commit hooks), and the answer is stored once sent. The same key again, from the same
caller (the API key; all callers share one space without keys):
- with the same request: the stored answer, status and body, with `Idempotent-Replayed: true`;
  while the first one still runs, the repeat waits for its answer (up to the wait), then 409;
- with another request (method, path, query or body differ): 422.
A request that fails before applying anything gives its key up, so a retry runs it again; a
claim whose process died is taken over after `STALE_SECONDS`. Answers are kept for
`idempotency_keep_seconds` (a day)."""

import asyncio
import hashlib
import logging
import re
import time
from datetime import datetime, timedelta, timezone
from typing import Annotated

from fastapi import Depends, Header
from sqlalchemy.exc import DBAPIError
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.admission import lane_of
from app.core.asgi import body_of, read_body, replaying
from app.core.database import BEFORE_COMMIT, COMMITTED
from app.core.errors import AppError, Conflict, Unavailable, Unprocessable, problem_of, problem_response
from app.core.metrics import IDEMPOTENT_REPLAYS
from app.idempotency import repository

logger = logging.getLogger(__name__)

HEADER = b"idempotency-key"
# Printable ASCII, as the header's draft standard has it; a UUID is the usual choice.
_KEY = re.compile(r"[\x21-\x7e]{1,255}")
# A claim older than this whose request never finished belonged to a process that died.
STALE_SECONDS = 300.0
_POLL_SECONDS = 0.05


def idempotency_key(
    key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            max_length=255,
            description="Send the same key again (a retry) and the write is applied once: the first answer comes back. "
            "Kept a day; printable ASCII, at most 255 characters (a UUID serves).",
        ),
    ] = None,
) -> None:
    """Declares the header in the schema; IdempotencyMiddleware acts on it."""


IDEMPOTENT = Depends(idempotency_key)


class KeyReused(Unprocessable):
    type = "/problems/idempotency-key-reused"
    title = "Idempotency-Key reused"


class StillRunning(Conflict):
    type = "/problems/idempotency-in-progress"
    title = "Request with this Idempotency-Key still running"


def _header(scope: Scope, name: bytes) -> str | None:
    for header, value in scope.get("headers", ()):
        if header == name:
            return value.decode("latin-1")
    return None


def _served(scope: Scope) -> bool:
    """A route serves this method at this path. Anything else (TRACE, PUT on a POST-only path)
    goes on unkeyed to its 404 or 405, instead of a key-reuse 422."""
    return any(route.matches(scope)[0] is Match.FULL for route in scope["app"].router.routes)


def _caller(scope: Scope) -> str:
    authorization = _header(scope, b"authorization")
    token = authorization.split(" ", 1)[-1].strip() if authorization else ""
    return f"key:{hashlib.sha256(token.encode()).hexdigest()[:16]}" if token else "open"


def _fingerprint(scope: Scope, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (scope["method"].encode(), scope["path"].encode(), scope.get("query_string", b""), body):
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


async def _refuse(error: AppError, scope: Scope, receive: Receive, send: Send) -> None:
    headers = {"Retry-After": "1"} if isinstance(error, StillRunning) else error.headers
    await problem_response(problem_of(error), headers=headers)(scope, receive, send)


class IdempotencyMiddleware:
    def __init__(self, app: ASGIApp, *, wait_seconds: float) -> None:
        self.app = app
        self.wait_seconds = wait_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        keyed = scope["type"] == "http" and lane_of(scope) == "write" and _served(scope)
        key = _header(scope, HEADER) if keyed else None
        if key is None:
            await self.app(scope, receive, send)
            return
        if not _KEY.fullmatch(key):
            error = Unprocessable("Idempotency-Key: printable ASCII without spaces, 1 to 255 characters (a UUID serves)")
            await _refuse(error, scope, receive, send)
            return
        try:
            await self._keyed(key, scope, receive, send)
        except DBAPIError as error:  # outside the app, so its handlers never see this
            logger.warning("idempotency store unavailable: %s", type(error.orig).__name__)
            await _refuse(Unavailable("the database did not answer; retry shortly"), scope, receive, send)
        except Unavailable as error:
            await _refuse(error, scope, receive, send)

    async def _keyed(self, key: str, scope: Scope, receive: Receive, send: Send) -> None:
        messages = await read_body(receive)
        caller, fingerprint = _caller(scope), _fingerprint(scope, body_of(messages))
        sessions = scope["app"].state.sessions
        deadline = time.monotonic() + self.wait_seconds
        while True:
            async with sessions() as session:
                stale_before = datetime.now(timezone.utc) - timedelta(seconds=STALE_SECONDS)
                claimed = await repository.claim(session, caller=caller, key=key, request_hash=fingerprint, stale_before=stale_before)
                first = None if claimed else await repository.get(session, caller=caller, key=key)
                await session.commit()
            if claimed:
                break
            if first is not None and first.request_hash != fingerprint:
                await _refuse(KeyReused(f"Idempotency-Key {key!r} was sent before with another request"), scope, receive, send)
                return
            if first is not None and first.body is not None:
                await self._replay(first.status, first.content_type, first.body, scope, receive, send)
                return
            if time.monotonic() >= deadline:
                detail = (
                    "the first request with this key is still running; repeat it shortly for its answer"
                    if first is None or first.status is None
                    else "the first request with this key was applied, but its answer was not kept"
                )
                await _refuse(StillRunning(detail), scope, receive, send)
                return
            await asyncio.sleep(_POLL_SECONDS)
        await self._first(scope, replaying(messages, receive), send, sessions=sessions, caller=caller, key=key)

    async def _first(self, scope: Scope, receive: Receive, send: Send, *, sessions, caller: str, key: str) -> None:
        """Run the request that claimed the key; keep its answer, or give the key up."""

        async def mark_applied(session) -> None:
            await repository.mark_applied(session, caller=caller, key=key)

        scope.setdefault(BEFORE_COMMIT, []).append(mark_applied)
        status, content_type, body = 500, None, []

        async def keeping(message: Message) -> None:
            nonlocal status, content_type
            if message["type"] == "http.response.start":
                status = message["status"]
                content_type = dict(message.get("headers", ())).get(b"content-type", b"").decode("latin-1") or None
            elif message["type"] == "http.response.body":
                body.append(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, keeping)
        finally:
            try:
                async with sessions() as session:
                    if scope.get(COMMITTED) or 200 <= status < 300:
                        await repository.store(
                            session, caller=caller, key=key, status=status, content_type=content_type, body=b"".join(body)
                        )
                    else:
                        await repository.release(session, caller=caller, key=key)
                    await session.commit()
            except (DBAPIError, Unavailable) as error:  # the answer went out already; a repeat waits, then 409
                logger.warning("the answer to an Idempotency-Key could not be kept: %s", type(error).__name__)

    async def _replay(self, status: int, content_type: str | None, body: bytes, scope: Scope, receive: Receive, send: Send) -> None:
        IDEMPOTENT_REPLAYS.inc()
        headers = [(b"content-length", str(len(body)).encode()), (b"idempotent-replayed", b"true")]
        if content_type:
            headers.append((b"content-type", content_type.encode("latin-1")))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
