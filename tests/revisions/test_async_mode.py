"""HINDSIGHT_REVISION_MODE=async: the write defers, the worker revises, reads see the write at once."""

import pytest
from sqlalchemy import text

from app.core.database import create_sessionmaker
from app.revisions import queue
from app.revisions.judges import RulesJudge
from app.revisions.service import Context


@pytest.fixture
async def revision_queue(engine, database_url, live_client, live_namespace):
    async with queue.connected(database_url) as connected:
        live_client._transport.app.state.revision_queue = connected
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
