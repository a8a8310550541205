import uuid
from collections.abc import AsyncIterator

import pytest
from httpx import ASGITransport, AsyncClient
from sqlalchemy import text

from tests.conftest import _app

NS = "user:c1"


async def remember(
    client: AsyncClient,
    messages: list[dict],
    *,
    namespace: str = NS,
    session_id: str = "s1",
    expect: int = 200,
    **fields,
) -> dict:
    body = {"namespace": namespace, "session_id": session_id, "messages": messages, **fields}
    response = await client.post("/v1/conversations", json=body)
    assert response.status_code == expect, response.text
    return response.json()


def said(content: str, role: str = "user", **fields) -> dict:
    return {"role": role, "content": content, **fields}


async def memory(client: AsyncClient, memory_id: str) -> dict:
    response = await client.get(f"/v1/memories/{memory_id}")
    assert response.status_code == 200, response.text
    return response.json()["memory"]


@pytest.fixture
def tag() -> str:
    return f"cv{uuid.uuid4().hex[:10]}"


async def erase(engine, pattern: str) -> None:
    """Remove what a committing test wrote under namespaces matching `pattern`."""
    async with engine.begin() as connection:
        for table in ("revision_log", "working_items", "working_sessions", "conversation_messages", "jobs", "memories"):
            await connection.execute(text(f"DELETE FROM {table} WHERE namespace LIKE :pattern"), {"pattern": pattern})


@pytest.fixture
async def committing(settings, engine, embedder, tag: str) -> AsyncIterator:
    """An app whose requests and jobs commit for real (jobs run on their own sessions); it
    erases its namespaces (containing `tag`) afterwards. Yields a factory taking setting overrides."""
    clients: list[AsyncClient] = []

    async def make(**overrides) -> AsyncClient:
        app = _app(settings.model_copy(update=overrides), engine, embedder)
        client = AsyncClient(transport=ASGITransport(app=app), base_url="http://test")
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()
    await erase(engine, f"%{tag}%")
