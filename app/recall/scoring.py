"""The weighted rerank: final = (w_sem*semantic + w_rec*recency + w_conf*confidence + w_acc*access)
* trust, where trust is the weight of the memory's source (user, agent, tool, web).

`semantic` is the candidate's relevance to the query (app/recall/relevance.py), which is
where the lexical route's evidence enters: the formula itself stays as the spec gives it.
"""

import math
from dataclasses import dataclass
from datetime import datetime

# A memory whose key the query names, or that sits under the requested key prefix, is
# treated as nearly as relevant as the query's best match.
KEY_MATCH_RELEVANCE = 0.9
# The weighted formula reranks a relevance shortlist, never the whole candidate set: with
# recency measured from last access, every memory a search just returned would otherwise
# outrank better matches in the next search (LoCoMo replayed with access tracking on fell
# from recall@10 .69 to .15). The shortlist holds the memories at least RELEVANCE_FLOOR as
# relevant as the best, topped up in relevance order to top_k; memories the key and recency
# routes bring always stay in.
RELEVANCE_FLOOR = 0.5
# access_count at which the access part saturates.
ACCESS_SATURATION = 50


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
        return self.trust * sum(weight * getattr(self, name) for name, weight in weights.as_dict().items())


def recency(*, last_seen: datetime, at: datetime, decay_per_hour: float) -> float:
    hours = max(0.0, (at - last_seen).total_seconds() / 3600)
    return math.exp(-decay_per_hour * hours)


def access(count: int) -> float:
    return min(1.0, math.log1p(count) / math.log1p(ACCESS_SATURATION))
