"""The lexical route's query: any lexeme of the query text, as `to_tsquery('simple', ...)`
text. Memories are indexed with `to_tsvector('simple', ' '.join(lexemes(content)))`; both
sides tokenize through app.text, so they agree."""

from collections.abc import Iterable

from app.text import lexemes


def or_query(text: str, *, without: Iterable[str] = ()) -> str:
    """Text for `to_tsquery('simple', ...)` matching any lexeme of `text` except those of
    `without`; '' if none."""
    dropped = {lexeme for phrase in without for lexeme in lexemes(phrase)}
    return " | ".join(lexeme for lexeme in dict.fromkeys(lexemes(text)) if lexeme not in dropped)
