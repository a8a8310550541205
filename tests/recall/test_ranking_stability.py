"""Ranking that does not feed on itself, and history that ranks below what replaced it."""

from httpx import AsyncClient

from app.recall import scoring
from tests.recall.test_search import ids, search, write

NS = "user:stable"
FACTS = [
    "User has a golden retriever named Biscuit.",
    "User prefers green tea.",
    "User works night shifts at a hospital.",
    "User's sister lives in Lisbon.",
]


async def test_searching_one_memory_over_and_over_does_not_displace_another_querys_best_match(client: AsyncClient):
    written = [await write(client, fact, namespace=NS) for fact in FACTS]
    dog, tea = written[0], written[1]
    before = await search(client, "Which drink does the user prefer?", namespace=NS, top_k=4, record_access=False)
    assert ids(before)[0] == tea["id"]
    for question in ("Tell me about the user's dog", "What breed is the dog?", "What is the dog called?",
                     "Does the user have a pet?", "Who is Biscuit?", "the user's golden retriever"):
        found = await search(client, question, namespace=NS, top_k=1)  # counted as accesses
        assert ids(found) == [dog["id"]]
    counted = (await client.get(f"/v1/memories/{dog['id']}")).json()["memory"]["access_count"]
    assert counted >= 6
    after = await search(client, "What does the user like to drink?", namespace=NS, top_k=4, record_access=False)
    assert ids(after)[0] == tea["id"]
    recency = {hit["memory"]["id"]: hit["scores"]["recency"] for hit in after["hits"]}
    assert recency[dog["id"]] <= recency[tea["id"]] + 1e-3  # being returned is not being said again


def test_access_counts_only_as_far_as_the_memory_answers_the_query():
    assert scoring.access(1000, relevance=0.0) == 0.0
    assert scoring.access(1000, relevance=1.0) == 1.0
    assert scoring.access(6, relevance=0.5) < scoring.access(6, relevance=1.0)


async def test_a_superseded_memory_ranks_below_its_replacement(client: AsyncClient):
    old = await write(client, "User lives in Beijing.", namespace=NS, key=f"{NS}:home", created_at="2025-01-01T00:00:00+00:00")
    new = await write(client, "User moved to Shanghai.", namespace=NS, key=f"{NS}:home")
    result = await search(client, "Where does the user live? Beijing?", namespace=NS, statuses=["active", "superseded"], top_k=5)
    order = ids(result)
    assert old["id"] in order and new["id"] in order
    assert order.index(new["id"]) < order.index(old["id"])
    superseded = next(hit for hit in result["hits"] if hit["memory"]["id"] == old["id"])
    assert superseded["superseded_by"] == new["id"]


async def test_recency_is_measured_from_the_reference_time(client: AsyncClient):
    memory = await write(client, "User ran a marathon in Berlin.", namespace=NS, created_at="2025-09-01T00:00:00+00:00")
    then = await search(client, "marathon", namespace=NS, reference_time="2025-09-02T00:00:00+00:00", record_access=False)
    now = await search(client, "marathon", namespace=NS, record_access=False)
    assert ids(then)[0] == ids(now)[0] == memory["id"]
    assert then["hits"][0]["scores"]["recency"] > 0.7 > now["hits"][0]["scores"]["recency"]
