"""The offline rule judge: a table of named rules over what two texts have in common and
where they differ, plus the embedding similarity. No LLM.

Precision first. A rule that supersedes or merges (CONFLICT, REFINE, DUPLICATE) needs
evidence: the same statement with an incompatible value, an explicit change of that
statement, or a restatement. Everything weaker keeps both memories, linked. Each rule's
confidence is stated relative to `revision_confidence_threshold` (its `margin`): a rule with
a negative margin is never applied without review, whatever the threshold is set to.

Rules run in table order and the first that fires decides; guards that keep two memories
apart come first. `RuleJudge(disabled=...)` switches rules off (the benchmark's ablation).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.revisions import calibrated
from app.revisions.judgement import Candidate, Decision, JudgedMemory, Judgement
from app.revisions.pairs import LOOSE_KINDS, Pair, in_terms
from app.revisions.signals import read


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    margin: float  # confidence relative to the threshold
    reason: str
    rule: str


# A rule returns why it fires (shown in the revision log), or None.
Test = Callable[[Pair], str | None]


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    decision: Decision | None  # None: COEXIST when related, else UNRELATED
    margin: float
    test: Test
    summary: str


# Value kinds saying only when in a week or a day something happens.
_WHEN_KINDS = frozenset({"weekday", "daypart"})
# How close a candidate must be for a new text naming another thing of its kind to replace it
# when the two share no term (another name reads farther than a restated one).
_ANOTHER_NAME_CLOSENESS = 0.82


# ------------------------------------------------------------------ guards: keep both
def _different_keys(pair: Pair) -> str | None:
    if pair.new_key and pair.old_key and pair.new_key != pair.old_key:
        return f"different keys ({pair.old_key} / {pair.new_key})"
    return None


def _different_subjects(pair: Pair) -> str | None:
    if pair.different_subjects:
        return f"about different people ({pair.old.subject} / {pair.new.subject})"
    return None


def _plan(pair: Pair) -> str | None:
    new, old = pair.new, pair.old
    planned = new.intention or (new.future if not new.cue else None)
    if planned and not old.future:
        return f"a plan ('{planned}') does not replace a current fact"
    return None


def _temporary(pair: Pair) -> str | None:
    new, old = pair.new, pair.old
    if new.temporary and not old.temporary and not (new.correction or new.start):
        return f"a temporary state ('{new.temporary}') beside a lasting one"
    return None


def _additive(pair: Pair) -> str | None:
    if pair.new.additive and not (pair.new.change or pair.new.correction):
        return f"adds another ('{pair.new.additive}') beside the old one"
    return None


def _still(pair: Pair) -> str | None:
    if pair.new.continuity and not (pair.new.change or pair.new.correction):
        return f"says the old state still holds ('{pair.new.continuity}')"
    return None


def _other_attribute(pair: Pair) -> str | None:
    """Two possessive statements about different attributes of one owner."""
    new, old = pair.new, pair.old
    if new.attribute and old.attribute and not any(in_terms(t, old.attribute | old.terms) for t in new.attribute) and not any(
        in_terms(t, new.attribute | new.terms) for t in old.attribute
    ):
        return f"different attributes ({', '.join(sorted(old.attribute))} / {', '.join(sorted(new.attribute))})"
    return None


def _other_instance(pair: Pair) -> str | None:
    """The same kind of thing with another qualifier, and no word that it changed."""
    if pair.new.cue or pair.polarity_flip:
        return None
    if pair.swapped:
        return f"two of a kind ({pair.swapped})"
    new_ids = {value for kind, value in pair.new.values if kind == "id"}
    old_ids = {value for kind, value in pair.old.values if kind == "id"}
    if new_ids and old_ids and not new_ids & old_ids:
        return f"differently numbered things ({', '.join(sorted(old_ids))} / {', '.join(sorted(new_ids))})"
    return None


# ------------------------------------------------------------------ actions
def _grown(pair: Pair) -> bool:
    """The new text holds the old statement and more, and nothing says the statement changed:
    no change word, negation, clashing value, antonym or other person."""
    if not pair.extends or pair.different_subjects or pair.polarity_flip or pair.clashes or pair.antonym:
        return False
    return not (pair.new.cue or pair.new.weak_cue)


def _added_beside(pair: Pair) -> str | None:
    """The new text restates the old statement and joins another part to it ("User volunteers
    at the food bank on Saturdays" / "... on Saturdays and coaches youth soccer on Sundays"):
    another fact beside the old one, which both keep (no restatement folds it away)."""
    if _grown(pair) and pair.adds_beside:
        return "the old statement restated, another part joined to it"
    return None


def _extension(pair: Pair) -> str | None:
    """The new text restates the old statement, word for word and in order, and qualifies it
    ("User volunteers at the animal shelter" / "... at the animal shelter on Sundays, mostly
    walking the older dogs"): the new one holds everything the old one said, so it replaces
    it, with nothing lost. A change word, a negation, a clashing value or another person
    says the statement changed, not that it grew; a part joined with "and" is another fact
    (`added_beside`)."""
    if _grown(pair) and not pair.adds_beside:
        return "extension: the old statement restated with more detail"
    return None


def _restatement(pair: Pair) -> str | None:
    new, old = pair.new, pair.old
    if pair.polarity_flip or pair.clashes or pair.names_clash or new.cue or new.weak_cue or pair.requalified or pair.antonym:
        return None
    if pair.substituted or pair.other_families:
        return None
    if any(kind not in LOOSE_KINDS for kind, _ in pair.new_values):
        return None
    if any(not in_terms(name, old.names | old.terms) and name not in old.text.lower() for name in new.names):
        return None
    novel = sum(1 for term in new.terms if not in_terms(term, old.terms))
    lost = sum(1 for term in old.terms if not in_terms(term, new.terms))
    # A precise value both hold (none of the new text's is new) pins the statement down; a day of
    # the week or a part of the day is shared by many things one does ("周末带孩子去公园" /
    # "周末陪孩子上钢琴课").
    repeated = any(kind not in LOOSE_KINDS | _WHEN_KINDS for kind, _ in new.values)
    if new.cjk:
        # Chinese paraphrases share few bigrams: closeness carries it, with nothing new named.
        if pair.closeness >= 0.91 and (pair.overlap >= 0.3 or pair.closeness >= 0.95 or repeated):
            return "restatement: nearly the same text, the same values"
        return None
    # One word for another may be a synonym or another thing: only a close paraphrase that
    # keeps most of its words is a restatement. A word swapped in a sentence of two ("grew up in
    # Ohio" / "went to college in Ohio") keeps half of it: that takes the closer bar.
    swapped_one = novel == 1 and lost == 1
    if pair.overlap >= 0.5 and (
        (pair.closeness >= 0.95 and novel <= 2 and lost <= 2)
        or (pair.closeness >= 0.90 and novel <= 1 and lost <= 1 and (pair.overlap > 0.5 or not swapped_one))
    ):
        return f"restatement: {novel} new word(s), the same values"
    return None


def _several_statements(pair: Pair) -> str | None:
    """The old memory says several things and the new one neither restates it nor holds it
    whole: a change to one of them leaves the others true, and superseding or merging the
    memory would hide or bury them ("Lena moved the retro to Friday. The team lunch is on
    Thursday." / "The retro is back on Wednesday")."""
    if pair.old.statements > 1:
        return f"the old memory makes {pair.old.statements} statements"
    return None


def _value_update(pair: Pair) -> str | None:
    """The same statement with another value of a precise kind (a time, a date, a price ...)."""
    if not pair.clashes or pair.different_subjects:
        return None
    kinds = ", ".join(sorted(pair.clashes))
    common = pair.single_attribute
    cue = pair.cue or pair.weak_cue
    if cue and pair.same_subject and common:
        return f"'{cue}', the same person's {', '.join(sorted(common))} with a different {kinds}"
    if not pair.shared:
        return None
    # Other names beside the other value: another event of the kind, not this one changed.
    # Without a change word only the value may differ, and it must say what the statement is,
    # not when it happened: another day or part of the day is another occurrence ("In the
    # Friday stand-up Lena asked ..." / "In the Wednesday stand-up Lena asked ...").
    if pair.overlap >= 0.5 and not pair.names_clash and (cue or pair.clashes - _WHEN_KINDS):
        return f"the same statement with a different {kinds}"
    if pair.cue and (pair.overlap >= 0.25 or pair.same_subject or pair.ended):
        return f"'{pair.cue}' and a different {kinds}"
    opening = {term for term in pair.shared if term in pair.new.head and in_terms(term, pair.old.head)}
    if pair.weak_cue and opening and not pair.names_clash:
        return f"'{pair.weak_cue}', {', '.join(sorted(opening))} with a different {kinds}"
    return None


def _number_changed(pair: Pair) -> str | None:
    """A change word, and one named thing set to another number ("The pool is capped at
    max_connections 50" / "The DBA raised max_connections to 200")."""
    cue = pair.cue or pair.new.present
    if not cue or pair.different_subjects or not pair.renumbered:
        return None
    return f"'{cue}': {pair.renumbered}"


def _negated(pair: Pair) -> str | None:
    """The same statement, negated ("User likes sushi" / "User doesn't like sushi anymore")."""
    if pair.polarity_flip and pair.shared and pair.overlap >= 0.6 and not pair.different_subjects:
        return "the same statement, negated"
    if pair.polarity_flip and pair.new.negative and pair.cue and pair.shared and pair.overlap >= 0.3:
        return f"'{pair.cue}': the old statement no longer holds"
    return None


def _antonym(pair: Pair) -> str | None:
    if pair.antonym and pair.shared and pair.overlap >= 0.5 and not pair.different_subjects:
        return f"the same statement with opposite words ({pair.antonym[1]} / {pair.antonym[0]})"
    return None


def _explicit_change(pair: Pair) -> str | None:
    """A change word on the same topic and something of the old replaced: another name,
    another qualifier, or the old thing named as ended ("left Kestrel Health")."""
    cue = pair.cue
    if not pair.shared or pair.different_subjects:
        return None
    if pair.names_clash and (cue or (pair.weak_cue and pair.overlap >= 0.5)):
        return f"'{cue or pair.weak_cue}' about the same topic with another name"
    if not cue:
        return None
    if pair.swapped:
        return f"'{cue}' about the same topic, {pair.swapped}"
    if pair.ended:
        return f"'{pair.new.ending}' {', '.join(sorted(pair.ended))}"
    return None


def _predecessor_ended(pair: Pair) -> str | None:
    """The new text says the thing it took the place of is gone, and names another thing of
    the same attribute ("pays for a Tidal subscription to stream music" / "songs now come
    from Deezer Premium; the previous plan was cancelled")."""
    new = pair.new
    if not new.retired or pair.different_subjects or not pair.names_clash or pair.closeness < _ANOTHER_NAME_CLOSENESS:
        return None
    common = new.families & pair.old.families
    if not (common or pair.shared):
        return None
    topic = ", ".join(sorted(common or pair.shared))
    return f"'{new.retired}', another name for {topic}"


def _began_since(pair: Pair) -> str | None:
    """The new state began after the old memory was written, and it goes against the old
    one, for the same person, on a thing both name or an attribute a person has one of at a
    time: negated, or with a change word ("runs every morning", written last July / "hasn't
    run since February, after a knee surgery", written in April). An attribute of which a
    person has several is not enough: "hasn't had coffee since February" leaves "drinks green
    tea" standing."""
    if not pair.began_after_old or not pair.same_subject:
        return None
    against = "a negation" if pair.polarity_flip else pair.cue
    topic = pair.shared or pair.single_attribute
    if not topic or not against:
        return None
    return f"'{against}' on {', '.join(sorted(topic))}, begun after the old memory was written"


def _temporary_ended(pair: Pair) -> str | None:
    """The old state was temporary by its own words and the new one says it changed
    ("house-sitting for a friend in Vermont until Sunday" / "drove back home to Denver")."""
    if pair.old.temporary and pair.cue and pair.same_subject and pair.names_clash and not pair.new.temporary:
        return f"a temporary state ('{pair.old.temporary}') ended ('{pair.cue}')"
    return None


def _replaced_name(pair: Pair) -> str | None:
    """Nothing shared, but a change word, one attribute of one life and another name for it
    ("shares a Spotify family plan" / "music is now on YouTube Music; the previous
    subscription was cancelled")."""
    if not pair.cue or pair.different_subjects or not pair.names_clash or pair.closeness < _ANOTHER_NAME_CLOSENESS:
        return None
    common = pair.single_attribute
    if not common:
        return None
    return f"'{pair.cue}', another name for the same {', '.join(sorted(common))}"


def _changed_attribute(pair: Pair) -> str | None:
    """The same person, the same one-at-a-time attribute of a life (home, job, diet ...), and
    a word saying it changed ("用户把车卖了，现在每天挤地铁" / "每天开车上下班")."""
    common = pair.single_attribute
    if pair.cue and pair.same_subject and common:
        return f"'{pair.cue}' on the same person's {', '.join(sorted(common))}"
    return None


def _only_value_changed(pair: Pair) -> str | None:
    """One slot of the same sentence filled differently, where the sentence says its value is
    the only one ("User's favourite color is blue" / "... is green", "prefers tea" / "prefers
    coffee"): the new value replaces the old."""
    if not pair.substituted or pair.different_subjects or pair.clashes:
        return None
    if pair.new.unique and pair.old.unique and pair.new.unique.lower() == pair.old.unique.lower():
        old_slot, new_slot = pair.substituted
        return f"'{pair.new.unique}' says it is the only one: '{old_slot}' changed to '{new_slot}'"
    return None


def _slot_changed(pair: Pair) -> str | None:
    """One sentence with one slot filled differently and nothing saying it changed: an update
    or another thing of the kind. Held for review; ranking prefers the newer meanwhile."""
    if pair.substituted and not pair.different_subjects:
        old_slot, new_slot = pair.substituted
        return f"the same sentence with '{old_slot}' changed to '{new_slot}'"
    return None


def _likely_update(pair: Pair) -> str | None:
    """A change word (or a negation of the old) for the same person, on the same attribute of
    a life or with another name for it: a likely update that shares no evidence strong enough.
    Held for review; ranking prefers the newer meanwhile."""
    new = pair.new
    cue = pair.cue or pair.weak_cue or ("a negation" if pair.polarity_flip and new.negative else None)
    if not cue or not pair.same_subject:
        return None
    common = new.families & pair.old.families
    if common:
        return f"'{cue}' on the same attribute ({', '.join(sorted(common))})"
    if pair.names_clash and pair.closeness >= 0.8:
        return f"'{cue}' with another name"
    return None


def _elaboration(pair: Pair) -> str | None:
    """The new text opens on something the old one mentioned and adds detail to it."""
    negates = pair.new.negative and not pair.old.negative
    if not pair.refers_back or not pair.adds_detail or pair.clashes or negates or pair.new.cue:
        return None
    if pair.sets_other_attribute:
        return None  # "The dog's vet is Dr. Patel": another attribute of what the old one mentioned
    if pair.closeness < 0.8:
        return None
    return f"adds detail about {', '.join(sorted(pair.refers_back))}"


# ------------------------------------------------------------------ fallbacks
def _related(pair: Pair) -> str | None:
    return "related, no contradiction found" if pair.related else None


def _nothing(pair: Pair) -> str | None:
    return "no common topic"


RULES: tuple[Rule, ...] = (
    Rule("different_keys", None, 0.2, _different_keys, "both keyed, under different keys: different attributes"),
    Rule("different_subjects", None, 0.15, _different_subjects, "about different people"),
    Rule("plan", "COEXIST", 0.1, _plan, "a plan does not replace a current fact"),
    Rule("temporary", "COEXIST", 0.1, _temporary, "a temporary state beside a lasting one"),
    Rule("additive", "COEXIST", 0.1, _additive, "'also', 'another': added beside, not replacing"),
    Rule("still", "COEXIST", 0.1, _still, "'still': the old state holds"),
    Rule("other_attribute", "COEXIST", 0.1, _other_attribute, "possessive statements about different attributes"),
    Rule("added_beside", "COEXIST", 0.1, _added_beside, "the old statement restated with another part joined to it"),
    Rule("extension", "REFINE", 0.1, _extension, "the old statement restated word for word with more detail"),
    Rule("restatement", "DUPLICATE", 0.15, _restatement, "the same statement again"),
    Rule("several_statements", None, 0.1, _several_statements, "the old memory says several things: one changed leaves the rest"),
    Rule("only_value_changed", "CONFLICT", 0.05, _only_value_changed, "the one value of a favourite or preference changed"),
    Rule("other_instance", "COEXIST", 0.1, _other_instance, "another qualifier or number, no change word"),
    Rule("value_update", "CONFLICT", 0.2, _value_update, "the same statement, another value of a precise kind"),
    Rule("number_changed", "CONFLICT", 0.1, _number_changed, "a change word, one named thing set to another number"),
    Rule("negated", "CONFLICT", 0.15, _negated, "the same statement negated"),
    Rule("antonym", "CONFLICT", 0.1, _antonym, "the same statement with an opposite word"),
    Rule("explicit_change", "CONFLICT", 0.12, _explicit_change, "a change word acting on the same topic"),
    Rule("predecessor_ended", "CONFLICT", 0.05, _predecessor_ended, "the old one said to be gone, another name for it"),
    Rule("began_since", "CONFLICT", 0.05, _began_since, "a state begun after the old memory, against it on the same thing"),
    Rule("temporary_ended", "CONFLICT", 0.05, _temporary_ended, "a temporary state said to have ended"),
    Rule("replaced_name", "CONFLICT", 0.02, _replaced_name, "a change word, one attribute, another name"),
    Rule("changed_attribute", "CONFLICT", 0.02, _changed_attribute, "a change word on the same attribute of one person"),
    Rule("slot_changed", "CONFLICT", -0.1, _slot_changed, "one slot of the same sentence changed, no cue (held)"),
    Rule("likely_update", "CONFLICT", -0.1, _likely_update, "a likely update without strong evidence (held)"),
    # Held: on the report split a merge swallowed separate facts more often than it joined one.
    Rule("elaboration", "REFINE", -0.05, _elaboration, "a detail of something the old memory mentioned (held)"),
    Rule("related", "COEXIST", 0.0, _related, "related, no contradiction"),
    Rule("nothing", "UNRELATED", 0.1, _nothing, "nothing in common"),
)
# The calibrated pair model (app/revisions/calibrated.py) decides after the table, on what
# the table left open; it is switched off by this name like a rule.
CALIBRATED = "calibrated"
RULE_NAMES = (*(rule.name for rule in RULES), CALIBRATED)
# The fallbacks decide when nothing else does; switching them off would leave no answer.
FALLBACKS = frozenset({"related", "nothing"})


def _table(pair: Pair, disabled: frozenset[str]) -> Verdict:
    for rule in RULES:
        if rule.name in disabled and rule.name not in FALLBACKS:
            continue
        reason = rule.test(pair)
        if reason is None:
            continue
        decision = rule.decision or ("COEXIST" if pair.related else "UNRELATED")
        return Verdict(decision, rule.margin, reason, rule.name)
    raise AssertionError("the fallback rules always decide")


def verdict(
    pair: Pair, *, disabled: frozenset[str] = frozenset(), behind_best: float = 0.0
) -> Verdict:
    """The table's verdict; where it left the pair open (a held rule, a fallback), the
    calibrated model's action when its probability reaches the acting one, stated as the
    margin above it. `behind_best`: how much less similar the candidate is than the write's
    nearest candidate."""
    decided = _table(pair, disabled)
    model = calibrated.load() if CALIBRATED not in disabled else None
    called = calibrated.call(model, pair, decided.rule, behind_best) if model else None
    if called is None or called.margin < 0:
        return decided
    reason = f"calibrated {called.decision} p={called.probability:.3f} (acts from {called.probability - called.margin:.3f}); {decided.reason}"
    return Verdict(called.decision, called.margin, reason, CALIBRATED)


# ------------------------------------------------------------------ the judge
def merge(old: str, new: str) -> str:
    """One text keeping both memories' details: the old fact, then the new."""
    old, new = old.strip(), new.strip()
    if read(old).cjk:
        return old + ("" if old.endswith(("。", "！", "？", "!", "?")) else "。") + new
    return old + ("" if old.endswith((".", "!", "?")) else ".") + " " + new


def _merged(old: str, new: str, verdict_: Verdict) -> str | None:
    """What a REFINE stores: the new text alone when it holds the old one (an extension), else
    both texts."""
    if verdict_.decision != "REFINE":
        return None
    return new.strip() if verdict_.rule == "extension" else merge(old, new)


def _demote(verdict: Verdict, why: str) -> Verdict:
    return Verdict("COEXIST", 0.0, f"{verdict.reason}, but {why}", verdict.rule)


def _coherent(verdicts: list[Verdict], candidates: Sequence[Candidate]) -> list[Verdict]:
    """One write's judgements agree: a restatement changes nothing else, one merge at a time
    (the closest), and a held conflict goes to the closest candidate only."""
    if any(v.decision == "DUPLICATE" for v in verdicts):
        return [
            _demote(v, "the new memory restates another one") if v.decision in ("CONFLICT", "REFINE") else v
            for v in verdicts
        ]
    by_similarity = sorted(range(len(candidates)), key=lambda i: -candidates[i].similarity)
    kept_refine = next((i for i in by_similarity if verdicts[i].decision == "REFINE"), None)
    closest_held = next((i for i in by_similarity if verdicts[i].decision == "CONFLICT" and verdicts[i].margin < 0), None)
    result = []
    for index, verdict_ in enumerate(verdicts):
        if verdict_.decision == "REFINE" and index != kept_refine:
            verdict_ = _demote(verdict_, "a closer candidate takes the merge")
        elif verdict_.decision == "CONFLICT" and verdict_.margin < 0 and index != closest_held:
            verdict_ = _demote(verdict_, "a closer candidate takes the likely update")
        result.append(verdict_)
    return result


class RuleJudge:
    """Deterministic judge: the first rule of the table that fires decides."""

    name = "rules"

    def __init__(self, *, threshold: float = 0.7, disabled: frozenset[str] = frozenset()) -> None:
        unknown = disabled - set(RULE_NAMES)
        if unknown:
            raise ValueError(f"no rules named {sorted(unknown)}")
        self.threshold = threshold
        self.disabled = disabled

    def _confidence(self, margin: float) -> float:
        return round(min(1.0, max(0.0, self.threshold + margin)), 4)

    def judge(self, new: JudgedMemory, candidates: Sequence[Candidate]) -> list[Judgement]:
        """One judgement per candidate, in the candidates' order."""
        signals = read(new.content)
        best = max((c.similarity for c in candidates), default=0.0)
        verdicts = _coherent(
            [
                verdict(
                    Pair(
                        signals,
                        read(c.memory.content),
                        c.similarity,
                        new_key=new.key,
                        old_key=c.memory.key,
                        new_at=new.created_at,
                        old_at=c.memory.created_at,
                    ),
                    disabled=self.disabled,
                    behind_best=best - c.similarity,
                )
                for c in candidates
            ],
            candidates,
        )
        return [
            Judgement(
                memory_id=candidate.memory.id,
                decision=verdict_.decision,
                confidence=self._confidence(verdict_.margin),
                reason=f"{verdict_.reason} [{verdict_.rule}]",
                merged_content=_merged(candidate.memory.content, new.content, verdict_),
            )
            for candidate, verdict_ in zip(candidates, verdicts, strict=True)
        ]
