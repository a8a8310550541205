"""Offline extraction: first-person statements about the user become keyed facts.

The frames and word lists are data (lexicon/attributes.json, lexicon/words.json); this module
compiles them and applies them. Precision comes first, since a wrong key supersedes a correct
memory: a frame must start a clause (so "if I lived in Paris" and "my friend lives in Paris"
never match), state the fact in the present ("I lived in", "I'm moving to", "I'd love" do not
match), and capture a value of the expected shape (a capitalised place, a name, a short noun
phrase that is no pronoun or filler). Questions are skipped, and so are messages longer than
`extraction_rule_max_chars`, which are mostly pasted material rather than the user speaking.
"""

import json
import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from app.text import cjk_characters, sentences

_LEXICON = Path(__file__).parent / "lexicon"

_LATIN = re.compile(r"[A-Za-z]")

# ----------------------------------------------------------------------------- English slots
_SUBJECT = {"self": r"(?:i|the user|user)", "third": r"(?:the user|user)"}
_POSSESSIVE = {"self": r"(?:my|the user's|user's)", "third": r"(?:the user's|user's)"}
_BE = r"(?:\s+(?:am|is)|'m|'s)"
_HAVE = r"(?:\s+(?:have|has)|'ve|'s)"
_ADVERBS = r"(?:\s+(?:currently|now|actually|just|recently|finally|also|still|really|absolutely|totally|definitely|truly|officially|already|mostly))*"
_FREQUENCY = r"(?:\s+(?:usually|normally|always|typically|generally|often|mostly|regularly))?"
_LEAD_IN = (
    r"(?:(?:well|oh|so|and|but|also|now|actually|yes|yeah|yep|ok|okay|hey|hi|hello|btw|by the way|fyi"
    r"|just so you know|as you know|honestly|basically|anyway|anyways|plus|fun fact|update|quick update)[,:!]?\s+)*"
)
# Words that end a short noun phrase: it may not contain them, and may be followed by them.
_NP_STOPS = (
    "and|or|but|because|since|so|when|whenever|while|if|with|without|in|on|at|for|from|to|of|about|as|than|then"
    "|too|very|really|much|more|anymore|again|either|now|though|although|which|that|who|especially|like|except"
    "|instead|rather|by|during|after|before|until|via|through|over|under|into|onto|is|are|was|were|be|been|being"
    "|it|all|every|each|most|best|better|least|right|today|tonight|sometimes|always|usually|often|lately|these|those"
)
_NP_WORD = rf"(?!(?:{_NP_STOPS})\b)[a-z][a-z'-]*"
_NP = rf"{_NP_WORD}(?:\s+{_NP_WORD}){{0,3}}"
# What may follow a phrase that ends its clause: a few words that leave the fact as it is.
_NP_TAIL = r"(?:\s+(?:a lot|so much|very much|too|as well|anymore|any more|now|these days|nowadays|lately|again|in general|the most|most))?"
_CLAUSE_END = (
    r"(?="
    + _NP_TAIL
    + r"\s*(?:$|[.!;:)\]\"]|,|\s+(?:and|but|because|so|since|though|although|while|or|whenever|when|if)\b))"
)
# A word of a list that ends its frame may be followed by little more than the clause's end.
_LEX_END = r"(?=\s*(?:$|[.!,;:)]|\s+(?:and|but|at|in|for|with|now|who|so|because|since|too|as well|anymore)\b))"
_CAPITALISED = r"[A-Z][\w'.&-]*"
_PLACE = rf"(?-i:(?:(?i:the)\s+)?(?!I\b){_CAPITALISED}(?:\s+(?:of\s+|de\s+|del\s+|la\s+|on\s+|upon\s+)?(?!I\b){_CAPITALISED}){{0,4}}(?:,\s+(?!I\b)[A-Z][\w.]*(?:\s+[A-Z][\w.]*)?)?)"
_ORG = (
    r"(?-i:(?!I\b)[A-Z0-9][\w'.&-]*(?:\s+(?:of\s+|and\s+|&\s+|for\s+|de\s+|the\s+)?(?!I\b)[A-Z0-9][\w'.&-]*){0,5})"
)
_NAME = r"(?-i:(?!I\b)[A-Z][a-z-]+(?:\s+(?!I\b)[A-Z][a-z-]+)?)(?![\w'’-])"
_TIME = r"(?:\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|\d{1,2}:\d{2}|\d{1,2}(?=\s*(?:$|[.!,;]|\s+(?:every|each|on|in|at|and|o'clock)))|noon|midnight)(?:\s*o'clock)?"
_DAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_WHEN = (
    rf"(?:(?:every|each)\s+(?:day|morning|evening|night|weekday|weekend|week|other day|{_DAY})"
    rf"(?:\s+(?:morning|afternoon|evening|night))?|on\s+(?:{_DAY}s|weekends|weekdays)(?:\s+and\s+{_DAY}s)?)"
    rf"(?:\s+at\s+{_TIME})?"
)
_MONTH = r"(?:january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?"
_DATE = rf"(?:{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}})?)"
_NUMBER = r"\d{1,3}"

