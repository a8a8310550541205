"""General-purpose lexicons, kept as data (`lexicons/*.toml`), not in code.

An English entry is a word or phrase matched on word boundaries, case-insensitively; a
trailing `*` lets the last word run on ("relocat*" finds relocated, relocating), a leading
one lets the first word start earlier ("*-free" finds nicotine-free). A Chinese
entry is matched as a substring; `…` inside it stands for one to four characters of the same
clause (不…了 finds 不吃辣了 but not 不了).
"""

import re
import tomllib
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, NamedTuple

_DIRECTORY = Path(__file__).with_name("lexicons")
_ZH_GAP = r"[^，。,.;；!！?？:：、\s]{1,4}"


# Every English entry starts where a word does: tested once per position, before the entries
# (the same matches as the test inside each entry, several times faster on a long list).
_WORD_START = r"(?<![\w'’-])"


def _english(entry: str) -> str:
    """An entry's pattern after `_WORD_START`."""
    runs_on, runs_in = entry.endswith("*"), entry.startswith("*")
    body = r"\s+".join(re.escape(word) for word in entry.strip("*").split())
    return (r"[\w'’-]*" if runs_in else "") + body + (r"[\w'’-]*" if runs_on else r"(?![\w'’-])")


def _english_list(entries) -> list[str]:
    """The entries, longest first, as one alternative (none for no entries)."""
    ordered = _longest_first(entries)
    return [_WORD_START + "(?:" + "|".join(_english(entry) for entry in ordered) + ")"] if ordered else []


def _chinese(entry: str) -> str:
    return _ZH_GAP.join(re.escape(part) for part in entry.split("…"))


def _longest_first(entries) -> list[str]:
    return sorted(entries, key=len, reverse=True)


def _compile(patterns: list[str], flags: int = 0) -> re.Pattern | None:
    return re.compile("|".join(patterns), flags) if patterns else None


_RUN = re.compile(r"[\w'’-]+")
_PLAIN_WORD = re.compile(r"[a-z0-9'’-]+")


class _Runs(NamedTuple):
    whole: frozenset[str]
    heads: frozenset[str]  # the first _EDGE characters of each
    tails: frozenset[str]  # the last _EDGE


_EDGE = 3


@lru_cache(maxsize=1024)
def _runs(text: str) -> _Runs:
    """The text's runs of word characters, case-folded: where English entries can be."""
    runs = frozenset(_RUN.findall(text.casefold()))
    return _Runs(runs, frozenset(run[:_EDGE] for run in runs), frozenset(run[-_EDGE:] for run in runs))


class _EnglishStarts:
    """Whether a text can hold one of a list's English entries, so that a text that cannot skips
    the list's pattern: most texts match none of most lists, and a failed search of a long
    alternation costs more than a few set lookups. Every word of an entry is a whole run of word
    characters in a text it matches, except a first word that starts earlier ("*-free": a run
    ending so) or a last one that runs on ("relocat*": a run beginning so); a one-word entry of
    that kind is looked for by its own small pattern, when a run begins or ends as it does.
    Never skips a text the list's pattern would match; an entry it cannot read makes every text
    run that pattern."""

    def __init__(self, entries) -> None:
        self.wholes: dict[str, list[frozenset[str]]] = {}  # an entry's whole words, by its longest one
        loose, heads, tails = [], set(), set()
        self.always = False
        for entry in entries:
            parts = entry.casefold().split()
            if not parts or not all(_PLAIN_WORD.fullmatch(part.strip("*")) for part in parts):
                self.always = True
                continue
            runs_in, runs_on = parts[0].startswith("*"), parts[-1].endswith("*")
            whole = parts[int(runs_in) : len(parts) - int(runs_on)]
            word = parts[0].strip("*")
            if whole:
                self.wholes.setdefault(max(whole, key=len), []).append(frozenset(whole))
            elif len(word) < _EDGE or (runs_in and runs_on):
                self.always = True  # a short part, or one that may sit anywhere in a run
            else:
                loose.append(entry)
                (tails.add(word[-_EDGE:]) if runs_in else heads.add(word[:_EDGE]))
        self.keys, self.heads, self.tails = frozenset(self.wholes), frozenset(heads), frozenset(tails)
        self.loose = _compile(_english_list(loose), re.IGNORECASE)

    def possible(self, text: str) -> bool:
        if self.always:
            return True
        runs = _runs(text)
        if not self.keys.isdisjoint(runs.whole) and any(
            words <= runs.whole for key in self.keys & runs.whole for words in self.wholes[key]
        ):
            return True
        edges = not (self.heads.isdisjoint(runs.heads) and self.tails.isdisjoint(runs.tails))
        return edges and self.loose.search(text) is not None


