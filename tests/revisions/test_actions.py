"""Each judge decision's action, driven through the LLM path with scripted answers."""

import pytest
from sqlalchemy import event

from tests.revisions.conftest import NS, every_candidate, memory, write


async def test_conflict_supersedes_and_chains_both_ways(client, scripted_llm):
    scripted_llm.decide = every_candidate("CONFLICT")
    old = (await write(client, "User lives in Austin."))["memory"]
    response = await write(client, "User moved to Denver.")
    new = response["memory"]
    assert [(r["trigger"], r["decision"], r["status"], r["old_memory_id"]) for r in response["revisions"]] == [
        ("strong", "CONFLICT", "applied", old["id"])
    ]
    assert new["status"] == "active" and new["supersedes"] == old["id"]
    old_detail = await memory(client, old["id"])
    assert old_detail["memory"]["status"] == "superseded"
    assert [m["id"] for m in old_detail["superseded_by"]] == [new["id"]]
    assert [v["status"] for v in old_detail["versions"]] == ["active", "superseded"]
    edge = {"memory_id": new["id"], "revision_id": response["revisions"][0]["id"]}
    assert old_detail["relations"] == [{"type": "superseded_by", "direction": "incoming", **edge}]
    assert (await memory(client, new["id"]))["relations"] == [
        {"type": "supersedes", "direction": "outgoing", "memory_id": old["id"], "revision_id": edge["revision_id"]}
    ]


async def test_refine_writes_one_merged_memory_and_supersedes_both(client, scripted_llm):
    merged_text = "User goes to the gym three times a week: Monday, Wednesday and Friday."
    scripted_llm.decide = every_candidate("REFINE", merged=merged_text)
    old = (await write(client, "User goes to the gym three times a week."))["memory"]
    new = (await write(client, "Gym days are Monday, Wednesday and Friday."))["memory"]
    assert new["status"] == "superseded"
    merged_id = new["superseded_by"]
    merged = (await memory(client, merged_id))["memory"]
    assert merged["content"] == merged_text and merged["status"] == "active"
    assert (await memory(client, old["id"]))["memory"]["superseded_by"] == merged_id
    revisions = (await client.get("/v1/revisions", params={"namespace": NS})).json()["revisions"]
    assert revisions[0]["decision"] == "REFINE" and revisions[0]["merged_memory_id"] == merged_id
    # The merged memory is a revision's output: it judged nothing itself.
    assert len(revisions) == 1


async def test_coexist_links_both_and_search_returns_them_together(client, scripted_llm):
    scripted_llm.decide = every_candidate("COEXIST")
    first = (await write(client, "User has piano lessons on Saturday mornings."))["memory"]
    second = (await write(client, "User has swimming lessons on Saturday afternoons."))["memory"]
    assert (await memory(client, first["id"]))["memory"]["status"] == "active"
    [edge] = (await memory(client, first["id"]))["relations"]
    assert (edge["type"], edge["memory_id"], edge["direction"]) == ("coexists", second["id"], "incoming")
    result = (await client.post("/v1/memories/search", json={"query": "piano", "namespace": NS, "top_k": 1})).json()
    assert [hit["memory"]["id"] for hit in result["hits"]] == [first["id"], second["id"]]
    assert result["hits"][0]["related"] == [second["id"]]


async def test_unrelated_is_logged_as_a_false_trigger(client, scripted_llm):
    scripted_llm.decide = every_candidate("UNRELATED")
    old = (await write(client, "User's cat is called Miso."))["memory"]
    response = await write(client, "User's car is called Miso too.")
    assert [(r["decision"], r["status"]) for r in response["revisions"]] == [("UNRELATED", "logged")]
    assert (await memory(client, old["id"]))["memory"]["status"] == "active"
    assert response["memory"]["status"] == "active"


async def test_duplicate_keeps_one(client, scripted_llm):
    scripted_llm.decide = every_candidate("DUPLICATE")
    old = (await write(client, "I don't eat pork."))["memory"]
    response = await write(client, "No pork for me, please.")
    assert response["revisions"][0]["decision"] == "DUPLICATE"
    assert response["memory"]["status"] == "superseded" and response["memory"]["superseded_by"] == old["id"]
    active = [m for m in (await client.get("/debug/recent", params={"namespace": NS})).json()["memories"] if m["status"] == "active"]
    assert [m["id"] for m in active] == [old["id"]]


async def test_episodic_history_is_linked_never_superseded(client, scripted_llm):
    scripted_llm.decide = every_candidate("CONFLICT")
    # A later fact with the same key, and one the judge calls a conflict: the episode stays.
    episode = (await write(client, "On May 3 the user said they live in Austin.", memory_type="episodic", key=f"{NS}:home"))["memory"]
    scripted_llm.decide = every_candidate("CONFLICT")
    response = await write(client, "User lives in Denver.", key=f"{NS}:home")
    assert (await memory(client, episode["id"]))["memory"]["status"] == "active"
    assert response["revisions"][0]["decision"] == "COEXIST"
    assert "episodic" in (await client.get("/v1/revisions", params={"namespace": NS})).json()["revisions"][0]["reason"]


