"""The conversations suite of `make bench`.

LongMemEval: each sampled question's haystack is written twice, in two namespaces of the same
run: per message through `POST /v1/memories:batch` (one episodic memory per turn), and per
session through `POST /v1/conversations` with rule extraction. Both store the same text, time,
session and message id, so the difference is what the conversation path adds: extracted keyed
memories competing in search. Scored: turn recall_any@5 (a hit counts for the turn it is, or
for the turn it was extracted from; "strict" counts episodic hits only), and context recall:
whether an evidence turn's own memory is inside `POST /v1/context` at each budget, against
plain top-k search cut at the same budget (hits rendered the same way, in rank order, until the
next one does not fit).

Updates: each case's memories replayed as user messages of one conversation (rule
extraction), scored as the updates suite scores direct writes, on the facts a conversation
yields (semantic memories): the messages themselves are history and stay active by design.
"""

import hashlib
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI
from httpx import AsyncClient
from tqdm import tqdm

from app.bench import updates
from app.bench.longmemeval import Question
from app.context import packing
from app.context.service import memory_line
from app.llm import tokens
from app.recall.schemas import SearchHit

TOP_K = 5
CANDIDATES = 30
BATCH = 500


class CachingEmbedder:
    """The service's embedder, remembering what it computed: both namespaces of a question store
    the same texts, so the second write costs no embedding time. With a file, passages are kept
    across runs too (the model is deterministic: a kept vector is the one it would compute)."""

    def __init__(self, real, *, path: Path | None = None) -> None:
        self.name, self.dim = real.name, real.dim
        self.real = real
        self._path = path
        self._passages: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}
        if path is not None and path.exists():
            kept = np.load(path)
            if str(kept["model"]) == real.name:
                self._passages = dict(zip(kept["keys"].tolist(), kept["vectors"], strict=True))

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    async def embed_passages(self, texts: list[str]) -> np.ndarray:
        keys = [self._key(text) for text in texts]
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in self._passages}
        if missing:
            vectors = await self.real.embed_passages(list(missing.values()))
            self._passages.update(zip(missing, vectors, strict=True))
        return np.vstack([self._passages[key] for key in keys]) if texts else np.empty((0, self.dim), dtype=np.float32)

    async def embed_query(self, text: str) -> np.ndarray:
        if text not in self._queries:
            self._queries[text] = await self.real.embed_query(text)
        return self._queries[text]

    def passage_vectors(self, texts: list[str]) -> np.ndarray:
        """Vectors already computed for these passages (the dense baseline ranks with them)."""
        return np.vstack([self._passages[self._key(text)] for text in texts])

    def query_vectors(self, texts: list[str]) -> np.ndarray:
        return np.vstack([self._queries[text] for text in texts])

    def save(self) -> None:
        if self._path is None or not self._passages:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self._passages)
        with self._path.open("wb") as file:
            np.savez(file, model=self.name, keys=np.array(keys), vectors=np.vstack([self._passages[k] for k in keys]))


@dataclass
class Outcome:
    question_id: str
    question_type: str
    split: str
    turns: int
    per_message_at5: bool
    conversation_at5: bool
    conversation_at5_strict: bool
    keyed: int
    context: dict[int, bool]
    cut: dict[int, bool]
    extracted: list[dict[str, str]] = field(default_factory=list)


def _source(turn) -> dict[str, Any]:
    kind = {"user": "user", "assistant": "agent"}.get(turn.role, "agent")
    return {"kind": kind, "role": turn.role, "speaker": turn.role, "message_id": turn.turn_id}


async def _write_per_message(client: AsyncClient, namespace: str, question: Question, *, max_chars: int) -> None:
    items = [
        {
            "namespace": namespace,
            "content": turn.content[:max_chars],  # a per-message writer keeps what one memory holds
            "memory_type": "episodic",
            "created_at": turn.at.isoformat(),
            "session_id": turn.session_id,
            "source": _source(turn),
        }
        for turn in question.turns
    ]
    for start in range(0, len(items), BATCH):
        response = await client.post("/v1/memories:batch", json={"items": items[start : start + BATCH]})
        response.raise_for_status()


def _sessions(question: Question) -> Iterator[list]:
    current: list = []
    for turn in question.turns:
        if current and turn.session_id != current[0].session_id:
            yield current
            current = []
        current.append(turn)
    if current:
        yield current