def _zh_firsts(entries) -> frozenset[str] | None:
    """The characters Chinese entries open on (a pattern of them starts with one); None when
    one opens on a gap, which any character may fill."""
    return None if any(entry.startswith("…") for entry in entries) else frozenset(entry[0] for entry in entries if entry)


@lru_cache(maxsize=1024)
def _characters(text: str) -> frozenset[str]:
    return frozenset(text)


def _zh_possible(firsts: frozenset[str] | None, text: str) -> bool:
    return firsts is None or not firsts.isdisjoint(_characters(text))


class Phrases:
    """One list of cue phrases in English and Chinese."""

    def __init__(self, en: list[str], zh: list[str], *, except_en: list[str] = (), except_zh: list[str] = ()) -> None:
        self.en, self.zh = tuple(en), tuple(zh)
        self._en = _compile(_english_list(en), re.IGNORECASE)
        self._zh = _compile([_chinese(entry) for entry in _longest_first(zh)])
        self._except = _compile(_english_list(except_en) + [_chinese(entry) for entry in _longest_first(except_zh)], re.IGNORECASE)
        self._en_starts, self._zh_firsts = _EnglishStarts(en), _zh_firsts(zh)
        self._except_starts, self._except_firsts = _EnglishStarts(except_en), _zh_firsts(except_zh)

    def _clean(self, text: str) -> str:
        if not self._except or not (self._except_starts.possible(text) or _zh_possible(self._except_firsts, text)):
            return text
        return self._except.sub(lambda match: "\x00" * len(match.group(0)), text)

    def _patterns(self, text: str) -> list[re.Pattern]:
        """The list's patterns that may match the text, English first."""
        patterns = []
        if self._en and self._en_starts.possible(text):
            patterns.append(self._en)
        if self._zh and _zh_possible(self._zh_firsts, text):
            patterns.append(self._zh)
        return patterns

    def find(self, text: str) -> str | None:
        """The first phrase of the list in the text, as written there; None if none is."""
        text = self._clean(text)
        for pattern in self._patterns(text):
            match = pattern.search(text)
            if match:
                return match.group(0)
        return None

    def all(self, text: str) -> list[str]:
        """Every phrase of the list in the text, as written there."""
        text = self._clean(text)
        return [match.group(0) for pattern in self._patterns(text) for match in pattern.finditer(text)]

    def __contains__(self, text: str) -> bool:
        return self.find(text) is not None

    def blank(self, text: str, fill: str = " ") -> str:
        """The text with every phrase of the list replaced by `fill` (same length)."""
        for pattern in self._patterns(text):
            text = pattern.sub(lambda match: fill * len(match.group(0)), text)
        return text


class Lexicon:
    """One lexicon file: tables of phrases (`[change] en = [...] zh = [...]`), word lists
    (`en = [...]`) or pairs (`pairs = [["like", "dislike"], ...]`)."""

    def __init__(self, name: str, data: dict[str, Any]) -> None:
        self.name = name
        self._data = data

    @cache  # noqa: B019 - lexicons live as long as the process
    def __getitem__(self, section: str) -> Phrases:
        table = self._data[section]
        return Phrases(
            table.get("en", []), table.get("zh", []), except_en=table.get("except_en", []), except_zh=table.get("except_zh", [])
        )

    def sections(self, *, flag: str | None = None) -> list[str]:
        """The tables of the file; with `flag`, only those that set it true (`single = true`)."""
        return [
            name for name, value in self._data.items() if isinstance(value, dict) and (flag is None or value.get(flag) is True)
        ]

    def words(self, lang: str, section: str | None = None) -> frozenset[str]:
        table = self._data[section] if section else self._data
        return frozenset(table.get(lang, []))

    def pairs(self, section: str | None = None) -> list[tuple[str, str]]:
        table = self._data[section] if section else self._data
        return [(first, second) for first, second in table.get("pairs", [])]

    def mapping(self, section: str) -> dict[str, str]:
        return dict(self._data[section])


@cache
def lexicon(name: str) -> Lexicon:
    """The lexicon `lexicons/<name>.toml`, read once."""
    with (_DIRECTORY / f"{name}.toml").open("rb") as file:
        return Lexicon(name, tomllib.load(file))
