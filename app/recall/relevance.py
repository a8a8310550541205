"""How relevant each candidate is to the query: the `semantic` part of the rerank.

Vector and lexical evidence are fused, then lifted by what a memory service knows about
conversations: who said it (`source.speaker`, written by POST /v1/conversations), which session
it belongs to (a write's `session_id`), and the turns around it. Each constant is judged on the
tuning parts of `make bench` only (LoCoMo conversations 1-5, 760 questions; the LongMemEval
tuning half): `make bench` prints a row with each component switched off, and the figures in
the comments are those rows (LoCoMo recall@10 on every fourth tuning question, LongMemEval turn
recall_any@5 on the tuning questions). The report parts are never used to choose.
"""

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from uuid import UUID

# Figures: LoCoMo tuning recall@10 on every fourth question (192; .755 with everything on),
# LongMemEval tuning turn recall_any@5 (18 questions; .944 with everything on), as measured at
# lexical share 0.7 unless said otherwise.
# Both routes count, with equal shares: dense only .715 / .778, lexical only .677 / .833.
# Re-chosen on 24 LongMemEval tuning questions (4 a type, 2026-12-05): turn recall_any@5 /
# recall_all@10 / MRR@10 at share 0.4 .917 / .875 / .607, 0.45 .917 / .958 / .673, 0.5 .917 /
# .917 / .712, 0.55 .833 / .917 / .700, 0.6 .833 / .792 / .694, 0.7 (before) .833 / .792 /
# .644: at 0.7 a long pasted or answering turn that repeats the question's words outranks
# the shorter turn the embedding clearly prefers. LoCoMo tuning: recall@10 .746 on all 760
# questions (.739 at 0.7 in main's run of 2026-12-02); on every fourth .750 against .757 at 0.7,
# recall@5 .678 against .652.
LEXICAL_SHARE = 0.5
# Dense context: a turn's cosine averaged with its direct neighbours' (without: .739 / .833).
CONTEXT_WEIGHT = 0.3
# A memory by a speaker the query names (without: .748 / .944; LongMemEval names no speaker).
SPEAKER_BOOST = 1.4
# Part of the best candidate score of the same session added to each candidate (without:
# .757 / .833, LoCoMo recall@25 .795 vs .816; at 0.15 LongMemEval .889).
SESSION_LIFT = 0.35
# A hit lifts the turns up to NEIGHBOUR_WIDTH away in its session to NEIGHBOUR_LIFT / distance
# of its own score (without: .738 / .889); this is how a turn that neither route found can still
# come back.
NEIGHBOUR_LIFT = 0.5
NEIGHBOUR_WIDTH = 2
# The lift replaces a weaker own score, it is not added to it (False: added, the rule before):
# context comes back below the turn that brought it. Added, the user's question just before the
# long answer that holds the evidence took the answer's score on top of its own and, trusted
# more than the agent's answer, passed it (LongMemEval single-session-assistant: ranks 3 and 3
# become 0 and 0). LongMemEval tuning turn MRR@10 (11 questions, BM25 b 0.5, recency by
# relevance): .727 replacing, .576 added; at b 0 (shipped), 12 questions: .597 and .569. It
# costs LoCoMo, whose evidence often spans two adjacent turns that lift each other: tuning
# conversations 1-2 (231 questions) recall@10 .732 replacing, .763 added.
NEIGHBOUR_LIFT_REPLACES = True
# A memory said within the window a time expression of the query names ("last Saturday")
# has its relevance multiplied by 1 + TIME_LIFT: the expression weights, it does not filter
# (without: .745 / .889).
TIME_LIFT = 0.5
# Diversity over sessions: when choosing each next hit, a candidate's score is multiplied by
# (1 - SESSION_DIVERSITY) for every hit already chosen from its session, so a cluster of turns
# from one session makes room for the next best session's evidence (multi-session questions).
# Off: at 0.1 .674 / .778, at 0.25 .638 / .667 (the session lift already gathers evidence).
SESSION_DIVERSITY = 0.0
# A long memory's dense cosine: its own vector's (the prefix), raised towards its best later
# window's (memory_chunks) by this share of the gap: 1 is the max over windows, 0 ignores them.
# LongMemEval tuning (13 questions, two windows): 1, 0.5 and 0 give the same turn recall@5 (.923)
# and MRR@10 (.535), though the top ten change; the max is kept as the simplest that lets a
# window past the prefix count in full. (LoCoMo turns are all under 512 characters.)
CHUNK_SHARE = 1.0
# Dense scores are min-max scaled over the candidates, but over at least this much cosine:
# with few candidates (a small namespace) a 0.01 cosine gap would otherwise become 0 vs 1.
# (Not a benchmark constant: namespaces of hundreds of turns always spread wider.)
MIN_DENSE_SPREAD = 0.1

SessionKey = tuple[str, str]


