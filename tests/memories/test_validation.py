"""Every rejected write answers with a problem-details body and leaves stored data unchanged."""

import pytest
from httpx import AsyncClient
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.settings import settings
from app.models import Memory, MemoryVersion

VALID = {"namespace": "user:u1", "content": "User lives in Lisbon."}


async def stored_state(session: AsyncSession) -> tuple[int, int, list[tuple[str, str, int]]]:
    memories = await session.scalar(select(func.count()).select_from(Memory))
    versions = await session.scalar(select(func.count()).select_from(MemoryVersion))
    rows = (await session.execute(select(Memory.content, Memory.status, Memory.version).order_by(Memory.content))).all()
    return memories, versions, [tuple(row) for row in rows]


@pytest.fixture
async def existing(client: AsyncClient) -> dict:
    response = await client.post("/v1/memories", json=VALID)
    assert response.status_code == 201
    return response.json()["memory"]


def _problem(response, status: int, problem_type: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["type"] == problem_type
    assert body["status"] == status
    assert body["title"] and body["detail"]
    return body


BAD_WRITES = [
    pytest.param({"content": ""}, "content", id="empty-content"),
    pytest.param({"content": "   \n\t "}, "content", id="blank-content"),
    pytest.param({"content": "x" * (settings.max_content_chars + 1)}, "content", id="over-long-content"),
    pytest.param({"key": "user:u1"}, "key", id="key-without-attribute"),
    pytest.param({"key": "user:u2:phone"}, "key", id="key-in-another-namespace"),
    pytest.param({"key": "user:u1:has space"}, "key", id="key-bad-characters"),
    pytest.param({"key": "user:u1:x\n"}, "key", id="key-with-trailing-newline"),
    pytest.param({"memory_type": "feeling"}, "memory_type", id="unknown-memory-type"),
    pytest.param({"confidence": 1.5}, "confidence", id="confidence-above-1"),
    pytest.param({"confidence": -0.1}, "confidence", id="confidence-below-0"),
    pytest.param({"importance": 2}, "importance", id="importance-above-1"),
    pytest.param({"importance": -1}, "importance", id="importance-below-0"),
    pytest.param({"ttl_seconds": -5}, "ttl_seconds", id="negative-ttl"),
    pytest.param({"namespace": ""}, "namespace", id="empty-namespace"),
    pytest.param({"namespace": "user u1"}, "namespace", id="namespace-with-space"),
    pytest.param({"created_at": "2026-01-01T00:00:00"}, "created_at", id="time-without-zone"),
    pytest.param({"colour": "blue"}, "colour", id="unknown-field"),
]


@pytest.mark.parametrize(("change", "field"), BAD_WRITES)
async def test_invalid_write_is_refused_and_changes_nothing(client, db_session, existing, change, field):
    before = await stored_state(db_session)
    response = await client.post("/v1/memories", json={**VALID, "content": "another fact", **change})
    body = _problem(response, 422, "/problems/validation")
    assert any(field in error["loc"] for error in body["errors"]), body
    assert await stored_state(db_session) == before


SENSITIVE = [
    pytest.param("My card is 4539 1488 0343 6467, use it.", "bank_card", id="bank-card-luhn"),
    pytest.param("卡号6222021234567890128", "bank_card", id="bank-card-no-spaces"),
    pytest.param("身份证号 11010519491231002X", "cn_resident_id", id="cn-resident-id"),
    pytest.param("server password: Tr0ub4dor&3", "password", id="password-colon"),
    pytest.param("db password=hunter22", "password", id="password-equals"),
    pytest.param("我的密码是abc12345", "password", id="password-chinese"),
    pytest.param("use key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx123", "api_key", id="openai-key"),
    pytest.param("aws AKIAIOSFODNN7EXAMPLE", "api_key", id="aws-key"),
    pytest.param("token ghp_0123456789abcdefghijABCDEFGHIJ012345", "api_key", id="github-token"),
]


@pytest.mark.parametrize(("content", "kind"), SENSITIVE)
async def test_sensitive_content_is_refused_naming_the_kind(client, db_session, existing, content, kind):
    before = await stored_state(db_session)
    response = await client.post("/v1/memories", json={**VALID, "content": content})
    body = _problem(response, 422, "/problems/sensitive-content")
    assert kind in body["detail"]
    assert await stored_state(db_session) == before


@pytest.mark.parametrize(
    "content",
    [
        "Call me at 13812345678 after 6pm.",
        "Order 4111111111111112 shipped.",  # fails the Luhn check
        "ID 11010519491231002Y is a typo.",  # wrong check digit
        "I use a password manager.",
        "The meeting is on 2025-04-01 at 10:30.",
    ],
)
async def test_ordinary_numbers_and_words_are_not_sensitive(client, content):
    response = await client.post("/v1/memories", json={**VALID, "content": content})
    assert response.status_code == 201, response.text


async def test_malformed_json_is_a_400_problem(client, db_session, existing):
    before = await stored_state(db_session)
    response = await client.post(
        "/v1/memories", content=b'{"namespace": "user:u1", "content": ', headers={"content-type": "application/json"}
    )
    _problem(response, 400, "/problems/malformed-json")
    assert await stored_state(db_session) == before


async def test_batch_over_the_limit_is_refused_whole(client, db_session, existing):
    before = await stored_state(db_session)
    items = [{"namespace": "user:u1", "content": f"fact {i}"} for i in range(settings.max_batch_items + 1)]
    response = await client.post("/v1/memories:batch", json={"items": items})
    body = _problem(response, 422, "/problems/validation")
    assert any("items" in error["loc"] for error in body["errors"])
    assert await stored_state(db_session) == before


async def test_empty_batch_is_refused(client):
    _problem(await client.post("/v1/memories:batch", json={"items": []}), 422, "/problems/validation")


async def test_a_misspelled_batch_field_is_refused_not_ignored(client, db_session):
    before = await stored_state(db_session)
    body = {"items": [{"namespace": "user:u1", "content": "fact"}], "dry_rn": True}
    problem = _problem(await client.post("/v1/memories:batch", json=body), 422, "/problems/validation")
    assert any("dry_rn" in error["loc"] for error in problem["errors"])
    assert await stored_state(db_session) == before


@pytest.mark.parametrize("method", ["get", "delete"])
async def test_unknown_memory_is_404(client, method):
    response = await getattr(client, method)("/v1/memories/00000000-0000-4000-8000-000000000000")
    _problem(response, 404, "/problems/not-found")


async def test_malformed_memory_id_names_no_memory(client):
    _problem(await client.get("/v1/memories/not-a-uuid"), 404, "/problems/not-found")
