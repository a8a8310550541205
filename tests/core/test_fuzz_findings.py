"""What `make fuzz` (schemathesis against the OpenAPI schema) found, one class of bug per test
group: input PostgreSQL or Python cannot hold answered 500 instead of 422, a lost update crashed
instead of answering 409, and the schema, the validators and the responses disagreed."""

from uuid import UUID

import pytest
from httpx import AsyncClient
from jsonschema import Draft202012Validator
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import VersionConflict
from app.core.settings import Settings
from app.main import create_app
from app.memories import repository
from app.models import Memory, MemoryVersion, TaskEvent

VALID = {"namespace": "user:u1", "content": "User lives in Lisbon."}


async def stored_rows(session: AsyncSession) -> tuple[int, int, int]:
    counted = [select(func.count()).select_from(table) for table in (Memory, MemoryVersion, TaskEvent)]
    return tuple([await session.scalar(statement) for statement in counted])


def _raw_json(body: str) -> dict:
    # httpx refuses to encode NaN and lone surrogates; Python's json, which the service parses with, accepts both.
    return {"content": body.encode(), "headers": {"content-type": "application/json"}}


def _validation_problem(response, field: str) -> dict:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["type"] == "/problems/validation"
    assert any(field in error["loc"] for error in body["errors"]), body
    return body


# --- Input PostgreSQL cannot store (NUL in text or jsonb, lone surrogates, NaN in jsonb): was a 500.

UNSTORABLE_WRITES = [
    pytest.param('{"namespace": "user:u1", "content": "tea\\u0000"}', "content", id="nul-in-text"),
    pytest.param('{"namespace": "user:u1", "content": "tea", "metadata": {"a": [{"k\\u0000": 1}]}}', "metadata", id="nul-in-jsonb-key"),
    pytest.param('{"namespace": "user:u1", "content": "tea", "source": {"turn": "\\ud800"}}', "source", id="lone-surrogate"),
    pytest.param('{"namespace": "user:u1", "content": "tea", "metadata": {"score": NaN}}', "metadata", id="nan-in-jsonb"),
]


@pytest.mark.parametrize(("body", "field"), UNSTORABLE_WRITES)
async def test_unstorable_input_is_a_422_and_stores_nothing(client: AsyncClient, db_session, body, field):
    before = await stored_rows(db_session)
    problem = _validation_problem(await client.post("/v1/memories", **_raw_json(body)), field)
    assert any(error["type"] == "unstorable_value" for error in problem["errors"])
    assert await stored_rows(db_session) == before


async def test_unstorable_batch_item_fails_alone(client: AsyncClient, db_session):
    body = '{"items": [{"namespace": "user:u1", "content": "tea"}, {"namespace": "user:u1", "content": "x\\u0000"}]}'
    response = await client.post("/v1/memories:batch", **_raw_json(body))
    assert response.status_code == 200, response.text
    assert [result["status"] for result in response.json()["results"]] == [201, 422]


async def test_unstorable_event_field_and_query_text_are_422(client: AsyncClient, db_session):
    before = await stored_rows(db_session)
    event = {"type": "observation", "text": "ok", "extra": {"note": "a\x00b"}}
    response = await client.post("/v1/events", json={"namespace": "user:u1", "task_id": "t1", "events": [event]})
    _validation_problem(response, "events")
    response = await client.get("/v1/events", params={"namespace": "user:u1", "task_id": "t\x001"})
    _validation_problem(response, "task_id")
    assert await stored_rows(db_session) == before


# --- Timestamps and integers past what Python or an int4 column holds: was a 500.


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param({"created_at": "0001-01-01T00:00:00+01:00"}, "created_at", id="before-year-1-in-utc"),
        pytest.param({"created_at": "9999-12-31T23:00:00-05:00"}, "created_at", id="past-year-9999-in-utc"),
        pytest.param({"ttl_seconds": 2**31}, "ttl_seconds", id="ttl-past-int4"),
    ],
)
async def test_out_of_range_write_is_a_422_and_stores_nothing(client: AsyncClient, db_session, change, field):
    before = await stored_rows(db_session)
    _validation_problem(await client.post("/v1/memories", json={**VALID, **change}), field)
    assert await stored_rows(db_session) == before


async def test_expiry_past_year_9999_cannot_be_asked_for(client: AsyncClient, db_session):
    """A write dated near year 9999 with the longest TTL once overflowed its expiry; a time that
    far ahead is now refused outright (a write's time is never in the future)."""
    before = await stored_rows(db_session)
    response = await client.post(
        "/v1/memories", json={**VALID, "created_at": "9999-12-30T00:00:00Z", "ttl_seconds": 2**31 - 1}
    )
    assert _validation_problem(response, "created_at")["errors"][0]["type"] == "datetime_ahead"
    assert await stored_rows(db_session) == before


# --- A lost update (another writer bumped the version) crashed reading the expired row's id.


async def test_a_lost_update_is_a_version_conflict(client: AsyncClient, db_session: AsyncSession):
    created = (await client.post("/v1/memories", json=VALID)).json()["memory"]
    memory = await repository.get(db_session, UUID(created["id"]))
    await db_session.execute(text("UPDATE memories SET version = version + 1 WHERE id = :id"), {"id": memory.id})
    memory.confidence = 0.5
    with pytest.raises(VersionConflict, match=created["id"]):
        await repository.save_change(db_session, memory, changed_by="test")


# --- The schema and the validators disagreed: valid by the schema yet refused, or the reverse.


@pytest.fixture(scope="module")
def openapi() -> dict:
    return create_app(Settings()).openapi()


