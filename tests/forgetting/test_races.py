"""Rows can now vanish (a purge, an erasure): what read a memory before finds out with a 404, never a 500."""

import pytest
from sqlalchemy import text

from app.core.errors import NotFound
from app.memories import repository


async def test_feedback_on_a_memory_erased_after_it_was_read_is_a_404(client, db_session):
    written = await client.post("/v1/memories", json={"namespace": "user:race", "content": "User collects stamps."})
    memory = await repository.get(db_session, written.json()["memory"]["id"])
    await db_session.execute(text("DELETE FROM memories WHERE id = :id"), {"id": memory.id})
    with pytest.raises(NotFound):
        await repository.adjust_confidence(db_session, memory, useful=True, step=0.1, cap=0.95)


async def test_a_revise_that_read_a_memory_before_it_was_purged_is_a_404(client, db_session, monkeypatch):
    written = (
        await client.post("/v1/memories", json={"namespace": "user:race", "content": "User bakes sourdough."})
    ).json()
    real_lock = repository.lock_namespace

    async def purge_while_waiting(session, namespace):
        # The purge held the lock first: by the time the revise has it, the row is gone.
        await session.execute(text("DELETE FROM memories WHERE id = :id"), {"id": written["memory"]["id"]})
        await real_lock(session, namespace)

    monkeypatch.setattr(repository, "lock_namespace", purge_while_waiting)
    revised = await client.post(
        f"/v1/memories/{written['memory']['id']}/revise", json={"content": "User bakes rye.", "expected_version": 1}
    )
    assert revised.status_code == 404 and revised.json()["type"] == "/problems/not-found"


async def test_rolling_back_after_a_purge_never_points_at_the_purged_memory(client):
    key = "user:race:city"
    old = (
        await client.post("/v1/memories", json={"namespace": "user:race", "key": key, "content": "User lives in Bern."})
    ).json()
    new = (
        await client.post(
            "/v1/memories", json={"namespace": "user:race", "key": key, "content": "User lives in Basel."}
        )
    ).json()
    assert new["memory"]["supersedes"] == old["memory"]["id"]
    assert (await client.delete(f"/v1/memories/{old['memory']['id']}", params={"purge": "true"})).status_code == 200
    invalidated = await client.post(f"/v1/memories/{new['memory']['id']}/invalidate", json={"reason": "a test"})
    assert invalidated.status_code == 200, invalidated.text

    rolled = await client.post(f"/v1/revisions/{invalidated.json()['revision']['id']}/rollback")

    assert rolled.status_code == 200, rolled.text
    restored = (await client.get(f"/v1/memories/{new['memory']['id']}")).json()["memory"]
    assert restored["status"] == "active" and restored["supersedes"] is None


async def test_an_erasure_batch_leaves_no_history_linking_to_what_it_deleted(client, db_session):
    from app.forgetting import repository as forgetting
    from app.models import Memory

    key = "user:race2:city"
    for content in ("User lives in Graz.", "User lives in Linz.", "User lives in Wels."):
        assert (
            await client.post("/v1/memories", json={"namespace": "user:race2", "key": key, "content": content})
        ).status_code == 201
    deleted, _ = await forgetting.delete_batch(db_session, Memory, namespace="user:race2", limit=1)
    assert deleted == 1
    remaining = {
        str(i)
        for i in (await db_session.execute(text("SELECT id FROM memories WHERE namespace = 'user:race2'"))).scalars()
    }
    links = await db_session.execute(
        text(
            "SELECT v.snapshot ->> 'supersedes', v.snapshot ->> 'superseded_by' FROM memory_versions v "
            "JOIN memories m ON m.id = v.memory_id WHERE m.namespace = 'user:race2'"
        )
    )
    assert all(link is None or link in remaining for row in links for link in row)


async def test_rolling_back_a_change_to_a_conversation_message_keeps_its_importance(client):
    said = await client.post(
        "/v1/conversations",
        json={
            "namespace": "user:race3",
            "session_id": "s1",
            "extract": "none",
            "messages": [{"id": "m1", "role": "user", "content": "I think it will rain on Sunday."}],
        },
    )
    assert said.status_code == 200, said.text
    memory_id = said.json()["messages"][0]["memory_ids"][0]
    invalidated = await client.post(f"/v1/memories/{memory_id}/invalidate", json={"reason": "a test"})
    assert invalidated.status_code == 200, invalidated.text
    rolled = await client.post(f"/v1/revisions/{invalidated.json()['revision']['id']}/rollback")
    assert rolled.status_code == 200, rolled.text
    assert (await client.get(f"/v1/memories/{memory_id}")).json()["memory"]["importance"] == 0.5
