"""Idempotency-Key: a repeat returns the first answer and stores nothing new; the same key with
another request is refused; a request that failed gives its key up."""

import asyncio
import uuid

from httpx import AsyncClient
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Memory, TaskEvent

NS = "user:idem"


def keyed(key: str | None = None) -> dict[str, str]:
    return {"Idempotency-Key": key or str(uuid.uuid4())}


async def count(db_session: AsyncSession, model, namespace: str = NS) -> int:
    return await db_session.scalar(select(func.count()).select_from(model).where(model.namespace == namespace))


async def test_a_repeated_write_returns_the_first_answer_and_stores_nothing_new(client: AsyncClient, db_session):
    headers = keyed()
    body = {"namespace": NS, "content": "User's locker is number 41.", "session_id": "s1"}
    first = await client.post("/v1/memories", json=body, headers=headers)
    again = await client.post("/v1/memories", json=body, headers=headers)
    assert first.status_code == again.status_code == 201  # not the 200 a deduplicated write answers
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first.headers
    assert await count(db_session, Memory) == 1
    detail = (await client.get(f"/v1/memories/{first.json()['memory']['id']}")).json()
    assert detail["memory"]["last_accessed_at"] is None  # not even touched as a deduplicated write would be


async def test_events_feedback_and_revise_are_applied_once(client: AsyncClient, db_session):
    events = {"namespace": NS, "task_id": "t-1", "events": [{"type": "observation", "text": "The disk is full."}]}
    headers = keyed()
    assert [(await client.post("/v1/events", json=events, headers=headers)).status_code for _ in range(3)] == [200] * 3
    assert await count(db_session, TaskEvent) == 1

    memory = (await client.post("/v1/memories", json={"namespace": NS, "content": "User likes jazz.", "confidence": 0.5})).json()["memory"]
    headers = keyed()
    answers = [await client.post(f"/v1/memories/{memory['id']}/feedback", json={"useful": True}, headers=headers) for _ in range(2)]
    assert answers[0].json() == answers[1].json()
    assert (await client.get(f"/v1/memories/{memory['id']}")).json()["memory"]["confidence"] == 0.6  # +0.1 once

    fresh = (await client.get(f"/v1/memories/{memory['id']}")).json()["memory"]
    revise = {"content": "User likes bebop.", "expected_version": fresh["version"]}
    headers = keyed()
    first = await client.post(f"/v1/memories/{memory['id']}/revise", json=revise, headers=headers)
    again = await client.post(f"/v1/memories/{memory['id']}/revise", json=revise, headers=headers)
    assert first.status_code == again.status_code == 200  # the repeat is not a stale-version 409
    assert again.json() == first.json()
    assert (await client.get(f"/v1/memories/{memory['id']}")).json()["memory"]["version"] == first.json()["memory"]["version"]


async def test_a_batch_is_applied_once(client: AsyncClient, db_session):
    items = [{"namespace": NS, "content": f"Batch fact {n}."} for n in range(3)]
    headers = keyed()
    first = await client.post("/v1/memories:batch", json={"items": items}, headers=headers)
    again = await client.post("/v1/memories:batch", json={"items": items}, headers=headers)
    assert again.json() == first.json() and [result["status"] for result in first.json()["results"]] == [201] * 3
    assert await count(db_session, Memory) == 3


async def test_the_same_key_with_another_request_is_refused(client: AsyncClient, db_session):
    headers = keyed()
    assert (await client.post("/v1/memories", json={"namespace": NS, "content": "Fact one."}, headers=headers)).status_code == 201
    other = await client.post("/v1/memories", json={"namespace": NS, "content": "Fact two."}, headers=headers)
    assert other.status_code == 422 and other.json()["type"] == "/problems/idempotency-key-reused"
    assert await count(db_session, Memory) == 1


async def test_a_method_a_path_does_not_serve_is_a_405_whatever_its_key(client: AsyncClient, db_session):
    headers = keyed()
    assert (await client.post("/v1/memories", json={"namespace": NS, "content": "Fact one."}, headers=headers)).status_code == 201
    for method, path in (("TRACE", "/v1/memories"), ("PUT", "/v1/events"), ("PUT", "/v1/memories")):
        response = await client.request(method, path, headers=headers)
        assert response.status_code == 405, (method, path, response.text)
        assert response.json()["type"] == "/problems/method-not-allowed"
    assert await count(db_session, Memory) == 1


async def test_a_failed_request_gives_its_key_up(client: AsyncClient, db_session):
    headers = keyed()
    refused = await client.post("/v1/memories", json={"namespace": NS, "content": "   "}, headers=headers)
    assert refused.status_code == 422
    assert (await client.post("/v1/memories", json={"namespace": NS, "content": "Now with content."}, headers=headers)).status_code == 201


async def test_keys_are_printable_ascii_of_bounded_length(client: AsyncClient, db_session):
    for bad in ("has space", "x" * 256, "é"):
        response = await client.post(
            "/v1/memories", json={"namespace": NS, "content": "Fact."}, headers={"Idempotency-Key": bad.encode()}
        )
        assert response.status_code == 422, bad
    assert await count(db_session, Memory) == 0


async def test_keys_of_one_caller_are_not_another_callers(client: AsyncClient, db_session, settings):
    app = client._transport.app
    app.state.settings = settings.model_copy(update={"api_keys": {"key-a": ["user:"], "key-b": ["user:"]}})
    headers = keyed()
    body = {"namespace": NS, "content": "Shared desk plant is a fern."}
    first = await client.post("/v1/memories", json=body, headers={**headers, "Authorization": "Bearer key-a"})
    second = await client.post("/v1/memories", json=body, headers={**headers, "Authorization": "Bearer key-b"})
    assert "Idempotent-Replayed" not in second.headers
    assert second.status_code == 200 and second.json()["deduplicated"]  # a write of its own, deduplicated
    assert first.status_code == 201


async def test_concurrent_repeats_are_applied_once(live_client: AsyncClient, live_namespace: str, engine):
    headers = keyed()
    body = {"namespace": live_namespace, "task_id": "t-race", "events": [{"type": "observation", "text": "Raced."}]}
    answers = await asyncio.gather(*(live_client.post("/v1/events", json=body, headers=headers) for _ in range(4)))
    assert [answer.status_code for answer in answers] == [200] * 4
    assert sum(answer.headers.get("Idempotent-Replayed") == "true" for answer in answers) == 3
    async with engine.connect() as connection:
        stored = await connection.scalar(
            text("SELECT count(*) FROM task_events WHERE namespace = :ns AND task_id = 't-race'"), {"ns": live_namespace}
        )
        await connection.execute(text("DELETE FROM task_events WHERE namespace = :ns"), {"ns": live_namespace})
        await connection.commit()
    assert stored == 1
