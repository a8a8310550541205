"""The lexical route: its query text, and its BM25 ranking."""

from httpx import AsyncClient

from app.recall.lexical import or_query, query_terms
from tests.recall.test_search import search, write


def test_query_terms_dedupe_and_drop_what_is_named_elsewhere():
    assert query_terms("paint painting the sunrise") == ["paint", "sunris"]
    assert query_terms("what is it?") == []
    assert query_terms("Did Melanie paint the sunrise?", without=["Melanie"]) == ["paint", "sunris"]


def test_or_query_is_empty_without_terms():
    assert or_query(query_terms("paint painting the sunrise")) == "paint | sunris"
    assert or_query([]) == ""


async def test_a_rare_word_outweighs_a_common_one_in_the_lexical_route(client: AsyncClient):
    """BM25: a word most memories of the namespace share says little. The memory naming the rare
    word is written first, so ranking without IDF (equal matches, newest first) puts it last."""
    rare = await write(client, "User adopted a ferret called Bandit.", namespace="user:idf")
    common = [
        await write(client, f"User mentioned the weather on day {day}, it was {mood}.", namespace="user:idf")
        for day, mood in enumerate(["grey", "sunny", "windy", "mild", "cold", "wet"], start=1)
    ]
    result = await search(client, "weather ferret", namespace="user:idf", explain=True, record_access=False)
    lexical = [candidate["memory_id"] for candidate in result["explain"]["routes"]["lexical"]]
    assert lexical[0] == rare["id"] and set(lexical[1:]) == {memory["id"] for memory in common}
    scores = [candidate["raw_score"] for candidate in result["explain"]["routes"]["lexical"]]
    assert scores[0] > 2 * scores[1]
