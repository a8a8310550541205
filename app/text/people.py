"""Whom a text is about: the service's user ("self"), one of their relatives, acquaintances or
pets (one canonical role each, from lexicons/people.toml), or nobody in particular (None: a
thing). Revision compares the subjects of two memories; recall the subject a question asks
about with the subjects of its hits."""

from app.text.lexicon import lexicon
from app.text.tokens import STOPWORDS, is_cjk, words

_PEOPLE = lexicon("people")
RELATIONS: dict[str, str] = _PEOPLE.mapping("relations")
SELF_EN = _PEOPLE.words("en", "self")
SELF_ZH = _PEOPLE.words("zh", "self")
POSSESSIVE_EN = _PEOPLE.words("en", "possessive")
_ZH_SELF = sorted(SELF_ZH, key=len, reverse=True)
_ZH_WITH = frozenset("和跟与同")
_ZH_RELATIONS = sorted((word for word in RELATIONS if not word.isascii()), key=len, reverse=True)
# Words an English sentence may open with before naming whom it is about ("Last month the
# user ...", "On weekends the user ...").
_LEAD_IN = STOPWORDS | lexicon("generic").words("en") | frozenset("last recently lately yesterday weekends".split())


def _tokens(text: str, count: int) -> list[str]:
    return [word.lower().replace("’", "'") for word in words(text)[:count]]


def _with_self(tokens: list[str]) -> bool:
    """The words after a person join the user to them ("and I", "and the user"): the
    statement is about the user too ("My wife and I moved to Denver")."""
    if tokens[:1] != ["and"]:
        return False
    joined = tokens[1:2] if tokens[1:2] != ["the"] else tokens[2:3]
    return bool(joined) and joined[0] in SELF_EN and joined[0] not in POSSESSIVE_EN


def _en_subject(tokens: list[str], *, scan: bool) -> str | None:
    """From the opening words of a statement (or, with `scan`, any of a question's first
    words): "the school moved the user's parent meeting" is about the meeting; "my wife and I" are
    the user and another, so the user."""
    for index, token in enumerate(tokens):
        owner = token.removesuffix("'s")
        if token in POSSESSIVE_EN or (token == "the" and tokens[index + 1 : index + 2] == ["user's"]):
            start = index + 1 if token != "the" else index + 2
            at = next((i for i in range(start, min(start + 2, len(tokens))) if tokens[i].removesuffix("'s") in RELATIONS), None)
            if at is None or _with_self(tokens[at + 1 :]):
                return "self"
            return RELATIONS[tokens[at].removesuffix("'s")]
        if token in SELF_EN:
            return "self"
        if owner in RELATIONS:
            return "self" if _with_self(tokens[index + 1 :]) else RELATIONS[owner]
        if not scan and token not in _LEAD_IN and owner not in _LEAD_IN:
            return None
    return None


def _zh_subject(text: str, *, scan: bool) -> str | None:
    """The person a Chinese sentence opens on ("用户的狗叫旺财" is about the dog, "旺财是用户养的
    柴犬" about 旺财, a thing); with `scan`, the first person a question names."""
    for start in range(len(text) if scan else 1):
        rest = text[start:]
        self_word = next((word for word in _ZH_SELF if rest.startswith(word)), None)
        if self_word:
            after = rest[len(self_word) :].lstrip("的")
            relation = next((word for word in _ZH_RELATIONS if after.startswith(word)), None)
            return RELATIONS[relation] if relation and not _zh_with_self(after[len(relation) :]) else "self"
        relation = next((word for word in _ZH_RELATIONS if rest.startswith(word)), None)
        if relation:
            return "self" if _zh_with_self(rest[len(relation) :]) else RELATIONS[relation]
    return None


def _zh_with_self(rest: str) -> bool:
    """老婆和我 / 老婆跟用户: the user and another, so the statement is about the user too."""
    return rest[:1] in _ZH_WITH and any(rest[1:].startswith(word) for word in _ZH_SELF)


def subject(text: str) -> str | None:
    """Whom a statement is about, from its opening words."""
    return _zh_subject(text[:8], scan=False) if is_cjk(text) else _en_subject(_tokens(text, 5), scan=False)


def asked_subject(question: str) -> str | None:
    """Whom a question asks about: the first person it names ("What does the user's wife do?"
    asks about the wife), or None."""
    return _zh_subject(question, scan=True) if is_cjk(question) else _en_subject(_tokens(question, 12), scan=True)


def relations(text: str) -> frozenset[str]:
    """Every relative, acquaintance or pet a text mentions, wherever."""
    english = {RELATIONS[word.lower()] for word in words(text) if word.lower() in RELATIONS}
    return frozenset(english | {RELATIONS[word] for word in _ZH_RELATIONS if word in text})


def opens_on_person(text: str) -> bool:
    """The sentence is about a person itself ("User has a dog", "我在腾讯上班"), not about
    something of theirs ("User's cat Miso ...", "用户的生日 ...")."""
    if is_cjk(text):
        return any(text.startswith(word) and not text[len(word) :].startswith("的") for word in _ZH_SELF)
    first = next(iter(_tokens(text, 1)), "")
    return first in SELF_EN and not first.endswith("'s") and first not in POSSESSIVE_EN
