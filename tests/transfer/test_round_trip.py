"""Export then import reproduces a namespace: every row, field by field (statuses, chains,
versions, times, vectors, judge input and output, lessons, events)."""

import json
import re

from sqlalchemy import text

from tests.revisions.conftest import every_candidate

NS = "user:port"
TABLES = {
    "memories": "SELECT * FROM memories WHERE namespace = :ns ORDER BY id",
    "memory_versions": "SELECT v.memory_id, v.version, v.content, v.status, v.changed_by, v.snapshot, v.created_at "
    "FROM memory_versions v JOIN memories m ON m.id = v.memory_id WHERE m.namespace = :ns ORDER BY v.memory_id, v.version",
    "memory_relations": "SELECT r.from_memory_id, r.to_memory_id, r.type, r.revision_id, r.created_at FROM memory_relations r "
    "JOIN memories m ON m.id = r.from_memory_id WHERE m.namespace = :ns ORDER BY 1, 2, 3",
    "revision_log": "SELECT * FROM revision_log WHERE namespace = :ns ORDER BY id",
    "reflections": "SELECT * FROM reflections WHERE namespace = :ns ORDER BY id",
    "task_events": "SELECT e.namespace, e.task_id, e.seq, e.session_id, e.agent_role, e.domain, e.task_type, e.type, e.payload, "
    "e.payload_hash, e.at, e.created_at, p.full_text FROM task_events e LEFT JOIN event_payloads p ON p.hash = e.payload_hash "
    "WHERE e.namespace = :ns ORDER BY e.task_id, e.seq",
    "task_reviews": "SELECT * FROM task_reviews WHERE namespace = :ns ORDER BY id",
}


async def snapshot(session, namespace: str) -> dict[str, list[dict]]:
    """Every row of the namespace, every column (vectors and lexemes as text)."""
    found = {}
    for table, query in TABLES.items():
        result = await session.execute(text(query), {"ns": namespace})
        found[table] = [
            {
                name: (value if isinstance(value, (str, int, float, bool, dict, list, type(None))) else str(value))
                for name, value in row.items()
            }
            for row in result.mappings()
        ]
    return found


async def build(client, scripted_llm) -> None:
    scripted_llm.decide = every_candidate("REFINE", merged="User runs on Tuesdays and Thursdays at 7 am.")

    async def write(content, **fields):
        response = await client.post("/v1/memories", json={"namespace": NS, "content": content, **fields})
        assert response.status_code in (200, 201), response.text
        return response.json()["memory"]

    await write("User lives in Lyon.", key=f"{NS}:home", created_at="2026-01-05T10:00:00+00:00")
    moved = await write("User lives in Nantes.", key=f"{NS}:home")
    revised = await client.post(
        f"/v1/memories/{moved['id']}/revise",
        json={"content": "User lives in Nantes, near the river.", "expected_version": moved["version"]},
    )
    assert revised.status_code == 200, revised.text
    await write("User runs on Tuesdays.")
    await write("User runs at 7 am on Thursdays too.")
    wrong = await write("User's cat is called Mimi.", metadata={"from": "chat"}, source={"kind": "user"})
    assert (await client.post(f"/v1/memories/{wrong['id']}/invalidate", json={"reason": "a guess"})).status_code == 200
    failing = {
        "type": "tool_call",
        "tool": "send_email",
        "args": {"to": 5},
        "status": "error",
        "error": "to must be a string",
        "input_schema": {"type": "object", "properties": {"to": {"type": "string"}}},
        "result": "x" * 5_000,
    }
    events = await client.post(
        "/v1/events", json={"namespace": NS, "task_id": "t1", "events": [failing], "task_end": {"status": "failure"}}
    )
    assert events.status_code == 200 and events.json()["lessons"], events.text


async def export(client, namespace: str) -> list[dict]:
    response = await client.get(f"/v1/namespaces/{namespace}/export")
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


async def test_export_erase_import_reproduces_every_row_with_the_same_ids(client, db_session, scripted_llm):
    await build(client, scripted_llm)
    before = await snapshot(db_session, NS)
    assert {table: len(rows) > 0 for table, rows in before.items()} == {table: True for table in TABLES}
    assert {row["status"] for row in before["memories"]} >= {"active", "superseded", "invalidated"}
    lines = await export(client, NS)
    assert lines[0]["type"] == "header" and lines[0]["namespace"] == NS
    for table in ("task_reviews", "task_events", "reflections", "revision_log", "memories"):
        await db_session.execute(text(f"DELETE FROM {table} WHERE namespace = :ns"), {"ns": NS})
    body = "".join(json.dumps(line) + "\n" for line in lines)

    imported = await client.post(
        f"/v1/namespaces/{NS}/import", content=body, headers={"content-type": "application/x-ndjson"}
    )

    assert imported.status_code == 200, imported.text
    assert imported.json()["imported"]["memory"] == len(before["memories"])
    assert await snapshot(db_session, NS) == before
    again = await client.post(f"/v1/namespaces/{NS}/import", content=body)
    assert again.status_code == 409 and again.json()["type"] == "/problems/conflict"


def _canonical(snapshot: dict[str, list[dict]], namespace: str) -> dict[str, list[str]]:
    """Rows as JSON with ids and the namespace replaced by placeholders, in a stable order."""
    ids = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    return {
        table: sorted(
            ids.sub("<id>", json.dumps(row, sort_keys=True, default=str)).replace(namespace, "<ns>") for row in rows
        )
        for table, rows in snapshot.items()
    }


