"""Triggers, chains, rollback, concurrency, storms, the LLM judge's fallbacks, as_of."""

import asyncio

from httpx import AsyncClient

from tests.revisions.conftest import NS, every_candidate, memory, write


async def revisions(client: AsyncClient, **params) -> list[dict]:
    return (await client.get("/v1/revisions", params={"namespace": NS, **params})).json()["revisions"]


async def test_same_key_supersedes_directly_without_a_judge(client, scripted_llm):
    old = (await write(client, "Batch size is 32.", key=f"{NS}:batch_size"))["memory"]
    response = await write(client, "Batch size is 64.", key=f"{NS}:batch_size")
    assert [(r["trigger"], r["decision"]) for r in response["revisions"]] == [("same_key", "CONFLICT")]
    assert scripted_llm.calls == []
    assert (await memory(client, old["id"]))["memory"]["superseded_by"] == response["memory"]["id"]


async def test_strong_trigger_sends_close_memories_to_the_judge_in_one_call(client, scripted_llm):
    scripted_llm.decide = every_candidate("COEXIST")
    await write(client, "User's favourite coffee is a flat white.")
    await write(client, "User drinks coffee every morning.")
    response = await write(client, "User's favourite coffee is an oat flat white.")
    assert scripted_llm.calls, "the judge was asked"
    last = scripted_llm.calls[-1]
    assert last["new"]["content"] == "User's favourite coffee is an oat flat white."
    assert len(last["old"]) >= 1
    assert {r["trigger"] for r in response["revisions"]} == {"strong"}


async def test_weak_trigger_reaches_below_the_strong_threshold(client, scripted_llm, settings, monkeypatch):
    monkeypatch.setattr(settings, "strong_trigger_threshold", 0.999)
    scripted_llm.decide = every_candidate("CONFLICT")
    old = (await write(client, "User takes the bus to work."))["memory"]
    plain = await write(client, "User takes the tram to the office.")
    assert plain["revisions"] == []
    cued = await write(client, "Actually, the user now cycles to work instead.")
    assert [(r["trigger"], r["old_memory_id"]) for r in cued["revisions"] if r["old_memory_id"] == old["id"]] == [
        ("weak", old["id"])
    ]


async def test_candidates_come_from_the_namespace_only(client, scripted_llm):
    scripted_llm.decide = every_candidate("CONFLICT")
    other = (await client.post("/v1/memories", json={"namespace": "user:other", "content": "User lives in Austin."})).json()
    response = await write(client, "User lives in Austin, Texas.")
    assert response["revisions"] == []
    assert (await memory(client, other["memory"]["id"]))["memory"]["status"] == "active"


async def test_periodic_review_judges_recent_memories_in_one_batch(client, scripted_llm, settings, monkeypatch):
    monkeypatch.setattr(settings, "strong_trigger_threshold", 0.999)  # nothing triggers at write time
    old = (await write(client, "User's dentist is Dr. Rivera.", created_at="2025-01-01T00:00:00+00:00"))["memory"]
    new = (await write(client, "User's dentist is Dr. Okafor.", created_at="2025-03-01T00:00:00+00:00"))["memory"]
    assert await revisions(client) == []
    monkeypatch.setattr(settings, "strong_trigger_threshold", 0.8)
    scripted_llm.decide = every_candidate("CONFLICT")
    response = await client.post("/v1/review", json={"namespace": NS})
    assert response.status_code == 200
    body = response.json()
    assert body["checked"] == 2
    assert [(r["trigger"], r["new_memory_id"], r["old_memory_id"]) for r in body["revisions"]] == [
        ("periodic", new["id"], old["id"])
    ]
    assert (await memory(client, old["id"]))["memory"]["status"] == "superseded"
    # A second review finds nothing new to judge.
    assert (await client.post("/v1/review", json={"namespace": NS})).json()["revisions"] == []


async def test_review_runs_by_itself_every_n_writes_after_the_write(client, scripted_llm, settings, monkeypatch):
    monkeypatch.setattr(settings, "review_every_writes", 3)
    monkeypatch.setattr(settings, "strong_trigger_threshold", 0.999)
    scripted_llm.decide = every_candidate("UNRELATED")
    await write(client, "User plays chess.")
    await write(client, "User plays chess online.")
    monkeypatch.setattr(settings, "strong_trigger_threshold", 0.8)
    third = await write(client, "User collects stamps.")
    # Never inside the client's write: the review is started once the third write committed.
    assert not any(r["trigger"] == "periodic" for r in third["revisions"])
    assert not any(r["trigger"] == "periodic" for r in await revisions(client))
    background = client._transport.app.state.background
    await background.drain()
    periodic = [r["id"] for r in await revisions(client) if r["trigger"] == "periodic"]
    assert periodic
    # The counter started again: the next two writes do not make another review due.
    await write(client, "User collects coins.")
    await write(client, "User collects shells.")
    await background.drain()
    assert [r["id"] for r in await revisions(client) if r["trigger"] == "periodic"] == periodic


