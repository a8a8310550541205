"""The SDK's own MCP client against the gateway, with the real API and database behind it."""

import sys
import uuid
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from app.gateway.tools import SPECS
from tests.gateway.conftest import gateway

ROOT = Path(__file__).resolve().parents[2]


async def call(client: Client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, {"session_id": "s-e2e", **arguments})
    assert not result.is_error, result.content
    return result.structured_content


async def exercise(client: Client, namespace: str) -> None:
    tools = (await client.list_tools()).tools
    assert sorted(tool.name for tool in tools) == sorted(spec.name for spec in SPECS)
    for tool in tools:
        assert tool.name.startswith("hindsight_")
        assert "session_id" in tool.input_schema["required"]
        assert tool.description
    write_schema = next(tool for tool in tools if tool.name == "hindsight_write").input_schema
    assert {"namespace", "content", "key", "memory_type", "ttl_seconds"} <= write_schema["properties"].keys()

    tea = await call(client, "hindsight_write", namespace=namespace, key=f"{namespace}:drink", content="User prefers green tea.")
    coffee = await call(
        client, "hindsight_write", namespace=namespace, key=f"{namespace}:drink", content="User now drinks black coffee."
    )
    tea_id, coffee_id = tea["memory"]["id"], coffee["memory"]["id"]
    assert coffee["revisions"][0]["old_memory_id"] == tea_id

    result = await client.call_tool(
        "hindsight_search", {"session_id": "s-e2e", "namespace": namespace, "query": "what does the user drink?"}
    )
    assert [hit["memory"]["id"] for hit in result.structured_content["hits"]] == [coffee_id]
    assert "black coffee" in result.content[0].text

    history = await call(client, "hindsight_get", memory_id=tea_id)
    assert [version["status"] for version in history["versions"]] == ["active", "superseded"]
    assert [newer["id"] for newer in history["superseded_by"]] == [coffee_id]

    assert (await call(client, "hindsight_forget", memory_id=coffee_id))["forgotten"] is True
    assert (await call(client, "hindsight_get", memory_id=coffee_id))["memory"]["status"] == "deleted"
    after = await call(client, "hindsight_search", namespace=namespace, query="what does the user drink?")
    assert after["hits"] == []


async def test_streamable_http(settings, api_url, tag):
    async with gateway(settings, api_url) as mcp_url, Client(mcp_url) as client:
        await exercise(client, f"user:{tag}")


async def test_stdio(api_url, tag):
    process = StdioServerParameters(
        command=sys.executable,
        args=["-m", "app.gateway", "--transport", "stdio"],
        env={"HINDSIGHT_GATEWAY_API_URL": api_url, "HINDSIGHT_LOG_LEVEL": "WARNING"},
        cwd=ROOT,
    )
    async with Client(process) as client:
        await exercise(client, f"user:{tag}")


async def test_lesson_feedback_through_the_gateway(settings, api_url, tag):
    lesson = {"namespace": f"agent:{tag}", "lesson": "When calling query_order, pass order_id as a string.", "scope": "tool:query_order"}
    async with httpx.AsyncClient(base_url=api_url) as http:
        written = (await http.post("/v1/reflections", json={**lesson, "confidence": 0.5})).json()["lesson"]
    async with gateway(settings, api_url) as mcp_url, Client(mcp_url) as client:
        helped = await call(client, "hindsight_lesson_feedback", lesson_id=written["id"], useful=True)
        unknown = await client.call_tool(
            "hindsight_lesson_feedback", {"session_id": "s-e2e", "lesson_id": str(uuid.uuid4()), "useful": True}
        )
    assert helped["lesson"]["id"] == written["id"]
    assert helped["lesson"]["confidence"] == pytest.approx(written["confidence"] + settings.feedback_useful_step)
    assert unknown.is_error and unknown.structured_content["type"] == "/problems/not-found"
