"""A tool call's `input_schema` is the client's: references are never fetched, a broken schema is
no schema (with a note), and costly ones stay bounded. The event loop side of it, with a real
server, is in tests/core/test_live_hardening.py."""

import socket
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from tests.reflections.conftest import NS, post_events, tool_call


def _ended(schema: dict, args: dict) -> dict:
    """A failed call of `probe` under the schema: the task ends and is reviewed."""
    return {
        "namespace": NS,
        "task_id": f"t-{uuid.uuid4().hex[:8]}",
        "events": [tool_call("probe", args, "error", error="refused", input_schema=schema)],
        "task_end": {"status": "failure"},
    }


class Listener:
    """A loopback TCP server that records every connection made to it (and answers JSON)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.connections: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.server.accept()
            except TimeoutError:
                continue
            with connection:
                self.connections.append(connection.recv(4096))
                connection.sendall(b'HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n{"title": "LEAKED-OVER-HTTP"}')

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.server.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


async def test_references_are_never_fetched_nor_echoed(client, listener, tmp_path):
    secret_file = tmp_path / "schema.json"
    secret_file.write_text('{"type": "integer", "title": "LEAKED-FROM-FILE"}')
    not_json = tmp_path / "notes.txt"
    not_json.write_text("LEAKED-FROM-TEXT")
    remote = f"http://127.0.0.1:{listener.port}/x.json"
    schemas = [
        {"properties": {"a": {"$ref": remote}}},
        {"properties": {"a": {"$ref": secret_file.as_uri()}}},
        {"properties": {"a": {"$ref": not_json.as_uri()}}},
        {"properties": {"a": {"$ref": (tmp_path / "missing.json").as_uri()}}},
        # A relative reference against a remote base, and a base that is a file.
        {"$id": f"http://127.0.0.1:{listener.port}/root.json", "properties": {"a": {"$ref": "x.json"}}},
        {"$id": (tmp_path / "base.json").as_uri(), "properties": {"a": {"$ref": "schema.json"}}},
    ]
    seen = []
    for schema in schemas:
        body = _ended(schema, {"a": "text"})
        response = await client.post("/v1/events", json=body)
        assert response.status_code == 200, response.text
        review = response.json()["review"]
        assert "not usable" in review["note"]  # unresolvable: the schema is left out, and said so
        assert response.json()["lessons"] == []  # no param_error from a schema never read
        replay = await client.get("/v1/events", params={"namespace": NS, "task_id": body["task_id"]})
        assert replay.status_code == 200
        seen += [response.text, replay.text]
    seen.append((await client.get("/v1/reflections/report", params={"namespace": NS})).text)
    assert listener.connections == []
    assert not any("LEAKED" in text for text in seen)


async def test_a_local_reference_still_works(client):
    schema = {"$defs": {"id": {"type": "string"}}, "properties": {"order_id": {"$ref": "#/$defs/id"}}}
    response = await client.post("/v1/events", json=_ended(schema, {"order_id": 7}))
    assert response.status_code == 200, response.text
    [lesson] = response.json()["lessons"]
    assert lesson["lesson"] == "When calling probe, pass `order_id` as string."


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "bogus"},
        {"properties": {"a": {"pattern": "("}}},
        {"properties": []},
        {"required": "a"},
        {"properties": {"a": {"pattern": "(a)\\1"}}},  # a back-reference: no linear-time engine runs it
    ],
)
async def test_an_invalid_schema_is_no_schema_with_a_note(client, schema):
    response = await client.post("/v1/events", json=_ended(schema, {"a": "aaa"}))
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["lessons"] == []
    assert result["review"]["reviewer"] == "rules" and "probe: the input schema is not usable" in result["review"]["note"]


async def test_the_issues_pattern_is_matched_in_linear_time_and_teaches_a_lesson(client):
    schema = {"properties": {"a": {"pattern": "^(a+)+$"}}}
    started = time.perf_counter()
    response = await client.post("/v1/events", json=_ended(schema, {"a": "a" * 40 + "!"}))
    assert response.status_code == 200, response.text
    assert time.perf_counter() - started < 5  # backtracking would take longer than the universe
    [lesson] = response.json()["lessons"]
    assert lesson["attribution"] == "param_error"
    assert lesson["lesson"] == "When calling probe, make `a` satisfy the input schema (pattern: ^(a+)+$)."


async def test_unique_items_over_thousands_of_objects_stays_fast(client):
    items = [{"id": index, "tags": [index, index + 1]} for index in range(3_000)]
    started = time.perf_counter()
    response = await client.post("/v1/events", json=_ended({"properties": {"a": {"uniqueItems": True}}}, {"a": items}))
    assert response.status_code == 200, response.text
    assert time.perf_counter() - started < 3  # was 6.6 s on the event loop


async def test_a_huge_enum_is_clipped_in_the_lesson(client):
    schema = {"properties": {"a": {"enum": [f"value-{index}" for index in range(2_000)]}}}
    response = await client.post("/v1/events", json=_ended(schema, {"a": "other"}))
    assert response.status_code == 200, response.text
    [lesson] = response.json()["lessons"]
    assert len(lesson["lesson"]) < 400 and "…" in lesson["lesson"]


async def test_a_schema_past_the_size_limit_is_refused(client, settings):
    schema = {"properties": {"a": {"enum": ["x" * 100] * (settings.max_input_schema_bytes // 100)}}}
    response = await client.post("/v1/events", json=_ended(schema, {"a": "x"}))
    assert response.status_code == 422
    assert response.json()["type"] == "/problems/validation"
    assert "input_schema is larger than" in response.json()["detail"]


async def test_the_same_tool_checked_once_and_fixed_later(client):
    """Every call of one tool is checked in one go; a later valid, successful call verifies the fix."""
    schema = {"properties": {"n": {"type": "integer"}}}
    result = await post_events(
        client,
        "fixed-later",
        [
            tool_call("count", {"n": "3"}, "error", error="bad n", input_schema=schema),
            tool_call("count", {"n": 3}, "ok", input_schema=schema),
        ],
        task_end={"status": "success"},
    )
    [lesson] = result["lessons"]
    assert (lesson["lesson"], lesson["path_type"]) == ("When calling count, pass `n` as integer.", "verified")