@dataclass(slots=True)
class Evidence:
    """What the routes and the database told us about the candidates of one query."""

    cosine: dict[UUID, float]  # every loaded memory
    vector_hits: list[UUID]  # the vector route's order
    lexical_rank: dict[UUID, float]
    session: dict[UUID, SessionKey | None]
    speaker: dict[UUID, str | None]
    in_window: set[UUID] = field(default_factory=set)  # said within the query's time window
    # (a, b, offset of b from a) for memories of one session, both directions present.
    adjacency: dict[UUID, dict[UUID, int]] = field(default_factory=lambda: defaultdict(dict))

    def link(self, anchor: UUID, other: UUID, offset: int) -> None:
        self.adjacency[anchor][other] = offset
        self.adjacency[other][anchor] = -offset


@dataclass(frozen=True, slots=True)
class Relevance:
    semantic: float
    dense: float
    lexical: float | None


def named_speakers(query: str, speakers: Iterable[str | None]) -> set[str]:
    lowered = query.lower()
    return {name for name in set(speakers) if name and re.search(rf"\b{re.escape(name.lower())}\b", lowered)}


def memory_cosine(own: float, best_chunk: float | None) -> float:
    """A memory's cosine to the query from its own vector's and its nearest later window's."""
    if best_chunk is None or best_chunk <= own:
        return own
    return own + CHUNK_SHARE * (best_chunk - own)


def _context_cosines(evidence: Evidence) -> dict[UUID, float]:
    """Dense score of the vector hits and their direct neighbours, each averaged with the
    cosines of whichever direct neighbours were fetched."""
    fetched = set(evidence.vector_hits)
    fetched |= {other for hit in evidence.vector_hits for other, offset in evidence.adjacency[hit].items() if abs(offset) == 1}
    context: dict[UUID, float] = {}
    for memory_id in fetched:
        near = [other for other, offset in evidence.adjacency[memory_id].items() if abs(offset) == 1 and other in fetched]
        total = evidence.cosine[memory_id] + CONTEXT_WEIGHT * sum(evidence.cosine[other] for other in near)
        context[memory_id] = total / (1 + CONTEXT_WEIGHT * len(near))
    keep = sorted(context, key=context.get, reverse=True)[: len(evidence.vector_hits)]
    return {memory_id: context[memory_id] for memory_id in keep}


def _min_max(scores: dict[UUID, float]) -> dict[UUID, float]:
    if not scores:
        return {}
    high = max(scores.values())
    low = min(min(scores.values()), high - MIN_DENSE_SPREAD)
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def score(evidence: Evidence, *, query: str) -> dict[UUID, Relevance]:
    """Relevance in [0, 1] for every memory the evidence covers (1 = the best of this query)."""
    dense = _min_max(_context_cosines(evidence))
    best_lexical = max(evidence.lexical_rank.values(), default=0.0)
    lexical = {key: value / best_lexical for key, value in evidence.lexical_rank.items()} if best_lexical > 0 else {}
    candidates = set(dense) | set(lexical)
    fused = {key: (1 - LEXICAL_SHARE) * dense.get(key, 0.0) + LEXICAL_SHARE * lexical.get(key, 0.0) for key in candidates}

    speakers = named_speakers(query, evidence.speaker.values())
    for key in fused:
        if evidence.speaker.get(key) in speakers:
            fused[key] *= SPEAKER_BOOST

    best_in_session: dict[SessionKey, float] = {}
    for key, value in fused.items():
        session = evidence.session.get(key)
        if session is not None:
            best_in_session[session] = max(best_in_session.get(session, 0.0), value)
    lifted = {
        key: value + SESSION_LIFT * best_in_session[evidence.session[key]] if evidence.session.get(key) else value
        for key, value in fused.items()
    }

    final: dict[UUID, float] = {}
    for key in set(evidence.cosine):
        neighbour_lift = max(
            (NEIGHBOUR_LIFT / abs(offset) * lifted.get(other, 0.0) for other, offset in evidence.adjacency[key].items()),
            default=0.0,
        )
        own = lifted.get(key, 0.0)
        final[key] = max(own, neighbour_lift) if NEIGHBOUR_LIFT_REPLACES else own + neighbour_lift
        if key in evidence.in_window:
            final[key] *= 1 + TIME_LIFT
    top = max(final.values(), default=0.0)
    return {
        key: Relevance(
            semantic=value / top if top > 0 else 0.0,
            dense=dense.get(key, 0.0),
            lexical=lexical.get(key),
        )
        for key, value in final.items()
    }


def diversify(order: list[UUID], *, score: dict[UUID, float], session: dict[UUID, SessionKey | None], places: int) -> list[UUID]:
    """The first `places` of `order` chosen greedily by score discounted per hit already
    chosen from the same session; the rest keep their order. Memories outside any session
    are never discounted."""
    if SESSION_DIVERSITY <= 0 or len(order) < 2:
        return order
    remaining = list(order)
    chosen: list[UUID] = []
    taken: dict[SessionKey, int] = defaultdict(int)
    keep = 1 - SESSION_DIVERSITY
    while remaining and len(chosen) < places:
        best = max(
            range(len(remaining)),
            key=lambda i: (score[remaining[i]] * keep ** taken[session[remaining[i]]] if session.get(remaining[i]) else score[remaining[i]], -i),
        )
        picked = remaining.pop(best)
        chosen.append(picked)
        if session.get(picked):
            taken[session[picked]] += 1
    return chosen + remaining
