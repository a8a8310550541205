"""Lessons: admission gate, dedup, conflict and deprecation, isolation, rule reviewer, report."""

from tests.reflections.conftest import NS, lesson, post_events, query_order, search_lessons, tool_call, write_lesson

RETRY = "When the payments API returns 429, retry with exponential backoff."
NO_RETRY = "When the payments API returns 429, do not retry."


async def test_a_new_lesson_is_observing_and_never_recalled(client):
    written = (await write_lesson(client, RETRY))["lesson"]
    assert written["status"] == "observing"
    assert await search_lessons(client, "payments API 429") == {"recommendations": [], "warnings": [], "observing": 1}


async def test_confidence_over_the_threshold_admits_at_once(client):
    written = (await write_lesson(client, RETRY, confidence=0.85, path_type="verified"))["lesson"]
    assert written["status"] == "active"
    found = await search_lessons(client, "payments API 429", scope="tool:payments")
    assert [hit["id"] for hit in found["recommendations"]] == [written["id"]]


async def test_normalised_exact_repeat_merges(client):
    first = (await write_lesson(client, RETRY))["lesson"]
    repeat = await write_lesson(client, "  when the PAYMENTS api returns 429,   retry with exponential backoff. ", expect=200)
    assert repeat["merged_into"] == first["id"]
    merged = repeat["lesson"]
    assert (merged["occurrences"], merged["status"]) == (2, "active")
    assert abs(merged["confidence"] - 2 / 3) < 1e-9
    third = (await write_lesson(client, RETRY, expect=200))["lesson"]
    assert third["occurrences"] == 3 and abs(third["confidence"] - 0.75) < 1e-9
    assert third["occurred_at"] >= merged["occurred_at"]


async def test_a_close_paraphrase_in_the_scope_merges_but_not_across_scopes(client):
    first = (await write_lesson(client, RETRY))["lesson"]
    paraphrase = await write_lesson(client, "When the payments API answers 429, retry using exponential backoff.", expect=200)
    assert paraphrase["merged_into"] == first["id"]
    elsewhere = await write_lesson(client, RETRY, scope="tool:billing")
    assert elsewhere["merged_into"] is None and elsewhere["lesson"]["occurrences"] == 1


async def test_opposite_lessons_newest_wins_older_deprecated_and_flagged(client):
    older = (await write_lesson(client, RETRY, confidence=0.9, path_type="verified"))["lesson"]
    newer = (await write_lesson(client, NO_RETRY, confidence=0.9, path_type="verified"))["lesson"]
    assert newer["status"] == "active" and newer["conflict_flag"] and newer["conflicts_with"] == [older["id"]]
    deprecated = await lesson(client, older["id"])
    assert (deprecated["status"], deprecated["conflict_flag"]) == ("deprecated", True)
    found = await search_lessons(client, "payments API returned 429", scope="tool:payments")
    assert [(hit["id"], hit["conflict_flag"]) for hit in found["recommendations"]] == [(newer["id"], True)]


async def test_an_unadmitted_contradiction_only_flags_until_it_is_seen_again(client):
    older = (await write_lesson(client, RETRY, confidence=0.9, path_type="verified"))["lesson"]
    contender = (await write_lesson(client, NO_RETRY))["lesson"]
    assert contender["status"] == "observing" and contender["conflict_flag"]
    assert (await lesson(client, older["id"]))["status"] == "active"
    again = (await write_lesson(client, NO_RETRY, expect=200))["lesson"]
    assert again["status"] == "active"
    assert (await lesson(client, older["id"]))["status"] == "deprecated"


async def test_a_different_type_contradicts_the_rule_lesson(client):
    for task_id in ("a", "b"):
        learned = (await post_events(client, task_id, [query_order(1, status="error")], task_end={"status": "failure"}))["lessons"][0]
    manual = await write_lesson(client, "When calling query_order, pass `order_id` as integer.", scope="tool:query_order", confidence=0.9)
    assert manual["merged_into"] is None
    assert (await lesson(client, learned["id"]))["status"] == "deprecated"


async def test_role_and_domain_isolate_agents(client):
    mine = (await write_lesson(client, RETRY, confidence=0.9, agent_role="billing-bot", domain="finance"))["lesson"]
    shared = (await write_lesson(client, "When the payments API is slow, batch the requests.", confidence=0.9))["lesson"]
    for_me = await search_lessons(client, "payments API", agent_role="billing-bot", domain="finance", top_k=10)
    assert {hit["id"] for hit in for_me["recommendations"]} == {mine["id"], shared["id"]}
    for_other = await search_lessons(client, "payments API", agent_role="support-bot", top_k=10)
    assert [hit["id"] for hit in for_other["recommendations"]] == [shared["id"]]


async def test_rules_learn_from_a_timeout_a_retry_got_past(client):
    result = await post_events(
        client,
        "flaky",
        [tool_call("search_flights", {"to": "LIS"}, "timeout", latency_ms=30_000), tool_call("search_flights", {"to": "LIS"}, attempt=2)],
        task_end={"status": "success"},
    )
    [learned] = result["lessons"]
    assert (learned["attribution"], learned["path_type"], learned["scope"]) == ("external_env", "verified", "tool:search_flights")
    assert "retry" in learned["lesson"] and "backoff" in learned["lesson"]
    assert not any(char.isdigit() for char in learned["lesson"])  # never a hard-coded wait


async def test_rules_learn_from_a_repeated_identical_failing_call(client):
    failing = tool_call("create_ticket", {"title": "refund"}, "error", error="403 forbidden")
    result = await post_events(client, "stubborn", [failing, failing, failing], task_end={"status": "failure"})
    [learned] = result["lessons"]
    assert (learned["attribution"], learned["path_type"]) == ("planning_flaw", "falsified")
    assert "3 times" in learned["action"]


async def test_one_task_teaches_a_mistake_once(client):
    result = await post_events(
        client, "twice", [query_order(1, status="error"), query_order(2, status="error")], task_end={"status": "failure"}
    )
    assert [(item["attribution"], item["occurrences"]) for item in result["lessons"]] == [("param_error", 1)]


async def test_lesson_without_scope_or_with_a_bad_scope_is_a_validation_problem(client):
    missing = await client.post("/v1/reflections", json={"namespace": NS, "lesson": RETRY})
    assert missing.status_code == 422
    assert missing.json()["type"] == "/problems/validation" and missing.json()["detail"] == "body.scope: Field required"
    bad = await client.post("/v1/reflections", json={"namespace": NS, "lesson": RETRY, "scope": "payments"})
    assert bad.status_code == 422 and bad.json()["detail"].startswith("body.scope")


async def test_report_lists_lessons_by_scope_with_counts_and_conflicts(client):
    await write_lesson(client, RETRY, confidence=0.9, path_type="verified")
    await write_lesson(client, NO_RETRY, confidence=0.9, path_type="falsified")
    await post_events(client, "r", [query_order(1, status="error")], task_end={"status": "failure"})
    response = await client.get("/v1/reflections/report", params={"namespace": NS})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/markdown")
    report = response.text
    assert "3 lessons: 1 active, 1 observing, 1 deprecated; 2 in conflict." in report
    assert report.index("## tool:payments (2)") < report.index("**active** warning: " + NO_RETRY) < report.index("**deprecated**")
    assert "## tool:query_order (1)" in report and "conflicts with" in report
