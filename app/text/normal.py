"""Normal forms of text."""

import re
import unicodedata

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


def normalise(content: str) -> str:
    """Case, width and whitespace folded: the form two writes must share to be 'the same'."""
    return " ".join(unicodedata.normalize("NFKC", content).casefold().split())


def fold(text: str) -> str:
    """Width folded, lower case, typographic apostrophes made plain: what the tokenizer reads."""
    return unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")


def same_numbers(first: str, second: str) -> bool:
    """Near-identical texts that differ in a number (8月15日 / 8月16日) are an update, not a repeat."""
    return sorted(_NUMBER.findall(normalise(first))) == sorted(_NUMBER.findall(normalise(second)))
