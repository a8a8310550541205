"""Feedback on lessons and memories (asymmetric, capped), the hit penalty, and decay."""

from datetime import datetime, timedelta, timezone

from tests.reflections.conftest import NS, lesson, search_lessons, write_lesson

RETRY = "When the payments API returns 429, retry with exponential backoff."


async def feedback(client, lesson_id: str, useful: bool) -> dict:
    response = await client.post(f"/v1/reflections/{lesson_id}/feedback", json={"useful": useful})
    assert response.status_code == 200, response.text
    return response.json()["lesson"]


async def memory_feedback(client, memory_id: str, useful: bool) -> dict:
    response = await client.post(f"/v1/memories/{memory_id}/feedback", json={"useful": useful, "session_id": "s1"})
    assert response.status_code == 200, response.text
    return response.json()["memory"]


async def write_memory(client, content: str, **fields) -> dict:
    response = await client.post("/v1/memories", json={"namespace": "user:fb", "content": content, **fields})
    assert response.status_code == 201, response.text
    return response.json()["memory"]


async def test_lesson_feedback_is_asymmetric(client):
    written = (await write_lesson(client, RETRY))["lesson"]
    up = await feedback(client, written["id"], useful=True)
    assert abs(up["confidence"] - 0.6) < 1e-9 and up["useful_count"] == 1
    down = await feedback(client, written["id"], useful=False)
    assert abs(down["confidence"] - 0.45) < 1e-9 and down["useful_count"] == 1


async def test_useful_feedback_is_capped_and_not_useful_floors_at_zero(client):
    written = (await write_lesson(client, RETRY, confidence=0.9))["lesson"]
    assert abs((await feedback(client, written["id"], useful=True))["confidence"] - 0.95) < 1e-9
    assert abs((await feedback(client, written["id"], useful=True))["confidence"] - 0.95) < 1e-9
    weak = (await write_lesson(client, "When the ledger is locked, wait for the nightly close.", confidence=0.1))["lesson"]
    assert (await feedback(client, weak["id"], useful=False))["confidence"] == 0.0


async def test_feedback_can_admit_an_observing_lesson(client):
    written = (await write_lesson(client, RETRY, confidence=0.75))["lesson"]
    assert written["status"] == "observing"
    assert (await feedback(client, written["id"], useful=True))["status"] == "active"


async def test_memory_feedback_moves_confidence_without_a_new_version(client):
    """Feedback is a ranking signal: the memory's content, status and version stay."""
    memory = await write_memory(client, "User's invoices go to finance@example.com.", confidence=0.9)
    assert abs((await memory_feedback(client, memory["id"], useful=True))["confidence"] - 0.95) < 1e-9
    after = await memory_feedback(client, memory["id"], useful=False)
    assert abs(after["confidence"] - 0.8) < 1e-9 and after["version"] == memory["version"] == 1
    versions = (await client.get(f"/v1/memories/{memory['id']}")).json()["versions"]
    assert [version["changed_by"] for version in versions] == ["api"]
    full = await write_memory(client, "User prefers paper invoices.")
    assert (await memory_feedback(client, full["id"], useful=True))["confidence"] == 1.0  # the cap never lowers


async def test_memory_feedback_on_an_unknown_memory_is_not_found(client):
    response = await client.post("/v1/memories/00000000-0000-0000-0000-000000000000/feedback", json={"useful": True})
    assert response.status_code == 404 and response.json()["type"] == "/problems/not-found"


async def test_not_useful_on_the_first_of_two_equally_relevant_memories_puts_the_second_first(client):
    created = "2026-01-01T00:00:00+00:00"
    ana = await write_memory(client, "Ana likes hiking in the Alps.", created_at=created)
    ben = await write_memory(client, "Ben likes hiking in the Alps.", created_at=created)
    query = {"query": "Who likes hiking in the Alps?", "namespace": "user:fb", "top_k": 2, "record_access": False}

    before = (await client.post("/v1/memories/search", json=query)).json()["hits"]
    first, second = (hit["memory"]["id"] for hit in before)
    assert {first, second} == {ana["id"], ben["id"]}
    assert abs(before[0]["scores"]["semantic"] - before[1]["scores"]["semantic"]) < 0.05  # equally relevant

    await memory_feedback(client, first, useful=False)
    after = (await client.post("/v1/memories/search", json=query)).json()["hits"]
    assert [hit["memory"]["id"] for hit in after] == [second, first]


async def test_recalled_often_and_never_useful_grows_a_hit_penalty(client, settings):
    ignored = (await write_lesson(client, RETRY, confidence=0.9))["lesson"]
    helpful = (await write_lesson(client, "When the payments API times out, check the status page.", confidence=0.9))["lesson"]
    await feedback(client, helpful["id"], useful=True)
    penalties = []
    for _ in range(settings.lesson_penalty_after_hits + 1):
        hits = (await search_lessons(client, "payments API", top_k=5))["recommendations"]
        penalties.append({hit["id"]: hit["scores"]["hit_penalty"] for hit in hits}[ignored["id"]])
    # Each response shows the penalty before that recall counted.
    assert penalties[:-2] == [0.0] * (settings.lesson_penalty_after_hits - 1)
    assert abs(penalties[-1] - settings.lesson_penalty_step) < 1e-9
    recalled = await lesson(client, ignored["id"])
    assert recalled["hit_count"] == settings.lesson_penalty_after_hits + 1
    assert abs(recalled["hit_penalty"] - 2 * settings.lesson_penalty_step) < 1e-9
    assert (await lesson(client, helpful["id"]))["hit_penalty"] == 0.0
    assert (await feedback(client, ignored["id"], useful=True))["hit_penalty"] == 0.0


async def test_decay_steps_idle_lessons_down_once_per_idle_period_and_deletes_nothing(client):
    long_ago = (datetime.now(timezone.utc) - timedelta(days=40)).isoformat()
    idle = (await write_lesson(client, RETRY, confidence=0.9, occurred_at=long_ago))["lesson"]
    fresh = (await write_lesson(client, "When the payments API is slow, batch the requests.", confidence=0.9))["lesson"]
    floor = (await write_lesson(client, "When the ledger is locked, wait.", scope="tool:ledger", confidence=0.05, occurred_at=long_ago))["lesson"]

    first = await client.post("/v1/maintenance/decay", params={"namespace": NS})
    assert first.status_code == 200 and first.json() == {"decayed": 2, "more": False}
    assert abs((await lesson(client, idle["id"]))["confidence"] - 0.8) < 1e-9
    assert (await lesson(client, fresh["id"]))["confidence"] == 0.9
    assert (await lesson(client, floor["id"]))["confidence"] == 0.0

    again = await client.post("/v1/maintenance/decay", params={"namespace": NS})
    assert again.json()["decayed"] == 0
    assert abs((await lesson(client, idle["id"]))["confidence"] - 0.8) < 1e-9
