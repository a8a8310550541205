"""POST /v1/context: working memory, recalled memories and lessons under a hard token budget."""

from datetime import datetime, timedelta, timezone

import pytest

from app.llm import tokens
from tests.conversations.conftest import NS, remember, said

CITIES = ["Lisbon", "Porto", "Madrid", "Seville", "Valencia", "Bilbao", "Granada", "Malaga"]


async def context(client, expect: int = 200, **fields) -> dict:
    body = {
        "namespace": NS,
        "query": "Which cities did the user visit on the rail trip?",
        "budget_tokens": 300,
        **fields,
    }
    response = await client.post("/v1/context", json=body)
    assert response.status_code == expect, response.text
    return response.json()


async def write(client, content: str, **fields) -> dict:
    response = await client.post("/v1/memories", json={"namespace": NS, "content": content, **fields})
    assert response.status_code == 201, response.text
    return response.json()["memory"]


@pytest.fixture
async def trip(client) -> None:
    for day, city in enumerate(CITIES):
        await write(
            client,
            f"On day {day + 1} of the rail trip the user visited {city} and liked the old town.",
            memory_type="episodic",
            created_at=f"2025-04-{day + 1:02d}T18:00:00Z",
        )
    await write(client, "The user's cat is called Miso.")


async def test_the_context_never_exceeds_its_budget(client, trip):
    sizes = []
    for budget in (1, 8, 20, 40, 75, 120, 300, 2000):
        answer = await context(client, budget_tokens=budget)
        assert answer["tokens"] == tokens.count(answer["context"], tokenizer=answer["tokenizer"]) <= budget
        assert answer["budget_tokens"] == budget and answer["tokenizer"] == "cl100k_base"
        assert [part["text"] for part in answer["parts"]] == [
            line for line in answer["context"].splitlines() if line.startswith("- ")
        ]
        sizes.append(len(answer["parts"]))
    assert (
        sizes[0] == 0 and sizes == sorted(sizes) and sizes[-1] == len(CITIES) + 1
    )  # more budget, more parts, then all


async def test_a_tight_budget_keeps_the_best_scored_memories(client, trip):
    search = await client.post(
        "/v1/memories/search",
        json={
            "namespace": NS,
            "query": "Which cities did the user visit on the rail trip?",
            "top_k": 30,
            "record_access": False,
        },
    )
    ranked = [hit["memory"]["id"] for hit in search.json()["hits"]]
    answer = await context(client, budget_tokens=120)
    kept = [part["id"] for part in answer["parts"]]
    assert 2 <= len(kept) < len(ranked)
    assert kept == ranked[: len(kept)]  # lines of equal length: the best k fit
    assert answer["omitted"]["memory"] == len(ranked) - len(kept)
    scores = [part["score"] for part in answer["parts"]]
    assert scores == sorted(scores, reverse=True)


async def test_sections_hold_working_memory_dated_memories_with_what_they_replaced_and_lessons(client):
    now = datetime.now(timezone.utc)
    await write(client, "User lives in Austin.", key=f"{NS}:user:city", created_at="2024-02-01T10:00:00Z")
    await write(client, "User lives in Denver.", key=f"{NS}:user:city", created_at="2025-06-01T10:00:00Z")
    lesson = await client.post(
        "/v1/reflections",
        json={
            "namespace": NS,
            "lesson": "When booking restaurants in Denver, reserve a day ahead.",
            "scope": "task:booking",
            "confidence": 0.9,
            "path_type": "verified",
        },
    )
    assert lesson.status_code == 201
    await remember(
        client,
        [said("Find me a restaurant near home for tonight.", at=(now - timedelta(minutes=1)).isoformat())],
        extract="none",
    )

    answer = await context(
        client, session_id="s1", query="Book a restaurant near where the user lives", budget_tokens=400
    )
    text = answer["context"]
    assert (
        text.index("## Working memory (this session)")
        < text.index("## Relevant memories")
        < text.index("## Lessons from past tasks")
    )
    [held] = [part for part in answer["parts"] if part["kind"] == "working"]
    assert held["text"].startswith("- [user, ") and held["text"].endswith("Find me a restaurant near home for tonight.")
    [denver] = [part for part in answer["parts"] if part["kind"] == "memory" and "Denver" in part["text"]]
    assert denver["text"] == '- 2025-06-01: User lives in Denver. (replaces "User lives in Austin." from 2024-02-01)'
    assert denver["replaces"]["content"] == "User lives in Austin."
    assert not any(
        "User lives in Austin" in part["text"] and part["kind"] == "memory" and "replaces" not in part["text"]
        for part in answer["parts"]
    )
    [advice] = [part for part in answer["parts"] if part["kind"] == "lesson"]
    assert (
        advice["text"] == "- Do: When booking restaurants in Denver, reserve a day ahead. (task:booking)"
        and advice["lesson_type"] == "recommendation"
    )
    # The working message is not repeated among long-term memories.
    assert sum("Find me a restaurant" in part["text"] for part in answer["parts"]) == 1


async def test_nothing_known_is_an_empty_context_and_bad_requests_are_refused(client):
    empty = await context(client, namespace="user:nobody")
    assert (empty["context"], empty["tokens"], empty["parts"]) == ("", 0, [])
    await context(client, expect=422, budget_tokens=0)
    await context(client, expect=422, budget_tokens=10**9)
    await context(client, expect=422, namespaces=[NS])  # both namespace and namespaces
    await context(client, expect=422, query="   ")
