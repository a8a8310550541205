import json
from functools import partial

import litellm
import pytest
from httpx import AsyncClient

from app.reflections.dependencies import get_reviewer
from app.reflections.reviewers import LLMReviewer, RuleReviewer

NS = "agent:a1"
ORDER_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "include_items": {"type": "boolean"}},
    "required": ["order_id"],
}


def tool_call(tool: str, args: dict, status: str = "ok", **fields) -> dict:
    return {"type": "tool_call", "tool": tool, "args": args, "status": status, **fields}


def query_order(order_id, status: str = "ok", **fields) -> dict:
    return tool_call("query_order", {"order_id": order_id}, status, input_schema=ORDER_SCHEMA, **fields)


async def post_events(client: AsyncClient, task_id: str, events: list[dict], task_end: dict | None = None, **fields) -> dict:
    body = {"namespace": NS, "task_id": task_id, "events": events, **fields}
    if task_end is not None:
        body["task_end"] = task_end
    response = await client.post("/v1/events", json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def write_lesson(client: AsyncClient, lesson: str, scope: str = "tool:payments", expect: int = 201, **fields) -> dict:
    response = await client.post("/v1/reflections", json={"namespace": NS, "lesson": lesson, "scope": scope, **fields})
    assert response.status_code == expect, response.text
    return response.json()


async def search_lessons(client: AsyncClient, query: str, **fields) -> dict:
    response = await client.post("/v1/reflections/search", json={"namespace": NS, "query": query, **fields})
    assert response.status_code == 200, response.text
    return response.json()


async def lesson(client: AsyncClient, lesson_id: str) -> dict:
    response = await client.get(f"/v1/reflections/{lesson_id}")
    assert response.status_code == 200, response.text
    return response.json()["lesson"]


class ScriptedReviewerLLM:
    """Stands in for the model: litellm itself runs, with `mock_response` set to the scripted answer."""

    def __init__(self) -> None:
        self.answer = json.dumps({"lessons": []})
        self.asked: list[dict] = []

    async def acompletion(self, real, *, messages, **kwargs):
        self.asked.append(json.loads(messages[-1]["content"]))
        return await real(messages=messages, mock_response=self.answer, **kwargs)


@pytest.fixture
def scripted_reviewer(client: AsyncClient, monkeypatch) -> ScriptedReviewerLLM:
    script = ScriptedReviewerLLM()
    monkeypatch.setattr(litellm, "acompletion", partial(script.acompletion, litellm.acompletion))
    reviewer = LLMReviewer(model="openai/scripted", timeout_seconds=2, retries=1, fallback=RuleReviewer(client._transport.app.state.schema_checker))
    client._transport.app.dependency_overrides[get_reviewer] = lambda: reviewer
    return script
