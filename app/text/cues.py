"""Questions the cue lexicon answers for any domain: is a text negated, does a question ask
about the present or the past."""

from app.text.lexicon import lexicon

_CUES = lexicon("cues")


def negated(text: str) -> bool:
    """Whether the text negates or refuses something ("not", "never", "avoid", 不, 没, 别)."""
    return _CUES["negation"].find(text) is not None


def asks_about_present(text: str) -> bool:
    """Whether a question asks how things are now ("currently", "these days", 现在, 目前)."""
    return _CUES["present"].find(text) is not None and not asks_about_past(text)


def asks_about_past(text: str) -> bool:
    """Whether a question asks how things were ("used to", "before", 以前, 原来)."""
    return _CUES["past"].find(text) is not None
