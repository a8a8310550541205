"""Client times are never in the future: far ahead is 422; within the clock skew it counts as now,
so a later write with the same key still supersedes it and nothing hides from search."""

from datetime import datetime, timedelta, timezone

import pytest
from httpx import AsyncClient

from app.core.settings import settings
from tests.memories.test_validation import _problem, stored_state

NS = "user:clock"
KEY = f"{NS}:city"


def _at(delta: timedelta) -> str:
    return (datetime.now(timezone.utc) + delta).isoformat()


@pytest.mark.parametrize(
    "ahead",
    [datetime(3000, 1, 1, tzinfo=timezone.utc) - datetime.now(timezone.utc), timedelta(seconds=settings.max_clock_skew_seconds + 120)],
    ids=["year-3000", "past-the-skew"],
)
async def test_a_write_from_the_future_is_refused_and_supersedes_nothing(client: AsyncClient, db_session, ahead):
    created_at = _at(ahead)  # from when the test runs: collection may be minutes earlier
    current = await client.post("/v1/memories", json={"namespace": NS, "key": KEY, "content": "User lives in Porto."})
    assert current.status_code == 201
    before = await stored_state(db_session)
    future = {"namespace": NS, "key": KEY, "content": "User lives in Faro.", "created_at": created_at}
    problem = _problem(await client.post("/v1/memories", json=future), 422, "/problems/validation")
    assert problem["errors"][0]["type"] == "datetime_ahead"
    assert await stored_state(db_session) == before
    found = await client.post("/v1/memories/search", json={"namespace": NS, "query": "where does the user live"})
    assert [hit["memory"]["content"] for hit in found.json()["hits"]] == ["User lives in Porto."]


async def test_a_time_ahead_within_the_skew_counts_as_now(client: AsyncClient):
    slightly_ahead = {"namespace": NS, "key": KEY, "content": "User lives in Braga.", "created_at": _at(timedelta(minutes=2))}
    first = (await client.post("/v1/memories", json=slightly_ahead)).json()["memory"]
    assert datetime.fromisoformat(first["created_at"]) <= datetime.now(timezone.utc)
    # The next ordinary write with the key supersedes it: one active memory per key.
    second = await client.post("/v1/memories", json={"namespace": NS, "key": KEY, "content": "User lives in Coimbra."})
    assert second.status_code == 201
    assert [revision["old_memory_id"] for revision in second.json()["revisions"]] == [first["id"]]
    assert (await client.get(f"/v1/memories/{first['id']}")).json()["memory"]["status"] == "superseded"


async def test_event_and_lesson_times_are_not_in_the_future(client: AsyncClient):
    events = {
        "namespace": NS,
        "task_id": "clock",
        "events": [{"type": "observation", "text": "it rained", "at": "3000-01-01T00:00:00Z"}],
    }
    _problem(await client.post("/v1/events", json=events), 422, "/problems/validation")
    lesson = {"namespace": NS, "lesson": "When it rains, take the bus.", "scope": "task:commute", "occurred_at": "3000-01-01T00:00:00Z"}
    _problem(await client.post("/v1/reflections", json=lesson), 422, "/problems/validation")
