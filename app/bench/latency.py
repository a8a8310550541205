"""Search latency at scale and write throughput.

Synthetic memories carry random unit vectors written straight through the repository:
embedding 100k texts would take far longer than the searches being measured. Searches go
through the service's HTTP layer; "without embedding" swaps in a provider that returns a
ready vector, so the two figures differ by the query embedding alone.

A search is timed until the last byte of its response is sent, what an HTTP client waits
for. The in-process transport returns only once the request's background work is done too
(counting the hits as accessed, after the answer): that figure is reported beside it.
"""

import random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient
from sqlalchemy import text
from tqdm import tqdm

from app.maintenance.service import retune_vector_index
from app.memories import repository

INSERT_BATCH = 2_000
# Synthetic text follows Zipf's law over a large vocabulary, as natural text does: a handful
# of common words, a long tail of rare ones (names, places, numbers).
VOCABULARY_SIZE = 20_000
ZIPF_EXPONENT = 1.1
_SYLLABLES = ("ka", "lo", "mi", "ren", "to", "sa", "vi", "dor", "an", "el", "qu", "bri", "zo", "ne", "fa", "tum")


@dataclass(frozen=True)
class LatencyReport:
    memories: int
    import_rows_per_second: float | None  # None: the namespace was already there (`reuse`)
    search_ms_with_embedding: dict[str, float]
    search_ms_without_embedding: dict[str, float]
    # Without embedding, until the request's background work (the access count) is done.
    search_ms_without_embedding_and_after: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        return {
            "memories": self.memories,
            "import_rows_per_second": None if self.import_rows_per_second is None else round(self.import_rows_per_second, 1),
            "search_ms_with_embedding": self.search_ms_with_embedding,
            "search_ms_without_embedding": self.search_ms_without_embedding,
            "search_ms_without_embedding_and_after": self.search_ms_without_embedding_and_after,
        }


class LastByte:
    """The app, noting when each response's last byte leaves it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.sent_at = 0.0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def noting(message: dict[str, Any]) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                self.sent_at = time.perf_counter()

        await self.app(scope, receive, noting)


class ReadyVectors:
    """An embedding provider whose query vectors are already computed."""

    def __init__(self, real, vectors: list[np.ndarray]) -> None:
        self.name, self.dim = real.name, real.dim
        self._real = real
        self._vectors = iter(vectors)

    async def embed_passages(self, texts: list[str]) -> np.ndarray:
        return await self._real.embed_passages(texts)

    async def embed_query(self, text: str) -> np.ndarray:
        return next(self._vectors)


def _vocabulary() -> list[str]:
    rng = random.Random(0)
    words: dict[str, None] = {}
    while len(words) < VOCABULARY_SIZE:
        words["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


VOCABULARY = _vocabulary()
_ZIPF_WEIGHTS = [1 / rank**ZIPF_EXPONENT for rank in range(1, VOCABULARY_SIZE + 1)]


def _sentence(rng: random.Random) -> str:
    words = rng.choices(VOCABULARY, weights=_ZIPF_WEIGHTS, k=rng.randint(6, 14))
    return " ".join(words) + f" #{rng.randint(1, 10**6)}"


def _unit_vectors(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((count, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _rows(namespace: str, texts: list[str], vectors: np.ndarray, model: str, start: datetime) -> list[dict[str, Any]]:
    return [
        {
            "id": uuid.uuid4(),
            "namespace": namespace,
            "content": text,
            "memory_type": "semantic",
            "embedding": vector,
            "embedding_model": model,
            "created_at": start + timedelta(minutes=index),
            "updated_at": start + timedelta(minutes=index),
        }
        for index, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    ]


async def _import(app: FastAPI, namespace: str, count: int, seed: int) -> float:
    rng, np_rng = random.Random(seed), np.random.default_rng(seed)
    embedder = app.state.embedder
    start = datetime.now(timezone.utc) - timedelta(minutes=count)
    began = time.perf_counter()
    with tqdm(total=count, desc=f"import {count:,}", unit="mem") as progress:
        for offset in range(0, count, INSERT_BATCH):
            size = min(INSERT_BATCH, count - offset)
            texts = [_sentence(rng) for _ in range(size)]
            rows = _rows(namespace, texts, _unit_vectors(np_rng, size, embedder.dim), embedder.name, start + timedelta(minutes=offset))
            async with app.state.sessionmaker.begin() as session:
                await repository.insert_many(session, rows)
            progress.update(size)
    rate = count / (time.perf_counter() - began)
    await retune_vector_index(app.state.engine)
    # What an operator runs after a bulk import; otherwise autovacuum does it mid-measurement.
    async with app.state.engine.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")
        await connection.execute(text("VACUUM (ANALYZE) memories"))
    return rate


def percentiles(samples: list[float]) -> dict[str, float]:
    values = np.asarray(samples)
    return {name: round(float(np.percentile(values, q)), 2) for name, q in (("p50", 50), ("p95", 95), ("p99", 99))}


async def _timed_searches(app: FastAPI, namespace: str, queries: list[str], label: str) -> tuple[list[float], list[float]]:
    """Per search, ms until its response's last byte was sent and until the request was done."""
    sent, done = [], []
    timed = LastByte(app)
    async with AsyncClient(transport=ASGITransport(app=timed), base_url="http://bench", timeout=120) as client:
        for query in tqdm(queries, desc=label, unit="q"):
            began = time.perf_counter()
            response = await client.post("/v1/memories/search", json={"query": query, "namespace": namespace, "top_k": 10})
            done.append((time.perf_counter() - began) * 1000)
            sent.append((timed.sent_at - began) * 1000)
            response.raise_for_status()
    return sent, done


