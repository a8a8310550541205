"""A REFINE's merged memory takes its vector from the two memories when its text is theirs (the
new text kept whole, or both texts joined as the rules merge them): the model is not asked, and
a quick judge's merge never lets the namespace lock go to wait for it. Another text (an LLM
judge's rewording) is embedded: tests/revisions/test_unlocked_judge.py."""

from collections.abc import Callable

import numpy as np
from httpx import AsyncClient

from app.memories import repository
from app.revisions.judgement import Judgement
from app.revisions.judges import Ruling
from app.revisions.rules import merge

OLD, NEW = "User lives in Berlin.", "User lives in Berlin, in Kreuzberg."


class ScriptedMerge:
    """A quick judge that merges every candidate into `text(old, new)`, surely."""

    slow = False

    def __init__(self, text: Callable[[str, str], str]) -> None:
        self.text = text

    async def rule(self, new, candidates):
        return Ruling(
            [
                Judgement(
                    memory_id=c.memory.id,
                    decision="REFINE",
                    confidence=0.95,
                    reason="scripted",
                    merged_content=self.text(c.memory.content, new.content),
                )
                for c in candidates
            ],
            decided_by="rules",
        )


class Recording:
    """The service's embedder, noting every passage it is asked to embed."""

    def __init__(self, real) -> None:
        self._real, self.name, self.dim = real, real.name, real.dim
        self.passages: list[str] = []

    async def embed_passages(self, texts):
        self.passages += texts
        return await self._real.embed_passages(texts)

    async def embed_query(self, text):
        return await self._real.embed_query(text)


async def _merge(client: AsyncClient, namespace: str, text: Callable[[str, str], str]) -> tuple[list[np.ndarray], str, Recording]:
    """Old and new written, the new one merged with the old by `text`: the three vectors (old,
    new, merged), the merged memory's text, and the embedder as it was asked."""
    state = client._transport.app.state
    old = (await client.post("/v1/memories", json={"namespace": namespace, "content": OLD})).json()["memory"]
    state.judge = ScriptedMerge(text)
    embedder = state.embedder = Recording(state.embedder)
    response = await client.post("/v1/memories", json={"namespace": namespace, "content": NEW})
    assert response.status_code == 201, response.text
    (refine,) = [r for r in response.json()["revisions"] if r["decision"] == "REFINE"]
    assert refine["status"] == "applied", response.json()
    written = response.json()["memory"]
    vectors = await _vectors(client, [old["id"], written["id"], written["superseded_by"]])
    merged = (await client.get(f"/v1/memories/{written['superseded_by']}")).json()["memory"]
    return vectors, merged["content"], embedder


async def _vectors(client: AsyncClient, ids: list[str]) -> list[np.ndarray]:
    async with client._transport.app.state.sessionmaker() as session:
        found = {str(memory_id): vector for memory_id, vector in (await repository.embeddings_of(session, ids)).items()}
    return [np.asarray(found[memory_id], dtype=np.float32) for memory_id in ids]


async def test_a_merge_joining_both_texts_takes_the_mean_of_their_vectors(live_client, live_namespace):
    (old, new, merged), content, embedder = await _merge(live_client, live_namespace, merge)
    assert content == merge(OLD, NEW)
    assert embedder.passages == [NEW]  # the new text only: the merge was not embedded
    assert np.allclose(merged, (old + new) / np.linalg.norm(old + new), atol=1e-6)
    (model,) = await embedder._real.embed_passages([merge(OLD, NEW)])
    assert float(merged @ model) > 0.95  # close to what the model makes of the joined text


async def test_a_merge_keeping_the_new_text_takes_its_vector(live_client, live_namespace):
    (_, new, merged), content, embedder = await _merge(live_client, live_namespace, lambda old, new: new)
    assert content == NEW and embedder.passages == [NEW]
    assert np.array_equal(merged, new)
