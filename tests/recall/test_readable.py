"""Numbers and ids a person can use: explain's reasons read differently on both sides, the
recency route's raw score is an age in hours, and the lessons report gives ids that work."""

import re
from datetime import datetime, timedelta, timezone

from tests.recall.test_search import FILLER, ids as ids_of, search, write
from tests.reflections.conftest import NS, write_lesson


async def test_explain_gives_no_reason_that_rounding_hides(client):
    for content in FILLER:
        await write(client, content, namespace="user:ties")
    result = await search(client, "what instrument is the user learning?", namespace="user:ties", top_k=1, explain=True)
    misses = result["explain"]["misses"]
    # The hit is the newest memory: every miss trails it in recency by milliseconds, 0.300 either way.
    assert misses and ids_of(result) == [result["explain"]["routes"]["recency"][0]["memory_id"]]
    for miss in misses:
        for reason in miss["held_back_by"]:
            if match := re.fullmatch(r"\w+: (\S+) < (\S+)", reason):
                assert float(match[1]) < float(match[2]), reason


async def test_the_recency_route_scores_an_age_in_hours(client):
    two_days_ago = (datetime.now(timezone.utc) - timedelta(days=2)).isoformat()
    old = await write(client, "User moved to Porto.", namespace="user:age", created_at=two_days_ago)
    new = await write(client, "User adopted a dog.", namespace="user:age")
    result = await search(client, "anything new?", namespace="user:age", explain=True)
    ages = {candidate["memory_id"]: candidate["raw_score"] for candidate in result["explain"]["routes"]["recency"]}
    assert 47.9 < ages[old["id"]] < 48.2 and 0 <= ages[new["id"]] < 0.1


async def test_the_lessons_report_names_lessons_by_ids_that_work(client):
    written = (await write_lesson(client, "When exporting, compress files over 1 GB.", scope="tool:export"))["lesson"]
    report = (await client.get("/v1/reflections/report", params={"namespace": NS})).text
    shown = re.findall(r"`([0-9a-f-]{8,})`", report)
    assert written["id"] in shown
    for lesson_id in shown:
        assert (await client.get(f"/v1/reflections/{lesson_id}")).status_code == 200
