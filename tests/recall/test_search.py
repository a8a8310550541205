from datetime import datetime, timedelta, timezone

import pytest
from httpx import AsyncClient
from sqlalchemy import text


async def write(client: AsyncClient, content: str, namespace: str = "user:s1", **fields) -> dict:
    response = await client.post("/v1/memories", json={"namespace": namespace, "content": content, **fields})
    assert response.status_code == 201, response.text
    return response.json()["memory"]


async def search(client: AsyncClient, query: str, namespace: str = "user:s1", **fields) -> dict:
    response = await client.post("/v1/memories/search", json={"query": query, "namespace": namespace, **fields})
    assert response.status_code == 200, response.text
    return response.json()


def ids(result: dict) -> list[str]:
    return [hit["memory"]["id"] for hit in result["hits"]]


FILLER = [
    "User enjoys hiking in the mountains on weekends.",
    "User's favourite cuisine is Thai food.",
    "User works as a data engineer at a logistics firm.",
    "User has two cats named Miso and Tofu.",
    "User is learning to play the cello.",
]


@pytest.fixture
async def filler(client: AsyncClient) -> list[dict]:
    return [await write(client, text, created_at="2026-01-01T00:00:00+00:00") for text in FILLER]


async def test_key_route_finds_a_key_named_by_the_query(client, filler):
    phone = await write(client, "+44 20 7946 0958", key="user:s1:phone", created_at="2026-01-01T00:00:00+00:00")
    result = await search(client, "What is my phone number?", top_k=3)
    assert ids(result)[0] == phone["id"]
    assert "key" in result["hits"][0]["routes"]


async def test_key_prefix_filters_and_routes(client, filler):
    diet = await write(client, "Vegetarian since 2019.", key="user:s1:diet:kind")
    await write(client, "Lives in Porto.", key="user:s1:home:city")
    result = await search(client, "anything at all", key_prefix="user:s1:diet", top_k=5)
    assert ids(result) == [diet["id"]]


async def test_vector_route_finds_a_paraphrase_with_no_shared_words(client, filler):
    target = await write(client, "The user cannot tolerate peanuts; they cause a severe reaction.", created_at="2026-01-01T00:00:00+00:00")
    result = await search(client, "nut allergy", top_k=2)
    assert ids(result)[0] == target["id"]
    assert "vector" in result["hits"][0]["routes"]


async def test_lexical_route_finds_a_rare_name_and_number(client, filler):
    target = await write(client, "Invoice INV-88231 was paid by Zbigniew.", created_at="2026-01-01T00:00:00+00:00")
    result = await search(client, "Zbigniew 88231", top_k=2, explain=True)
    assert ids(result)[0] == target["id"]
    assert "lexical" in result["hits"][0]["routes"]
    lexical_ids = [c["memory_id"] for c in result["explain"]["routes"]["lexical"]]
    assert lexical_ids == [target["id"]]


async def test_lexical_route_matches_chinese_inside_a_sentence(client):
    target = await write(client, "用户对花生过敏", namespace="user:zh")
    await write(client, "用户喜欢喝绿茶", namespace="user:zh")
    result = await search(client, "花生", namespace="user:zh", explain=True)
    assert [c["memory_id"] for c in result["explain"]["routes"]["lexical"]] == [target["id"]]
    assert ids(result)[0] == target["id"]


async def test_recency_route_brings_the_newest_memory(client, filler):
    newest = await write(client, "Note to self: water the plants.")
    result = await search(client, "quarterly tax filing deadline", top_k=1, explain=True)
    recency_ids = [c["memory_id"] for c in result["explain"]["routes"]["recency"]]
    assert recency_ids[0] == newest["id"]
    assert ids(result) == [newest["id"]]
    assert "recency" in result["hits"][0]["routes"]


