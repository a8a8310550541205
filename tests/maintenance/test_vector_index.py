from app.maintenance.service import ideal_lists


def test_ideal_lists_is_about_the_square_root_of_rows():
    assert ideal_lists(0) == 1
    assert ideal_lists(10_000) == 100
    assert ideal_lists(100_000) == 316
    assert ideal_lists(4_000_000) == 4_000


async def test_retune_rebuilds_the_index_with_sqrt_rows_lists(live_client, live_namespace):
    """On committed data (REINDEX CONCURRENTLY waits out every open transaction, as a test's is)."""
    client = live_client
    items = [{"namespace": live_namespace, "content": f"fact number {i} about topic {i % 7}"} for i in range(30)]
    assert (await client.post("/v1/memories:batch", json={"items": items})).status_code == 200
    dry = (await client.post("/v1/maintenance/vector-index", params={"dry_run": True})).json()
    assert dry["rebuilt"] is False and dry["lists_after"] == dry["lists_before"]
    report = (await client.post("/v1/maintenance/vector-index")).json()
    assert report["rows"] >= 30
    assert report["lists_after"] == ideal_lists(report["rows"])
    assert report["rebuilt"] is (report["lists_before"] != report["lists_after"])
    again = (await client.post("/v1/maintenance/vector-index")).json()
    assert again["rebuilt"] is False and again["lists_before"] == report["lists_after"]
    # The rebuilt index still answers searches.
    result = (await client.post("/v1/memories/search", json={"query": "fact number 3", "namespace": live_namespace})).json()
    assert result["hits"]


async def test_the_rebuild_lets_writes_through_and_leaves_no_copy(live_client, live_namespace, engine):
    """A rebuild of the index runs beside writers: a write lands while it runs, and afterwards
    the index is valid and alone (no unfinished `_ccnew` copy)."""
    import asyncio

    from sqlalchemy import text

    from app.maintenance import repository

    items = [{"namespace": live_namespace, "content": f"rebuild fact {i}"} for i in range(40)]
    assert (await live_client.post("/v1/memories:batch", json={"items": items})).status_code == 200
    async with engine.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")
        lists = await repository.vector_index_lists(connection)
        rebuild = asyncio.create_task(repository.rebuild_vector_index(connection, lists=lists + 1))
        written = await live_client.post("/v1/memories", json={"namespace": live_namespace, "content": "Written mid-rebuild."})
        assert written.status_code == 201
        assert await rebuild is True
        assert await repository.vector_index_lists(connection) == lists + 1
        names = (await connection.execute(text("SELECT indexrelid::regclass::text, indisvalid FROM pg_index WHERE indrelid = 'memories'::regclass"))).all()
    assert ("ix_memories_embedding", True) in names
    assert not [name for name, _ in names if "ccnew" in name]
