"""LoCoMo retrieval through the service, with BM25 and dense baselines from the same run.

The honest protocol: the first five conversations of locomo10.json (file order) are the tuning
part, on which every constant of app/recall/relevance.py was chosen; the last five are the
report part, read for figures only. Each part is scored on its own, with its baselines, an
ablation row per relevance component, and a replay in which every search counts its hits as
accessed (the ratio to the read-only run shows whether searching feeds itself)."""

import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from httpx import AsyncClient
from tqdm import tqdm

from app.bench import ablation, locomo
from app.bench.conversations import CachingEmbedder
from app.bench.locomo import Conversation, Question, Scores

WRITE_BATCH = 500
TOP_K = 25
TUNING_CONVERSATIONS = 5
ABLATION_BASE = "hindsight, ablation subset"


def split_of(index: int) -> str:
    """`tuning` for the first five conversations in file order, `report` for the rest."""
    return "tuning" if index < TUNING_CONVERSATIONS else "report"


def _write_items(conversation: Conversation, namespace: str) -> list[dict[str, Any]]:
    items, position = [], {}
    for turn in conversation.turns:
        # Turns of a session share its date; seconds keep them in spoken order.
        index = position[turn.session] = position.get(turn.session, -1) + 1
        items.append(
            {
                "namespace": namespace,
                "content": turn.content,
                "memory_type": "episodic",
                "created_at": (turn.session_at + timedelta(seconds=index)).isoformat(),
                "session_id": f"session_{turn.session}",
                "source": {"speaker": turn.speaker, "turn_id": turn.dia_id},
                "metadata": {"dia_id": turn.dia_id},
            }
        )
    return items


async def _write(client: AsyncClient, items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), WRITE_BATCH):
        response = await client.post("/v1/memories:batch", json={"items": items[start : start + WRITE_BATCH]})
        response.raise_for_status()
        failed = [result for result in response.json()["results"] if result["status"] >= 400]
        assert not failed, failed[:3]


async def _search(client: AsyncClient, namespace: str, question: Question, *, record_access: bool, **extra: Any) -> list[str]:
    body = {"query": question.text, "namespace": namespace, "top_k": TOP_K, "record_access": record_access, **extra}
    response = await client.post("/v1/memories/search", json=body)
    response.raise_for_status()
    return [hit["memory"]["metadata"]["dia_id"] for hit in response.json()["hits"]]


async def run(
    client: AsyncClient,
    embedder: CachingEmbedder,
    conversations: Sequence[Conversation],
    *,
    ablate: bool = True,
    ablation_stride: int = 4,
    part: str | None = None,
) -> dict[str, dict[str, dict[str, Scores]]]:
    """Scores per split, then per system: hindsight (read-only searches), hindsight with access
    counting (each search feeds the next, in question order), BM25, dense, and each ablation
    variant on every `ablation_stride`-th question of each conversation, beside hindsight on the
    same questions ("hindsight, ablation subset"). With `part`, only that part's conversations."""
    asked: dict[str, dict[str, list[Question]]] = defaultdict(lambda: defaultdict(list))
    rankings: dict[str, dict[str, list[list[str]]]] = defaultdict(lambda: defaultdict(list))

    def record(split: str, system: str, question: Question, ranked: list[str]) -> None:
        asked[split][system].append(question)
        rankings[split][system].append(ranked)

    for index, conversation in enumerate(tqdm(conversations, desc="LoCoMo conversations", unit="conv")):
        split = split_of(index)
        if part is not None and split != part:
            continue
        namespace = f"bench:locomo:{conversation.sample_id}:{uuid.uuid4().hex[:6]}"
        await _write(client, _write_items(conversation, namespace))
        subset = conversation.questions[::ablation_stride] if ablate else ()
        for position, question in enumerate(tqdm(conversation.questions, desc=conversation.sample_id, unit="q", leave=False)):
            ranked = await _search(client, namespace, question, record_access=False)
            record(split, "hindsight", question, ranked)
            if ablate and position % ablation_stride == 0:
                record(split, ABLATION_BASE, question, ranked)
        for name, variant in ablation.VARIANTS.items():
            with variant.applied():
                for question in subset:
                    record(split, name, question, await _search(client, namespace, question, record_access=False, **variant.request))
        for question in conversation.questions:
            record(split, "hindsight+access", question, await _search(client, namespace, question, record_access=True))
        for question, ranked in zip(
            conversation.questions, locomo.bm25_rankings(conversation, conversation.questions, top_k=TOP_K), strict=True
        ):
            record(split, "bm25", question, ranked)
        dense = locomo.dense_rankings(
            conversation, conversation.questions, embedder.passage_vectors, embedder.query_vectors, top_k=TOP_K
        )
        for question, ranked in zip(conversation.questions, dense, strict=True):
            record(split, "dense", question, ranked)
        embedder.save()
    return {
        split: {system: locomo.score(asked[split][system], ranked) for system, ranked in rankings[split].items()}
        for split in ("tuning", "report")
        if split in rankings
    }
