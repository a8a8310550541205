"""/metrics in Prometheus text format, and request ids in responses and log lines. Counters
are shared by every test in the process, so tests assert how much a call moved them."""

import json
import logging

from httpx import AsyncClient
from prometheus_client import REGISTRY

from app.core.logging import JsonFormatter, RequestIdFilter
from tests.revisions.conftest import scripted_llm  # noqa: F401  (a fixture)

NS = "user:metrics"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def write(client: AsyncClient, content: str, **fields) -> dict:
    response = await client.post("/v1/memories", json={"namespace": NS, "content": content, **fields})
    assert response.status_code in (200, 201), response.text
    return response.json()


async def test_metrics_expose_every_series_in_prometheus_text(client: AsyncClient):
    await write(client, "User likes hiking.")
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    for series in (
        "hindsight_request_duration_seconds_bucket",
        "hindsight_memory_writes_total",
        "hindsight_embedding_duration_seconds_count",
        "hindsight_revision_queue_depth",
    ):
        assert series in response.text
    assert 'route="/v1/memories",status="201"' in response.text


async def test_writes_count_new_and_deduplicated_and_time_requests_by_route(client: AsyncClient):
    read = {"route": "/v1/memories/{memory_id}", "method": "GET", "status": "200"}
    new = sample("hindsight_memory_writes_total", outcome="new")
    duplicate = sample("hindsight_memory_writes_total", outcome="deduplicated")
    requests = sample("hindsight_request_duration_seconds_count", **read)
    embeddings = sample("hindsight_embedding_duration_seconds_count", kind="passages")
    created = await write(client, "User owns a red bicycle.")
    await write(client, "User owns a red bicycle.")
    await client.get(f"/v1/memories/{created['memory']['id']}")
    assert sample("hindsight_memory_writes_total", outcome="new") - new == 1
    assert sample("hindsight_memory_writes_total", outcome="deduplicated") - duplicate == 1
    assert sample("hindsight_request_duration_seconds_count", **read) - requests == 1
    assert sample("hindsight_embedding_duration_seconds_count", kind="passages") - embeddings == 2


async def test_a_search_counts_once_answered(client: AsyncClient):
    before, queries = sample("hindsight_searches_total"), sample("hindsight_embedding_duration_seconds_count", kind="query")
    response = await client.post("/v1/memories/search", json={"namespace": NS, "query": "bicycle"})
    assert response.status_code == 200, response.text
    refused = await client.post("/v1/memories/search", json={"namespace": NS})
    assert refused.status_code == 422
    assert sample("hindsight_searches_total") - before == 1
    assert sample("hindsight_embedding_duration_seconds_count", kind="query") - queries >= 1


async def test_revisions_count_by_trigger_and_decision(client: AsyncClient):
    before = sample("hindsight_revisions_total", trigger="same_key", decision="CONFLICT")
    await write(client, "User lives in Paris.", key=f"{NS}:city")
    await write(client, "User lives in Berlin.", key=f"{NS}:city")
    assert sample("hindsight_revisions_total", trigger="same_key", decision="CONFLICT") - before == 1


async def test_a_judge_fallback_is_counted(client: AsyncClient, scripted_llm):  # noqa: F811
    scripted_llm.raw = "not json"
    before = sample("hindsight_judge_fallbacks_total")
    await write(client, "User lives in Austin.")
    await write(client, "User lives in Austin, in a rented townhouse.")
    assert sample("hindsight_judge_fallbacks_total") - before >= 1


async def test_a_given_request_id_is_echoed_and_one_is_made_otherwise(client: AsyncClient):
    given = await client.get("/healthz", headers={"X-Request-ID": "req-123"})
    assert given.headers["X-Request-ID"] == "req-123"
    made = await client.get("/healthz")
    assert len(made.headers["X-Request-ID"]) == 32
    hostile = "x\" onclick=" * 20  # too long and not a plain token: replaced, never logged
    assert len((await client.get("/healthz", headers={"X-Request-ID": hostile})).headers["X-Request-ID"]) == 32


def test_json_log_lines_carry_the_request_id():
    record = logging.LogRecord("hindsight", logging.WARNING, __file__, 1, "hello %s", ("world",), None)
    RequestIdFilter().filter(record)
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "hello world" and line["level"] == "WARNING"
    assert "request_id" in line and line["request_id"] is None  # outside any request


async def test_made_up_http_methods_share_one_label(client: AsyncClient):
    """Anonymous clients choose the method: each new one must not become a new series."""
    before = len((await client.get("/metrics")).text)
    for index in range(200):
        response = await client.request(f"BREW{index}", "/healthz")
        assert response.status_code == 405
    text = (await client.get("/metrics")).text
    assert "BREW" not in text
    assert 'method="other",route="/healthz",status="405"' in text
    assert len(text) - before < 5_000  # one series (its buckets), not two hundred
