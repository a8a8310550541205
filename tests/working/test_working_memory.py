"""A session's working memory: importance by kind, decay per turn, boost per use, eviction to
80% of the budget and compression of what was evicted into one summary naming its range."""

from datetime import datetime, timedelta, timezone

import pytest

from tests.conversations.conftest import NS, memory, remember, said


def ago(minutes: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(minutes=minutes)).isoformat()


@pytest.fixture
def small_budget(client, settings):
    configured = settings.model_copy(update={"working_budget_tokens": 250})
    client._transport.app.state.settings = configured
    return configured


async def working(client, session_id: str = "s1") -> dict:
    response = await client.get(f"/v1/sessions/{session_id}/working", params={"namespace": NS})
    assert response.status_code == 200, response.text
    return response.json()


async def test_items_start_at_their_kinds_importance_and_decay_per_user_turn(client):
    await remember(
        client,
        [
            said("Book a table for two.", at=ago(5)),
            said("Which evening?", role="assistant", at=ago(4.9)),
            said("3 tables free", role="tool", at=ago(4.8)),
        ],
        extract="none",
    )
    first = {item["content"]: item["score"] for item in (await working(client))["items"]}
    assert first == {"Book a table for two.": 1.0, "Which evening?": 0.6, "3 tables free": 0.4}

    await remember(client, [said("Friday at eight.", at=ago(4))], extract="none")
    after = await working(client)
    assert [(item["content"], round(item["score"], 4)) for item in after["items"]] == [
        ("Friday at eight.", 1.0),
        ("Book a table for two.", 0.95),
        ("Which evening?", 0.57),
        ("3 tables free", 0.38),
    ]

    # Used in a context, an item gains 0.1, up to 1; a read-only look changes nothing.
    body = {"namespace": NS, "session_id": "s1", "query": "dinner booking", "budget_tokens": 500}
    assert (await client.post("/v1/context", json={**body, "record_access": False})).status_code == 200
    assert {item["content"]: round(item["score"], 4) for item in (await working(client))["items"]}[
        "Which evening?"
    ] == 0.57
    assert (await client.post("/v1/context", json=body)).status_code == 200
    boosted = {item["content"]: round(item["score"], 4) for item in (await working(client))["items"]}
    assert boosted == {
        "Friday at eight.": 1.0,
        "Book a table for two.": 1.0,
        "Which evening?": 0.67,
        "3 tables free": 0.48,
    }


async def test_messages_older_than_the_working_ttl_stay_out_of_working_memory(client):
    await remember(
        client,
        [said("I was in Rome last year.", at="2024-01-01T10:00:00Z"), said("Let's plan Paris.", at=ago(1))],
        extract="none",
    )
    assert [item["content"] for item in (await working(client))["items"]] == ["Let's plan Paris."]


async def test_over_budget_the_lowest_scores_are_evicted_to_80_percent_and_summarised(client, small_budget):
    lines = [
        ("user", "Hi there!"),
        (
            "assistant",
            "Hello! How can I help you today? I can plan trips, book restaurants and keep track of your errands, "
            "and I remember what you told me in earlier conversations so you do not have to repeat yourself.",
        ),
        ("user", "I need a hotel in Kyoto for the first week of April. My budget is at most 150 dollars a night."),
        (
            "assistant",
            "Here are some options: Hotel Sakura at 140 dollars, Ryokan Hana at 180 dollars, and Kyoto Stay at 120 dollars. "
            "All three are close to the station and have good reviews from recent guests, with breakfast included at two of them.",
        ),
        (
            "tool",
            "Search results: 14 hotels found, 9 under budget, sorted by rating; availability confirmed for April 1 to April 7. "
            "Hotel Sakura 4.6 stars, Kyoto Stay 4.2 stars, Ryokan Hana 4.8 stars, Hotel Gion 4.0 stars, Station Inn 3.9 stars.",
        ),
        ("user", "Actually, I can't stay anywhere without a private bathroom, so skip shared ones."),
        (
            "assistant",
            "Understood. Hotel Sakura and Kyoto Stay both have private bathrooms; Ryokan Hana only has shared ones, "
            "so I have removed it from the list, along with two other places that only offer shared facilities.",
        ),
        ("user", "Let's go with Hotel Sakura. Remind me to book the airport train tomorrow."),
        (
            "assistant",
            "Great choice. I have noted the reminder about the airport train for tomorrow morning, and I will check the timetable.",
        ),
    ]
    chat = [said(content, role=role, id=f"k{n}", at=ago(30 - n)) for n, (role, content) in enumerate(lines)]
    # The score each would have once all are in: base importance x 0.95 per later user turn.
    base = {"user": 1.0, "assistant": 0.6, "tool": 0.4}
    turns = [sum(role == "user" for role, _ in lines[: n + 1]) for n in range(len(lines))]
    expected = {f"k{n}": base[role] * 0.95 ** (turns[-1] - turns[n]) for n, (role, _) in enumerate(lines)}
    out = await remember(client, chat, extract="none")

    budget = small_budget.working_budget_tokens
    held = await working(client)
    assert held["budget_tokens"] == budget
    assert held["tokens"] <= 0.8 * budget and held["tokens"] == sum(item["tokens"] for item in held["items"])
    assert out["working"]["evicted"] >= 1 and out["working"]["tokens"] == held["tokens"]
    kept = [item["score"] for item in held["items"]]
    [summary_id] = out["working"]["summaries"]
    summary = await memory(client, summary_id)
    assert summary["memory_type"] == "episodic" and summary["source"]["compressor"] == "extractive"
    facts = summary["metadata"]["summary"]
    # Everything evicted scored below everything kept.
    assert facts["items"] == out["working"]["evicted"]
    first_line = summary["content"].splitlines()[0]
    start, end = datetime.fromisoformat(facts["from"]), datetime.fromisoformat(facts["to"])
    assert (
        first_line
        == f"Summary of session s1, {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC ({facts['items']} messages):"
    )
    assert summary["created_at"].startswith(end.strftime("%Y-%m-%dT%H:%M"))
    assert 5 <= facts["ratio"] <= 10
    assert kept == sorted(kept, reverse=True)  # best first
    assert max(expected[message_id] for message_id in summary["source"]["summary_of"]) <= min(kept)
    assert len(summary["source"]["summary_of"]) == facts["items"]
    # The evicted messages themselves stay in long-term memory.
    assert (await memory(client, out["messages"][1]["memory_ids"][0]))["status"] == "active"
