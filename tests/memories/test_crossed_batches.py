"""Concurrent batches that write the same namespaces in opposite orders take the namespaces'
locks in one order up front, so they cannot deadlock; a deadlock or serialization failure from
anywhere else is retried, then answers 503, never 500."""

import asyncio

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_dbapi
from sqlalchemy.exc import DBAPIError

from app.memories import repository, service


@pytest.fixture
async def namespaces(live_namespace, engine):
    pair = (f"{live_namespace}:a", f"{live_namespace}:b")
    yield pair
    async with engine.begin() as connection:
        for namespace in pair:
            await connection.execute(text("DELETE FROM revision_log WHERE namespace = :ns"), {"ns": namespace})
            await connection.execute(text("DELETE FROM memories WHERE namespace = :ns"), {"ns": namespace})


async def test_batches_crossing_two_namespaces_do_not_deadlock(live_client, namespaces, monkeypatch):
    take_lock = repository.lock_namespace

    async def slow_lock(session, namespace):
        await take_lock(session, namespace)
        await asyncio.sleep(0.3)  # each batch holds its first namespace while the other takes its own

    monkeypatch.setattr(repository, "lock_namespace", slow_lock)
    first, second = namespaces

    def batch(order: tuple[str, str], label: str) -> dict:
        return {"items": [{"namespace": namespace, "content": f"Batch {label} wrote to {namespace}."} for namespace in order]}

    responses = await asyncio.gather(
        live_client.post("/v1/memories:batch", json=batch((first, second), "one")),
        live_client.post("/v1/memories:batch", json=batch((second, first), "two")),
    )
    for response in responses:
        assert response.status_code == 200, response.text
        assert [result["status"] for result in response.json()["results"]] == [201, 201]


def _deadlock() -> DBAPIError:
    """What SQLAlchemy raises when PostgreSQL picks this transaction as a deadlock victim."""
    try:
        raise asyncpg.exceptions.DeadlockDetectedError("deadlock detected")
    except asyncpg.exceptions.DeadlockDetectedError as cause:
        try:
            raise AsyncAdapt_asyncpg_dbapi.Error("deadlock detected") from cause
        except AsyncAdapt_asyncpg_dbapi.Error as orig:
            return DBAPIError("SELECT pg_advisory_xact_lock(...)", {}, orig)


async def test_a_deadlock_victim_is_retried(client, monkeypatch):
    write = service.write
    calls = 0

    async def deadlocked_once(*args, **kwargs):
        nonlocal calls
        calls += 1
        if calls == 1:
            raise _deadlock()
        return await write(*args, **kwargs)

    monkeypatch.setattr(service, "write", deadlocked_once)
    response = await client.post("/v1/memories", json={"namespace": "user:retry", "content": "User plays the cello."})
    assert response.status_code == 201, response.text
    assert calls == 2


async def test_a_conflict_that_persists_is_a_503_not_a_500(client, monkeypatch, settings):
    calls = 0

    async def always_deadlocked(*args, **kwargs):
        nonlocal calls
        calls += 1
        raise _deadlock()

    monkeypatch.setattr(service, "write", always_deadlocked)
    response = await client.post("/v1/memories", json={"namespace": "user:retry", "content": "User plays the viola."})
    assert response.status_code == 503, response.text
    assert response.json()["type"] == "/problems/unavailable"
    assert "Retry-After" in response.headers
    assert calls == settings.conflict_retries + 1
