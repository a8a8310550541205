"""Bulk work steps aside while a search is answered in the process (app/core/foreground.py):
a batch import between items, a periodic review between memories; never longer than the yield
time at each step, so searches cannot starve it."""

import asyncio
import time

from httpx import AsyncClient

from app.core import foreground

YIELD = 0.2


async def test_stepping_aside_waits_for_a_search_and_no_longer_than_the_limit() -> None:
    began = time.perf_counter()
    await foreground.step_aside(5.0)
    assert time.perf_counter() - began < 0.05  # nothing to wait for

    with foreground.user_waiting():
        began = time.perf_counter()
        await foreground.step_aside(YIELD)
        assert YIELD <= time.perf_counter() - began < YIELD + 0.5  # bounded while it runs

    async def answer_for(seconds: float) -> None:
        with foreground.user_waiting():
            await asyncio.sleep(seconds)

    search = asyncio.create_task(answer_for(0.3))
    await asyncio.sleep(0.01)
    began = time.perf_counter()
    await foreground.step_aside(5.0)
    assert 0.2 <= time.perf_counter() - began < 1.0  # until the search ended
    await search


class SeesTheSearch:
    """The service's embedder, noting whether a search was being answered while it embedded a query."""

    def __init__(self, real) -> None:
        self._real, self.name, self.dim = real, real.name, real.dim
        self.seen: list[bool] = []

    async def embed_passages(self, texts):
        return await self._real.embed_passages(texts)

    async def embed_query(self, text):
        self.seen.append(foreground.waiting())
        return await self._real.embed_query(text)


async def test_a_batch_steps_aside_at_each_item_while_a_search_is_answered(live_client: AsyncClient, live_namespace) -> None:
    state = live_client._transport.app.state
    state.settings = state.settings.model_copy(update={"embedding_yield_seconds": YIELD})
    items = {"items": [{"namespace": live_namespace, "content": f"Note {n} about the garden shed."} for n in range(3)]}

    assert (await live_client.post("/v1/memories:batch", json=items)).status_code == 200
    with foreground.user_waiting():
        began = time.perf_counter()
        again = {"items": [{**item, "content": item["content"].replace("shed", "fence")} for item in items["items"]]}
        assert (await live_client.post("/v1/memories:batch", json=again)).status_code == 200
        beside = time.perf_counter() - began
    assert beside >= 3 * YIELD, beside  # one step aside an item (three such items alone: well under 0.6 s)

    embedder = state.embedder = SeesTheSearch(state.embedder)
    response = await live_client.post("/v1/memories/search", json={"namespace": live_namespace, "query": "garden shed"})
    assert response.status_code == 200 and embedder.seen == [True]  # a search counts itself
    assert not foreground.waiting()


async def test_a_review_steps_aside_at_each_memory_while_a_search_is_answered(live_client: AsyncClient, live_namespace) -> None:
    state = live_client._transport.app.state
    items = {"items": [{"namespace": live_namespace, "content": f"The {pet} sleeps in the hallway."} for pet in ("cat", "dog", "parrot")]}
    assert (await live_client.post("/v1/memories:batch", json=items)).status_code == 200
    state.settings = state.settings.model_copy(update={"embedding_yield_seconds": YIELD})
    with foreground.user_waiting():
        began = time.perf_counter()
        response = await live_client.post("/v1/review", json={"namespace": live_namespace})
        beside = time.perf_counter() - began
    assert response.status_code == 200 and response.json()["checked"] == 3, response.text
    assert beside >= 3 * YIELD, beside


async def test_a_search_counts_from_its_arrival_a_batch_never(live_client: AsyncClient, live_namespace) -> None:
    """While a search's body is still coming in (before any handler runs) the process already
    counts it, so a batch pauses its next item; a batch request itself never counts."""
    app = live_client._transport.app

    async def waiting_while_the_body_comes(path: str, body: bytes) -> bool:
        arrived, sent = asyncio.Event(), []

        async def receive() -> dict:
            await arrived.wait()
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
            "headers": [(b"content-type", b"application/json"), (b"host", b"test")],
            "client": ("127.0.0.1", 1), "server": ("test", 80),
        }
        request = asyncio.create_task(app(scope, receive, send))
        await asyncio.sleep(0.05)
        counted = foreground.waiting()
        arrived.set()
        await request
        assert sent[0]["status"] in (200, 201), sent
        return counted

    search = f'{{"namespace": "{live_namespace}", "query": "garden shed"}}'.encode()
    batch = f'{{"items": [{{"namespace": "{live_namespace}", "content": "The shed roof leaks."}}]}}'.encode()
    assert await waiting_while_the_body_comes("/v1/memories/search", search)
    assert not await waiting_while_the_body_comes("/v1/memories:batch", batch)
    assert not foreground.waiting()
