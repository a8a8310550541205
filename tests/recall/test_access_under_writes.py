"""A search counts its hits as accessed without waiting for a writer that holds one of them:
waiting deadlocked against writes superseding another hit (found by `make load`)."""

import asyncio

from sqlalchemy import text


async def test_a_search_skips_counting_a_hit_a_writer_holds_instead_of_waiting(live_client, live_namespace, engine):
    written = []
    for content in ("Grace keeps bees on the office roof.", "Grace sells the office honey at the market."):
        response = await live_client.post("/v1/memories", json={"namespace": live_namespace, "content": content})
        assert response.status_code == 201, response.text
        written.append(response.json()["memory"]["id"])
    held, free = written

    async with engine.connect() as writer:
        transaction = await writer.begin()
        await writer.execute(text("SELECT id FROM memories WHERE id = :id FOR UPDATE"), {"id": held})
        search = live_client.post("/v1/memories/search", json={"namespace": live_namespace, "query": "Grace bees honey"})
        response = await asyncio.wait_for(search, timeout=5)  # waiting would last the statement timeout (15 s)
        await transaction.rollback()

    assert response.status_code == 200, response.text
    assert {hit["memory"]["id"] for hit in response.json()["hits"]} == {held, free}
    counts = {}
    for memory_id in written:
        counts[memory_id] = (await live_client.get(f"/v1/memories/{memory_id}")).json()["memory"]["access_count"]
    assert counts == {held: 0, free: 1}