async def test_chain_a_b_c_reads_both_ways(client, scripted_llm):
    scripted_llm.decide = every_candidate("CONFLICT")
    a = (await write(client, "Standup is at 9:30.", key=f"{NS}:standup"))["memory"]
    b = (await write(client, "Standup is at 10:00.", key=f"{NS}:standup"))["memory"]
    c = (await write(client, "Standup is at 9:15.", key=f"{NS}:standup"))["memory"]
    from_c = await memory(client, c["id"])
    assert [m["id"] for m in from_c["supersedes"]] == [b["id"], a["id"]]
    from_a = await memory(client, a["id"])
    assert [m["id"] for m in from_a["superseded_by"]] == [b["id"], c["id"]]
    from_b = await memory(client, b["id"])
    assert [m["id"] for m in from_b["supersedes"]] == [a["id"]]
    assert [m["id"] for m in from_b["superseded_by"]] == [c["id"]]


async def test_rollback_restores_every_memory_exactly(client, scripted_llm):
    merged_text = "User flies to Tokyo on March 14 on ANA NH7."
    scripted_llm.decide = every_candidate("REFINE", merged=merged_text)
    old = (await write(client, "User flies to Tokyo on March 14."))["memory"]
    before_old = await memory(client, old["id"])
    response = await write(client, "The Tokyo flight is ANA NH7.")
    new_id = response["memory"]["id"]
    merged_id = response["memory"]["superseded_by"]
    revision_id = response["revisions"][0]["id"]

    rolled = await client.post(f"/v1/revisions/{revision_id}/rollback")
    assert rolled.status_code == 200, rolled.text
    assert rolled.json()["revision"]["status"] == "rolled_back"
    assert {m["id"] for m in rolled.json()["memories"]} == {old["id"], new_id, merged_id}

    after_old = (await memory(client, old["id"]))["memory"]
    fields = ("content", "status", "supersedes", "superseded_by", "confidence", "importance", "key", "metadata", "memory_type")
    assert {f: after_old[f] for f in fields} == {f: before_old["memory"][f] for f in fields}
    after_new = (await memory(client, new_id))["memory"]
    assert (after_new["status"], after_new["superseded_by"]) == ("active", None)
    assert (await memory(client, merged_id))["memory"]["status"] == "deleted"
    assert (await memory(client, old["id"]))["relations"] == []
    again = await client.post(f"/v1/revisions/{revision_id}/rollback")
    assert again.status_code == 409


async def test_explicit_revise_and_its_rollback(client):
    created = (await write(client, "User's phone is 555-0100."))["memory"]
    revised = await client.post(
        f"/v1/memories/{created['id']}/revise", json={"content": "User's phone is 555-0199.", "expected_version": 1}
    )
    assert revised.status_code == 200, revised.text
    assert revised.json()["memory"]["content"] == "User's phone is 555-0199."
    assert revised.json()["memory"]["version"] == 2
    stale = await client.post(
        f"/v1/memories/{created['id']}/revise", json={"content": "User's phone is 555-0142.", "expected_version": 1}
    )
    assert stale.status_code == 409 and stale.json()["type"] == "/problems/version-conflict"
    await client.post(f"/v1/revisions/{revised.json()['revision']['id']}/rollback")
    restored = (await memory(client, created["id"]))["memory"]
    assert restored["content"] == "User's phone is 555-0100." and restored["version"] == 3
    found = (await client.post("/v1/memories/search", json={"query": "555-0100", "namespace": NS})).json()["hits"]
    assert found[0]["memory"]["id"] == created["id"]


async def test_concurrent_revisions_of_one_memory_lose_no_update(live_client, live_namespace):
    created = (await live_client.post("/v1/memories", json={"namespace": live_namespace, "content": "Rent is 1200."})).json()
    memory_id = created["memory"]["id"]
    attempts = [
        live_client.post(f"/v1/memories/{memory_id}/revise", json={"content": f"Rent is {amount}.", "expected_version": 1})
        for amount in (1300, 1400)
    ]
    responses = await asyncio.gather(*attempts)
    assert sorted(r.status_code for r in responses) == [200, 409]
    winner = next(r for r in responses if r.status_code == 200).json()["memory"]["content"]
    detail = (await live_client.get(f"/v1/memories/{memory_id}")).json()
    assert detail["memory"]["content"] == winner and detail["memory"]["version"] == 2
    assert [v["content"] for v in detail["versions"]] == ["Rent is 1200.", winner]


