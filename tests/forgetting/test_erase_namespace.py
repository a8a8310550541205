"""Erasing a namespace: a job, in batches, with progress and an audit record; other namespaces untouched."""

import uuid

from httpx import ASGITransport, AsyncClient
from sqlalchemy import text

from tests.conftest import _app
from tests.forgetting.test_purge import places_holding


async def test_erasing_a_namespace_deletes_every_row_of_it_and_keeps_an_audit_record(settings, engine, embedder):
    tag = uuid.uuid4().hex[:10]
    namespace, other = f"user:erase{tag}", f"user:keep{tag}"
    app = _app(settings.model_copy(update={"forget_batch_size": 2}), engine, embedder)
    phrase = f"Erase-me phrase {tag} about the user's old flat in Porto."
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://test") as client:
        for n in range(5):
            written = await client.post(
                "/v1/memories",
                json={"namespace": namespace, "content": f"{phrase} Fact {n}."},
                headers={"Idempotency-Key": f"erase-{tag}-{n}"},
            )
            assert written.status_code == 201
        kept = await client.post(
            "/v1/memories", json={"namespace": other, "content": f"Kept {tag}: the user likes tea."}
        )
        said = await client.post(
            "/v1/conversations",
            json={
                "namespace": namespace,
                "session_id": "s1",
                "extract": "none",
                "messages": [{"id": "m1", "role": "user", "content": f"{phrase} Said once."}],
            },
        )
        assert said.status_code == 200, said.text
        await client.post(
            "/v1/events",
            json={"namespace": namespace, "task_id": "t1", "events": [{"type": "observation", "text": phrase}]},
        )
        started = await client.delete(f"/v1/namespaces/{namespace}")
        assert started.status_code == 202, started.text
        job = started.json()["job"]
        assert job["kind"] == "namespace.erase" and started.headers["location"] == f"/v1/jobs/{job['id']}"
        await app.state.jobs.wait(uuid.UUID(job["id"]))
        done = (await client.get(f"/v1/jobs/{job['id']}")).json()
        assert done["status"] == "succeeded", done
        counts = done["result"]["erasure"]["counts"]
        assert counts["memories"] == 6 and counts["conversation_messages"] == 1 and counts["task_events"] == 1
        assert counts["working_items"] == 1 and counts["working_sessions"] == 1 and counts["idempotency_keys"] == 5
        assert done["progress"]["done"] == done["progress"]["total"] >= 10
        audit = (await client.get(f"/v1/namespaces/{namespace}/erasures")).json()["erasures"]
        assert [(a["kind"], a["job_id"], a["counts"]) for a in audit] == [("namespace", job["id"], counts)]
        assert (await client.get(f"/v1/memories/{kept.json()['memory']['id']}")).status_code == 200
        bad = await client.delete("/v1/namespaces/not a namespace!")
        assert bad.status_code == 422
    async with engine.connect() as connection:
        assert await places_holding(connection, phrase) == []
        for table in (
            "memories",
            "revision_log",
            "task_events",
            "conversation_messages",
            "working_items",
            "working_sessions",
        ):
            left = await connection.scalar(
                text(f"SELECT count(*) FROM {table} WHERE namespace = :ns"), {"ns": namespace}
            )
            assert left == 0, table
    async with engine.begin() as connection:
        for table in ("erasures", "jobs", "memories", "namespace_state"):
            await connection.execute(
                text(f"DELETE FROM {table} WHERE namespace IN (:a, :b)"), {"a": namespace, "b": other}
            )


async def test_erasing_needs_the_namespace_in_the_key_scope(client, settings, monkeypatch):
    monkeypatch.setattr(settings, "api_keys", {"k-a": ["user:a"]})
    refused = await client.delete("/v1/namespaces/user:b", headers={"Authorization": "Bearer k-a"})
    assert refused.status_code == 403
    assert (await client.delete("/v1/namespaces/user:b")).status_code == 401
