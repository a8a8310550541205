"""Lexical tokenizer shared by the write path (tsvector) and the query path (tsquery).

PostgreSQL's `simple` config and pg_trgm treat a CJK run as one word and do no
English stemming, so the app tokenizes itself and stores the result with
`to_tsvector('simple', ' '.join(lexemes(content)))`; queries use
`to_tsquery('simple', or_query(query))`. Lexemes contain only [a-z0-9] or CJK
characters, so they pass through the `simple` parser unchanged and cannot
inject tsquery syntax.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
)
_TOKEN = re.compile(rf"[{_CJK}]+|[a-z0-9]+(?:'[a-z]+)?")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
_VOWEL = re.compile(r"[aeiouy]")
_NO_UNDOUBLE = frozenset("lsz")

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during
    each few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just me more most my myself no nor
    not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves
    also ever get got hey hi let lot oh ok okay really s t us yeah yes
    cant couldnt didnt doesnt dont hadnt hasnt havent id ill im isnt ive lets
    shouldnt thats theres theyd theyll theyre theyve wasnt wed well were weve whats
    wont wouldnt youd youll youre youve
    """.split()
)


def lexemes(text: str) -> list[str]:
    """Searchable terms of `text`, in order, repeats kept (they weigh in ts_rank)."""
    normalised = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    terms: list[str] = []
    for token in _TOKEN.findall(normalised):
        if _CJK_RUN.fullmatch(token):
            terms.extend(_cjk_bigrams(token))
        else:
            word = _drop_contraction(token)
            if word not in STOPWORDS and (len(word) > 1 or word.isdigit()):
                terms.append(stem(word))
    return terms


def or_query(text: str, *, without: Iterable[str] = ()) -> str:
    """Text for `to_tsquery('simple', ...)` matching any lexeme of `text` except those of
    `without`; '' if none."""
    dropped = {lexeme for phrase in without for lexeme in lexemes(phrase)}
    return " | ".join(lexeme for lexeme in dict.fromkeys(lexemes(text)) if lexeme not in dropped)


def stem(word: str) -> str:
    """Light English suffix stripping; write and query sides only need to agree."""
    if word.isdigit() or len(word) < 4:
        return word
    word = _strip_plural(word)
    word = _strip_verb_suffix(word)
    # A final "e" is dropped everywhere so "make"/"making" and "create"/"created" meet.
    if len(word) >= 4 and word.endswith("e"):
        word = word[:-1]
    return word


def _cjk_bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _drop_contraction(token: str) -> str:
    head, _, tail = token.partition("'")
    if not tail or tail == "s":
        return head
    return head + tail  # "don't" -> "dont", which the stopword list knows


def _strip_plural(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _strip_verb_suffix(word: str) -> str:
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed"):
        stem_ = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem_) >= 3 and _VOWEL.search(stem_):
            return _undouble(stem_)
    return word


def _undouble(stem_: str) -> str:
    if stem_[-1] == stem_[-2] and stem_[-1] not in _NO_UNDOUBLE and not _VOWEL.match(stem_[-1]):
        return stem_[:-1]
    return stem_