async def test_a_flood_of_near_identical_writes_causes_no_revision_storm(client, settings):
    base = "User prefers aisle seats on long flights"
    suffixes = ["", ".", "!", " please", " always", ".."] + [f" (note {i})" for i in range(10)]
    for suffix in suffixes:
        await write(client, base + suffix)
    logged = await revisions(client, limit=1000)
    # Each write is judged once against its few nearest memories, a judged pair never again,
    # a memory in cooldown not at all, and no revision output re-triggers: at most a few
    # revisions per write, where a storm would judge every pair again and again.
    assert len(logged) <= len(suffixes) * settings.strong_trigger_candidates
    judged_pairs = [(r["new_memory_id"], r["old_memory_id"]) for r in logged]
    assert len(judged_pairs) == len(set(judged_pairs))
    active = [m for m in (await client.get("/debug/recent", params={"namespace": NS, "n": 100})).json()["memories"] if m["status"] == "active"]
    assert len(active) < 16


async def test_llm_judge_with_malformed_json_falls_back_to_rules(client, scripted_llm):
    scripted_llm.raw = '{"judgements": [{"candidate": 0, "decision": "CONFLICT"'  # cut off
    await write(client, "User lives in Austin.")
    response = await write(client, "User lives in Austin, in a rented townhouse.")
    logged = (await client.get("/debug/revisions", params={"namespace": NS})).json()["revisions"]
    assert logged, response
    entry = logged[0]
    assert entry["judge"] == "rules"
    assert "llm:openai/scripted" in entry["note"] and "no usable answer" in entry["note"]
    assert entry["llm_response"] == scripted_llm.raw
    assert "User lives in Austin" in entry["llm_prompt"]
    assert len(scripted_llm.calls) == 2  # one retry, then the fallback


async def test_llm_judge_timeout_falls_back_to_rules(client, scripted_llm):
    scripted_llm.timeout = True
    await write(client, "User lives in Austin.")
    await write(client, "User lives in Austin, in a rented townhouse.")
    entry = (await client.get("/debug/revisions", params={"namespace": NS})).json()["revisions"][0]
    assert entry["judge"] == "rules" and "no usable answer" in entry["note"]


async def test_llm_answer_missing_a_candidate_falls_back(client, scripted_llm):
    scripted_llm.decide = lambda asked: []
    await write(client, "User lives in Austin.")
    await write(client, "User lives in Austin, in a rented townhouse.")
    entry = (await client.get("/debug/revisions", params={"namespace": NS})).json()["revisions"][0]
    assert entry["judge"] == "rules" and "expected 0.." in entry["note"]


async def test_llm_judgement_is_logged_with_prompt_and_response(client, scripted_llm):
    scripted_llm.decide = every_candidate("CONFLICT")
    await write(client, "User lives in Austin.")
    await write(client, "User moved to Denver.")
    entry = (await client.get("/debug/revisions", params={"namespace": NS})).json()["revisions"][0]
    assert entry["judge"] == "llm:openai/scripted"
    assert '"decision": "CONFLICT"' in entry["llm_response"]
    assert "User moved to Denver." in entry["llm_prompt"] and entry["note"] is None


async def test_as_of_answers_with_what_was_believed_then(client):
    await write(client, "User lives in Austin.", key=f"{NS}:city", created_at="2025-01-10T00:00:00+00:00")
    await write(client, "User lives in Denver.", key=f"{NS}:city", created_at="2025-04-01T00:00:00+00:00")

    async def believed(as_of: str | None) -> list[str]:
        body = {"query": "Which city does the user live in?", "namespace": NS, "top_k": 5}
        if as_of:
            body["as_of"] = as_of
        return [hit["memory"]["content"] for hit in (await client.post("/v1/memories/search", json=body)).json()["hits"]]

    assert await believed("2025-02-01T00:00:00+00:00") == ["User lives in Austin."]
    assert await believed("2025-05-01T00:00:00+00:00") == ["User lives in Denver."]
    assert await believed(None) == ["User lives in Denver."]
    assert await believed("2024-12-01T00:00:00+00:00") == []


