"""Event streams: stored in order across calls, long payloads clipped with the full text kept
apart, review triggers, and bad input answered with problem details."""

import pytest
from sqlalchemy import text

from tests.reflections.conftest import NS, post_events, query_order, tool_call


async def replay(client, task_id: str) -> dict:
    response = await client.get("/v1/events", params={"namespace": NS, "task_id": task_id})
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_task_streamed_in_several_calls_replays_in_order_with_full_payloads(client, db_session):
    long_result = "row " * 5_000
    await post_events(client, "stream", [{"type": "observation", "text": "user asked for order 42"}], session_id="s1")
    await post_events(
        client,
        "stream",
        [
            tool_call("export_orders", {"format": "csv"}, result=long_result, latency_ms=812.5),
            {"type": "llm_request", "model": "gpt-x", "prompt": "summarise", "tokens": 120},
        ],
    )
    events = (await replay(client, "stream"))["events"]
    assert [(event["seq"], event["type"]) for event in events] == [(1, "observation"), (2, "tool_call"), (3, "llm_request")]
    assert events[0]["session_id"] == "s1"
    assert events[1]["payload"]["result"] == long_result
    assert events[1]["payload"]["latency_ms"] == 812.5

    stored = (
        await db_session.execute(
            text(
                "SELECT e.payload->>'result', e.payload_hash, length(p.full_text) FROM task_events e "
                "JOIN event_payloads p ON p.hash = e.payload_hash WHERE e.task_id = 'stream'"
            )
        )
    ).one()
    clipped, digest, full_length = stored
    assert len(clipped) == 2_001 and clipped.endswith("…")
    assert len(digest) == 64 and full_length > len(long_result)


async def test_an_ended_task_takes_no_more_events(client):
    await post_events(client, "done", [tool_call("ping", {})], task_end={"status": "success"})
    response = await client.post("/v1/events", json={"namespace": NS, "task_id": "done", "events": [tool_call("ping", {})]})
    assert response.status_code == 409
    assert response.json()["type"] == "/problems/conflict"


@pytest.mark.parametrize(
    ("events", "task_end", "trigger"),
    [
        ([tool_call("ping", {}, "timeout"), tool_call("ping", {})], {"status": "success"}, "retry"),
        ([tool_call("ping", {}, attempt=2)], {"status": "success"}, "retry"),
        ([tool_call("ping", {})] * 5, {"status": "success"}, "long_task"),
        ([{"type": "user_feedback", "sentiment": "negative", "text": "wrong order"}], {"status": "success"}, "negative_feedback"),
        ([{"type": "plan_step", "step": "refund", "expected": "refunded", "actual": "pending"}], {"status": "success"}, "expectation_missed"),
        ([tool_call("ping", {})], {"status": "success", "expected": "3 rows", "actual": "2 rows"}, "expectation_missed"),
    ],
)
async def test_review_triggers(client, events, task_end, trigger):
    result = await post_events(client, "triggered", events, task_end=task_end)
    assert trigger in result["review"]["triggers"]


async def test_events_before_the_end_are_not_reviewed(client):
    result = await post_events(client, "open", [query_order(1, status="error")])
    assert result == {"accepted": 1, "lessons": [], "review": None}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"namespace": NS, "task_id": "t", "events": [{"type": "dance", "moves": 3}]}, "events.0"),
        ({"namespace": NS, "events": [{"type": "observation", "text": "hi"}]}, "task_id"),
        ({"namespace": NS, "task_id": "t", "events": [{"type": "tool_call", "tool": "x", "args": {}, "status": "maybe"}]}, "status"),
        ({"namespace": NS, "task_id": "t", "events": []}, "body"),
    ],
)
async def test_bad_events_are_validation_problems_naming_the_field(client, body, field):
    response = await client.post("/v1/events", json=body)
    assert response.status_code == 422
    problem = response.json()
    assert response.headers["content-type"] == "application/problem+json"
    assert problem["type"] == "/problems/validation"
    assert field in problem["detail"]


async def test_unknown_event_type_is_named_in_the_problem(client):
    response = await client.post("/v1/events", json={"namespace": NS, "task_id": "t", "events": [{"type": "dance"}]})
    assert "dance" in response.json()["detail"]
