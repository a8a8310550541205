"""HINDSIGHT_REVISION_MODE=async: the write defers, in its own transaction, the worker revises,
reads see the write at once."""

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.database import create_sessionmaker
from app.memories import service
from app.memories.schemas import MemoryWrite
from app.revisions import queue
from app.revisions.judges import RulesJudge
from app.revisions.service import Context


@pytest.fixture
async def revision_queue(engine, database_url, live_client, live_namespace, settings):
    app = live_client._transport.app
    app.state.settings = settings.model_copy(update={"revision_mode": "async"})
    async with queue.connected(database_url) as connected:
        yield connected
    async with engine.begin() as connection:
        await connection.execute(
            text("DELETE FROM procrastinate_jobs WHERE args->>'memory_id' IN (SELECT id::text FROM memories WHERE namespace = :ns)"),
            {"ns": live_namespace},
        )


async def test_write_defers_revision_to_the_worker(live_client, live_namespace, revision_queue, engine, embedder, settings):
    key = f"{live_namespace}:city"
    old = (await live_client.post("/v1/memories", json={"namespace": live_namespace, "content": "User lives in Austin.", "key": key})).json()
    written = await live_client.post("/v1/memories", json={"namespace": live_namespace, "content": "User lives in Denver.", "key": key})
    assert written.status_code == 201
    assert written.json()["revisions"] == []  # deferred, not judged inline

    search = {"query": "Which city does the user live in?", "namespace": live_namespace, "top_k": 5}
    before = (await live_client.post("/v1/memories/search", json=search)).json()["hits"]
    assert written.json()["memory"]["id"] in [hit["memory"]["id"] for hit in before]  # read-your-writes

    context = Context(judge=RulesJudge(), embedder=embedder, settings=settings)
    runtime = queue.WorkerRuntime(sessionmaker=create_sessionmaker(engine), context=context)
    await queue.run_worker(revision_queue, runtime, wait=False)

    detail = (await live_client.get(f"/v1/memories/{old['memory']['id']}")).json()
    assert detail["memory"]["status"] == "superseded"
    assert detail["memory"]["superseded_by"] == written.json()["memory"]["id"]
    after = (await live_client.post("/v1/memories/search", json={**search, "query": "Which city now?"})).json()["hits"]
    assert [hit["memory"]["content"] for hit in after] == ["User lives in Denver."]


async def _jobs_for(engine, memory_id) -> int:
    async with engine.connect() as connection:
        statement = text("SELECT count(*) FROM procrastinate_jobs WHERE args->>'memory_id' = :id")
        return await connection.scalar(statement, {"id": str(memory_id)})


async def test_the_job_is_queued_in_the_writes_transaction(engine, embedder, settings, live_namespace):
    """Seen by workers once the write commits, never if it rolls back, never before the memory exists."""
    context = Context(judge=RulesJudge(), embedder=embedder, settings=settings, defer=queue.defer)
    for commits in (False, True):
        async with engine.connect() as connection:
            session = AsyncSession(bind=connection, expire_on_commit=False)
            request = MemoryWrite(namespace=live_namespace, content=f"User keeps bees (committed: {commits}).")
            written = await service.write(session, request=request, context=context)
            assert await _jobs_for(engine, written.memory.id) == 0  # another connection sees nothing yet
            await (session.commit() if commits else session.rollback())
            assert await _jobs_for(engine, written.memory.id) == (1 if commits else 0)
            await session.close()
    async with engine.begin() as connection:
        await connection.execute(
            text("DELETE FROM procrastinate_jobs WHERE args->>'memory_id' IN (SELECT id::text FROM memories WHERE namespace = :ns)"),
            {"ns": live_namespace},
        )
        await connection.execute(text("DELETE FROM memories WHERE namespace = :ns"), {"ns": live_namespace})