# ----------------------------------------------------------------------------- Chinese slots
_ZH_SUBJECT = {"self": r"(?:我|用户)", "third": r"用户"}
_ZH_ADVERBS = r"(?:现在|目前|已经|刚刚|刚|最近|其实|也|还|一直|终于|如今)*"
_ZH_FREQUENCY = r"(?:平时|平常|一般|通常|每天|总是|都)*"
# A change placed in the past ("上个月搬到了杭州") is current now; a future one never matches.
_ZH_PAST = r"(?:(?:上个?(?:月|星期|礼拜|周)|去年|前年|前几天|前些天|前段时间|几天前|上周末|年初|月初|今年年初|刚才|之前)[，,]?)?"
_ZH_LEAD_IN = r"(?:(?:其实|现在|目前|对了|另外|顺便说一下|顺便说|嗯|哦|告诉你|跟你说|我跟你说|说一下)[，,]?)*"
_ZH_PUNCT = r"，。！？；、,.!?;\s"
_ZH_TEXT = r"[\u4e00-\u9fffA-Za-z]"
_ZH_DIGITS = r"[0-9〇一二两三四五六七八九十]"
_ZH_SLOTS = {
    # (pattern, what may follow it when it ends the frame)
    "zplace": (
        rf"{_ZH_TEXT}{{2,12}}?",
        rf"(?=的|了|工作|上班|生活|读书|定居|住|啦|呢|吧|啊|和|跟|与|去|来|[{_ZH_PUNCT}]|$)",
    ),
    "zorg": (r"[\u4e00-\u9fffA-Za-z0-9&]{2,20}?", rf"(?=了|工作|上班|任职|就职|实习|做|当|读书|上学|[{_ZH_PUNCT}]|$)"),
    "zname": (rf"{_ZH_TEXT}{{1,4}}?", rf"(?=是|今年|也|在|和|了|[{_ZH_PUNCT}]|$)"),
    "znp": (r"[\u4e00-\u9fffA-Za-z0-9]{1,10}?", rf"(?=的|了|啦|呢|吧|啊|哦|[{_ZH_PUNCT}]|$)"),
    "ztime": (
        rf"(?:早上|上午|中午|下午|晚上|凌晨)?{_ZH_DIGITS}{{1,3}}(?:点半|点钟|点(?:{_ZH_DIGITS}{{1,3}}分?)?|:\d{{2}})",
        "",
    ),
    "zwhen": (
        r"(?:每天|每周[一二三四五六日天]|每个?周末|每个?(?:星期|礼拜)[一二三四五六日天]|周[一二三四五六日末])(?:早上|上午|中午|下午|晚上)?",
        "",
    ),
    "zdate": (rf"(?:\d{{4}}年)?{_ZH_DIGITS}{{1,3}}月{_ZH_DIGITS}{{1,3}}[日号]", ""),
    "znum": (rf"{_ZH_DIGITS}{{1,3}}", ""),
}

_SLOT = re.compile(r"\{(\w+)(?::(\w+))?(?::(\w+))?\}")
_SPLIT_LIST = re.compile(r",\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\s*[、和及与]\s*")
_EN_CLAUSE_STARTS = re.compile(
    r"(?:[,;:]\s*|\s+-\s+|\s+(?:and|but|so|because|since|though|although|while|whereas|plus|also|now|then)\s+)"
    r"(?=(?:i|my|the user|user)\b)",
    re.IGNORECASE,
)
_ZH_CLAUSE_STARTS = re.compile(r"[，,、]|但是|可是|不过|而且|所以|因为")
_ZH_QUESTION = re.compile(r"[？?]\s*$|[吗呢嘛]\s*[。.]?\s*$")


@dataclass(frozen=True, slots=True)
class Fact:
    """One keyed fact read from a message."""

    key: str  # after "<namespace>:user:"
    content: str
    query_hint: str
    language: str
    evidence: str  # the words that matched


@dataclass(frozen=True)
class _Frame:
    key: str
    language: str
    content: str
    query: str
    patterns: dict[str, re.Pattern[str]]  # by subject kind: "self" or "third"
    list_values: bool  # {nps}: one fact per listed value