async def test_as_of_hits_show_the_memory_as_it_stood_then(client):
    austin = (await write(client, "User lives in Austin.", key=f"{NS}:city", created_at="2025-01-10T00:00:00+00:00"))["memory"]
    revised = await client.post(
        f"/v1/memories/{austin['id']}/revise", json={"content": "User lives in Austin, Texas.", "expected_version": 1}
    )
    assert revised.status_code == 200, revised.text
    denver = (await write(client, "User lives in Denver.", key=f"{NS}:city"))["memory"]
    body = {"query": "Which city does the user live in?", "namespace": NS, "statuses": ["active", "superseded"]}

    then = (await client.post("/v1/memories/search", json={**body, "as_of": "2025-02-01T00:00:00+00:00"})).json()["hits"]
    assert [(hit["memory"]["content"], hit["memory"]["status"], hit["memory"]["version"]) for hit in then] == [
        ("User lives in Austin.", "active", 1)
    ]
    assert then[0]["superseded_by"] is None and then[0]["memory"]["superseded_by"] is None

    now = {hit["memory"]["id"]: hit for hit in (await client.post("/v1/memories/search", json=body)).json()["hits"]}
    assert now[austin["id"]]["memory"]["content"] == "User lives in Austin, Texas."
    assert now[austin["id"]]["superseded_by"] == denver["id"]


async def test_superseded_memories_come_back_only_on_request_with_their_replacement(client):
    old = (await write(client, "Standup is at 9:30.", key=f"{NS}:standup"))["memory"]
    new = (await write(client, "Standup is at 9:15.", key=f"{NS}:standup"))["memory"]
    body = {"query": "standup time", "namespace": NS, "top_k": 5}
    default = (await client.post("/v1/memories/search", json=body)).json()["hits"]
    assert [h["memory"]["id"] for h in default] == [new["id"]]
    both = (await client.post("/v1/memories/search", json={**body, "statuses": ["active", "superseded"]})).json()["hits"]
    flagged = {h["memory"]["id"]: h["superseded_by"] for h in both}
    assert flagged == {new["id"]: None, old["id"]: new["id"]}


async def test_a_memory_is_revised_at_most_once_per_cooldown(client, scripted_llm):
    scripted_llm.decide = every_candidate("DUPLICATE")
    kept = (await write(client, "I don't eat pork.", created_at="2025-03-01T12:00:00+00:00"))["memory"]
    first = await write(client, "No pork for me, please.", created_at="2025-03-01T12:01:00+00:00")
    assert [r["old_memory_id"] for r in first["revisions"]] == [kept["id"]]
    within = await write(client, "Please, no pork at all.", created_at="2025-03-01T12:05:00+00:00")
    assert within["revisions"] == [] and within["memory"]["status"] == "active"
    later = await write(client, "Pork is off my menu.", created_at="2025-03-01T12:30:00+00:00")
    assert kept["id"] in [r["old_memory_id"] for r in later["revisions"]]


async def test_rollback_is_refused_when_a_later_change_would_be_undone(client, scripted_llm):
    scripted_llm.decide = every_candidate("CONFLICT")
    a = (await write(client, "Standup is at 9:30.", key=f"{NS}:standup"))["memory"]
    first = await write(client, "Standup is at 10:00.", key=f"{NS}:standup")
    await write(client, "Standup is at 9:15.", key=f"{NS}:standup")
    refused = await client.post(f"/v1/revisions/{first['revisions'][0]['id']}/rollback")
    assert refused.status_code == 409 and refused.json()["type"] == "/problems/conflict"
    # The ids as clients know them, not Python's repr of a list of UUIDs.
    assert refused.json()["detail"].startswith(f"memories {first['memory']['id']} changed after")
    assert (await memory(client, a["id"]))["memory"]["status"] == "superseded"
    assert (await memory(client, first["memory"]["id"]))["memory"]["status"] == "superseded"


async def test_applying_a_stale_pending_judgement_is_refused(client, scripted_llm):
    scripted_llm.decide = every_candidate("CONFLICT", confidence=0.4)
    old = (await write(client, "User's office is on the 3rd floor."))["memory"]
    pending = (await write(client, "User's office moved to the 5th floor."))["revisions"][0]
    await client.delete(f"/v1/memories/{old['id']}")
    refused = await client.post(f"/v1/revisions/{pending['id']}/apply")
    assert refused.status_code == 409
    assert refused.json()["detail"].startswith(f"memories {old['id']} changed")
    assert (await client.get("/v1/revisions", params={"status": "pending", "namespace": NS})).json()["revisions"]


async def test_revise_validates_its_content(client):
    created = (await write(client, "User's phone is 555-0100."))["memory"]
    for content in ("", "   ", "card 4111 1111 1111 1111"):
        response = await client.post(f"/v1/memories/{created['id']}/revise", json={"content": content, "expected_version": 1})
        assert response.status_code == 422, content
    assert (await memory(client, created["id"]))["memory"]["version"] == 1
    missing = await client.post(
        "/v1/memories/00000000-0000-4000-8000-000000000000/revise", json={"content": "x", "expected_version": 1}
    )
    assert missing.status_code == 404
