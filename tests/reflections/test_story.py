"""The issue's story: a wrong argument type becomes a lesson, is admitted on the second
sighting, and warns the agent before its next call of that tool, and only of that tool."""

from tests.reflections.conftest import post_events, query_order, search_lessons, tool_call


async def test_a_wrong_argument_type_becomes_a_warning_for_that_tool_only(client):
    # Task 1: query_order with an integer order_id against a schema that wants a string.
    first = await post_events(
        client,
        "task-1",
        [
            {"type": "plan_step", "step": "look up the order", "expected": "the order's status"},
            query_order(12345, status="error", error="400: order_id must be a string"),
        ],
        task_end={"status": "failure", "expected": "the order's status", "actual": "no order found"},
        agent_role="support",
    )
    assert first["review"]["reviewer"] == "rules"
    assert {"tool_failure", "expectation_missed"} <= set(first["review"]["triggers"])
    [lesson] = first["lessons"]
    assert lesson["scope"] == "tool:query_order"
    assert lesson["attribution"] == "param_error"
    assert lesson["lesson"] == "When calling query_order, pass `order_id` as string."
    assert "12345 (integer)" in lesson["action"]
    assert (lesson["status"], lesson["path_type"], lesson["occurrences"]) == ("observing", "falsified", 1)

    # Seen once: not recalled yet.
    before = await search_lessons(client, "look up order 12345 with query_order", scope="tool:query_order")
    assert before == {"recommendations": [], "warnings": [], "observing": 1}

    # Task 2 makes the same mistake: the lesson is seen twice and admitted.
    second = await post_events(
        client,
        "task-2",
        [query_order(777, status="error", error="400: order_id must be a string")],
        task_end={"status": "failure"},
        agent_role="support",
    )
    [again] = second["lessons"]
    assert again["id"] == lesson["id"]
    assert (again["status"], again["occurrences"]) == ("active", 2)
    assert abs(again["confidence"] - (1 - 1 / 3)) < 1e-9

    # Before its next query_order call, the agent is warned.
    found = await search_lessons(
        client, "look up order 98765 with query_order", scope="tool:query_order", agent_role="support"
    )
    assert [hit["id"] for hit in found["warnings"]] == [lesson["id"]]
    assert found["warnings"][0]["scope"] == "tool:query_order"
    assert found["recommendations"] == []

    # A task about another tool never sees it.
    other = await search_lessons(client, "send the order confirmation email", scope="tool:send_email")
    assert other == {"recommendations": [], "warnings": [], "observing": 0}


async def test_a_fix_that_worked_turns_the_warning_into_a_recommendation(client):
    for task_id in ("fix-1", "fix-2"):
        result = await post_events(
            client,
            task_id,
            [query_order(12345, status="error"), query_order("12345", attempt=2)],
            task_end={"status": "success"},
        )
    [lesson] = result["lessons"]
    assert (lesson["path_type"], lesson["status"]) == ("verified", "active")
    found = await search_lessons(client, "call query_order", scope="tool:query_order")
    assert [hit["id"] for hit in found["recommendations"]] == [lesson["id"]]


async def test_a_task_without_a_trigger_is_not_reviewed(client):
    result = await post_events(
        client, "calm", [tool_call("send_email", {"to": "a@example.com"})], task_end={"status": "success"}
    )
    assert result == {"accepted": 1, "lessons": [], "review": None}
