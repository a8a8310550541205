"""A slow or stopped API never hangs the agent: the gateway answers degraded within its timeout."""

import asyncio
import time

import httpx
import pytest
from mcp import Client

from app.core.metrics import GATEWAY_REGISTRY
from app.gateway.api import Api, Call
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


async def test_a_dropped_connection_is_retried_once():
    attempts = []

    def drop_first(request: httpx.Request) -> httpx.Response:
        attempts.append(request.headers["x-session-id"])
        if len(attempts) == 1:
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
        return httpx.Response(200, json={"hits": []})

    api = Api("http://api", timeout_seconds=1, transport=httpx.MockTransport(drop_first))
    answer = await api.send(Call("POST", "/v1/memories/search", {"query": "q"}, "s-1", None))
    assert answer == {"hits": []}
    assert attempts == ["s-1", "s-1"]
    await api.aclose()
