"""Hostile input against the real service process (uvicorn, its own PostgreSQL): what only a
running server shows. The event loop must stay free while a client's JSON Schema is checked
(/healthz answers within 0.5 s throughout), any input_schema gets a 2xx or 4xx in bounded time,
and connections that stall in their headers or idle after a response are closed."""

import json
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from app.bench.live import LiveService, live_service
from tests.reflections.test_hostile_schemas import Listener

HEADER_TIMEOUT_SECONDS = 1
KEEP_ALIVE_SECONDS = 1
SCHEMA_CHECK_SECONDS = 1
HEALTHY_SECONDS = 0.5
NS = "agent:live-hardening"


@pytest.fixture(scope="module")
def live() -> Iterator[LiveService]:
    env = {
        "HINDSIGHT_HTTP_HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT_SECONDS),
        "HINDSIGHT_HTTP_KEEP_ALIVE_SECONDS": str(KEEP_ALIVE_SECONDS),
        "HINDSIGHT_SCHEMA_CHECK_TIMEOUT_SECONDS": str(SCHEMA_CHECK_SECONDS),
    }
    with live_service(env) as service:
        yield service
    log = service.log_path.read_text()
    assert "unhandled error" not in log, log[-3_000:]


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


def _event(schema: Any, args: Any) -> dict:
    return {
        "namespace": NS,
        "task_id": f"t-{uuid.uuid4().hex[:10]}",
        "events": [
            {"type": "tool_call", "tool": "probe", "args": args, "status": "error", "error": "refused", "input_schema": schema}
        ],
        "task_end": {"status": "failure"},
    }


def _post(base_url: str, body: dict) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    response = httpx.post(f"{base_url}/v1/events", json=body, timeout=30)
    return response, time.perf_counter() - started


def _healthz_during(base_url: str, work: list[Callable[[], Any]], at_most: float = 20) -> tuple[list[Any], list[float]]:
    """Run the work concurrently and time /healthz over and over until all of it is done
    (at least once, at most `at_most` seconds); a /healthz that did not answer counts as slow."""
    latencies: list[float] = []
    with ThreadPoolExecutor(len(work)) as pool, httpx.Client(base_url=base_url, timeout=2 * HEALTHY_SECONDS) as http:
        futures = [pool.submit(each) for each in work]
        deadline = time.monotonic() + at_most
        while (not latencies or not all(future.done() for future in futures)) and time.monotonic() < deadline:
            started = time.perf_counter()
            try:
                answered = http.get("/healthz").status_code == 200
            except httpx.TimeoutException:
                answered = False
            latencies.append(time.perf_counter() - started if answered else float("inf"))
            time.sleep(0.05)
        return [future.result() for future in futures], latencies


def _reference_graph(depth: int) -> dict:
    """Each level refers to the next twice: a schema of `depth` lines that takes 2**depth steps."""
    levels = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]} for i in range(depth)}
    return {"$defs": {**levels, f"d{depth}": {"type": "string"}}, "$ref": "#/$defs/d0"}


def test_the_issues_pattern_never_stalls_the_event_loop(live):
    body = _event({"properties": {"a": {"pattern": "^(a+)+$"}}}, {"a": "a" * 40 + "!"})
    [(response, seconds)], latencies = _healthz_during(live.base_url, [lambda: _post(live.base_url, body)])
    assert max(latencies) < HEALTHY_SECONDS, latencies
    assert response.status_code == 200, response.text
    assert seconds < 5
    [lesson] = response.json()["lessons"]
    assert "(pattern: ^(a+)+$)" in lesson["lesson"]


def test_a_schema_that_runs_away_is_stopped_and_the_loop_stays_free(live):
    """A reference graph exponential to walk runs past the time or the memory limit (which comes
    first depends on the machine): its worker is stopped. Four at once (two workers) all answer,
    each within the wait for a worker plus the limit."""
    bodies = [_event(_reference_graph(40), {"a": "x"}) for _ in range(4)]
    results, latencies = _healthz_during(live.base_url, [lambda body=body: _post(live.base_url, body) for body in bodies])
    assert len(latencies) >= 3 and max(latencies) < HEALTHY_SECONDS, latencies
    for response, seconds in results:
        assert response.status_code == 200, response.text
        assert seconds < 2 * SCHEMA_CHECK_SECONDS + 3
        note = response.json()["review"]["note"]
        assert any(stop in note for stop in ("was stopped", "ran out of memory", "stayed busy")), note
    # The killed workers were replaced: the next schema is checked as usual.
    response, _ = _post(live.base_url, _event({"properties": {"n": {"type": "integer"}}}, {"n": "3"}))
    assert [lesson["lesson"] for lesson in response.json()["lessons"]] == ["When calling probe, pass `n` as integer."]


# ------------------------------------------------------------------ hostile schemas, generated

_ATOMS = st.sampled_from(["a", ".", "\\d", "[a-z]", "\\w", "(?=a)", "(?<!b)", "\\1", "\\p{L}", "(", "[", "\\"])