async def test_namespaces_never_leak(client):
    await write(client, "User u2 has a secret recipe for bread.", namespace="user:u2")
    mine = await write(client, "User u1 bakes sourdough bread.", namespace="user:u1")
    result = await search(client, "bread recipe", namespace="user:u1", top_k=10)
    assert ids(result) == [mine["id"]]
    both = await search(client, "bread recipe", namespace=None, namespaces=["user:u1", "user:u2"], top_k=10)
    assert len(both["hits"]) == 2


async def test_deleted_and_expired_memories_are_excluded(client):
    gone = await write(client, "User's locker code is on the fridge.")
    await client.delete(f"/v1/memories/{gone['id']}")
    past = (datetime.now(timezone.utc) - timedelta(hours=2)).isoformat()
    await write(client, "User's locker is number 12 today.", ttl_seconds=60, created_at=past, memory_type="working")
    kept = await write(client, "User's gym locker is in the east wing.")
    result = await search(client, "locker", top_k=10)
    assert ids(result) == [kept["id"]]
    with_deleted = await search(client, "locker", top_k=10, statuses=["active", "deleted"])
    assert set(ids(with_deleted)) == {kept["id"], gone["id"]}


async def test_filters_by_type_and_time_range(client):
    old = await write(client, "User visited Kyoto.", memory_type="episodic", created_at="2025-03-01T00:00:00+00:00")
    await write(client, "User visited Osaka.", memory_type="episodic", created_at="2025-06-01T00:00:00+00:00")
    await write(client, "User likes Kyoto temples.", memory_type="semantic")
    filtered = {"memory_types": ["episodic"], "created_before": "2025-04-01T00:00:00+00:00", "top_k": 10}
    result = await search(client, "Kyoto", **filtered)
    assert ids(result) == [old["id"]]
    # The lexical statement is built once per set of filters: another set in between changes nothing.
    assert len(ids(await search(client, "Kyoto", top_k=10))) == 3
    assert ids(await search(client, "Kyoto temples", **filtered)) == [old["id"]]


async def test_hits_carry_scores_and_access_is_recorded(client, filler):
    target = filler[3]
    result = await search(client, "cats Miso and Tofu", top_k=1)
    hit = result["hits"][0]
    assert hit["memory"]["id"] == target["id"]
    assert set(hit["scores"]) >= {"semantic", "recency", "confidence", "access", "trust"}
    assert hit["scores"]["trust"] == 0.8  # no source.kind given: an agent's memory
    parts = hit["scores"]
    assert hit["score"] == pytest.approx(
        parts["trust"] * (0.4 * parts["semantic"] + 0.3 * parts["recency"] + 0.2 * parts["confidence"] + 0.1 * parts["access"]),
        abs=1e-5,
    )
    detail = (await client.get(f"/v1/memories/{target['id']}")).json()["memory"]
    assert detail["access_count"] == 1 and detail["last_accessed_at"] is not None


async def test_weights_override_changes_the_order(client):
    old_relevant = await write(client, "User's passport number ends in 4471.", created_at="2024-01-01T00:00:00+00:00")
    new_partial = await write(client, "User renewed the passport.")
    new_other = await write(client, "User bought new running shoes.")
    by_relevance = await search(client, "passport number", top_k=3, weights={"semantic": 1, "recency": 0, "confidence": 0, "access": 0})
    assert ids(by_relevance)[0] == old_relevant["id"]
    by_recency = await search(client, "passport number", top_k=3, weights={"semantic": 0, "recency": 1, "confidence": 0, "access": 0})
    assert ids(by_recency)[0] == new_partial["id"]
    # Recency counts as far as a memory answers the query: said just now, the shoes answer nothing.
    recency = {hit["memory"]["id"]: hit["scores"]["recency"] for hit in by_recency["hits"]}
    assert recency.get(new_other["id"], 0.0) < recency[new_partial["id"]]


