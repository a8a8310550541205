"""The one tokenizer: the lexical index (`to_tsvector('simple', ...)` over these lexemes), the
query side and the revision rules all read text through it.

PostgreSQL's `simple` config and pg_trgm treat a CJK run as one word and do no English
stemming, so the app tokenizes itself. Lexemes contain only [a-z0-9] or CJK characters, so
they pass through the `simple` parser unchanged and cannot inject tsquery syntax. Stored
lexemes depend on `stem` and `STOPWORDS`: changing either needs the index rebuilt.
"""

import re

from app.text.lexicon import lexicon
from app.text.normal import fold

CJK_CHARS = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
)
_TOKEN = re.compile(rf"[{CJK_CHARS}]+|[a-z0-9]+(?:'[a-z]+)?")
_CJK_RUN = re.compile(rf"[{CJK_CHARS}]+")
_CJK_CHAR = re.compile(rf"[{CJK_CHARS}]")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")
# A sentence ends at a period before a space (chat is often written in lower case), at any
# other end mark or a semicolon, or at a line break.
_SENTENCE_BREAK = re.compile(r"(?<=\.)\s+|(?<=[;；。！？!?])\s*|\n+")
# A period after a known abbreviation or an initial ends no sentence ("Dr.", "St.", "J.", "U.S.",
# "Ph.D."); what precedes a period is read from the last characters only.
_ABBREVIATION_TAIL = 24
_ABBREVIATION = re.compile(
    r"(?:^|[\s(])(?:[A-Z]|[A-Za-z]{1,2}(?:\.[A-Za-z]{1,2})+|(?i:"
    + "|".join(sorted(lexicon("grammar").words("en", "abbreviation"), key=len, reverse=True))
    + r"))\.$"
)
_VOWEL = re.compile(r"[aeiouy]")
_NO_UNDOUBLE = frozenset("lsz")

_STOPWORDS = lexicon("stopwords")
STOPWORDS = _STOPWORDS.words("en")
# Characters that carry grammar, not topic, in Chinese (的, 了, 是 ...): the revision rules
# cut a sentence at them before taking bigrams. The index keeps whole runs.
ZH_FUNCTION_CHARS = frozenset("".join(_STOPWORDS.words("zh")))
ZH_EMPTY_CHARS = _STOPWORDS.words("zh_single")


def cjk_characters(text: str) -> int:
    """How many CJK characters a text holds."""
    return len(_CJK_CHAR.findall(text))


def is_cjk(text: str) -> bool:
    """Whether a text is written in a CJK language (two CJK characters are enough)."""
    return cjk_characters(text) >= 2


def words(text: str) -> list[str]:
    """Latin words and numbers as written (case kept, hyphens and apostrophes inside kept)."""
    return [word.strip("'’-") for word in _WORD.findall(text)]


def _sentences(text: str) -> list[tuple[int, str]]:
    """Each sentence with the offset of its first character. Linear in the text: only the end
    of the last piece is read for an abbreviation, and pieces are joined once."""
    found: list[tuple[int, list[str]]] = []
    position = 0
    for brk in [*_SENTENCE_BREAK.finditer(text), None]:
        raw = text[position : brk.start() if brk else len(text)]
        start, position = position + len(raw) - len(raw.lstrip()), brk.end() if brk else len(text)
        piece = raw.strip()
        if not piece:
            continue
        if found and not any(char.isalnum() for char in piece):
            found[-1][1].append(piece)  # the rest of "?!" or "!!"
        elif found and _ABBREVIATION.search(found[-1][1][-1][-_ABBREVIATION_TAIL:]):
            found[-1][1].extend((" ", piece))
        else:
            found.append((start, [piece]))
    return [(start, "".join(parts)) for start, parts in found]


def sentences(text: str) -> list[str]:
    """The sentences of a text, in order, stripped; empty ones left out."""
    return [sentence for _, sentence in _sentences(text)]


def sentence_starts(text: str) -> set[int]:
    """Where the sentences of a text begin (the offset of each one's first character)."""
    return {start for start, _ in _sentences(text)}


def lexemes(text: str) -> list[str]:
    """Searchable terms of `text`, in order, repeats kept (they weigh in ts_rank)."""
    terms: list[str] = []
    for token in _TOKEN.findall(fold(text)):
        if _CJK_RUN.fullmatch(token):
            terms.extend(cjk_bigrams(token))
        else:
            word = _drop_contraction(token)
            if word not in STOPWORDS and (len(word) > 1 or word.isdigit()):
                terms.append(stem(word))
    return terms


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character pairs of a CJK run (a lone character stays as it is)."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


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