async def _write_conversations(
    app: FastAPI, client: AsyncClient, namespace: str, question: Question
) -> list[dict[str, Any]]:
    """Each haystack session as one conversation; the keyed memories extracted."""
    extracted = []
    longest = app.state.settings.conversation_max_message_chars  # two turns of 255 haystacks are longer
    for session in _sessions(question):
        messages = [
            {"id": turn.turn_id, "role": turn.role, "content": turn.content[:longest], "at": turn.at.isoformat()}
            for turn in session
        ]
        response = await client.post(
            "/v1/conversations",
            json={
                "namespace": namespace,
                "session_id": session[0].session_id,
                "messages": messages,
                "extract": "rules",
            },
        )
        response.raise_for_status()
        answer = response.json()
        if response.status_code == 202:  # a long session runs as a job
            job_id = uuid.UUID(answer["job"]["id"])
            await app.state.jobs.wait(job_id)
            answer = (await client.get(f"/v1/jobs/{job_id}")).json()["result"]
        extracted += [memory for memory in answer["extraction"]["memories"] if memory["status"] in (200, 201)]
    return extracted


async def _search(client: AsyncClient, namespace: str, query: str, top_k: int) -> list[SearchHit]:
    body = {"query": query, "namespace": namespace, "top_k": top_k, "record_access": False}
    response = await client.post("/v1/memories/search", json=body)
    response.raise_for_status()
    return [SearchHit.model_validate(hit) for hit in response.json()["hits"]]


def _turn(hit: SearchHit) -> str | None:
    return hit.memory.source.get("message_id")


def _hit_at(hits: list[SearchHit], evidence: set[str], *, strict: bool = False) -> bool:
    return any(_turn(hit) in evidence for hit in hits[:TOP_K] if not strict or hit.memory.memory_type == "episodic")


def cut_at_budget(hits: list[SearchHit], budget: int, *, tokenizer: str) -> list[SearchHit]:
    """Plain top-k search under a budget: the hits, rendered as the context renders memories,
    in rank order until the next one does not fit."""
    kept: list[SearchHit] = []
    for hit in hits:
        text = "\n".join([packing.SECTIONS["memory"], *(memory_line(h) for h in [*kept, hit])])
        if tokens.count(text, tokenizer=tokenizer) > budget:
            break
        kept.append(hit)
    return kept


async def _context_turns(client: AsyncClient, namespace: str, query: str, budget: int) -> set[str]:
    body = {"namespace": namespace, "query": query, "budget_tokens": budget, "record_access": False}
    response = await client.post("/v1/context", json=body)
    response.raise_for_status()
    answer = response.json()
    assert answer["tokens"] <= budget
    return {
        part["memory"]["source"].get("message_id")
        for part in answer["parts"]
        if part["kind"] == "memory" and part["memory"]["memory_type"] == "episodic"
    }


async def run_question(
    app: FastAPI, client: AsyncClient, question: Question, *, budgets: list[int], tokenizer: str
) -> Outcome:
    tag = uuid.uuid4().hex[:6]
    per_message, conversation = f"bench:lme:{question.question_id}:{tag}:m", f"bench:lme:{question.question_id}:{tag}:c"
    max_chars = app.state.settings.max_content_chars
    await _write_per_message(client, per_message, question, max_chars=max_chars)
    extracted = await _write_conversations(app, client, conversation, question)
    evidence = question.evidence
    plain = await _search(client, per_message, question.question, TOP_K)
    ranked = await _search(client, conversation, question.question, CANDIDATES)
    context, cut = {}, {}
    for budget in budgets:
        context[budget] = bool(await _context_turns(client, conversation, question.question, budget) & evidence)
        kept = cut_at_budget(ranked, budget, tokenizer=tokenizer)
        cut[budget] = any(_turn(hit) in evidence for hit in kept if hit.memory.memory_type == "episodic")
    return Outcome(
        question_id=question.question_id,
        question_type=question.question_type,
        split=question.split,
        turns=len(question.turns),
        per_message_at5=_hit_at(plain, evidence),
        conversation_at5=_hit_at(ranked, evidence),
        conversation_at5_strict=_hit_at(ranked, evidence, strict=True),
        keyed=sum(memory["status"] == 201 for memory in extracted),
        context=context,
        cut=cut,
        extracted=[
            {"key": memory["key"], "content": memory["content"], "message_id": memory["message_id"]}
            for memory in extracted
        ],
    )


