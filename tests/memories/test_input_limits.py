"""Bounded input: request bodies (413), metadata and source size and key count, and the depth of
any free-form JSON (422), a batch item alone; what was stored before stays as it was."""

import json

import pytest
from httpx import AsyncClient

from app.core.settings import settings
from tests.memories.test_validation import _problem, stored_state

NS = "user:limits"


def nested(depth: int) -> dict:
    """An object `depth` levels deep: {"a": {"a": ... {"a": 1}}}."""
    return json.loads('{"a":' * (depth - 1) + '{"a": 1}' + "}" * (depth - 1))


def write(**fields) -> dict:
    return {"namespace": NS, "content": "User keeps a plant on the balcony.", **fields}


async def test_a_body_declared_too_large_is_refused_unread(client: AsyncClient, db_session):
    before = await stored_state(db_session)
    body = json.dumps(write(metadata={"blob": "x" * settings.max_request_bytes}))
    response = await client.post("/v1/memories", content=body, headers={"content-type": "application/json"})
    problem = _problem(response, 413, "/problems/payload-too-large")
    assert str(settings.max_request_bytes) in problem["detail"]
    assert await stored_state(db_session) == before


async def test_a_streamed_body_is_cut_off_at_the_limit(client: AsyncClient, db_session):
    chunk = b" " * 65_536
    pulled = 0

    async def endless():
        nonlocal pulled
        yield b'{"namespace": "user:limits", "content": "x", "metadata": {"blob": "'
        for _ in range(4 * settings.max_request_bytes // len(chunk)):
            pulled += 1
            yield chunk

    before = await stored_state(db_session)
    response = await client.post("/v1/memories", content=endless(), headers={"content-type": "application/json"})
    _problem(response, 413, "/problems/payload-too-large")
    assert pulled <= settings.max_request_bytes // len(chunk) + 2  # it stopped reading at the limit
    assert await stored_state(db_session) == before


@pytest.mark.parametrize(
    ("field", "value", "error_type"),
    [
        pytest.param("metadata", {f"k{i}": i for i in range(settings.max_metadata_keys + 1)}, "too_many_keys", id="keys"),
        pytest.param("metadata", {"a": [{f"k{i}": i} for i in range(settings.max_metadata_keys + 1)]}, "too_many_keys", id="nested-keys"),
        pytest.param("metadata", {"blob": "x" * settings.max_metadata_bytes}, "too_large", id="size"),
        pytest.param("source", {"turn": "x" * settings.max_metadata_bytes}, "too_large", id="source-size"),
        pytest.param("source", {f"k{i}": i for i in range(settings.max_metadata_keys + 1)}, "too_many_keys", id="source-keys"),
    ],
)
async def test_metadata_and_source_are_bounded(client: AsyncClient, db_session, field, value, error_type):
    before = await stored_state(db_session)
    response = await client.post("/v1/memories", json=write(**{field: value}))
    problem = _problem(response, 422, "/problems/validation")
    assert problem["errors"][0]["loc"][-1] == field and problem["errors"][0]["type"] == error_type
    assert await stored_state(db_session) == before


async def test_metadata_at_the_depth_limit_is_stored_and_readable(client: AsyncClient):
    response = await client.post("/v1/memories", json=write(metadata=nested(settings.max_json_depth)))
    assert response.status_code == 201, response.text
    memory_id = response.json()["memory"]["id"]
    detail = await client.get(f"/v1/memories/{memory_id}")
    assert detail.status_code == 200
    assert detail.json()["memory"]["metadata"] == nested(settings.max_json_depth)


@pytest.mark.parametrize("depth", [settings.max_json_depth + 1, 255, 900])
async def test_json_nested_too_deep_is_422(client: AsyncClient, db_session, depth):
    before = await stored_state(db_session)
    for body in (write(metadata=nested(depth)), write(source=nested(depth)), write(key=f"{NS}:plant", metadata=nested(depth))):
        problem = _problem(await client.post("/v1/memories", json=body), 422, "/problems/validation")
        assert problem["errors"][0]["type"] == "json_too_deep"
    events = {
        "namespace": NS,
        "task_id": "deep",
        "events": [{"type": "tool_call", "tool": "t", "args": nested(depth), "status": "ok"}],
    }
    _problem(await client.post("/v1/events", json=events), 422, "/problems/validation")
    assert await stored_state(db_session) == before


async def test_a_deep_batch_item_is_refused_alone(client: AsyncClient):
    items = [
        write(content="User waters the plant on Sundays."),
        write(content="User repotted the plant.", metadata=nested(300)),
        write(content="User bought a second plant."),
    ]
    response = await client.post("/v1/memories:batch", json={"items": items})
    assert response.status_code == 200, response.text
    assert [result["status"] for result in response.json()["results"]] == [201, 422, 201]
    assert response.json()["results"][1]["error"]["errors"][0]["type"] == "json_too_deep"
