"""What an LLM reads from every tool: a short text, structured content that matches the tool's
declared output schema (the SDK's client checks it), `field: message` lines for bad arguments,
and a server that says which version it is."""

from importlib.metadata import version

from mcp import Client

from tests.gateway.conftest import gateway
from tests.gateway.test_end_to_end import call


async def test_every_tool_answers_a_line_and_content_of_its_output_schema(settings, api_url, tag):
    namespace = f"user:{tag}"
    async with gateway(settings, api_url) as mcp_url, Client(mcp_url) as client:
        assert client.server_info.name == "hindsight" and client.server_info.version == version("hindsight")
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert all(tool.output_schema and tool.output_schema["type"] == "object" for tool in tools.values())
        assert "exactly one of `namespace` or `namespaces`" in tools["hindsight_search"].input_schema["description"]

        texts = {}

        async def run(tool: str, **arguments) -> dict:
            result = await client.call_tool(tool, {"session_id": "s-results", **arguments})
            assert not result.is_error, result.content
            texts[tool] = result.content[0].text
            return result.structured_content

        memory = (await run("hindsight_write", namespace=namespace, content="User's dog is called Rex."))["memory"]
        await run("hindsight_search", namespace=namespace, query="dog's name")
        await run("hindsight_get", memory_id=memory["id"])
        revised = await run(
            "hindsight_revise", memory_id=memory["id"], content="User's dog is called Max.", expected_version=memory["version"]
        )
        await run("hindsight_review", namespace=namespace)
        await run("hindsight_feedback", memory_id=memory["id"], useful=True)
        call_ = {"type": "tool_call", "tool": "send_email", "args": {"to": 5}, "status": "error", "error": "to must be a string",
                 "input_schema": {"type": "object", "properties": {"to": {"type": "string"}}}}
        events = await run("hindsight_record_events", namespace=namespace, task_id="t1", events=[call_], task_end={"status": "failure"})
        lesson_id = events["lessons"][0]["id"]
        await run("hindsight_lessons", namespace=namespace, query="send an email")
        await run("hindsight_lesson_feedback", lesson_id=lesson_id, useful=True)
        await run("hindsight_forget", memory_id=memory["id"])
        purged = await run("hindsight_purge", memory_id=memory["id"])
        message = {"id": "m1", "role": "user", "content": "I moved to Denver last week."}
        remembered = await run("hindsight_remember_conversation", namespace=namespace, messages=[message], extract="rules")
        context = await run("hindsight_context", namespace=namespace, query="Where does the user live?", budget_tokens=500)

    assert revised["memory"]["content"] == "User's dog is called Max."
    assert set(texts) == set(tools)
    for tool in ("hindsight_revise", "hindsight_review", "hindsight_feedback", "hindsight_forget",
                 "hindsight_record_events", "hindsight_lesson_feedback"):
        assert "\n" not in texts[tool] and not texts[tool].startswith("{"), (tool, texts[tool])
    assert purged["erasure"]["memory_id"] == memory["id"] and texts["hindsight_purge"].startswith(f"Purged memory {memory['id']}")
    assert memory["id"] in texts["hindsight_forget"] and lesson_id in texts["hindsight_record_events"]
    assert texts["hindsight_revise"].startswith("Revised: User's dog is called Max.")
    assert remembered["stored"] == 1 and texts["hindsight_remember_conversation"].startswith("Remembered 1 new message (")
    assert "Denver" in texts["hindsight_context"] and texts["hindsight_context"] == context["context"]


async def test_bad_arguments_answer_field_and_message_lines(settings, api_url):
    async with gateway(settings, api_url) as mcp_url, Client(mcp_url) as client:
        result = await client.call_tool("hindsight_write", {"session_id": "s1", "content": "", "confidence": 2})
        both = await client.call_tool("hindsight_search", {"session_id": "s1", "query": "tea"})
    assert result.is_error
    lines = result.content[0].text.splitlines()
    assert "namespace: Field required" in lines
    assert any(line.startswith("content: ") for line in lines) and any(line.startswith("confidence: ") for line in lines)
    assert "pydantic" not in result.content[0].text and "Error executing tool" not in result.content[0].text
    assert result.structured_content["type"] == "/problems/validation"
    assert both.is_error and both.content[0].text == "arguments: give exactly one of namespace or namespaces"
