"""LoCoMo retrieval through the service, with BM25 and dense baselines from the same run."""

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import numpy as np
from httpx import AsyncClient
from tqdm import tqdm

from app.bench import locomo
from app.bench.locomo import Conversation, Question, Scores

WRITE_BATCH = 500
TOP_K = 25


class RecordingEmbedder:
    """Wraps the service's embedder and keeps what it computed, so the dense baseline
    ranks with exactly the vectors the service stored and searched with."""

    def __init__(self, real) -> None:
        self.name, self.dim = real.name, real.dim
        self._real = real
        self.vectors: dict[tuple[str, str], np.ndarray] = {}

    async def embed_passages(self, texts: list[str]) -> np.ndarray:
        vectors = await self._real.embed_passages(texts)
        self.vectors.update({("passage", text): vector for text, vector in zip(texts, vectors, strict=True)})
        return vectors

    async def embed_query(self, text: str) -> np.ndarray:
        vector = await self._real.embed_query(text)
        self.vectors[("query", text)] = vector
        return vector

    def recorded(self, kind: str):
        return lambda texts: np.vstack([self.vectors[(kind, text)] for text in texts])


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


async def _search(client: AsyncClient, namespace: str, question: Question, *, record_access: bool) -> list[str]:
    body = {"query": question.text, "namespace": namespace, "top_k": TOP_K, "record_access": record_access}
    response = await client.post("/v1/memories/search", json=body)
    response.raise_for_status()
    return [hit["memory"]["metadata"]["dia_id"] for hit in response.json()["hits"]]


async def run(client: AsyncClient, recorder: RecordingEmbedder, conversations: Sequence[Conversation]) -> dict[str, dict[str, Scores]]:
    """Scores per system: hindsight (read-only searches), hindsight with access tracking
    (each search feeds the next), BM25 and dense."""
    questions: list[Question] = []
    rankings: dict[str, list[list[str]]] = {"hindsight": [], "hindsight+access": [], "bm25": [], "dense": []}
    for conversation in tqdm(conversations, desc="LoCoMo conversations", unit="conv"):
        namespace = f"bench:locomo:{conversation.sample_id}:{uuid.uuid4().hex[:6]}"
        await _write(client, _write_items(conversation, namespace))
        for question in tqdm(conversation.questions, desc=conversation.sample_id, unit="q", leave=False):
            rankings["hindsight"].append(await _search(client, namespace, question, record_access=False))
        for question in conversation.questions:
            rankings["hindsight+access"].append(await _search(client, namespace, question, record_access=True))
        rankings["bm25"].extend(locomo.bm25_rankings(conversation, conversation.questions, top_k=TOP_K))
        rankings["dense"].extend(
            locomo.dense_rankings(
                conversation,
                conversation.questions,
                recorder.recorded("passage"),
                recorder.recorded("query"),
                top_k=TOP_K,
            )
        )
        questions.extend(conversation.questions)
    return {system: locomo.score(questions, ranked) for system, ranked in rankings.items()}
