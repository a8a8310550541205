import json
from collections.abc import Callable
from functools import partial

import litellm
import pytest
from httpx import AsyncClient

from app.revisions.judges import LLMJudge, RulesJudge

NS = "user:rev"


class ScriptedLLM:
    """Stands in for the model: litellm itself runs, with `mock_response` set to what the
    test scripted (a decision per candidate, raw text, or a timeout)."""

    def __init__(self) -> None:
        self.decide: Callable[[dict], list[dict]] = lambda asked: []
        self.raw: str | None = None
        self.timeout = False
        self.calls: list[dict] = []

    async def acompletion(self, real, *, messages, **kwargs):
        asked = json.loads(messages[-1]["content"])
        self.calls.append(asked)
        if self.timeout:
            return await real(messages=messages, mock_timeout=True, **kwargs)
        answer = self.raw if self.raw is not None else json.dumps({"judgements": self.decide(asked)})
        return await real(messages=messages, mock_response=answer, **kwargs)


@pytest.fixture
def scripted_llm(client, monkeypatch) -> ScriptedLLM:
    script = ScriptedLLM()
    monkeypatch.setattr(litellm, "acompletion", partial(script.acompletion, litellm.acompletion))
    app = client._transport.app
    app.state.judge = LLMJudge(model="openai/scripted", timeout_seconds=2, retries=1, fallback=RulesJudge())
    return script


def every_candidate(decision: str, confidence: float = 0.9, merged: str | None = None) -> Callable[[dict], list[dict]]:
    return lambda asked: [
        {"candidate": old["candidate"], "decision": decision, "confidence": confidence, "reason": f"scripted {decision}",
         "merged_content": merged}
        for old in asked["old"]
    ]


async def write(client: AsyncClient, content: str, **fields) -> dict:
    response = await client.post("/v1/memories", json={"namespace": NS, "content": content, **fields})
    assert response.status_code in (200, 201), response.text
    return response.json()


async def memory(client: AsyncClient, memory_id: str) -> dict:
    response = await client.get(f"/v1/memories/{memory_id}")
    assert response.status_code == 200
    return response.json()
