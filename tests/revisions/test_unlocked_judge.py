"""The judge is asked with no lock held: a slow judge holds no other write to the namespace
back, and its ruling is applied only if what it judged is unchanged when the lock is taken
again; else the judge is asked again."""

import asyncio
import time
import uuid

import pytest
from httpx import AsyncClient

from app.memories import repository
from app.revisions.judgement import Judgement
from app.revisions.judges import RulesJudge, Ruling

JUDGE_SECONDS = 3.0


class SlowJudge:
    """The rule judge, after thinking for a while (an LLM's latency)."""

    slow = True

    def __init__(self, seconds: float) -> None:
        self._rules = RulesJudge()
        self.seconds = seconds
        self.calls = 0
        self.thinking = asyncio.Event()

    async def rule(self, new, candidates):
        self.calls += 1
        self.thinking.set()
        await asyncio.sleep(self.seconds)
        return await self._decide(new, candidates)

    async def _decide(self, new, candidates):
        return await self._rules.rule(new, candidates)


@pytest.fixture
def slow_judge(live_client: AsyncClient) -> SlowJudge:
    judge = SlowJudge(JUDGE_SECONDS)
    live_client._transport.app.state.judge = judge
    return judge


async def write(client: AsyncClient, namespace: str, content: str) -> tuple[float, dict]:
    began = time.perf_counter()
    response = await client.post("/v1/memories", json={"namespace": namespace, "content": content})
    assert response.status_code == 201, response.text
    return time.perf_counter() - began, response.json()


async def test_a_slow_judge_does_not_delay_another_write_to_the_namespace(live_client, live_namespace, slow_judge):
    await write(live_client, live_namespace, "User lives in Berlin.")
    idle, _ = await write(live_client, live_namespace, "The quarterly budget meeting is in room 4B.")
    assert slow_judge.calls == 0  # unrelated: nothing to judge

    judged = asyncio.create_task(write(live_client, live_namespace, "User lives in Munich now."))
    await asyncio.wait_for(slow_judge.thinking.wait(), timeout=30)
    during, _ = await write(live_client, live_namespace, "Pack the tent poles before Saturday's hike.")
    assert not judged.done()  # the judge was still thinking
    assert during - idle < 0.5, (during, idle)

    _, first = await judged
    assert slow_judge.calls == 1
    assert [r["decision"] for r in first["revisions"]], first  # the ruling was applied after the lock came back


async def test_a_candidate_changed_while_the_judge_thought_is_judged_again(live_client, live_namespace, slow_judge, settings):
    # No cooldown: the candidate revised meanwhile stays a candidate, at its new version.
    state = live_client._transport.app.state
    state.settings = settings.model_copy(update={"revision_cooldown_seconds": 0})
    _, old = await write(live_client, live_namespace, "User lives in Berlin.")
    judged = asyncio.create_task(write(live_client, live_namespace, "User lives in Munich now."))
    await asyncio.wait_for(slow_judge.thinking.wait(), timeout=30)
    slow_judge.seconds = 0.0
    revised = await live_client.post(
        f"/v1/memories/{old['memory']['id']}/revise",
        json={"content": "User lives in Hamburg.", "expected_version": old["memory"]["version"]},
    )
    assert revised.status_code == 200, revised.text
    _, first = await judged
    assert slow_judge.calls == 2  # the first ruling was about a version that no longer stands
    logged = (await live_client.get("/debug/revisions", params={"namespace": live_namespace})).json()["revisions"]
    judged_against = [r for r in logged if r["new_memory_id"] == first["memory"]["id"]]
    assert judged_against and all(r["old_memory_id"] == old["memory"]["id"] for r in judged_against)


class SluggishJudge(SlowJudge):
    """Rules under the lock (not `slow`), but takes a while per memory; finds every candidate
    unrelated, so a pass judges each memory (nothing is superseded and skipped)."""

    slow = False

    async def _decide(self, new, candidates):
        return Ruling(
            [Judgement(memory_id=c.memory.id, decision="UNRELATED", confidence=0.9, reason="scripted") for c in candidates],
            decided_by="rules",
        )