async def _held(app: FastAPI, namespace: str) -> int:
    async with app.state.sessions() as session:
        held = await session.scalar(text("SELECT count(*) FROM memories WHERE namespace = :namespace"), {"namespace": namespace})
    return int(held or 0)


async def run(
    app: FastAPI, *, memories: int, queries: int = 500, seed: int = 7, reuse: bool = False
) -> LatencyReport:
    """With `reuse` (a kept database), the namespace is named by its size and seed and imported
    only when the database does not hold it whole yet: importing 100k memories takes minutes,
    and comparing two versions of the search wants the same namespace."""
    namespace = f"bench:latency:{memories}:{seed}" if reuse else f"bench:latency:{memories}:{uuid.uuid4().hex[:8]}"
    held = await _held(app, namespace) if reuse else 0
    if held not in (0, memories):
        raise RuntimeError(f"{namespace} holds {held:,} of {memories:,} memories (an import cut short): delete the kept database")
    rate = None if held else await _import(app, namespace, memories, seed)
    rng = random.Random(seed + 1)
    # Distinct queries, so the search cache never answers.
    texts = [f"{_sentence(rng)} q{index}" for index in range(queries)]
    real = app.state.embedder
    with_embedding, _ = await _timed_searches(app, namespace, texts, f"search {memories:,} (with embedding)")
    app.state.embedder = ReadyVectors(real, list(_unit_vectors(np.random.default_rng(seed + 2), queries, real.dim)))
    try:
        texts_again = [f"{text} again" for text in texts]
        without_embedding, and_after = await _timed_searches(app, namespace, texts_again, f"search {memories:,} (ready vectors)")
    finally:
        app.state.embedder = real
    return LatencyReport(
        memories=memories,
        import_rows_per_second=rate,
        search_ms_with_embedding=percentiles(with_embedding),
        search_ms_without_embedding=percentiles(without_embedding),
        search_ms_without_embedding_and_after=percentiles(and_after),
    )


async def write_throughput(client: AsyncClient, *, count: int = 500, batch: int = 100, seed: int = 11) -> float:
    """Memories per second through `POST /v1/memories:batch`, embedding included."""
    rng = random.Random(seed)
    namespace = f"bench:writes:{uuid.uuid4().hex[:8]}"
    began = time.perf_counter()
    for offset in tqdm(range(0, count, batch), desc="batch writes", unit="batch"):
        items = [{"namespace": namespace, "content": _sentence(rng)} for _ in range(min(batch, count - offset))]
        response = await client.post("/v1/memories:batch", json={"items": items})
        response.raise_for_status()
    return count / (time.perf_counter() - began)
