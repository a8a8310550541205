from app.maintenance.service import ideal_lists


def test_ideal_lists_is_about_the_square_root_of_rows():
    assert ideal_lists(0) == 1
    assert ideal_lists(10_000) == 100
    assert ideal_lists(100_000) == 316
    assert ideal_lists(4_000_000) == 4_000


async def test_retune_rebuilds_the_index_with_sqrt_rows_lists(client):
    items = [{"namespace": "user:idx", "content": f"fact number {i} about topic {i % 7}"} for i in range(30)]
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
    result = (await client.post("/v1/memories/search", json={"query": "fact number 3", "namespace": "user:idx"})).json()
    assert result["hits"]