@cache
def _words() -> dict[str, list[str]]:
    return json.loads((_LEXICON / "words.json").read_text(encoding="utf-8"))


@cache
def _not_values() -> tuple[frozenset[str], tuple[str, ...]]:
    words = _words()
    return frozenset(words["not_values"]), tuple(words["not_values_zh"])


def _alternation(words: list[str]) -> str:
    return "|".join(re.escape(word).replace(r"\ ", r"\s+") for word in sorted(set(words), key=len, reverse=True))


# Slots whose value is a capitalised name: filler words cannot be one, but "the" may lead it.
_NAMED_KINDS = frozenset({"place", "org", "name", "thing"})
_FREE_KINDS = _NAMED_KINDS | {"np", "nps"}
_PRONOUNS = frozenset(
    "i me my mine you your yours he him his she her hers it its we us our ours they them their theirs".split()
)


def _group(label: str | None, body: str, kind: str, counter: list[int]) -> str:
    counter[0] += 1
    # Group names carry the label and the slot kind; the count keeps repeated labels distinct.
    return f"(?P<{label or 'value'}__{kind}__{counter[0]}>{body})"


def _en_slot(name: str, label: str | None, extra: str | None, *, subject: str, at_end: bool, counter: list[int]) -> str:
    fixed = {
        "subj": _SUBJECT[subject],
        "my": _POSSESSIVE[subject],
        "be": _BE,
        "have": _HAVE,
        "adv": _ADVERBS,
        "freq": _FREQUENCY,
    }
    if name in fixed:
        return fixed[name]
    if name == "lex":
        body, label = rf"(?:{_alternation(_words()[label])})(?![\w-])" + (_LEX_END if at_end else ""), extra
    elif name in ("np", "thing", "nps"):
        phrase = {
            "np": _NP,
            "nps": rf"{_NP}(?:(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+){_NP})*",
            "thing": rf"(?:{_ORG}|{_NP})",
        }[name]
        body = phrase + (_CLAUSE_END if at_end else "")
    else:
        body = {
            "place": _PLACE,
            "org": _ORG,
            "name": _NAME,
            "time": _TIME,
            "when": _WHEN,
            "date": _DATE,
            "num": _NUMBER,
        }[name]
        if name == "num":
            body += r"(?!\d)"
    return _group(label, body, name, counter)


def _zh_slot(name: str, label: str | None, extra: str | None, *, subject: str, at_end: bool, counter: list[int]) -> str:
    fixed = {"zsubj": _ZH_SUBJECT[subject], "zadv": _ZH_ADVERBS, "zfreq": _ZH_FREQUENCY, "zpast": _ZH_PAST}
    if name in fixed:
        return fixed[name]
    if name == "zlex":
        return _group(extra, f"(?:{_alternation(_words()[label])})", name, counter)
    body, end = _ZH_SLOTS[name]
    return _group(label, body + (end if at_end else ""), name, counter)


def _compile(pattern: str, *, language: str, subject: str) -> re.Pattern[str]:
    counter = [0]
    tail = pattern.rstrip(")")
    last_slot = list(_SLOT.finditer(tail))[-1] if _SLOT.search(tail) else None
    ends_with_slot = last_slot is not None and last_slot.end() == len(tail)

    def expand(match: re.Match[str]) -> str:
        at_end = ends_with_slot and match.start() == last_slot.start()  # type: ignore[union-attr]
        slot = _en_slot if language == "en" else _zh_slot
        return slot(match.group(1), match.group(2), match.group(3), subject=subject, at_end=at_end, counter=counter)

    if language == "en":
        body = _SLOT.sub(expand, pattern.replace(" ", r"\s+"))
        return re.compile(_LEAD_IN + body, re.IGNORECASE)
    return re.compile(_ZH_LEAD_IN + _SLOT.sub(expand, pattern))


@cache
def _frames() -> tuple[_Frame, ...]:
    data = json.loads((_LEXICON / "attributes.json").read_text(encoding="utf-8"))
    frames = []
    for attribute in data["attributes"]:
        for language in ("en", "zh"):
            spec: dict[str, Any] | None = attribute.get(language)
            if spec is None:
                continue
            for pattern in spec["patterns"]:
                by_subject = {}
                for subject in ("self", "third"):
                    # "I"/"我" only ever speak in the user's own messages; a frame without a subject
                    # ("call me ...", "联系我...") is the speaker's own statement too.
                    if subject == "third" and not re.search(r"\{z?(?:subj|my)\}", pattern):
                        continue
                    by_subject[subject] = _compile(pattern, language=language, subject=subject)
                frames.append(
                    _Frame(
                        key=attribute["key"],
                        language=language,
                        content=spec["content"],
                        query=spec["query"],
                        patterns=by_subject,
                        list_values="{nps}" in pattern or language == "zh" and attribute["key"].endswith(":{value}"),
                    )
                )
    return tuple(frames)


