"""Purging a memory erases its text from every table: the scan reads every text and jsonb column
the database has (information_schema), so a table added later is covered without a change here."""

import json
import uuid
from datetime import datetime, timezone

from sqlalchemy import text


NS = "user:forget"
SECRET = "User keeps the spare key under the blue flowerpot by the Tarragona shed."
MERGED = SECRET + " Later the key moved to the mailbox."


async def places_holding(session, needle: str) -> list[str]:
    """Every table.column (text, varchar, jsonb, json, arrays, tsvector, bytea) whose value contains the needle."""
    columns = await session.execute(
        text(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "JOIN information_schema.tables USING (table_schema, table_name) "
            "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' "
            "AND data_type IN ('text', 'character varying', 'jsonb', 'json', 'ARRAY', 'tsvector', 'bytea')"
        )
    )
    found = []
    for table, column, data_type in columns.all():
        holds = (
            f"position(convert_to(:needle, 'UTF8') IN \"{column}\") > 0"
            if data_type == "bytea"
            else f'strpos("{column}"::text, :needle) > 0'
        )
        count = await session.scalar(text(f'SELECT count(*) FROM "{table}" WHERE {holds}'), {"needle": needle})
        if count:
            found.append(f"{table}.{column}")
    return found


async def write(client, content: str, headers: dict | None = None, **fields) -> dict:
    response = await client.post("/v1/memories", json={"namespace": NS, "content": content, **fields}, headers=headers)
    assert response.status_code in (200, 201), response.text
    return response.json()


async def search(client, query: str, **fields) -> list[dict]:
    response = await client.post("/v1/memories/search", json={"namespace": NS, "query": query, "top_k": 20, **fields})
    assert response.status_code == 200, response.text
    return response.json()["hits"]


def scripted(asked: dict) -> list[dict]:
    """REFINE the spare-key memory with the move; CONFLICT the merge with the end of it."""
    new = asked["new"]["content"]
    answers = []
    for old in asked["old"]:
        decision, merged = "UNRELATED", None
        if new.startswith("The spare key moved") and old["content"] == SECRET:
            decision, merged = "REFINE", MERGED
        elif new.startswith("User no longer") and old["content"] == MERGED:
            decision = "CONFLICT"
        answers.append(
            {
                "candidate": old["candidate"],
                "decision": decision,
                "confidence": 0.95,
                "reason": f"{decision}: {old['content']}",
                "merged_content": merged,
            }
        )
    return answers


async def test_a_purged_memory_leaves_no_text_in_any_table_and_search_no_longer_finds_it(
    client, db_session, scripted_llm
):
    scripted_llm.decide = scripted
    # Said in a conversation first (an episodic copy, a working item, a message row) ...
    said = await client.post(
        "/v1/conversations",
        json={
            "namespace": NS,
            "session_id": "s1",
            "messages": [{"id": "m1", "role": "user", "content": SECRET}],
            "extract": "none",
        },
    )
    assert said.status_code == 200, said.text
    # ... then written as a keyed fact, recalled, quoted in an event, merged, and the merge superseded.
    secret = (await write(client, SECRET, key=f"{NS}:spare_key", headers={"Idempotency-Key": "write-the-secret"}))[
        "memory"
    ]
    unrelated = (await write(client, "User's favourite colour is green."))["memory"]
    believed_at = datetime.now(timezone.utc).isoformat()
    assert secret["id"] in [hit["memory"]["id"] for hit in await search(client, "where is the spare key?")]
    events = await client.post(
        "/v1/events",
        json={"namespace": NS, "task_id": "t1", "events": [{"type": "observation", "text": f"Found: {SECRET}"}]},
    )
    assert events.status_code == 200, events.text
    refined = await write(client, "The spare key moved to the mailbox.", key=f"{NS}:spare_key_moved")
    merged_id = refined["memory"]["superseded_by"]
    assert merged_id is not None
    ended = await write(client, "User no longer keeps a spare key anywhere.")
    assert [r["decision"] for r in ended["revisions"] if r["old_memory_id"] == merged_id] == ["CONFLICT"]
    assert scripted_llm.calls, "the LLM path judged"
    vector = await db_session.scalar(text("SELECT embedding::text FROM memories WHERE id = :id"), {"id": secret["id"]})
    before = set(await places_holding(db_session, SECRET))
    assert before >= {
        "memories.content",
        "memory_versions.content",
        "memory_versions.snapshot",
        "revision_log.llm_prompt",
        "revision_log.merged_content",
        "revision_log.reason",
        "task_events.payload",
        "working_items.content",
        "idempotency_keys.body",
    }, before

    purged = await client.delete(f"/v1/memories/{secret['id']}", params={"purge": "true"})

    assert purged.status_code == 200, purged.text
    tombstone = purged.json()["erasure"]
    assert tombstone["kind"] == "memory" and tombstone["memory_id"] == secret["id"] and tombstone["namespace"] == NS
    assert merged_id in tombstone["also_purged"]
    # The other input of the merge holds again: what remains of it.
    assert tombstone["restored"] == [refined["memory"]["id"]]
    assert await places_holding(db_session, SECRET) == []
    assert await places_holding(db_session, json.dumps(SECRET)[1:-1]) == []
    assert await db_session.scalar(text("SELECT count(*) FROM memories WHERE embedding::text = :v"), {"v": vector}) == 0
    assert (await client.get(f"/v1/memories/{secret['id']}")).status_code == 404
    assert (await client.get(f"/v1/memories/{merged_id}")).status_code == 404
    found = [hit["memory"]["content"] for hit in await search(client, "where is the spare key?")]
    assert not any("flowerpot" in content for content in found)
    then = [
        hit["memory"]
        for hit in await search(client, "where is the spare key?", as_of=believed_at, statuses=["active", "superseded"])
    ]
    assert secret["id"] not in [memory["id"] for memory in then] and unrelated["id"] in [
        memory["id"] for memory in then
    ]
    # What stays: the rest of the namespace, and a tombstone without content.
    assert (await client.get(f"/v1/memories/{unrelated['id']}")).status_code == 200
    again = await client.delete(f"/v1/memories/{secret['id']}", params={"purge": "true"})
    assert again.status_code == 200 and again.json()["erasure"]["id"] == tombstone["id"]
    listed = (await client.get(f"/v1/namespaces/{NS}/erasures")).json()["erasures"]
    assert [erasure["memory_id"] for erasure in listed] == [secret["id"]]