def _rate(values: list[bool]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0


def summarise_lme(outcomes: list[Outcome], budgets: list[int]) -> dict[str, Any]:
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        for name in ("all", outcome.split, f"{outcome.split}/{outcome.question_type}"):
            groups[name].append(outcome)
    summary = {}
    for name, group in sorted(groups.items()):
        summary[name] = {
            "questions": len(group),
            "turns": sum(o.turns for o in group),
            "per_message_recall_at5": _rate([o.per_message_at5 for o in group]),
            "conversation_recall_at5": _rate([o.conversation_at5 for o in group]),
            "conversation_recall_at5_strict": _rate([o.conversation_at5_strict for o in group]),
            "keyed_memories": sum(o.keyed for o in group),
            **{f"context_recall@{b}": _rate([o.context[b] for o in group]) for b in budgets},
            **{f"topk_cut_recall@{b}": _rate([o.cut[b] for o in group]) for b in budgets},
        }
    return summary


async def run_longmemeval(
    app: FastAPI,
    client: AsyncClient,
    questions: list[Question],
    *,
    budgets: list[int],
    tokenizer: str,
    embedding_cache: Path | None = None,
) -> tuple[dict[str, Any], list[Outcome], float]:
    real = app.state.embedder
    app.state.embedder = caching = CachingEmbedder(real, path=embedding_cache)
    # Each haystack session writes more than the anomaly threshold per minute, by design here.
    logging.getLogger("app.memories.write_rate").setLevel(logging.ERROR)
    began = time.perf_counter()
    outcomes = []
    try:
        for question in tqdm(questions, desc="LongMemEval questions", unit="q"):
            outcomes.append(await run_question(app, client, question, budgets=budgets, tokenizer=tokenizer))
            caching.save()  # an interrupted run keeps what it embedded
    finally:
        app.state.embedder = real
    return summarise_lme(outcomes, budgets), outcomes, time.perf_counter() - began


# --- knowledge updates replayed as conversations ---------------------------------------------


def case_split(case: dict[str, Any]) -> str:
    """`tuning` or `report`, by a hash of the case id (as LongMemEval questions are split)."""
    return "tuning" if int(hashlib.sha256(case["id"].encode()).hexdigest()[:8], 16) % 2 == 0 else "report"


def _top1_holds(case: dict[str, Any], hits: list[str]) -> bool:
    top1 = hits[0].casefold() if hits else ""
    return all(phrase.casefold() in top1 for phrase in case["expect_top1_contains"])


async def _contents(client: AsyncClient, namespace: str, query: str, **filters: Any) -> list[str]:
    body = {"query": query, "namespace": namespace, "top_k": 10, "record_access": False, **filters}
    response = await client.post("/v1/memories/search", json=body)
    response.raise_for_status()
    return [hit["memory"]["content"] for hit in response.json()["hits"]]


async def replay_case(client: AsyncClient, case: dict[str, Any]) -> tuple[updates.CaseResult, int, bool]:
    """The case as one conversation of user messages: its result on the facts it yielded, how
    many facts, and whether the top hit of a search over everything (messages included) holds
    the expected phrases."""
    namespace = f"{case['namespace']}:replay-{uuid.uuid4().hex[:8]}"
    messages = [
        {"id": f"m{n}", "role": "user", "content": memory["content"], "at": memory["at"]}
        for n, memory in enumerate(case["memories"])
    ]
    response = await client.post(
        "/v1/conversations",
        json={"namespace": namespace, "session_id": f"case-{case['id']}", "messages": messages, "extract": "rules"},
    )
    response.raise_for_status()
    hits = await _contents(client, namespace, case["query"], memory_types=["semantic"])
    recent = (await client.get("/debug/recent", params={"namespace": namespace, "limit": 500})).json()["memories"]
    facts = [memory for memory in recent if memory["memory_type"] == "semantic"]
    result = updates.judge_case(
        case,
        hits=hits,
        active=sum(memory["status"] == "active" for memory in facts),
        written=[(memory["content"], memory["status"]) for memory in facts],
    )
    return result, len(facts), _top1_holds(case, await _contents(client, namespace, case["query"]))


async def compare_updates(client: AsyncClient, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Direct writes (the updates suite) and the conversation replay, per split."""
    direct, replayed = defaultdict(list), defaultdict(list)
    covered, top1_direct, top1_replayed = defaultdict(int), defaultdict(int), defaultdict(int)
    for case in tqdm(cases, desc="updates: direct and replayed", unit="case"):
        split = case_split(case)
        with updates.current_case(case):
            written = await updates.run_case(client, case)
        direct[split].append(written)
        top1_direct[split] += not any(failure.startswith("top-1") for failure in written.failures)
        result, facts, top1 = await replay_case(client, case)
        replayed[split].append(result)
        covered[split] += facts > 0
        top1_replayed[split] += top1
    return {
        split: {
            "cases": len(direct[split]),
            "direct": {**updates.summarise(direct[split], with_failures=False), "top1_holds": top1_direct[split]},
            "conversation": {
                **updates.summarise(replayed[split], with_failures=False),
                "cases_with_facts": covered[split],
                "top1_holds_over_everything": top1_replayed[split],
            },
        }
        for split in sorted(direct)
    }
