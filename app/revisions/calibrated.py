"""A calibrated pair model over the rule judge's general signals: for a pair the rules could
not decide on their own (a judgement they hold, or no rule but "related"/"nothing"), how
likely each action (CONFLICT, REFINE, DUPLICATE) is to be the right one.

It is a multinomial logistic regression over a small feature vector: which held rule fired,
the embedding closeness, word overlap, the same person, cue words from the lexicons, a
changed slot, clashing values and names, and the time between the two memories. The weights
and the probability each action must reach are data (`lexicons/pair_model.json`), fitted by
`python -m app.bench.calibrate` on the benchmark's tuning split only. An action is taken from
a probability the model itself puts at 0.98 or more and at which, in cross-validation on that
split, at least 98% of its calls were right. The service reads only that file, never the
benchmark's labels.

A judgement the model takes is stated, like every rule, relative to the threshold: its
confidence is `revision_confidence_threshold + (p - acting probability)`."""

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from app.revisions.pairs import Pair, in_terms
from app.revisions.signals import Signals
from app.text import lexicon, words

MODEL_PATH = Path(__file__).resolve().parent.parent / "text" / "lexicons" / "pair_model.json"
ACTIONS = ("CONFLICT", "REFINE", "DUPLICATE")
KEEP = "KEEP"  # COEXIST or UNRELATED: both stay
CLASSES = (KEEP, *ACTIONS)
# The verdicts the model may decide: the held rules and the fallbacks. A guard that keeps two
# memories apart, and a rule sure enough to act, stand as they are.
OPEN_RULES = ("slot_changed", "likely_update", "elaboration", "related", "nothing")
_REFERENCE = lexicon("cues").words("en", "reference")


def _opens_on_reference(signals: Signals) -> bool:
    """The text goes on about something said before: an English one opens on a determiner or
    pronoun, a Chinese one names no one."""
    if signals.cjk:
        return signals.subject is None
    first = words(signals.text)[:1]
    return bool(first) and first[0].lower() in _REFERENCE


def _share(terms: frozenset[str], others: frozenset[str]) -> float:
    return sum(1 for term in terms if in_terms(term, others)) / len(terms) if terms else 0.0


def features(pair: Pair, rule: str, behind_best: float) -> dict[str, float]:
    """The named features of one pair (a new memory, an older candidate) as the rules see it,
    with the rule that decided it, the days between the two memories, and how much less
    similar this candidate is than the write's nearest one (0 for the nearest)."""
    new, old = pair.new, pair.old
    values = {f"rule_{name}": float(rule == name) for name in OPEN_RULES}
    values.update(
        closeness=pair.closeness,
        overlap=pair.overlap,
        old_contained=_share(old.terms, new.terms),  # how much of the old statement the new one restates
        new_novel=1.0 - _share(new.terms, old.terms),
        same_subject=float(pair.same_subject),
        no_subject=float(new.subject is None and old.subject is None),
        cue=float(new.cue is not None),
        weak_cue=float(new.weak_cue is not None),
        ending=float(new.ending is not None),
        polarity_flip=float(pair.polarity_flip),
        clashes=float(bool(pair.clashes)),
        names_clash=float(pair.names_clash),
        substituted=float(pair.substituted is not None),
        same_family=float(bool(new.families & old.families)),
        single_attribute=float(bool(pair.single_attribute)),
        refers_back=float(bool(pair.refers_back)),
        opens_on_reference=float(_opens_on_reference(new)),
        same_opening=float(pair.same_opening),
        unique=float(new.unique is not None and old.unique is not None),
        new_values=float(bool(pair.new_values)),
        cjk=float(new.cjk),
        log_gap_days=math.log1p(max(pair.gap_days, 0.0)),
        nearest=float(behind_best <= 0.0),
        behind_best=max(behind_best, 0.0),
    )
    return values