def _captures(match: re.Match[str]) -> dict[str, tuple[str, str]]:
    """label -> (text, slot kind), the first capture of each label."""
    found: dict[str, tuple[str, str]] = {}
    for group, text in match.groupdict().items():
        if text:
            label, _, rest = group.partition("__")
            found.setdefault(label, (text, rest.partition("__")[0]))
    return found


def _clean(value: str) -> str:
    return value.strip().rstrip(".,;:!?)").strip()


def _acceptable(value: str, kind: str, language: str) -> bool:
    english, chinese = _not_values()
    if not value:
        return False
    if language == "zh":
        return not any(value.startswith(word) for word in chinese)
    lowered = value.lower()
    if kind not in _FREE_KINDS:
        return True  # a word of a list, a time, a date: its shape is the check
    if kind in _NAMED_KINDS:
        return lowered not in english and not re.fullmatch(rf"{_DAY}|{_MONTH}", lowered)
    words = lowered.split()
    # A phrase pointing at someone ("seeing her grow", "using my skills") is no fact of its own.
    return words[0] not in english and lowered not in english and not _PRONOUNS.intersection(words)


def slug(text: str) -> str:
    """A key segment for a value: lower case, word characters and underscores, bounded."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"[^\w]+", "_", folded).strip("_")[:60]


def _article(value: str) -> str:
    return "an" if value[:1].lower() in "aeiou" else "a"


def _facts_of(match: re.Match[str], frame: _Frame) -> list[Fact]:
    captures = {label: (_clean(text), kind) for label, (text, kind) in _captures(match).items()}
    raw, kind = captures.pop("value", ("", ""))
    values = [_clean(part) for part in _SPLIT_LIST.split(raw)] if frame.list_values else [raw]
    if not all(_acceptable(text, other_kind, frame.language) for text, other_kind in captures.values()):
        return []
    facts = []
    for value in values:
        if not _acceptable(value, kind, frame.language):
            continue
        fields = {**{label: text for label, (text, _) in captures.items()}, "value": value, "a": _article(value)}
        key_fields = {name: slug(text) for name, text in fields.items()}
        key = frame.key.format_map(key_fields)
        if not all(key.split(":")):
            continue
        facts.append(
            Fact(
                key=key,
                content=frame.content.format_map(fields),
                query_hint=frame.query.format_map(fields),
                language=frame.language,
                evidence=match.group(0).strip(),
            )
        )
    return facts


def _en_clauses(text: str) -> list[str]:
    clauses = []
    for sentence in sentences(text):
        if sentence.endswith("?"):
            continue
        starts = [0] + [match.end() for match in _EN_CLAUSE_STARTS.finditer(sentence)]
        clauses += [sentence[start:] for start in starts]
    return clauses


def _zh_clauses(text: str) -> list[str]:
    clauses = []
    for sentence in sentences(text):
        if _ZH_QUESTION.search(sentence):
            continue
        starts = [0] + [match.end() for match in _ZH_CLAUSE_STARTS.finditer(sentence)]
        clauses += [sentence[start:].lstrip() for start in starts]
    return clauses


def extract(text: str, *, from_user: bool, max_chars: int) -> list[Fact]:
    """The keyed facts a message states about the user; the last statement per key wins.
    `from_user`: the user wrote it, so "I"/"我" is the user; otherwise only "the user"/"用户" is."""
    if len(text) > max_chars:
        return []
    text = unicodedata.normalize("NFKC", text).replace("’", "'")
    subject = "self" if from_user else "third"
    clauses = {
        "en": _en_clauses(text) if _LATIN.search(text) else [],
        "zh": _zh_clauses(text) if cjk_characters(text) else [],
    }
    found: dict[str, Fact] = {}
    for clause_language, language_clauses in clauses.items():
        for clause in language_clauses:
            for frame in _frames():
                pattern = frame.patterns.get(subject)
                if frame.language != clause_language or pattern is None:
                    continue
                match = pattern.match(clause)
                if match is None:
                    continue
                for fact in _facts_of(match, frame):
                    found.pop(fact.key, None)  # re-inserted last: a later statement wins
                    found[fact.key] = fact
    return list(found.values())
