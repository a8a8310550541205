"""Jobs run in the API process that accepted them, as background tasks, with their state in
PostgreSQL (app/jobs/repository.py).

- A domain registers a handler per job kind (`@handler("conversation.ingest")`). A handler
  must be idempotent: it may run again from the start after its process died, and must then
  skip what the earlier attempt finished (a conversation skips messages already stored).
- Submitting commits a `queued` row and starts it here at once, at most `jobs_concurrency`
  at a time per process. Running, the process claims the row (`running`, `owner`), writes a
  heartbeat every `jobs_heartbeat_seconds` and with every progress report, and finishes it
  `succeeded` with the handler's result or `failed` with the error.
- If the process dies, the heartbeat stops. Every API process sweeps every
  `jobs_sweep_seconds` and at start-up: a job queued longer than `jobs_stale_seconds`, or
  running with a heartbeat older than that, is claimed (one claimant wins) and run again, up
  to `jobs_max_attempts` attempts; after that it is `failed`. A process shutting down puts
  its running jobs back in the queue without counting the attempt.
"""

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.errors import AppError
from app.core.settings import Settings
from app.jobs import repository
from app.models import Job

logger = logging.getLogger(__name__)

_ERROR_CHARS = 2_000


class JobLost(Exception):
    """Another process took this job over (this one was presumed dead): stop working on it."""


@dataclass(slots=True)
class JobContext:
    """What a handler gets: its parameters, the app's runtime state, and a progress reporter."""

    job_id: UUID
    params: dict[str, Any]
    state: Any  # the app's state: settings, sessionmaker, embedder, judge, ...
    _runner: "JobRunner"

    async def progress(self, done: int, total: int | None = None) -> None:
        """Record progress (and a heartbeat); raises JobLost if the job is no longer ours."""
        await self._runner.report(self.job_id, done=done, total=total)


Handler = Callable[[JobContext], Awaitable[dict[str, Any]]]
_HANDLERS: dict[str, Handler] = {}


def handler(kind: str) -> Callable[[Handler], Handler]:
    """Register the handler of a job kind (one per kind)."""

    def register(function: Handler) -> Handler:
        if kind in _HANDLERS and _HANDLERS[kind] is not function:
            raise ValueError(f"job kind {kind!r} already has a handler")
        _HANDLERS[kind] = function
        return function

    return register


def _describe(error: BaseException) -> str:
    text = error.detail if isinstance(error, AppError) else f"{type(error).__name__}: {error}"
    return text[:_ERROR_CHARS]


class JobRunner:
    def __init__(self, *, sessions: async_sessionmaker[AsyncSession], state: Any, settings: Settings) -> None:
        self._sessions = sessions
        self._state = state
        self._settings = settings
        self._slots = asyncio.Semaphore(settings.jobs_concurrency)
        self._tasks: dict[UUID, asyncio.Task[None]] = {}
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    @property
    def _stale(self) -> timedelta:
        return timedelta(seconds=self._settings.jobs_stale_seconds)

    async def submit(
        self, *, kind: str, namespace: str | None, params: dict[str, Any], total: int | None = None
    ) -> Job:
        """Store a queued job (committed) and start it in the background."""
        if kind not in _HANDLERS:
            raise ValueError(f"no handler for job kind {kind!r}")
        async with self._sessions.begin() as session:
            job = await repository.add(session, kind=kind, namespace=namespace, params=params, total=total)
        self.start(job.id)
        return job

    def start(self, job_id: UUID) -> None:
        if job_id not in self._tasks:
            task = asyncio.create_task(self._run(job_id), name=f"job-{job_id}")
            self._tasks[job_id] = task
            task.add_done_callback(lambda _: self._tasks.pop(job_id, None))

    async def wait(self, job_id: UUID) -> None:
        """Until this process's run of the job ends (tests, the CLI)."""
        task = self._tasks.get(job_id)
        if task is not None:
            await asyncio.shield(task)

    async def _run(self, job_id: UUID) -> None:
        async with self._slots:
            async with self._sessions.begin() as session:
                job = await repository.claim(
                    session, job_id, owner=self.owner, stale=self._stale, max_attempts=self._settings.jobs_max_attempts
                )
            if job is None:
                return  # finished, or another process runs it
            heartbeat = asyncio.create_task(self._beat(job_id))
            try:
                result = await _HANDLERS[job.kind](JobContext(job.id, job.params, self._state, self))
            except JobLost:
                logger.warning("job %s was taken over by another process; this run stops", job_id)
                return
            except asyncio.CancelledError:
                with suppress(Exception):
                    async with self._sessions.begin() as session:
                        await repository.release(session, job_id, owner=self.owner)
                raise
            except Exception as error:  # a handler's failure is the job's, reported on it
                logger.exception("job %s (%s) failed", job_id, job.kind)
                await self._finish(job_id, status="failed", result=None, error=_describe(error))
            else:
                await self._finish(job_id, status="succeeded", result=result, error=None)
            finally:
                heartbeat.cancel()

    async def _finish(self, job_id: UUID, **outcome: Any) -> None:
        async with self._sessions.begin() as session:
            if not await repository.finish(session, job_id, owner=self.owner, **outcome):
                logger.warning("job %s finished here but had been taken over by another process", job_id)

    async def report(self, job_id: UUID, *, done: int | None, total: int | None) -> None:
        async with self._sessions.begin() as session:
            if not await repository.report(session, job_id, owner=self.owner, done=done, total=total):
                raise JobLost(str(job_id))

    async def _beat(self, job_id: UUID) -> None:
        while True:
            await asyncio.sleep(self._settings.jobs_heartbeat_seconds)
            with suppress(JobLost):  # the handler finds out at its next report
                await self.report(job_id, done=None, total=None)

    async def sweep(self) -> list[UUID]:
        """Take over orphaned jobs (see the module docstring); the ids started here."""
        async with self._sessions.begin() as session:
            failed = await repository.fail_exhausted(
                session, stale=self._stale, max_attempts=self._settings.jobs_max_attempts
            )
            found = await repository.orphans(
                session,
                stale=self._stale,
                max_attempts=self._settings.jobs_max_attempts,
                limit=self._settings.jobs_concurrency,
            )
        if failed:
            logger.warning("%d jobs failed: their processes stopped too often", failed)
        for job_id in found:
            logger.info("taking over job %s", job_id)
            self.start(job_id)
        return found

    async def _sweep_forever(self) -> None:
        while True:
            try:
                await self.sweep()
            except Exception:  # the database may be away; the next sweep tries again
                logger.warning("job sweep failed", exc_info=True)
            await asyncio.sleep(self._settings.jobs_sweep_seconds)

    @asynccontextmanager
    async def running(self) -> AsyncIterator["JobRunner"]:
        """Sweep while the block runs; at its end, put unfinished jobs back in the queue."""
        sweeper = asyncio.create_task(self._sweep_forever(), name="job-sweeper")
        try:
            yield self
        finally:
            sweeper.cancel()
            tasks = list(self._tasks.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(sweeper, *tasks, return_exceptions=True)
