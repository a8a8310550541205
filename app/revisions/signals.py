"""What the rule judge reads from one memory's text, in English and Chinese: whom it is
about, what it is about (topic terms, the opening phrase, an owner's attribute, names), its
typed values, and how it stands in time (cue phrases). Words come from app.text; every
vocabulary list is a lexicon file there."""

import re
from dataclasses import dataclass
from functools import lru_cache

from app.revisions.values import Value, anchored_numbers, extract_values, since
from app.text import (
    STOPWORDS,
    ZH_EMPTY_CHARS,
    ZH_FUNCTION_CHARS,
    cjk_bigrams,
    cjk_characters,
    is_cjk,
    lexicon,
    sentence_starts,
    sentences,
    stem,
    words,
)
from app.text.people import (
    RELATIONS,
    SELF_EN,
    SELF_ZH,
    opens_on_person,
    relations,
    subject,
)

_CUES = lexicon("cues")
_ATTRIBUTES = lexicon("attributes")
_GENERIC = lexicon("generic")
_EN_GENERIC = _GENERIC.words("en")
_ZH_GENERIC = _GENERIC.words("zh")
# Every word of every cue phrase: cues say that something changed, not what it is about.
_EN_CUE_WORDS = frozenset(
    word.strip("*").lower()
    for section in _CUES.sections()
    for phrase in _CUES[section].en
    for word in phrase.split()
)
# A change verb ends a sentence's opening phrase as a copula does ("The doctor raised ...").
_EN_CHANGE_WORDS = frozenset(
    word.strip("*").lower()
    for section in ("correction", "change", "start")
    for phrase in _CUES[section].en
    for word in phrase.split()
) - STOPWORDS
_ZH_CUE_PHRASES = sorted(
    {phrase.replace("…", "") for section in _CUES.sections() for phrase in _CUES[section].zh if len(phrase) > 1},
    key=len,
    reverse=True,
)
_ZH_PERSON_WORDS = sorted([*SELF_ZH, *(word for word in RELATIONS if not word.isascii())], key=len, reverse=True)
_ZH_NOT_TOPIC = re.compile("|".join(re.escape(word) for word in [*_ZH_CUE_PHRASES, *_ZH_PERSON_WORDS, *_ZH_GENERIC]))
_ZH_SPLIT = re.compile(rf"[{''.join(sorted(ZH_FUNCTION_CHARS))}\W\d|]+")
_COPULAS = frozenset("is are was were am be been has have had will would can could does do did".split())
# A colon opens a list or a title, whose first word is written capitalised ("... list: The Left
# Hand of Darkness"), as a sentence's is.
_AFTER_COLON = re.compile(r":\s+")
_TITLE = re.compile(r"[《「『“\"]([^》」』”\"]{1,30})[》」』”\"]")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9+#.\-]*")


@dataclass(frozen=True, slots=True)
class Signals:
    """Everything the rules read from one text."""

    text: str
    cjk: bool
    values: frozenset[Value]
    anchored: frozenset[tuple[str, str, bool]]  # (term, number, linked): see values.anchored_numbers
    since: tuple[int | None, int | None] | None  # (year, month) the stated state began ("since February")
    terms: frozenset[str]  # content terms: English stems, Chinese character bigrams, Latin words
    ordered: tuple[str, ...]  # the same terms in text order, repeats kept
    adjacent: frozenset[tuple[str, str]]  # a qualifier and the term it qualifies ("staging", "databas")
    skeleton: tuple[str, ...]  # the text's words (characters in Chinese), values and function words left out
    head: frozenset[str]  # terms of the opening phrase: what the sentence is about
    proper: frozenset[str]  # terms written capitalised inside a sentence (English)
    lower: frozenset[str]  # terms written in lower case (English)
    subject: str | None  # "self", a relation ("brother", "cat"), or None: a thing
    relations: frozenset[str]  # every relative, acquaintance or pet mentioned
    attribute: frozenset[str]  # the owner's attribute a possessive sentence sets (in Chinese, the user's)
    owned_attribute: frozenset[str]  # the same, read more loosely ("狗的兽医是…" → 兽医, "The cats' vet is …" → vet)
    names: frozenset[str]  # proper names, codes, identifiers, quoted titles
    families: frozenset[str]  # coarse attributes of a life the text touches
    single_families: frozenset[str]  # those of them a person has one of at a time
    correction: str | None
    change: str | None
    start: str | None
    ending: str | None
    present: str | None
    replacement: str | None
    retired: str | None  # the text says its predecessor is gone ("the old bike was given away")
    future: str | None  # an intention, or a time to come
    intention: str | None
    temporary: str | None
    habitual: str | None
    continuity: str | None
    additive: str | None
    unique: str | None  # a word making the value the only one ("favourite", "prefers", 最喜欢)
    negative: bool
    statements: int  # sentences that say something (two content words, four CJK characters)

    @property
    def cue(self) -> str | None:
        """The phrase saying outright that something changed or was corrected, if any."""
        return self.correction or self.change or self.start or self.ending

    @property
    def weak_cue(self) -> str | None:
        """A phrase that sets this statement against an older one without saying it
        changed ("now", "the new one"), if any."""
        return self.present or self.replacement