def _regex(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        children.map(lambda inner: f"({inner})"),
        st.tuples(children, st.sampled_from(["+", "*", "?", "{2,}", "{1,1000}", "{1000}{1000}"])).map("".join),
        st.tuples(children, children).map("|".join),
        st.tuples(children, children).map("".join),
    )


PATTERNS = st.one_of(
    st.sampled_from(["^(a+)+$", "^(a|a)*$", "^(a|aa)+$", "(.*a){20}", "^(([a-z])+.)+[A-Z]([a-z])+$", "(\\w+\\s?)*$"]),
    st.recursive(_ATOMS, _regex, max_leaves=8).map(lambda pattern: f"^{pattern}$"),
)


def _references(port: int, file_uri: str) -> st.SearchStrategy[dict]:
    targets = [
        f"http://127.0.0.1:{port}/x.json",
        f"https://127.0.0.1:{port}/x.json",
        file_uri,
        "file:///etc/hostname",
        "#",
        "#/$defs/missing",
        "urn:example:thing",
        "x.json",
        "#/properties/a",
    ]
    return st.sampled_from(targets).map(lambda target: {"$ref": target})


def _schemas(port: int, file_uri: str) -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        PATTERNS.map(lambda pattern: {"type": "string", "pattern": pattern}),
        PATTERNS.map(lambda pattern: {"patternProperties": {pattern: {}}, "additionalProperties": False}),
        _references(port, file_uri),
        st.integers(1_000, 20_000).map(lambda size: {"enum": list(range(size))}),
        st.just({"uniqueItems": True}),
        st.integers(5, 40).map(_reference_graph),
        st.sampled_from([{"type": "bogus"}, {"properties": []}, {"required": "a"}, {"minimum": "x"}, True, False, [], 7]),
    )
    nested = st.recursive(
        leaves,
        lambda inner: st.one_of(
            inner.map(lambda schema: {"items": schema}),
            inner.map(lambda schema: {"properties": {"a": schema}}),
            st.lists(inner, min_size=1, max_size=3).map(lambda schemas: {"anyOf": schemas}),
            st.lists(inner, min_size=1, max_size=3).map(lambda schemas: {"allOf": schemas}),
        ),
        max_leaves=6,
    )
    deep = st.integers(10, 80).map(lambda depth: json.loads('{"items":' * depth + "{}" + "}" * depth))
    return st.one_of(nested.map(lambda schema: {"properties": {"a": schema}}), deep)


ARGS = st.one_of(
    st.integers(5, 60).map(lambda n: {"a": "a" * n + "!"}),
    st.integers(100, 3_000).map(lambda n: {"a": [{"id": i % 50, "tags": [i]} for i in range(n)]}),
    st.just({"a": {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!": 1}}),
    st.just({}),
)


def test_hostile_input_schemas_get_an_answer_in_bounded_time(live, listener, tmp_path_factory):
    secret = Path(tmp_path_factory.mktemp("refs")) / "schema.json"
    secret.write_text('{"title": "LEAKED-FROM-FILE"}')

    @hypothesis_settings(
        max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(schema=_schemas(listener.port, secret.as_uri()), args=ARGS)
    def posted(schema: Any, args: Any) -> None:
        response, seconds = _post(live.base_url, _event(schema, args))
        assert response.status_code in (200, 422), response.text[:500]
        assert seconds < 2 * SCHEMA_CHECK_SECONDS + 5, (seconds, json.dumps(schema)[:300])
        assert "LEAKED" not in response.text

    posted()
    assert listener.connections == []


# ------------------------------------------------------------------ connection timeouts


def _address(live: LiveService) -> tuple[str, int]:
    host, port = live.base_url.removeprefix("http://").split(":")
    return host, int(port)


def _closed_within(connection: socket.socket, seconds: float) -> float:
    """Seconds until the server closed the connection (reading its answer, if any, on the way)."""
    started = time.monotonic()
    connection.settimeout(seconds)
    while connection.recv(65_536):
        pass
    return time.monotonic() - started


def test_partial_headers_do_not_hold_a_connection(live):
    with socket.create_connection(_address(live)) as connection:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: test\r\n")  # and never the blank line
        assert _closed_within(connection, HEADER_TIMEOUT_SECONDS + 5) < HEADER_TIMEOUT_SECONDS + 2


def test_headers_trickled_byte_by_byte_still_meet_the_deadline(live):
    with socket.create_connection(_address(live)) as connection:
        started = time.monotonic()
        try:
            for byte in b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 100:
                connection.sendall(bytes([byte]))
                time.sleep(0.1)
        except (BrokenPipeError, ConnectionResetError):
            pass
        else:
            pytest.fail("the server kept a trickling connection open for 12 s")
        assert time.monotonic() - started < HEADER_TIMEOUT_SECONDS + 2


def test_an_idle_keep_alive_connection_is_closed(live):
    with socket.create_connection(_address(live)) as connection:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        connection.settimeout(5)
        assert connection.recv(65_536).startswith(b"HTTP/1.1 200")
        assert _closed_within(connection, KEEP_ALIVE_SECONDS + 5) < KEEP_ALIVE_SECONDS + 2