async def test_a_review_lets_its_namespace_go_while_it_runs(live_client, live_namespace):
    """A review of many memories commits after each one it judges: a write to the namespace
    waits for one memory's judgement at most, not for the whole pass."""
    state = live_client._transport.app.state
    idle, _ = await write(live_client, live_namespace, "The quarterly budget meeting is in room 4B.")
    # Stored in bulk (no revision at write time): the review judges every one of them.
    facts = [f"User lives in {city} now." for city in ("Berlin", "Munich", "Hamburg", "Cologne", "Dresden", "Leipzig")]
    vectors = await state.embedder.embed_passages(facts)
    rows = [
        {
            "id": uuid.uuid4(),
            "namespace": live_namespace,
            "content": fact,
            "memory_type": "semantic",
            "embedding": vector,
            "embedding_model": state.embedder.name,
        }
        for fact, vector in zip(facts, vectors, strict=True)
    ]
    async with state.sessionmaker.begin() as session:
        await repository.insert_many(session, rows)
    judge = state.judge = SluggishJudge(0.4)
    review = asyncio.create_task(live_client.post("/v1/review", json={"namespace": live_namespace}))
    await asyncio.wait_for(judge.thinking.wait(), timeout=30)
    during, _ = await write(live_client, live_namespace, "Pack the tent poles before Saturday's hike.")
    assert not review.done(), "the review should still be running: the check below would prove nothing"
    assert during - idle < 1.0, (during, idle)
    response = await review
    assert response.status_code == 200, response.text
    assert judge.calls >= 5  # under one lock, the pass would have held the write back ~2 s


async def test_a_review_with_nothing_left_to_judge_takes_no_lock(live_client, live_namespace):
    """Memories whose writes judged their candidates leave a review nothing to do: it reads
    them without the namespace lock, so a writer holding the lock does not hold it back."""
    state = live_client._transport.app.state
    for pet in ("cat", "dog", "parrot"):
        await write(live_client, live_namespace, f"The {pet} naps on the windowsill after lunch.")
    async with state.sessionmaker() as holder:
        await repository.lock_namespace(holder, live_namespace)
        response = await asyncio.wait_for(live_client.post("/v1/review", json={"namespace": live_namespace}), timeout=10)
        await holder.rollback()
    assert response.status_code == 200, response.text
    assert response.json()["checked"] == 3 and response.json()["revisions"] == [], response.text


MERGED = "User lives in Berlin, in Kreuzberg, near the canal."


class QuickMerger(SlowJudge):
    """Rules under the lock (not `slow`, no delay) and merges every candidate, surely."""

    slow = False

    async def _decide(self, new, candidates):
        return Ruling(
            [
                Judgement(memory_id=c.memory.id, decision="REFINE", confidence=0.95, reason="scripted", merged_content=MERGED)
                for c in candidates
            ],
            decided_by="rules",
        )


class SlowToEmbedMerges:
    """The service's embedder, taking a while over one text: the merge a REFINE stores."""

    def __init__(self, real, slow_text: str, seconds: float) -> None:
        self._real, self._slow_text, self._seconds = real, slow_text, seconds
        self.name, self.dim = real.name, real.dim
        self.embedding = asyncio.Event()

    async def embed_passages(self, texts):
        if self._slow_text in texts:
            self.embedding.set()
            await asyncio.sleep(self._seconds)
        return await self._real.embed_passages(texts)

    async def embed_query(self, text):
        return await self._real.embed_query(text)


async def test_a_merge_is_embedded_with_the_namespace_let_go(live_client, live_namespace):
    """A quick judge rules under the lock, but the text a REFINE stores is embedded with the lock
    released: another write to the namespace does not wait for it."""
    state = live_client._transport.app.state
    await write(live_client, live_namespace, "User lives in Berlin.")
    idle, _ = await write(live_client, live_namespace, "The quarterly budget meeting is in room 4B.")
    state.judge = QuickMerger(0.0)
    embedder = state.embedder = SlowToEmbedMerges(state.embedder, MERGED, JUDGE_SECONDS)
    refined = asyncio.create_task(write(live_client, live_namespace, "User lives in Berlin, in Kreuzberg."))
    await asyncio.wait_for(embedder.embedding.wait(), timeout=30)
    during, _ = await write(live_client, live_namespace, "Pack the tent poles before Saturday's hike.")
    assert not refined.done(), "the merge should still be embedding: the check below would prove nothing"
    assert during - idle < 0.5, (during, idle)
    _, first = await refined
    (merged,) = [r for r in first["revisions"] if r["decision"] == "REFINE"]
    assert merged["status"] == "applied", first
    stored = await live_client.get(f"/v1/memories/{first['memory']['superseded_by']}")
    assert stored.json()["memory"]["content"] == MERGED