@dataclass(frozen=True)
class PairModel:
    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray  # classes x (features + 1), the last column the intercept
    acting: dict[str, float]  # per action, the probability from which it is taken

    def probabilities(self, named: dict[str, float]) -> dict[str, float]:
        x = (np.array([named[name] for name in self.names]) - self.mean) / self.scale
        logits = self.weights @ np.append(x, 1.0)
        exp = np.exp(logits - logits.max())
        return dict(zip(CLASSES, (exp / exp.sum()).tolist(), strict=True))

    def to_json(self, **provenance) -> dict:
        return {
            **provenance,
            "classes": list(CLASSES),
            "features": list(self.names),
            "mean": self.mean.round(6).tolist(),
            "scale": self.scale.round(6).tolist(),
            "weights": self.weights.round(6).tolist(),
            "acting": {action: round(p, 6) for action, p in self.acting.items()},
        }

    @classmethod
    def from_json(cls, data: dict) -> "PairModel":
        if tuple(data["classes"]) != CLASSES:
            raise ValueError(f"pair model classes {data['classes']} are not {list(CLASSES)}")
        return cls(
            names=tuple(data["features"]),
            mean=np.array(data["mean"], dtype=float),
            scale=np.array(data["scale"], dtype=float),
            weights=np.array(data["weights"], dtype=float),
            acting={action: float(p) for action, p in data["acting"].items()},
        )


@cache
def load(path: Path = MODEL_PATH) -> PairModel | None:
    """The fitted model, or None when no file was fitted (the rules alone then decide)."""
    if not path.exists():
        return None
    return PairModel.from_json(json.loads(path.read_text(encoding="utf-8")))


@dataclass(frozen=True, slots=True)
class Call:
    decision: str
    margin: float  # p - the acting probability: >= 0 when taken
    probability: float


def barred(pair: Pair, decision: str) -> str | None:
    """Why no confidence may take an action on this pair: what the rules know to be another
    thing. A merge never joins two statements opening on the same owner (another attribute
    of it, "The billing service is written in Go" / "The billing service's on-call rotation
    is weekly"), a changed or contradicted one; an update names the attribute the old
    statement sets ("User's phone number is 555-0100" / "got a new phone" is not one); a restatement
    never has a value, a name or a slot of its own."""
    if decision == "REFINE":
        if pair.same_opening:
            return "both open on the same owner: another attribute of it, not a detail"
        if pair.other_families:
            return "each touches an attribute of a life the other does not: another statement"
        if pair.substituted:
            return "one slot of the sentence filled differently: an update or another of the kind, not a detail"
        if pair.sets_other_attribute:
            return f"the new statement sets an attribute the old one does not name ({', '.join(sorted(pair.new.owned_attribute))})"
        if pair.new.cue or pair.clashes or (pair.new.negative and not pair.old.negative):
            return "the new statement changes the old one"
    if decision == "CONFLICT" and pair.old.attribute and not all(in_terms(term, pair.new.terms) for term in pair.old.attribute):
        return f"the new statement does not name the attribute the old one sets ({', '.join(sorted(pair.old.attribute))})"
    if decision == "DUPLICATE" and (pair.substituted or pair.clashes or pair.names_clash or pair.new_values or pair.polarity_flip):
        return "the new statement holds something the old one does not"
    return None


def choose(probabilities: dict[str, float], barred_actions: frozenset[str]) -> tuple[str, float] | None:
    """The likeliest action and its probability, unless keeping both is likelier or the pair
    bars that action."""
    best = max(ACTIONS, key=lambda action: probabilities[action])
    if probabilities[best] < probabilities[KEEP] or best in barred_actions:
        return None
    return best, probabilities[best]


def barred_actions(pair: Pair) -> frozenset[str]:
    return frozenset(action for action in ACTIONS if barred(pair, action))


def call(model: PairModel, pair: Pair, rule: str, behind_best: float) -> Call | None:
    """The action the model would take on an open pair, with its margin (negative: short of
    the acting probability), or None (see `choose`)."""
    if rule not in OPEN_RULES:
        return None
    chosen = choose(model.probabilities(features(pair, rule, behind_best)), barred_actions(pair))
    if chosen is None:
        return None
    decision, probability = chosen
    return Call(decision, probability - model.acting[decision], probability)
