"""The lexical route's query: any lexeme of the query text, as `to_tsquery('simple', ...)`
text. Memories are indexed with `to_tsvector('simple', ' '.join(lexemes(content)))`; both
sides tokenize through app.text, so they agree."""

from collections.abc import Iterable

from app.text import lexemes


def query_terms(text: str, *, without: Iterable[str] = ()) -> list[str]:
    """The distinct lexemes of `text` except those of `without`, in order."""
    dropped = {lexeme for phrase in without for lexeme in lexemes(phrase)}
    return [lexeme for lexeme in dict.fromkeys(lexemes(text)) if lexeme not in dropped]


def or_query(terms: Iterable[str]) -> str:
    """Text for `to_tsquery('simple', ...)` matching any of these lexemes; '' if none."""
    return " | ".join(terms)
