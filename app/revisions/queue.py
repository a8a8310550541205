"""Async revision mode (HINDSIGHT_REVISION_MODE=async): a write stores its memory and
defers the revision to a worker (`python -m app worker`) through procrastinate, a job
queue that lives in the same PostgreSQL. The memory is active from the start, so a search
right after the write already finds it; the worker applies the judgement moments later."""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from uuid import UUID

import procrastinate
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.errors import NotFound
from app.memories import repository as memories
from app.revisions.operations import review_if_due
from app.revisions.service import Context, revise_new_memory

logger = logging.getLogger(__name__)

QUEUE = "revisions"
TASK = "hindsight.revise_memory"


class MemoryNotCommittedYet(Exception):
    """The job ran before the write that deferred it committed; it is retried."""


@dataclass(slots=True)
class WorkerRuntime:
    sessionmaker: async_sessionmaker[AsyncSession]
    context: Context


_runtime: list[WorkerRuntime] = []
queue = procrastinate.App(connector=procrastinate.PsycopgConnector())


def libpq_url(database_url: str) -> str:
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


@asynccontextmanager
async def connected(database_url: str) -> AsyncIterator[procrastinate.App]:
    """The queue, bound to a database and open, for the duration of the block."""
    with queue.replace_connector(procrastinate.PsycopgConnector(conninfo=libpq_url(database_url))):
        async with queue.open_async():
            yield queue


# A job can start before the write that deferred it commits (a large batch): it retries with
# a growing wait, 2 s then 4, 8, ... about eight minutes in all.
@queue.task(name=TASK, queue=QUEUE, retry=procrastinate.RetryStrategy(max_attempts=8, exponential_wait=2))
async def revise_memory(memory_id: str) -> int:
    """Run the write-time triggers for a stored memory; returns how many judgements it logged."""
    runtime = _runtime[-1]
    async with runtime.sessionmaker.begin() as session:
        memory = await memories.get(session, UUID(memory_id))
        if memory is None:
            raise MemoryNotCommittedYet(memory_id)
        await memories.lock_namespace(session, memory.namespace)
        try:
            await memories.reload(session, memory)
        except NotFound:
            return 0  # purged before its turn came
        embedding = await memories.embedding_of(session, memory.id)
        if memory.status != "active" or embedding is None:
            return 0
        revisions = await revise_new_memory(session, memory, embedding=embedding, context=runtime.context)
        revisions += await review_if_due(session, namespace=memory.namespace, context=runtime.context)
        return len(revisions)


async def defer(app: procrastinate.App, memory_id: UUID) -> None:
    await app.configure_task(TASK).defer_async(memory_id=str(memory_id))


async def run_worker(app: procrastinate.App, runtime: WorkerRuntime, *, wait: bool = True) -> None:
    """Process revision jobs; with wait=False, return once the queue is empty."""
    _runtime.append(runtime)
    try:
        await app.run_worker_async(queues=[QUEUE], wait=wait, install_signal_handlers=wait)
    finally:
        _runtime.remove(runtime)
