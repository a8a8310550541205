"""LLM extraction through litellm's mock_response: keys checked, updates reuse keys, failures fall back to rules."""

import json
from functools import partial

import litellm
import pytest

from tests.conversations.conftest import NS, memory, remember, said


class ScriptedExtractor:
    """litellm runs for real, answering with `mock_response` set to the scripted answer."""

    def __init__(self) -> None:
        self.answer = json.dumps({"memories": []})
        self.calls: list[dict] = []

    async def acompletion(self, real, *, messages, **kwargs):
        self.calls.append({"messages": messages, **kwargs})
        return await real(messages=messages, mock_response=self.answer, **kwargs)


@pytest.fixture
def scripted(client, settings, monkeypatch) -> ScriptedExtractor:
    script = ScriptedExtractor()
    monkeypatch.setattr(litellm, "acompletion", partial(script.acompletion, litellm.acompletion))
    client._transport.app.state.settings = settings.model_copy(
        update={"llm_model": "openai/scripted", "llm_timeout_seconds": 5}
    )
    return script


async def test_llm_memories_go_through_the_write_path_and_an_update_reusing_a_key_supersedes(client, scripted):
    old = await client.post(
        "/v1/memories",
        json={
            "namespace": NS,
            "key": f"{NS}:user:diet",
            "content": "User is vegetarian.",
            "created_at": "2025-01-01T00:00:00Z",
        },
    )
    assert old.status_code == 201
    scripted.answer = json.dumps(
        {
            "memories": [
                {
                    "key": f"{NS}:user:diet",
                    "query": "what the user eats",
                    "value": "User is pescatarian now.",
                    "confidence": 0.9,
                    "memory_type": "semantic",
                    "message_id": "m1",
                },
                {"key": "diet", "value": "User eats fish.", "message_id": "m1"},
                {"key": "user:someone-else:user:diet", "value": "User eats fish.", "message_id": "m1"},
                {"key": f"{NS}:user:city", "value": "", "message_id": "m1"},
                {"key": f"{NS}:user:pet", "value": "User has a cat.", "message_id": "not-in-this-conversation"},
            ]
        }
    )
    out = await remember(
        client, [said("I've started eating fish again.", id="m1", at="2025-06-01T12:00:00Z")], extract="llm"
    )

    extraction = out["extraction"]
    assert extraction["extractor"] == "llm:openai/scripted"
    assert (extraction["dropped_malformed_keys"], extraction["dropped_invalid"]) == (2, 2)
    [extracted] = extraction["memories"]
    assert (extracted["key"], extracted["content"], extracted["status"]) == (
        f"{NS}:user:diet",
        "User is pescatarian now.",
        201,
    )
    assert [(r["trigger"], r["decision"], r["old_memory_id"]) for r in extracted["revisions"]] == [
        ("same_key", "CONFLICT", old.json()["memory"]["id"])
    ]
    new = await memory(client, extracted["memory_id"])
    assert new["query_hint"] == "what the user eats" and new["confidence"] == 0.9 and new["memory_type"] == "semantic"
    assert (new["source"]["message_id"], new["source"]["kind"], new["source"]["extractor"]) == (
        "m1",
        "user",
        "llm:openai/scripted",
    )
    assert (await memory(client, old.json()["memory"]["id"]))["status"] == "superseded"

    [call] = scripted.calls
    assert call["temperature"] == 0 and call["response_format"] == {"type": "json_object"}
    asked = json.loads(call["messages"][-1]["content"])
    assert asked["namespace"] == NS and f"{NS}:user:diet" in asked["known_keys"]
    assert [m["value"] for m in asked["known_memories"]] == ["User is vegetarian."]
    assert [m["message_id"] for m in asked["conversation"]] == ["m1"]


async def test_no_usable_answer_falls_back_to_rules_and_says_so(client, scripted):
    scripted.answer = "I cannot answer in JSON today."
    out = await remember(client, [said("I live in Porto.", id="p1")], extract="auto")
    extraction = out["extraction"]
    assert [m["content"] for m in extraction["memories"]] == ["User lives in Porto."]
    [note] = extraction["notes"]
    assert "no usable answer" in note and "rules extracted" in note
    assert len(scripted.calls) == 2  # one retry, then the rules
