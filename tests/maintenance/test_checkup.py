"""Lifecycle: default TTLs by type, and the checkup that archives (never deletes)."""

from datetime import datetime, timedelta, timezone

from sqlalchemy import text

from app.core.database import create_sessionmaker
from app.maintenance.service import checkup


async def write(http, namespace: str, content: str, **fields) -> dict:
    response = await http.post("/v1/memories", json={"namespace": namespace, "content": content, **fields})
    assert response.status_code == 201, response.text
    return response.json()["memory"]


async def test_working_memories_get_the_default_ttl_and_facts_none(client, settings):
    working = await write(client, "user:ttl", "User is on the checkout page right now.", memory_type="working")
    fact = await write(client, "user:ttl", "User's blood type is O negative.")
    created = datetime.fromisoformat(working["created_at"])
    assert datetime.fromisoformat(working["expires_at"]) - created == timedelta(seconds=settings.default_ttl_working_seconds)
    assert fact["expires_at"] is None
    explicit = await write(client, "user:ttl", "User is typing a reply.", memory_type="working", ttl_seconds=60)
    assert datetime.fromisoformat(explicit["expires_at"]) - datetime.fromisoformat(explicit["created_at"]) == timedelta(seconds=60)


async def test_checkup_archives_expired_and_long_superseded_and_dry_run_changes_nothing(
    live_client, live_namespace, engine, settings
):
    long_ago = (datetime.now(timezone.utc) - timedelta(days=2)).isoformat()
    expired = await write(live_client, live_namespace, "User is in the waiting room.", memory_type="working", created_at=long_ago)
    key = f"{live_namespace}:city"
    old = await write(live_client, live_namespace, "User lives in Austin.", key=key)
    new = await write(live_client, live_namespace, "User lives in Denver.", key=key)
    kept = await write(live_client, live_namespace, "User likes jazz.")
    async with engine.begin() as connection:  # the supersede happened long ago
        await connection.execute(
            text("UPDATE memories SET updated_at = now() - interval '40 days' WHERE id = :id"), {"id": old["id"]}
        )
    sessions = create_sessionmaker(engine)

    dry = await checkup(sessions, engine, settings=settings, dry_run=True)
    assert dry.dry_run and dry.archived_expired >= 1 and dry.archived_superseded >= 1
    assert dry.triggers["same_key"].judgements >= 1
    statuses = {m["id"]: m["status"] for m in (await live_client.get("/debug/recent", params={"namespace": live_namespace})).json()["memories"]}
    assert statuses == {expired["id"]: "active", old["id"]: "superseded", new["id"]: "active", kept["id"]: "active"}

    report = await checkup(sessions, engine, settings=settings.model_copy(update={"checkup_batch": 1}), dry_run=False)
    assert report.archived_expired >= 1 and report.archived_superseded >= 1
    statuses = {m["id"]: m["status"] for m in (await live_client.get("/debug/recent", params={"namespace": live_namespace})).json()["memories"]}
    assert statuses == {expired["id"]: "archived", old["id"]: "archived", new["id"]: "active", kept["id"]: "active"}
    history = (await live_client.get(f"/v1/memories/{old['id']}")).json()
    assert [v["status"] for v in history["versions"]] == ["active", "superseded", "archived"]
    assert history["versions"][-1]["changed_by"] == "checkup:superseded"
    again = await checkup(sessions, engine, settings=settings, dry_run=True)
    assert again.archived_expired == 0 and again.archived_superseded == 0


async def test_checkup_endpoint_reports(client):
    response = await client.post("/v1/maintenance/checkup", params={"dry_run": True})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["dry_run"] is True
    assert {"archived_expired", "archived_superseded", "triggers", "orphans", "embedding_mismatches", "vector_index"} <= set(body)