# --------------------------------------------------------------------------- English
def _sentence_starts(text: str) -> set[int]:
    return sentence_starts(text) | {match.end() for match in _AFTER_COLON.finditer(text)}


def _en_terms(text: str) -> tuple[list[str], set[str], set[str], set[str], set[tuple[str, str]]]:
    """Content stems in order; which were written capitalised mid-sentence (proper) and
    which in lower case; the opening phrase's stems (up to its first verb); and the pairs of
    stems written next to each other."""
    starts = _sentence_starts(text)
    ordered: list[str] = []
    proper: set[str] = set()
    lower: set[str] = set()
    head: set[str] = set()
    adjacent: set[tuple[str, str]] = set()
    opening = True
    previous: tuple[str, int] | None = None  # the last term and where it ended
    for match in re.finditer(r"[A-Za-z][A-Za-z'’]*", text):
        raw = match.group(0).strip("'’")
        word = raw.lower().replace("’", "'")
        base = word[:-2] if word.endswith("'s") else word
        if base in _COPULAS or base in _EN_CHANGE_WORDS or word.endswith(("'m", "'re", "'ve")) or len(head) >= 3:
            opening = False
        if (
            not base
            or base in STOPWORDS
            or base in _EN_CUE_WORDS
            or base in _EN_GENERIC
            or base in SELF_EN
            or base in RELATIONS
            or word.endswith(("n't", "n’t"))
        ):
            continue
        term = stem(base)
        if len(term) < 2:
            continue
        if previous and re.fullmatch(r"[\s-]*", text[previous[1] : match.start()]):
            adjacent.add((previous[0], term))
        # An owner is not a qualifier: "Initech's VP" says nothing of another "Initech X".
        previous = None if word.endswith("'s") else (term, match.end())
        ordered.append(term)
        if opening:
            head.add(term)
        if match.start() not in starts:
            (proper if raw[0].isupper() else lower).add(term)
    return ordered, proper, lower, head, adjacent


def _en_attribute(text: str, *, any_owner: bool = False) -> frozenset[str]:
    """Which attribute of its owner a possessive sentence sets: "User's favourite cuisine is
    ..." and "The billing service's on-call rotation is ..." set {cuisin} and {call, rotation};
    with `any_owner`, also an owner in the plural ("The cats' vet is ...") and a sentence that
    goes on with another verb than a copula ("The Civic's registration expires ...": the word
    after the owner)."""
    found = re.findall(r"[A-Za-z][\w'’-]*", text)[:10] if any_owner else words(text)[:10]
    tokens = [word.lower().replace("’", "'") for word in found]
    owned = ("'s", "s'") if any_owner else ("'s",)
    owner = next((index for index, token in enumerate(tokens) if token.endswith(owned) or token in ("my", "our")), None)
    copula = next((index for index, token in enumerate(tokens) if token in _COPULAS), None)
    if owner is None:
        return frozenset()
    if copula is None or copula <= owner + 1:
        if not any_owner or copula is not None:
            return frozenset()
        copula = owner + 2
    between = [token for token in tokens[owner + 1 : copula] if token not in STOPWORDS and token not in _EN_GENERIC]
    return frozenset(stem(token) for token in between if token not in RELATIONS)