def documented_valid(openapi: dict, component: str, body: dict) -> bool:
    validator = Draft202012Validator({"$ref": f"#/components/schemas/{component}", "components": openapi["components"]})
    return validator.is_valid(body)


SEARCH = {"query": "tea", "namespace": "user:u1"}
# Refused and allowed alike: the allowed ones guard against a fix refusing too much.
AGREEMENT = [
    # content: blank as str.strip() judges it, \x85 and \x1c included; the schema said nothing
    ("/v1/memories", "MemoryWrite", {**VALID, "content": ""}),
    ("/v1/memories", "MemoryWrite", {**VALID, "content": " \x85\x1c\u3000"}),
    ("/v1/memories", "MemoryWrite", {**VALID, "content": "\ufeffUser likes tea."}),
    # JSON types as the schema states them: pydantic's lax mode took "5", 0 and false
    ("/v1/memories", "MemoryWrite", {**VALID, "ttl_seconds": 60.0}),
    ("/v1/memories", "MemoryWrite", {**VALID, "ttl_seconds": "60"}),
    ("/v1/memories", "MemoryWrite", {**VALID, "importance": False}),
    ("/v1/memories", "MemoryWrite", {**VALID, "created_at": 0}),
    ("/v1/memories", "MemoryWrite", {**VALID, "created_at": "0001-01-01T00:00:00+01:00"}),
    ("/v1/memories/search", "SearchRequest", {**SEARCH, "top_k": 3.0}),
    ("/v1/memories/search", "SearchRequest", {**SEARCH, "explain": 1}),
    ("/v1/memories/search", "SearchRequest", {**SEARCH, "query": "\u2003"}),
    ("/v1/events", "EventsRequest", {"namespace": "user:u1", "task_id": "t1", "task_end": {"status": "success"}}),
    # a scope's whitespace: \s meant three different sets to JSON Schema, Python and pydantic
    ("/v1/reflections/search", "LessonSearch", {**SEARCH, "scope": "task:a\x1c"}),
    ("/v1/reflections/search", "LessonSearch", {**SEARCH, "scope": "task:a\x85"}),
    ("/v1/reflections/search", "LessonSearch", {**SEARCH, "scope": "task:a\ufeff"}),
]


async def test_the_schema_accepts_exactly_what_the_api_accepts(client: AsyncClient, openapi):
    disagreements = []
    for path, component, body in AGREEMENT:
        response = await client.post(path, json=body)
        if documented_valid(openapi, component, body) != (response.status_code != 422):
            disagreements.append((path, body, response.status_code, response.text[:200]))
    assert not disagreements


# Cross-field rules are stated in the description, not as oneOf/anyOf of partial schemas: client
# generators drop an operation whose body is one (openapi-python-client generated no search).
CROSS_FIELD = [
    ("/v1/memories/search", "SearchRequest", {**SEARCH, "namespaces": ["user:u1"]}, "exactly one of `namespace` or `namespaces`"),
    ("/v1/memories/search", "SearchRequest", {"query": "tea"}, "exactly one of `namespace` or `namespaces`"),
    ("/v1/events", "EventsRequest", {"namespace": "user:u1", "task_id": "t1"}, "at least one event or the `task_end`"),
]


async def test_cross_field_rules_are_refused_and_described(client: AsyncClient, openapi):
    for path, component, body, rule in CROSS_FIELD:
        assert (await client.post(path, json=body)).status_code == 422
        schema = openapi["components"]["schemas"][component]
        assert rule in " ".join(schema["description"].split()) and not {"oneOf", "anyOf", "allOf"} & schema.keys()


# --- Responses the schema did not document: problem+json errors, second success codes, Markdown.


def test_every_error_response_is_documented_as_a_problem(openapi):
    assert "Problem" in openapi["components"]["schemas"]
    for path, operations in openapi["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            if "security" in operation:  # behind an API key
                assert {"401", "403", "422", "503"} <= set(responses), (method, path)
            for status, response in responses.items():
                if int(status) >= 400 and path != "/readyz":
                    assert response["content"] == {
                        "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
                    }, (method, path, status)


def test_each_route_documents_its_own_outcomes(openapi):
    paths = openapi["paths"]
    assert {"200", "201", "409", "429"} <= set(paths["/v1/memories"]["post"]["responses"])
    assert {"200", "201"} <= set(paths["/v1/reflections"]["post"]["responses"])
    assert "404" in paths["/v1/memories/{memory_id}"]["get"]["responses"]
    assert {"404", "409"} <= set(paths["/v1/revisions/{revision_id}/rollback"]["post"]["responses"])
    assert "404" in paths["/v1/events"]["get"]["responses"]
    assert "503" in paths["/readyz"]["get"]["responses"]
    assert list(paths["/v1/reflections/report"]["get"]["responses"]["200"]["content"]) == ["text/markdown"]


# --- A method a path does not serve: GET /v1/memories/search read "search" as a bad memory id
# (422), and a 405 listed only the first route's methods in Allow.


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/v1/memories/search", "POST"),
        ("GET", "/v1/reflections/search", "POST"),
        ("PUT", "/v1/events", "GET, POST"),
        ("PATCH", "/v1/memories/00000000-0000-4000-8000-000000000000", "DELETE, GET"),
    ],
)
async def test_an_unserved_method_is_a_405_naming_every_served_one(client: AsyncClient, method, path, allowed):
    response = await client.request(method, path)
    assert response.status_code == 405, response.text
    assert response.json()["type"] == "/problems/method-not-allowed"
    assert response.headers["allow"] == allowed

