"""A search counts its hits as accessed one short transaction at a time: it never holds one hit
while waiting for another, so a writer holding one of them is neither deadlocked nor left
uncounted (one statement over all hits deadlocked under `make load`)."""

import asyncio

from sqlalchemy import text

LOCK = text("SELECT id FROM memories WHERE id = :id FOR UPDATE")


async def test_counting_waits_for_a_writer_without_holding_the_other_hits(live_client, live_namespace, engine):
    written = []
    for content in ("Grace keeps bees on the office roof.", "Grace sells the office honey at the market."):
        response = await live_client.post("/v1/memories", json={"namespace": live_namespace, "content": content})
        assert response.status_code == 201, response.text
        written.append(response.json()["memory"]["id"])

    async with engine.connect() as writer:
        transaction = await writer.begin()
        await writer.execute(LOCK, {"id": written[0]})
        search = asyncio.create_task(
            live_client.post("/v1/memories/search", json={"namespace": live_namespace, "query": "Grace bees honey"})
        )
        await asyncio.sleep(1.0)  # the search answers, and its counting reaches the held hit
        # The writer now wants the other hit too: a counter holding it would deadlock with us.
        await asyncio.wait_for(writer.execute(LOCK, {"id": written[1]}), timeout=5)
        await transaction.rollback()
    response = await asyncio.wait_for(search, timeout=5)

    assert response.status_code == 200, response.text
    assert {hit["memory"]["id"] for hit in response.json()["hits"]} == set(written)
    counts = [(await live_client.get(f"/v1/memories/{memory_id}")).json()["memory"]["access_count"] for memory_id in written]
    assert counts == [1, 1]