async def test_import_into_a_fresh_namespace_with_new_ids_copies_every_row(client, db_session, scripted_llm):
    await build(client, scripted_llm)
    lines = await export(client, NS)
    body = "".join(json.dumps(line) + "\n" for line in lines)
    imported = await client.post("/v1/namespaces/user:copy/import", params={"ids": "new"}, content=body)
    assert imported.status_code == 200, imported.text
    original, copy = await snapshot(db_session, NS), await snapshot(db_session, "user:copy")
    assert _canonical(copy, "user:copy") == _canonical(original, NS)
    assert not {row["id"] for row in original["memories"]} & {row["id"] for row in copy["memories"]}
    # Links point inside the copy: its chain is its own.
    copied = {row["id"] for row in copy["memories"]}
    assert all(row[link] in copied for row in copy["memories"] for link in ("supersedes", "superseded_by") if row[link])
    hits = (
        await client.post("/v1/memories/search", json={"namespace": "user:copy", "query": "where does the user live?"})
    ).json()["hits"]
    assert (
        hits[0]["memory"]["content"] == "User lives in Nantes, near the river."
        and hits[0]["memory"]["key"] == "user:copy:home"
    )


async def test_bad_imports_are_refused_whole_with_the_line(client, db_session):
    header = json.dumps({"type": "header", "format": "hindsight-namespace", "version": 1, "namespace": "user:x"})
    cases = {
        "not json\n": "line 1",
        header + '\n{"type": "memory", "row": {"id": "nope"}}\n': "line 2",
        header + '\n{"type": "spell", "row": {}}\n': "unknown record type",
        header
        + "\n"
        + json.dumps(
            {
                "type": "memory",
                "row": {
                    "id": "6d0a6ad4-8d5b-4f2e-9d8c-1a2b3c4d5e6f",
                    "namespace": "user:x",
                    "content": "card 4111 1111 1111 1111",
                    "memory_type": "semantic",
                    "status": "active",
                    "confidence": 1.0,
                    "importance": 0.5,
                    "version": 1,
                },
            }
        )
        + "\n": "sensitive",
        header
        + "\n"
        + json.dumps(
            {
                "type": "memory",
                "row": {
                    "id": "6d0a6ad4-8d5b-4f2e-9d8c-1a2b3c4d5e6f",
                    "namespace": "user:x",
                    "content": "fine",
                    "memory_type": "bogus",
                    "status": "active",
                    "confidence": 1.0,
                    "importance": 0.5,
                    "version": 1,
                },
            }
        )
        + "\n": "breaks",
        "": "body",
    }
    for body, expected in cases.items():
        response = await client.post("/v1/namespaces/user:x/import", content=body.encode())
        assert 400 <= response.status_code < 500, (body, response.text)
        assert expected in response.text, (body, response.text)
    assert await db_session.scalar(text("SELECT count(*) FROM memories WHERE namespace = 'user:x'")) == 0
    assert (await client.post("/v1/namespaces/user:x/import", content=b"\xff\xfe")).status_code == 422


async def test_crafted_vectors_and_nesting_are_refused_or_recomputed_never_a_500(client, db_session, embedder):
    header = json.dumps({"type": "header", "format": "hindsight-namespace", "version": 1, "namespace": "user:y"})
    row = {
        "id": "7d0a6ad4-8d5b-4f2e-9d8c-1a2b3c4d5e6f",
        "namespace": "user:y",
        "content": "User likes figs.",
        "memory_type": "semantic",
        "status": "active",
        "confidence": 1.0,
        "importance": 0.5,
        "version": 1,
        "embedding": [0.1, 0.2, 0.3],
        "embedding_model": embedder.name,
    }
    short = await client.post(
        "/v1/namespaces/user:y/import", content=f"{header}\n{json.dumps({'type': 'memory', 'row': row})}\n"
    )
    assert short.status_code == 200, short.text  # a vector of the wrong size is recomputed
    stored = await db_session.scalar(text("SELECT vector_dims(embedding) FROM memories WHERE namespace = 'user:y'"))
    assert stored == embedder.dim
    deep = "[" * 100_000 + "]" * 100_000
    nested = await client.post("/v1/namespaces/user:z/import", content=f"{header}\n{deep}\n")
    assert nested.status_code == 422
    link = {
        **row,
        "id": "8d0a6ad4-8d5b-4f2e-9d8c-1a2b3c4d5e6f",
        "namespace": "user:z",
        "supersedes": "9d0a6ad4-8d5b-4f2e-9d8c-1a2b3c4d5e6f",
    }
    header_z = header.replace("user:y", "user:z")
    dangling = await client.post(
        "/v1/namespaces/user:z/import", content=f"{header_z}\n{json.dumps({'type': 'memory', 'row': link})}\n"
    )
    assert dangling.status_code == 422 and "breaks" in dangling.text


async def test_export_and_import_honour_the_key_scope(client, settings, monkeypatch):
    monkeypatch.setattr(settings, "api_keys", {"k-port": [NS]})
    own = {"Authorization": "Bearer k-port"}
    assert (await client.get(f"/v1/namespaces/{NS}/export", headers=own)).status_code == 200
    assert (await client.get("/v1/namespaces/user:else/export", headers=own)).status_code == 403
    assert (await client.post("/v1/namespaces/user:else/import", content=b"x", headers=own)).status_code == 403
    assert (await client.get(f"/v1/namespaces/{NS}/export")).status_code == 401
