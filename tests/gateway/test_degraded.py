"""A slow or stopped API never hangs the agent: the gateway answers degraded within its timeout."""

import asyncio
import time

import httpx
import pytest
from mcp import Client

from app.core.metrics import GATEWAY_REGISTRY
from app.gateway.api import Api, ApiUnavailable, Call
from app.gateway.server import build_server
from tests.gateway.conftest import free_port, serving

SEARCH = {"session_id": "s-slow", "namespace": "user:u1", "query": "anything"}


async def slow_api(scope, receive, send):
    if scope["type"] == "http":
        await asyncio.sleep(30)


async def unavailable_api(scope, receive, send):
    """What the API answers while its database is down."""
    if scope["type"] == "http":
        body = b'{"type": "/problems/unavailable", "title": "Service unavailable", "status": 503, "detail": "retry"}'
        headers = [(b"content-type", b"application/problem+json"), (b"retry-after", b"1")]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def search_through_gateway(settings, api_url: str) -> tuple[float, object]:
    api = Api(api_url, timeout_seconds=0.5)
    try:
        async with Client(build_server(settings, api)) as client:
            started = time.monotonic()
            result = await client.call_tool("hindsight_search", SEARCH)
            return time.monotonic() - started, result
    finally:
        await api.aclose()


def degraded_searches() -> float:
    return GATEWAY_REGISTRY.get_sample_value("hindsight_gateway_degraded_calls_total", {"tool": "hindsight_search"}) or 0.0


@pytest.mark.parametrize("api_state", ["slow", "unavailable", "stopped"])
async def test_gateway_answers_degraded_within_the_timeout(settings, api_state):
    degraded_before = degraded_searches()
    if api_state in ("slow", "unavailable"):
        async with serving(slow_api if api_state == "slow" else unavailable_api) as url:
            took, result = await search_through_gateway(settings, url)
    else:
        took, result = await search_through_gateway(settings, f"http://127.0.0.1:{free_port()}")
    assert took < 1.5
    assert not result.is_error
    assert result.structured_content["degraded"] is True
    assert result.structured_content["hits"] == []
    assert "without memory" in result.content[0].text
    assert degraded_searches() == degraded_before + 1


async def test_the_gateway_serves_health_and_metrics_over_http_while_the_api_is_away(settings):
    degraded_before = degraded_searches()
    api = Api(f"http://127.0.0.1:{free_port()}", timeout_seconds=0.5)
    try:
        async with serving(build_server(settings, api).streamable_http_app(streamable_http_path="/mcp")) as url:
            async with Client(f"{url}/mcp") as client:
                await client.call_tool("hindsight_search", SEARCH)
            async with httpx.AsyncClient() as http:
                health = await http.get(f"{url}/healthz")
                response = await http.get(f"{url}/metrics")
    finally:
        await api.aclose()
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    assert response.status_code == 200
    assert f'hindsight_gateway_degraded_calls_total{{tool="hindsight_search"}} {degraded_before + 1}' in response.text
    assert "hindsight_searches_total" not in response.text  # the API's series are not the gateway's


def failing_first(error: Exception, attempts: list[httpx.Request]):
    def transport(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        if len(attempts) == 1:
            raise error
        return httpx.Response(200, json={"ok": True})

    return httpx.MockTransport(transport)


DROPPED = httpx.RemoteProtocolError("Server disconnected without sending a response.")


async def test_a_read_is_retried_once_on_a_dropped_connection():
    attempts: list[httpx.Request] = []
    api = Api("http://api", timeout_seconds=1, transport=failing_first(DROPPED, attempts))
    answer = await api.send(Call("POST", "/v1/memories/search", {"query": "q"}, "s-1", None, reads=True))
    assert answer == {"ok": True}
    assert [request.headers["x-session-id"] for request in attempts] == ["s-1", "s-1"]
    assert "idempotency-key" not in attempts[0].headers
    await api.aclose()


async def test_a_write_is_retried_with_the_same_idempotency_key():
    attempts: list[httpx.Request] = []
    api = Api("http://api", timeout_seconds=1, transport=failing_first(DROPPED, attempts))
    call = Call("POST", "/v1/events", {"namespace": "user:u1", "task_id": "t"}, "s-1", None, keyed=True)
    assert await api.send(call) == {"ok": True}
    keys = [request.headers["idempotency-key"] for request in attempts]
    assert len(keys) == 2 and keys[0] == keys[1]
    # The same call made again later (the agent, after a degraded answer) carries the same key;
    # another call does not.
    assert call.idempotency_key() == keys[0]
    other = Call("POST", "/v1/events", {"namespace": "user:u1", "task_id": "t2"}, "s-1", None, keyed=True)
    assert other.idempotency_key() != keys[0]
    assert Call("POST", "/v1/events", call.body, "s-2", None, keyed=True).idempotency_key() != keys[0]
    await api.aclose()


async def test_a_write_without_a_key_is_retried_only_when_nothing_was_sent():
    attempts: list[httpx.Request] = []
    api = Api("http://api", timeout_seconds=1, transport=failing_first(DROPPED, attempts))
    review = Call("POST", "/v1/review", {"namespace": "user:u1"}, "s-1", None)
    with pytest.raises(ApiUnavailable):  # the tool answers degraded
        await api.send(review)
    assert len(attempts) == 1
    attempts.clear()
    refused = httpx.ConnectError("Connection refused")
    api = Api("http://api", timeout_seconds=1, transport=failing_first(refused, attempts))
    assert await api.send(review) == {"ok": True} and len(attempts) == 2
    await api.aclose()
