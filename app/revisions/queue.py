"""Async revision mode (HINDSIGHT_REVISION_MODE=async): a write stores its memory and
defers the revision to a worker (`python -m app worker`) through procrastinate, a job
queue that lives in the same PostgreSQL. The memory is active from the start, so a search
right after the write already finds it; the worker applies the judgement moments later.

A job is queued inside the write's own transaction (procrastinate's defer function, called on
the write's connection): it exists if and only if the write committed, and no worker can start
it before the memory is there to read. A periodic review that falls due is queued the same way."""

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import procrastinate
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from app.core.database import libpq_url
from app.memories import repository as memories
from app.revisions.operations import review
from app.revisions.service import Context, revise_stored

logger = logging.getLogger(__name__)

QUEUE = "revisions"
TASK = "hindsight.revise_memory"
REVIEW_TASK = "hindsight.review_namespace"
# Jobs whose transaction lost to a concurrent one (a deadlock victim) run again.
_RETRY = procrastinate.RetryStrategy(max_attempts=3, exponential_wait=2)
# procrastinate's own defer function (its schema is migration 0005's, pinned with the library).
_DEFER = text(
    "SELECT procrastinate_defer_jobs_v1(ARRAY[ROW(:queue, :task, 0, NULL, NULL, CAST(:args AS jsonb), NULL)]"
    "::procrastinate_job_to_defer_v1[])"
)


@dataclass(slots=True)
class WorkerRuntime:
    sessionmaker: async_sessionmaker[AsyncSession]
    context: Context


_runtime: list[WorkerRuntime] = []
queue = procrastinate.App(connector=procrastinate.PsycopgConnector())


@asynccontextmanager
async def connected(database_url: str) -> AsyncIterator[procrastinate.App]:
    """The queue, bound to a database and open, for the duration of the block."""
    with queue.replace_connector(procrastinate.PsycopgConnector(conninfo=libpq_url(database_url))):
        async with queue.open_async():
            yield queue


@queue.task(name=TASK, queue=QUEUE, retry=_RETRY)
async def revise_memory(memory_id: str) -> int:
    """Run the write-time triggers for a stored memory; returns how many judgements it logged."""
    runtime = _runtime[-1]
    async with runtime.sessionmaker() as session:
        memory = await memories.get(session, UUID(memory_id))
        embedding = await memories.embedding_of(session, memory.id) if memory is not None else None
        if embedding is None:
            return 0
        # The judge is asked with the namespace lock released (revise_stored commits meanwhile).
        revisions = await revise_stored(session, memory, embedding=embedding, context=runtime.context)
        await session.commit()
        return len(revisions)


@queue.task(name=REVIEW_TASK, queue=QUEUE, retry=_RETRY)
async def review_namespace(namespace: str) -> int:
    """The periodic review of a namespace, due after its last N writes; how many judgements it logged."""
    runtime = _runtime[-1]
    async with runtime.sessionmaker.begin() as session:
        revisions, _ = await review(
            session, namespace=namespace, since=None, limit=runtime.context.settings.review_batch, context=runtime.context
        )
        return len(revisions)


def _job(task: str, args: dict[str, Any]) -> dict[str, str]:
    return {"queue": QUEUE, "task": task, "args": json.dumps(args)}


async def defer(session: AsyncSession, memory_id: UUID) -> None:
    """Queue the revision of a memory just written, in the write's transaction."""
    await session.execute(_DEFER, _job(TASK, {"memory_id": str(memory_id)}))


def defer_review(session: Session, namespace: str) -> None:
    """Queue a namespace's periodic review, in the transaction that made it due (sync: it runs
    in the commit hook, app.namespaces.tracking)."""
    session.execute(_DEFER, _job(REVIEW_TASK, {"namespace": namespace}))


async def run_worker(app: procrastinate.App, runtime: WorkerRuntime, *, wait: bool = True) -> None:
    """Process revision jobs; with wait=False, return once the queue is empty."""
    _runtime.append(runtime)
    try:
        await app.run_worker_async(queues=[QUEUE], wait=wait, install_signal_handlers=wait)
    finally:
        _runtime.remove(runtime)