# --------------------------------------------------------------------------- Chinese
def _blank(match: re.Match) -> str:
    return "|" * len(match.group(0))


def _zh_terms(text: str) -> tuple[list[str], set[str], set[tuple[str, str]]]:
    """Chinese terms in order: bigrams of the pieces between function characters,
    one-character pieces as they are (车, 猫), Latin words lower-cased. Terms in the first
    characters of the sentence are its opening phrase; in a run of characters, the bigram
    two before another is its qualifier (布艺 of 沙发 in 布艺沙发)."""
    body = _ZH_NOT_TOPIC.sub(_blank, text)
    ordered: list[str] = []
    head: set[str] = set()
    adjacent: set[tuple[str, str]] = set()
    first = re.search(r"[^\s|，。,.:：]", body)
    start = first.start() if first else 0
    for piece in _ZH_SPLIT.split(body):
        if not piece:
            continue
        offset = body.find(piece)
        for latin in _LATIN.findall(piece):
            if latin.lower() not in STOPWORDS:
                ordered.append(latin.lower())
        for run in re.findall(r"[^\x00-\x7f]+", piece):
            if run in ZH_EMPTY_CHARS:
                continue
            grams = cjk_bigrams(run)
            ordered += grams
            if len(grams) >= 3:
                adjacent.add((grams[-3], grams[-1]))  # the run's last word and its qualifier
            if offset - start < 5:
                head.update(grams)
    return ordered, head, adjacent


def _zh_attribute(text: str, *, any_owner: bool = False) -> frozenset[str]:
    """"用户的生日是…" → {生日}; with `any_owner`, "狗的兽医是…" → {兽医} too (an owner opening the
    sentence, a few characters or a name, then 的, the attribute and a copula)."""
    owner = r"(?:用户|我|[^的，。,.:：；;\s]{1,8}?)" if any_owner else r"(?:用户|我)"
    match = re.match(rf"^\s*{owner}\s*的([^\x00-\x7f的，。]{{1,6}}?)(?:是|叫|在|为)", text)
    if not match and any_owner:  # another verb than a copula: the two characters after 的 (思域的年检六月到期)
        match = re.match(rf"^\s*{owner}\s*的([^\x00-\x7f的，。]{{2}})", text)
    if not match or any(word in match.group(1) for word in RELATIONS if not word.isascii()):
        return frozenset()
    return frozenset(cjk_bigrams(match.group(1)))


# --------------------------------------------------------------------------- both
_SINGLE = frozenset(_ATTRIBUTES.sections(flag="single"))


def _families(text: str) -> frozenset[str]:
    return frozenset(family for family in _ATTRIBUTES.sections() if _ATTRIBUTES[family].find(text))


def _names(text: str, values: frozenset[Value], proper: set[str], cjk: bool) -> frozenset[str]:
    names = {value for kind, value in values if kind in ("entity", "code", "id")}
    names |= {title.lower() for title in _TITLE.findall(text)}
    if cjk:
        names |= {latin.lower() for latin in _LATIN.findall(text) if latin.lower() not in STOPWORDS}
    else:
        names |= proper
    return frozenset(names)


def _skeleton(masked: str, cjk: bool) -> tuple[str, ...]:
    """What is left to compare word by word once values, function words and punctuation are
    out: two texts that differ in one short stretch of it differ in one slot."""
    if cjk:
        return tuple(char for char in masked if char.isalnum() and char not in ZH_FUNCTION_CHARS)
    return tuple(
        stem(word.lower()) for word in re.findall(r"[A-Za-z][A-Za-z'’]*", masked) if word.lower() not in STOPWORDS
    )


_CLAUSES = re.compile(r"[.;!?。；！？\n]")
_CAPITALISED = re.compile(r"\b[A-Z][\w'’-]*")


