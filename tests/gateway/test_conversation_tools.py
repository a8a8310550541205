"""The agent loop through the gateway: remember each turn, ask for a context before the next."""

from datetime import datetime, timedelta, timezone

import pytest
from mcp import Client

from tests.conversations.conftest import erase
from tests.gateway.conftest import gateway


@pytest.fixture
async def cleaned(engine, tag):
    yield
    await erase(engine, f"%{tag}%")  # the API fixture does not know the conversation tables


async def test_remember_a_turn_then_get_the_context_for_the_next(settings, api_url, tag, cleaned):
    namespace = f"user:{tag}"
    now = datetime.now(timezone.utc)
    turn = [
        {
            "id": "u1",
            "role": "user",
            "content": "I'm allergic to peanuts. Can you suggest a snack?",
            "at": (now - timedelta(minutes=2)).isoformat(),
        },
        {
            "id": "a1",
            "role": "assistant",
            "content": "How about apple slices with sunflower seed butter?",
            "at": (now - timedelta(minutes=1)).isoformat(),
        },
    ]
    async with gateway(settings, api_url) as mcp_url, Client(mcp_url) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"namespace", "messages", "extract"} <= tools["hindsight_remember_conversation"].input_schema[
            "properties"
        ].keys()
        assert {"namespace", "query", "budget_tokens"} <= tools["hindsight_context"].input_schema["properties"].keys()

        remembered = await client.call_tool(
            "hindsight_remember_conversation", {"session_id": "chat-1", "namespace": namespace, "messages": turn}
        )
        assert not remembered.is_error, remembered.content
        assert remembered.structured_content["stored"] == 2
        assert remembered.content[0].text.splitlines() == [
            "Remembered 2 new messages (0 already known, 0 refused).",
            f"- User is allergic to peanuts. (key={namespace}:user:allergy:peanuts)",
        ]
        again = await client.call_tool(
            "hindsight_remember_conversation", {"session_id": "chat-1", "namespace": namespace, "messages": turn}
        )
        # The same call again carries the same Idempotency-Key: the first answer, nothing stored twice.
        assert again.structured_content == remembered.structured_content
        more = [*turn, {"id": "u2", "role": "user", "content": "Thanks, I'll try that.", "at": now.isoformat()}]
        extended = await client.call_tool(
            "hindsight_remember_conversation", {"session_id": "chat-1", "namespace": namespace, "messages": more}
        )
        assert (extended.structured_content["stored"], extended.structured_content["already_stored"]) == (1, 2)

        context = await client.call_tool(
            "hindsight_context",
            {"session_id": "chat-1", "namespace": namespace, "query": "What snack can I eat?", "budget_tokens": "400"},
        )
        assert not context.is_error, context.content
        text = context.content[0].text
        assert text == context.structured_content["context"] and context.structured_content["tokens"] <= 400
        assert "## Working memory (this session)" in text and "I'm allergic to peanuts." in text
        assert "User is allergic to peanuts." in text
