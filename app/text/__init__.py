"""Text handling shared by recall, revisions and reflections: one normal form, one tokenizer
(stemmed English words, CJK character bigrams), one stemmer, one stopword list, one CJK
character class, and the general-purpose lexicons (data files under `lexicons/`)."""

from app.text.cues import asks_about_past, asks_about_present, negated
from app.text.lexicon import Lexicon, lexicon
from app.text.normal import fold, normalise, same_numbers
from app.text.tokens import (
    CJK_CHARS,
    STOPWORDS,
    ZH_EMPTY_CHARS,
    ZH_FUNCTION_CHARS,
    cjk_bigrams,
    cjk_characters,
    is_cjk,
    lexemes,
    sentence_starts,
    sentences,
    stem,
    words,
)

__all__ = [
    "asks_about_past",
    "asks_about_present",
    "negated",
    "CJK_CHARS",
    "STOPWORDS",
    "ZH_EMPTY_CHARS",
    "ZH_FUNCTION_CHARS",
    "Lexicon",
    "cjk_bigrams",
    "cjk_characters",
    "fold",
    "is_cjk",
    "lexemes",
    "sentence_starts",
    "sentences",
    "lexicon",
    "normalise",
    "same_numbers",
    "stem",
    "words",
]
