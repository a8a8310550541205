"""Timeouts teach: repeated timeouts give a lesson, a review that teaches nothing says why, and
recall says how many lessons it held back as observing."""

from tests.reflections.conftest import post_events, search_lessons, tool_call, write_lesson

EMAIL = {"to": "ops@example.org", "subject": "weekly report"}


async def test_the_same_request_timing_out_twice_then_failing_teaches_to_degrade(client):
    events = [
        tool_call("send_email", EMAIL, "timeout", latency_ms=30_000),
        tool_call("send_email", EMAIL, "timeout", latency_ms=30_000, attempt=2),
        tool_call("send_email", EMAIL, "error", error="gave up after 3 attempts", attempt=3),
    ]
    answer = await post_events(client, "mail-1", events, task_end={"status": "failure"})
    [lesson] = answer["lessons"]
    assert (lesson["scope"], lesson["attribution"], lesson["path_type"]) == ("tool:send_email", "tool_limit", "falsified")
    assert "degrade" in lesson["lesson"] and lesson["lesson"].startswith("When send_email times out")
    assert answer["review"]["note"] is None


async def test_different_requests_timing_out_point_at_the_environment(client):
    events = [
        tool_call("fetch_rates", {"currency": "EUR"}, "timeout"),
        tool_call("fetch_rates", {"currency": "USD"}, "timeout"),
    ]
    [lesson] = (await post_events(client, "rates-1", events, task_end={"status": "partial"}))["lessons"]
    assert lesson["attribution"] == "external_env" and "backoff" in lesson["lesson"]


async def test_a_timeout_a_retry_got_past_is_not_an_unrecovered_one(client):
    events = [tool_call("fetch_rates", {"currency": "EUR"}, "timeout"), tool_call("fetch_rates", {"currency": "EUR"}, "ok")]
    [lesson] = (await post_events(client, "rates-2", events, task_end={"status": "success"}))["lessons"]
    assert (lesson["attribution"], lesson["path_type"]) == ("external_env", "verified")


async def test_a_review_that_teaches_nothing_says_why(client):
    events = [tool_call("lookup", {"q": "x"}, "ok"), {"type": "user_feedback", "sentiment": "negative", "text": "wrong"}]
    answer = await post_events(client, "fb-1", events, task_end={"status": "failure"})
    assert answer["lessons"] == [] and answer["review"]["reviewer"] == "rules"
    note = answer["review"]["note"]
    assert note.startswith("rules found no lesson in: user feedback, task failure")
    assert "HINDSIGHT_LLM_MODEL" in note


async def test_lesson_search_counts_what_it_holds_back(client):
    await write_lesson(client, "When paying, confirm the amount first.", scope="tool:payments", confidence=0.5)
    await write_lesson(client, "When refunding, check the original charge.", scope="tool:refunds", confidence=0.5)
    found = await search_lessons(client, "pay an invoice", scope="tool:payments")
    assert found["recommendations"] == [] and found["observing"] == 1
    assert (await search_lessons(client, "pay an invoice"))["observing"] == 2


async def test_an_llm_review_that_teaches_nothing_says_so(client, scripted_reviewer):
    events = [tool_call("lookup", {"q": "x"}, "error", error="500")]
    answer = await post_events(client, "llm-1", events, task_end={"status": "failure"})
    assert answer["lessons"] == []
    assert answer["review"]["note"] == "llm:openai/scripted found no lesson in: lookup error, task failure"
