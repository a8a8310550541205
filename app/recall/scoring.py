"""The weighted rerank: final = (w_sem*semantic + w_rec*recency + w_conf*confidence + w_acc*access)
* trust, where trust is the weight of the memory's source (user, agent, tool, web).

`semantic` is the candidate's relevance to the query (app/recall/relevance.py), which is
where the lexical route's evidence enters: the formula itself stays as the spec gives it.

Searching must not feed itself, so neither time-based part moves with use: recency is measured
from the memory's own time (`created_at`, when what it says was said), not from its last
access, and counts as far as the memory answers the query; the access part is the saturating
access count scaled by the memory's relevance to this query, and only breaks ties
(`Parts.order_key`): a memory returned a hundred times for one question gains nothing on another
question it does not answer, and never passes a hit that scores better without access by more
than ACCESS_TIE.
"""

import math
from dataclasses import dataclass
from datetime import datetime

# A memory whose key the query names, or that sits under the requested key prefix, is
# treated as nearly as relevant as the query's best match.
KEY_MATCH_RELEVANCE = 0.9
# The weighted formula reranks a relevance shortlist, never the whole candidate set: a memory
# far less relevant than the best cannot come back on recency and confidence alone. The
# shortlist holds the memories at least RELEVANCE_FLOOR as relevant as the best, topped up in
# relevance order to top_k; memories the key and recency routes bring always stay in.
# On the tuning parts it changes nothing measured (LoCoMo .755 / LongMemEval .944 with or
# without): it is kept as a guard, since recency is now measured at the question's reference
# time and can reach 1 for a memory said that day whatever it says.
RELEVANCE_FLOOR = 0.5
# access_count at which the access part saturates.
ACCESS_SATURATION = 50
# Access is a tie-breaker: hits are ordered by their score without the access part, in steps
# of ACCESS_TIE, and only within a step by the full score. Six searches for one memory would
# otherwise lift it by 0.04 over a better match for another question (0.738 vs 0.720).
ACCESS_TIE = 0.01


@dataclass(frozen=True, slots=True)
class Weights:
    semantic: float
    recency: float
    confidence: float
    access: float

    def as_dict(self) -> dict[str, float]:
        return {"semantic": self.semantic, "recency": self.recency, "confidence": self.confidence, "access": self.access}


@dataclass(frozen=True, slots=True)
class Parts:
    semantic: float
    recency: float
    confidence: float
    access: float
    lexical: float | None
    trust: float = 1.0

    def as_dict(self) -> dict[str, float]:
        return {"semantic": self.semantic, "recency": self.recency, "confidence": self.confidence, "access": self.access}

    def final(self, weights: Weights) -> float:
        # Spelt out, in as_dict's order from 0 as sum() adds: the same float, at a fifth of the
        # cost of a dict and getattr per part (a search scores a few hundred candidates).
        weighted = (
            0
            + weights.semantic * self.semantic
            + weights.recency * self.recency
            + weights.confidence * self.confidence
            + weights.access * self.access
        )
        return self.trust * weighted

    def order_key(self, weights: Weights) -> tuple[int, float]:
        """Sort key (descending): the score without access in ACCESS_TIE steps, then the full score."""
        final = self.final(weights)
        without_access = final - self.trust * weights.access * self.access
        return math.floor(without_access / ACCESS_TIE + 1e-9), final


# Recency, like access, counts as far as the memory answers the query: exp(-λ·hours) times its
# relevance to the power RECENCY_RELEVANCE_POWER (0: recency alone, the rule before). Alone, a
# turn said that morning gained up to 0.3 on a better match said a week earlier, more than the
# relevance weight (0.4) gives for a gap of half the best match. LongMemEval tuning turn MRR@10
# (10 questions, BM25 b 0; LoCoMo is searched years after its dates, where recency is ~0):
# .575 recency alone, .617 at power 1, .683 at 2, .708 with the recency weight at 0; with the
# neighbour lift replacing (relevance.py) .667 at 1, .653 at 2; 11 questions at b 0.5: .727 at
# 1, .576 alone; 12 questions at b 0 (shipped): .597 at 1, .556 alone, .667 at weight 0. The
# spec's weights stay; power 1 needs no new constant's value.
RECENCY_RELEVANCE_POWER = 1.0


def recency(*, said_at: datetime, at: datetime, decay_per_hour: float, relevance: float = 1.0) -> float:
    """exp(-λ·hours between the memory's own time and the moment the search answers for), a
    memory said after a past reference time as far from it as one said before, scaled by the
    memory's relevance to this query (RECENCY_RELEVANCE_POWER)."""
    hours = abs((at - said_at).total_seconds()) / 3600
    return math.exp(-decay_per_hour * hours) * max(0.0, min(1.0, relevance)) ** RECENCY_RELEVANCE_POWER


def access(count: int, *, relevance: float) -> float:
    """The saturating access count, scaled by how relevant the memory is to this query."""
    return min(1.0, math.log1p(count) / math.log1p(ACCESS_SATURATION)) * max(0.0, min(1.0, relevance))