async def test_low_confidence_keeps_both_linked_until_applied(client, scripted_llm):
    scripted_llm.decide = every_candidate("CONFLICT", confidence=0.4)
    old = (await write(client, "User's office is on the 3rd floor."))["memory"]
    response = await write(client, "User's office moved to the 5th floor.")
    new = response["memory"]
    # Weak evidence changes nothing: both stay active, linked, and ranking decides.
    assert new["status"] == "active"
    assert response["revisions"][0]["status"] == "pending"
    [edge] = (await memory(client, old["id"]))["relations"]
    assert (edge["type"], edge["memory_id"]) == ("related", new["id"])
    found = (await client.post("/v1/memories/search", json={"query": "Which floor is the office on now?", "namespace": NS})).json()
    assert [hit["memory"]["id"] for hit in found["hits"]][:2] == [new["id"], old["id"]]
    pending = (await client.get("/v1/revisions", params={"status": "pending", "namespace": NS})).json()["revisions"]
    assert [r["id"] for r in pending] == [response["revisions"][0]["id"]]
    assert (await memory(client, old["id"]))["memory"]["status"] == "active"

    applied = await client.post(f"/v1/revisions/{pending[0]['id']}/apply")
    assert applied.status_code == 200 and applied.json()["status"] == "applied"
    assert (await memory(client, old["id"]))["memory"]["status"] == "superseded"
    assert (await memory(client, new["id"]))["memory"]["status"] == "active"
    again = await client.post(f"/v1/revisions/{pending[0]['id']}/dismiss")
    assert again.status_code == 409 and again.json()["type"] == "/problems/conflict"


async def test_dismissing_a_pending_judgement_keeps_both_and_drops_the_link(client, scripted_llm):
    scripted_llm.decide = every_candidate("CONFLICT", confidence=0.4)
    old = (await write(client, "User's office is on the 3rd floor."))["memory"]
    response = await write(client, "User's office moved to the 5th floor.")
    dismissed = await client.post(f"/v1/revisions/{response['revisions'][0]['id']}/dismiss")
    assert dismissed.json()["status"] == "dismissed"
    assert (await memory(client, old["id"]))["memory"]["status"] == "active"
    assert (await memory(client, response["memory"]["id"]))["memory"]["status"] == "active"
    assert (await memory(client, old["id"]))["relations"] == []


@pytest.mark.parametrize("unknown", ["apply", "dismiss", "rollback"])
async def test_unknown_revision_is_404(client, unknown):
    response = await client.post(f"/v1/revisions/00000000-0000-4000-8000-000000000000/{unknown}")
    assert response.status_code == 404 and response.json()["type"] == "/problems/not-found"


async def test_a_coexisting_partner_comes_back_even_when_no_route_found_it(client, scripted_llm, settings, monkeypatch):
    scripted_llm.decide = every_candidate("COEXIST")
    first = (await write(client, "User has piano lessons on Saturday mornings."))["memory"]
    second = (await write(client, "User has swimming lessons on Saturday afternoons."))["memory"]
    monkeypatch.setattr(settings, "search_route_candidates", 1)
    monkeypatch.setattr(settings, "search_recency_candidates", 0)
    result = (await client.post("/v1/memories/search", json={"query": "piano", "namespace": NS, "top_k": 1, "explain": True})).json()
    found_by_routes = {c["memory_id"] for rows in result["explain"]["routes"].values() for c in rows}
    assert second["id"] not in found_by_routes
    assert [hit["memory"]["id"] for hit in result["hits"]] == [first["id"], second["id"]]


async def test_a_merge_the_judge_wrote_is_refused_if_a_write_would_be(client, scripted_llm):
    scripted_llm.decide = every_candidate("REFINE", merged="Flight booked with card 4111 1111 1111 1111.")
    await write(client, "User flies to Tokyo on March 14.")
    new = (await write(client, "The Tokyo flight is ANA NH7."))["memory"]
    merged = (await memory(client, new["superseded_by"]))["memory"]
    assert "4111" not in merged["content"]
    assert "March 14" in merged["content"] and "NH7" in merged["content"]


async def test_a_writes_judgements_go_to_the_database_together(client, scripted_llm, engine):
    """Its log rows in one statement and its edges in another, however many candidates."""
    scripted_llm.decide = every_candidate("COEXIST")
    for lesson in ("piano lessons on Saturday mornings", "swimming lessons on Saturday afternoons", "chess lessons on Saturday evenings"):
        await write(client, f"User has {lesson}.")
    inserts: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO"):
            inserts.append(statement.split()[2])

    event.listen(engine.sync_engine, "before_cursor_execute", seen)
    try:
        response = await write(client, "User has violin lessons on Saturday at noon.")
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", seen)
    assert [r["decision"] for r in response["revisions"]] == ["COEXIST"] * 3
    assert (inserts.count("revision_log"), inserts.count("memory_relations")) == (1, 1)
    relations = (await memory(client, response["memory"]["id"]))["relations"]
    assert sorted((edge["type"], edge["direction"]) for edge in relations) == [("coexists", "outgoing")] * 3
