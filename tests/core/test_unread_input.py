"""Every documented endpoint refuses what it does not read, and one thing has one name."""

import re
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from tests.maintenance.test_checkup import write

SOME_ID = str(uuid.uuid4())


async def operations(client) -> list[tuple[str, str]]:
    paths = (await client.get("/openapi.json")).json()["paths"]
    return [(method.upper(), re.sub(r"\{\w+\}", SOME_ID, path)) for path, item in paths.items() for method in item]


async def test_an_unknown_query_parameter_is_refused_by_name_everywhere(client):
    found = await operations(client)
    assert len(found) >= 25
    for method, path in found:
        response = await client.request(method, path, params={"dry_rn": "true"})
        assert response.status_code == 422, (method, path, response.text)
        problem = response.json()
        assert problem["type"] == "/problems/validation" and problem["detail"].startswith("query.dry_rn:"), problem


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/debug/recent"), ("DELETE", f"/v1/memories/{SOME_ID}"), ("POST", f"/v1/revisions/{SOME_ID}/rollback")],
)
async def test_a_body_where_none_is_read_is_refused(client, method, path):
    response = await client.request(method, path, json={"namespace": "user:u1"})
    assert response.status_code == 422
    assert response.json()["detail"] == "body: This endpoint takes no request body"


async def test_checkup_reads_dry_run_from_a_json_body(live_client, live_namespace):
    long_ago = (datetime.now(timezone.utc) - timedelta(days=2)).isoformat()
    expired = await write(live_client, live_namespace, "User is in the waiting room.", memory_type="working", created_at=long_ago)
    response = await live_client.post("/v1/maintenance/checkup", json={"dry_run": True})
    assert response.status_code == 200 and response.json()["dry_run"] is True
    assert response.json()["archived_expired"] >= 1  # counted, not archived
    assert (await live_client.get(f"/v1/memories/{expired['id']}")).json()["memory"]["status"] == "active"
    clash = await live_client.post("/v1/maintenance/checkup", params={"dry_run": "false"}, json={"dry_run": True})
    assert clash.status_code == 422 and clash.json()["detail"].startswith("query.dry_run:")
    unknown = await live_client.post("/v1/maintenance/checkup", json={"dry_rn": True})
    assert unknown.status_code == 422 and unknown.json()["detail"].startswith("body.dry_rn:")


async def test_listings_take_limit_and_still_read_the_former_n(client):
    for content in ("User likes tea.", "User likes jazz.", "User lives in Lyon."):
        await write(client, "user:limit", content)
    recent = await client.get("/debug/recent", params={"namespace": "user:limit", "limit": 2})
    assert [m["content"] for m in recent.json()["memories"]] == ["User lives in Lyon.", "User likes jazz."]
    assert len((await client.get("/debug/recent", params={"namespace": "user:limit", "n": 1})).json()["memories"]) == 1
    both = await client.get("/debug/recent", params={"namespace": "user:limit", "limit": 2, "n": 1})
    assert both.status_code == 422
    assert (await client.get("/debug/revisions", params={"limit": 1})).status_code == 200
