"""The latency suite: a kept namespace is searched again, not imported again, and each search
is timed to the last byte of its response as well as to the end of the request's work after it."""

from datetime import datetime, timezone

import numpy as np
import pytest

from app.bench import latency
from app.memories import repository


async def _keep(app, namespace: str, count: int) -> None:
    rows = latency._rows(
        namespace,
        [f"kept memory {n}" for n in range(count)],
        latency._unit_vectors(np.random.default_rng(count), count, app.state.embedder.dim),
        app.state.embedder.name,
        datetime(2026, 1, 1, tzinfo=timezone.utc),
    )
    async with app.state.sessions() as session:
        await repository.insert_many(session, rows)


async def test_a_kept_namespace_is_searched_again_and_a_partial_one_is_refused(client):
    app = client._transport.app  # the ASGI app under test
    await _keep(app, "bench:latency:40:5", 40)
    report = await latency.run(app, memories=40, queries=3, seed=5, reuse=True)
    assert report.import_rows_per_second is None  # searched, not imported again
    sent, done = report.search_ms_without_embedding, report.search_ms_without_embedding_and_after
    assert 0 < sent["p50"] <= done["p50"] and sent["p99"] <= done["p99"]
    await _keep(app, "bench:latency:20:5", 10)  # an import cut short
    with pytest.raises(RuntimeError, match="cut short"):
        await latency.run(app, memories=20, queries=1, seed=5, reuse=True)