async def test_purge_honours_the_key_scope_and_unknown_ids(client, settings, monkeypatch):
    secret = (await write(client, "User's locker is number 88 at the harbour gym."))["memory"]
    monkeypatch.setattr(settings, "api_keys", {"k-other": ["user:other"], "k-own": [NS]})
    refused = await client.delete(
        f"/v1/memories/{secret['id']}", params={"purge": "true"}, headers={"Authorization": "Bearer k-other"}
    )
    assert refused.status_code == 403 and refused.json()["type"] == "/problems/forbidden"
    unknown = await client.delete(
        f"/v1/memories/{uuid.uuid4()}", params={"purge": "true"}, headers={"Authorization": "Bearer k-own"}
    )
    assert unknown.status_code == 404 and unknown.json()["type"] == "/problems/not-found"
    bad = await client.delete(
        f"/v1/memories/{secret['id']}", params={"purge": "maybe"}, headers={"Authorization": "Bearer k-own"}
    )
    assert bad.status_code == 422
    done = await client.delete(
        f"/v1/memories/{secret['id']}", params={"purge": "true"}, headers={"Authorization": "Bearer k-own"}
    )
    assert done.status_code == 200 and done.json()["erasure"]["requested_by"].startswith("key:")


async def test_purging_a_superseded_and_revised_memory_keeps_what_replaced_it(client, db_session):
    first = "User's dentist is Dr. Okonkwo on Rue Verte."
    revised_text = "User's dentist is Dr. Okonkwo on Rue Verte, second floor."
    key = f"{NS}:dentist"
    memory = (await write(client, first, key=key))["memory"]
    revised = await client.post(
        f"/v1/memories/{memory['id']}/revise", json={"content": revised_text, "expected_version": memory["version"]}
    )
    assert revised.status_code == 200, revised.text
    newer = (await write(client, "User's dentist is now Dr. Haddad on Avenue Foch.", key=key))["memory"]
    assert newer["supersedes"] == memory["id"]
    assert await places_holding(db_session, first)  # the first wording lives on in the history

    purged = await client.delete(f"/v1/memories/{memory['id']}", params={"purge": "true"})

    assert purged.status_code == 200, purged.text
    assert purged.json()["erasure"]["restored"] == []  # an update is not undone by forgetting what it replaced
    assert await places_holding(db_session, first) == [] and await places_holding(db_session, revised_text) == []
    kept = (await client.get(f"/v1/memories/{newer['id']}")).json()
    assert kept["memory"]["status"] == "active" and kept["memory"]["supersedes"] is None and kept["supersedes"] == []
    hits = await search(client, "who is the user's dentist?")
    assert [hit["memory"]["id"] for hit in hits][:1] == [newer["id"]]


async def test_a_short_text_is_erased_where_it_is_the_memory_but_not_hunted_elsewhere(client, db_session, settings):
    kept_elsewhere = (await write(client, "User said ok to the plan for Tuesday."))["memory"]
    short = (await write(client, "Said ok."))["memory"]
    assert len("Said ok.") < settings.forget_quote_min_chars
    assert (await client.delete(f"/v1/memories/{short['id']}", params={"purge": "true"})).status_code == 200
    assert (
        (await client.get(f"/v1/memories/{kept_elsewhere['id']}"))
        .json()["memory"]["content"]
        .startswith("User said ok")
    )
    assert (
        await db_session.scalar(text("SELECT count(*) FROM memory_versions WHERE memory_id = :id"), {"id": short["id"]})
        == 0
    )


async def test_a_pending_judgement_about_a_purged_memory_is_dismissed_and_what_it_held_stands(client):
    key = f"{NS}:drink"
    said = (await write(client, "User drinks green tea every morning.", key=key, source={"kind": "user"}))["memory"]
    rumour = await write(client, "User drinks espresso every morning.", key=key, source={"kind": "web"})
    assert rumour["memory"]["status"] == "uncertain" and rumour["revisions"][0]["status"] == "pending"

    purged = await client.delete(f"/v1/memories/{said['id']}", params={"purge": "true"})

    assert purged.json()["erasure"]["restored"] == [rumour["memory"]["id"]]
    assert (await client.get(f"/v1/memories/{rumour['memory']['id']}")).json()["memory"]["status"] == "active"
    pending = (await client.get("/v1/revisions", params={"namespace": NS, "status": "pending"})).json()["revisions"]
    assert pending == []
    decided = await client.post(f"/v1/revisions/{rumour['revisions'][0]['id']}/apply")
    assert decided.status_code == 409, decided.text