async def test_explain_names_routes_and_why_candidates_missed(client, filler):
    result = await search(client, "cello lessons", top_k=1, explain=True)
    explain = result["explain"]
    assert set(explain["routes"]) == {"key", "vector", "recency", "lexical"}
    assert explain["routes"]["vector"][0]["rank"] == 1
    assert explain["misses"], "candidates beyond top_k are explained"
    miss = explain["misses"][0]
    assert miss["final_rank"] == 2
    assert miss["held_back_by"] and all(":" in reason for reason in miss["held_back_by"])
    assert explain["weights"] == {"semantic": 0.4, "recency": 0.3, "confidence": 0.2, "access": 0.1}


async def test_cache_serves_repeats_and_a_write_invalidates(client, filler, db_session):
    first = await search(client, "cats", top_k=2)
    cat = filler[3]
    assert ids(first)[0] == cat["id"]
    # Changed behind the service's back (no ORM write): only a cached answer still shows the old text.
    await db_session.execute(text("UPDATE memories SET content = 'changed' WHERE id = :id"), {"id": cat["id"]})
    again = await search(client, "cats", top_k=2)
    assert again["hits"][0]["memory"]["content"] == cat["content"]
    new = await write(client, "User adopted a third cat called Natto.")
    after_write = await search(client, "cats", top_k=2)
    assert new["id"] in ids(after_write)  # the write dropped the cached answer


@pytest.mark.parametrize(
    "body",
    [
        {"query": "", "namespace": "user:s1"},
        {"query": "   ", "namespace": "user:s1"},
        {"query": "x", "namespace": "user:s1", "top_k": 0},
        {"query": "x", "namespace": "user:s1", "top_k": 101},
        {"query": "x", "namespace": "user:s1", "statuses": ["forgotten"]},
        {"query": "x", "namespace": "user:s1", "weights": {"semantic": -0.1}},
        {"query": "x", "namespace": "user:s1", "weights": {"semantic": 2}},
        {"query": "x", "namespace": "user:s1", "weights": {"novelty": 0.5}},
        {"query": "x"},
        {"query": "x", "namespace": "user:s1", "namespaces": ["user:s2"]},
        {"query": "x", "namespace": "user:s1", "memory_types": ["dream"]},
    ],
)
async def test_bad_search_requests_get_problem_details(client, body):
    response = await client.post("/v1/memories/search", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["type"] == "/problems/validation"


async def test_lexical_route_falls_back_to_trigrams_for_a_misspelt_name(client, filler):
    target = await write(client, "Invoice INV-88231 was paid by Zbigniew.", created_at="2026-01-01T00:00:00+00:00")
    result = await search(client, "Zbignew", top_k=1, explain=True)
    assert [c["memory_id"] for c in result["explain"]["routes"]["lexical"]] == [target["id"]]
    assert ids(result) == [target["id"]]


async def test_a_search_needs_one_connection(settings, embedder, schema_checker, database_url, live_namespace):
    """With a pool of a single connection, writes and searches still answer: a search runs its
    routes on its request's connection (it took five before), and counts its hits once that
    connection is back in the pool."""
    from httpx import ASGITransport

    from app.core.database import create_engine
    from tests.conftest import _app

    tight = settings.model_copy(update={"db_pool_size": 1, "db_max_overflow": 0})
    engine = create_engine(tight, database_url)
    app = _app(tight, engine, embedder, schema_checker)
    try:
        async with AsyncClient(transport=ASGITransport(app=app), base_url="http://test") as http:
            written = await http.post("/v1/memories", json={"namespace": live_namespace, "content": "User's bike is blue."})
            assert written.status_code == 201
            found = await http.post("/v1/memories/search", json={"namespace": live_namespace, "query": "bike colour"})
            assert found.status_code == 200 and found.json()["hits"]
    finally:
        async with engine.begin() as connection:
            await connection.execute(text("DELETE FROM memories WHERE namespace = :ns"), {"ns": live_namespace})
            await connection.execute(text("DELETE FROM namespace_state WHERE namespace = :ns"), {"ns": live_namespace})
        await engine.dispose()
