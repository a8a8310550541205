"""The optional reranker through litellm's rerank API, against a local server speaking Cohere's
rerank protocol (no network): it reorders the capped shortlist, and a slow or failing reranker
leaves today's order."""

import asyncio
import socket
import threading
from collections.abc import Iterator

import pytest
import uvicorn
from fastapi import FastAPI, Request
from httpx import AsyncClient

from tests.recall.test_search import ids, search, write

NS = "user:rerank"
FACTS = [
    "User's favourite fruit is mango.",
    "User grows tomatoes and basil on the balcony.",
    "User dislikes bananas.",
    "User buys apples at the Saturday market.",
]


class Cohere:
    """A rerank server: scores documents in reverse order of arrival, or sleeps first."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.delay = 0.0
        self.app = FastAPI()

        @self.app.post("/v1/rerank")
        @self.app.post("/v2/rerank")
        async def rerank(request: Request) -> dict:
            body = await request.json()
            self.calls.append(body)
            await asyncio.sleep(self.delay)
            count = len(body["documents"])
            return {"id": "r1", "results": [{"index": i, "relevance_score": (i + 1) / count} for i in reversed(range(count))], "meta": {}}


@pytest.fixture(scope="module")
def cohere() -> Iterator[tuple[Cohere, str]]:
    server = Cohere()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    running = uvicorn.Server(uvicorn.Config(server.app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    while not running.started:
        threading.Event().wait(0.05)
    yield server, f"http://127.0.0.1:{port}"
    running.should_exit = True
    thread.join(timeout=5)


def configure(client: AsyncClient, **fields) -> None:
    app = client._transport.app  # the ASGI app under test
    app.state.settings = app.state.settings.model_copy(update=fields)


async def test_the_reranker_reorders_the_capped_shortlist_and_a_slow_one_changes_nothing(client: AsyncClient, cohere, monkeypatch):
    monkeypatch.setenv("COHERE_API_KEY", "local")  # read by litellm as for the real service
    server, base = cohere
    for fact in FACTS:
        await write(client, fact, namespace=NS, memory_type="episodic")
    query = "Which fruit does the user like?"
    plain = ids(await search(client, query, namespace=NS, top_k=4, record_access=False))
    assert not server.calls  # off by default

    configure(client, rerank_model="cohere/rerank-test", rerank_api_base=base, rerank_candidates=3, rerank_timeout_seconds=5)
    # Each search differs in its weights, so none is answered from the search cache.
    reranked = ids(await search(client, query, namespace=NS, top_k=4, record_access=False, weights={"access": 0.1}))
    [call] = server.calls
    assert call["query"] == query and len(call["documents"]) == 3  # capped
    assert reranked == [plain[2], plain[1], plain[0], plain[3]]

    server.delay = 1.0
    configure(client, rerank_timeout_seconds=0.2)
    kept = ids(await search(client, query, namespace=NS, top_k=4, record_access=False, weights={"access": 0.2}))
    assert kept == plain and len(server.calls) == 2
