"""The gateway passes the caller's bearer token through: the API's scopes hold over MCP too."""

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import SecretStr

from app.gateway.api import Api
from app.gateway.server import build_server
from tests.gateway.conftest import gateway


@pytest.fixture
def api_keys(tag: str) -> dict[str, list[str]]:
    return {"key-u1": [f"user:{tag}a"], "key-u2": [f"user:{tag}b"]}


def as_caller(mcp_url: str, key: str | None) -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return Client(streamable_http_client(mcp_url, http_client=httpx2.AsyncClient(headers=headers)))


async def test_a_key_for_one_user_cannot_read_another_through_the_gateway(settings, api_url, tag):
    u1, u2 = f"user:{tag}a", f"user:{tag}b"
    async with gateway(settings, api_url) as mcp_url:
        async with as_caller(mcp_url, "key-u2") as client:
            written = await client.call_tool(
                "hindsight_write", {"session_id": "s2", "namespace": u2, "content": "User u2 is allergic to peanuts."}
            )
            assert not written.is_error, written.content
        async with as_caller(mcp_url, "key-u1") as client:
            read = await client.call_tool(
                "hindsight_get", {"session_id": "s1", "memory_id": written.structured_content["memory"]["id"]}
            )
            search = await client.call_tool("hindsight_search", {"session_id": "s1", "namespace": u2, "query": "allergy"})
            own = await client.call_tool("hindsight_search", {"session_id": "s1", "namespace": u1, "query": "allergy"})
        async with as_caller(mcp_url, None) as client:
            anonymous = await client.call_tool("hindsight_search", {"session_id": "s0", "namespace": u1, "query": "x"})

    for refused in (read, search):
        assert refused.is_error
        assert refused.structured_content["type"] == "/problems/forbidden"
        assert refused.content[0].text.startswith("Forbidden: ")
        assert "may not touch" in refused.content[0].text and u2 not in refused.content[0].text
    assert not own.is_error and own.structured_content["hits"] == []
    assert anonymous.is_error and anonymous.content[0].text.startswith("Unauthorized: ")


async def test_the_configured_key_serves_clients_without_a_header(settings, api_url, tag):
    """stdio clients cannot send headers: the gateway's own key (HINDSIGHT_GATEWAY_API_KEY) stands in."""
    api = Api(api_url, timeout_seconds=5)
    keyed = settings.model_copy(update={"gateway_api_key": SecretStr("key-u1")})
    try:
        async with Client(build_server(keyed, api)) as client:
            allowed = await client.call_tool(
                "hindsight_search", {"session_id": "s1", "namespace": f"user:{tag}a", "query": "x"}
            )
            refused = await client.call_tool(
                "hindsight_search", {"session_id": "s1", "namespace": f"user:{tag}b", "query": "x"}
            )
    finally:
        await api.aclose()
    assert not allowed.is_error
    assert refused.is_error and refused.structured_content["type"] == "/problems/forbidden"
