"""The LLM reviewer, driven through litellm's mock_response: its lessons are used when the
answer fits the schema; anything else falls back to the rule reviewer, and says so."""

import json

import pytest
from sqlalchemy import text

from tests.reflections.conftest import post_events, query_order, tool_call

LESSON = {
    "situation": "asked to refund an order whose payment was still pending",
    "action": "called refund_order before the payment settled",
    "outcome": "the refund was rejected",
    "attribution": "planning_flaw",
    "lesson": "When a payment is still pending, wait for it to settle before calling refund_order.",
    "scope": "tool:refund_order",
    "path_type": "falsified",
    "confidence": 0.7,
}
EVENTS = [
    tool_call("get_payment", {"order_id": "A1"}, result={"state": "pending"}),
    tool_call("refund_order", {"order_id": "A1"}, "error", error="payment not settled"),
]


async def test_the_llm_answer_becomes_lessons_and_the_exchange_is_kept(client, db_session, scripted_reviewer):
    scripted_reviewer.answer = json.dumps({"lessons": [LESSON]})
    result = await post_events(client, "llm-1", EVENTS, task_end={"status": "failure"}, task_type="refund")
    assert result["review"] == {"triggers": ["tool_failure", "expectation_missed"], "reviewer": "llm:openai/scripted", "note": None}
    [learned] = result["lessons"]
    assert {key: learned[key] for key in LESSON} == LESSON
    assert learned["status"] == "observing" and learned["source_task_id"] == "llm-1"

    [asked] = scripted_reviewer.asked
    assert asked["task"]["task_type"] == "refund"
    # Only what went wrong is put to the reviewer: the failed call and the missed goal.
    assert [item.get("tool", item["type"]) for item in asked["unexpected"]] == ["refund_order", "task_end"]
    assert [event["tool"] for event in asked["events"]] == ["get_payment", "refund_order"]
    prompt, response = (
        await db_session.execute(text("SELECT llm_prompt, llm_response FROM task_reviews WHERE task_id = 'llm-1'"))
    ).one()
    assert "attribute its cause to exactly one of" in prompt and json.loads(response) == {"lessons": [LESSON]}


async def test_an_unsure_attribution_is_held_at_low_confidence(client, scripted_reviewer):
    scripted_reviewer.answer = json.dumps({"lessons": [{**LESSON, "attribution": "unverified", "confidence": 0.9}]})
    result = await post_events(client, "llm-2", EVENTS, task_end={"status": "failure"})
    assert [(item["attribution"], item["confidence"]) for item in result["lessons"]] == [("unverified", 0.3)]


@pytest.mark.parametrize(
    "answer",
    [
        "this is not JSON",
        json.dumps({"lessons": [{**LESSON, "attribution": "bad_luck"}]}),
        json.dumps({"lessons": [{**LESSON, "lesson": "Refunds are tricky."}]}),
        json.dumps({"lessons": [{**LESSON, "scope": "refund_order"}]}),
        json.dumps({"advice": "be careful"}),
    ],
)
async def test_malformed_output_falls_back_to_the_rule_reviewer(client, scripted_reviewer, answer):
    scripted_reviewer.answer = answer
    result = await post_events(client, "llm-bad", [query_order(5, status="error")], task_end={"status": "failure"})
    assert result["review"]["reviewer"] == "rules"
    assert result["review"]["note"].startswith("llm:openai/scripted gave no usable answer")
    assert len(scripted_reviewer.asked) == 2  # one retry, then the fallback
    assert [(item["attribution"], item["scope"]) for item in result["lessons"]] == [("param_error", "tool:query_order")]