def _cue_text(text: str, cjk: bool) -> str:
    """The text the cue phrases are looked for in: an English word written capitalised inside
    a sentence is part of a name or a title ("The Day the Music Stopped", "Never Let Me Go"),
    not a cue, and is blanked ("I" stays: "I was wrong"; so does a word in capitals, "NEVER",
    written so for weight)."""
    if cjk:
        return text
    starts = _sentence_starts(text)

    def blank(match: re.Match) -> str:
        word = match.group(0)
        if match.start() in starts or word.isupper() or re.fullmatch(r"I(?:['’]\w+)?", word):
            return word
        return " " * len(word)

    return _CAPITALISED.sub(blank, text)


def _retired(text: str) -> str | None:
    """A word naming a predecessor and a word ending it in one clause ("the old bike was given
    away", "the previous plan was cancelled", 原来的卡注销了): the two phrases."""
    for clause in _CLAUSES.split(text):
        predecessor = _CUES["predecessor"].find(clause)
        ending = predecessor and _CUES["ending"].find(clause)
        if ending:
            return f"{predecessor} ... {ending}"
    return None


@lru_cache(maxsize=4096)
def read(text: str) -> Signals:
    """Every signal of one text (cached: a text is judged many times)."""
    cjk = is_cjk(text)
    values, masked = extract_values(text, cjk)
    cues = _cue_text(text, cjk)
    if cjk:
        ordered, head, adjacent = _zh_terms(masked)
        proper, lower = set(), set()
        attribute = _zh_attribute(text)
        owned_attribute = _zh_attribute(text, any_owner=True)
    else:
        ordered, proper, lower, head, adjacent = _en_terms(masked)
        attribute = _en_attribute(text)
        owned_attribute = _en_attribute(text, any_owner=True)
    if opens_on_person(text):
        head = set()  # what it says of the person is the predicate, not an opening topic
    return Signals(
        text=text,
        cjk=cjk,
        values=values,
        since=since(text, cjk),
        anchored=frozenset((word if cjk else stem(word), number, linked) for word, number, linked in anchored_numbers(text, cjk)),
        terms=frozenset(ordered),
        ordered=tuple(ordered),
        adjacent=frozenset(adjacent),
        skeleton=_skeleton(masked, cjk),
        head=frozenset(head),
        proper=frozenset(proper),
        lower=frozenset(lower),
        subject=subject(text),
        relations=relations(text),
        attribute=attribute,
        owned_attribute=owned_attribute,
        names=_names(text, values, proper, cjk),
        families=(families := _families(text)),
        single_families=families & _SINGLE,
        correction=_CUES["correction"].find(cues),
        change=_CUES["change"].find(cues),
        start=_CUES["start"].find(cues),
        ending=_CUES["ending"].find(cues),
        present=_CUES["present"].find(cues),
        replacement=_CUES["replacement"].find(cues),
        retired=_retired(cues),
        future=_CUES["intention"].find(cues) or _CUES["future"].find(cues),
        intention=_CUES["intention"].find(cues),
        temporary=_CUES["temporary"].find(cues),
        habitual=_CUES["habitual"].find(cues),
        continuity=_CUES["continuity"].find(cues),
        additive=_CUES["additive"].find(cues),
        unique=_CUES["unique"].find(cues),
        negative=_CUES["negation"].find(cues) is not None,
        statements=_statements(text),
    )


def _statements(text: str) -> int:
    """How many sentences of the text say something: an end mark after a lone word ("Yes.",
    "Done!") or an abbreviation starts no second statement."""
    return sum(
        1
        for sentence in sentences(text)
        if cjk_characters(sentence) >= 4 or sum(1 for word in words(sentence) if word.isalpha() and word.lower() not in STOPWORDS) >= 2
    )


def change_cue(text: str) -> str | None:
    """The phrase in a text that says, or suggests, that something changed, or None."""
    signals = read(text)
    return signals.cue or signals.weak_cue


def is_future_plan(text: str) -> bool:
    """Whether the text announces a plan rather than states a current fact: an intention, or
    a time to come with no change it makes ("from next month the class moves to Sunday" is a
    scheduled change, "用户打算明年换工作" a plan)."""
    signals = read(text)
    return signals.intention is not None or (signals.future is not None and signals.cue is None)
