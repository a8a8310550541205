"""Lexicons as data: how entries match, and that every file reads and holds general words."""

import tomllib
from pathlib import Path

import pytest

from app.text import asks_about_past, asks_about_present, lexicon, negated
from app.text.lexicon import Phrases, _EnglishStarts

LEXICONS = sorted(Path("app/text/lexicons").glob("*.toml"))


def test_english_entries_match_whole_words_case_insensitively() -> None:
    phrases = Phrases(["no longer", "moved"], [])
    assert phrases.find("User NO LONGER smokes.") == "NO LONGER"
    assert phrases.find("User removed the rug.") is None
    assert phrases.all("moved, then moved again") == ["moved", "moved"]


def test_a_star_lets_a_word_run_on_at_either_end() -> None:
    phrases = Phrases(["relocat*", "*-free"], [])
    assert phrases.find("They relocated last year.") == "relocated"
    assert phrases.find("nicotine-free since May") == "nicotine-free"
    assert phrases.find("free of charge") is None


def test_chinese_entries_match_inside_text_with_gaps() -> None:
    phrases = Phrases([], ["不…了", "改成"], except_zh=["不了"])
    assert phrases.find("用户不吃辣了") == "不吃辣了"
    assert phrases.find("用户去不了") is None
    assert phrases.find("会议改成线上") == "改成"


def test_exceptions_are_blanked_before_matching() -> None:
    assert not negated("这家店的菜不错。")
    assert negated("用户不吃香菜。")
    assert negated("User doesn't eat pork.") and not negated("User eats pork.")


@pytest.mark.parametrize("path", LEXICONS, ids=lambda path: path.name)
def test_every_lexicon_file_reads(path: Path) -> None:
    with path.open("rb") as file:
        data = tomllib.load(file)
    assert data
    loaded = lexicon(path.stem)
    for section in loaded.sections():
        loaded[section].find("anything at all")


def test_questions_about_the_present_and_the_past() -> None:
    assert asks_about_present("Where does the user live now?")
    assert asks_about_present("用户目前在哪家公司？")
    assert not asks_about_present("Where did the user use to live before?")
    assert asks_about_past("用户以前住在哪里？")
    assert not asks_about_present("Where does the user live?")


def _one_by_one(entries: list[str], text: str) -> str | None:
    """What a list finds, read entry by entry: the leftmost match of any entry, and at that
    position the longest entry (the list's order)."""
    best = None
    for entry in sorted(entries, key=len, reverse=True):
        match = Phrases([entry], [])._en.search(text)
        if match and (best is None or match.start() < best[0]):
            best = (match.start(), match.group(0))
    return best[1] if best else None


def test_a_list_finds_what_its_entries_find_one_by_one() -> None:
    # Plain words, phrases, and entries that run on or run in, several matching at one place.
    entries = ["moved", "moved to", "mov*", "*-free", "sugar", "no longer", "long", "re-*", "o'clock"]
    phrases = Phrases(entries, [])
    texts = [
        "User moved to Denver.",
        "User removed the sugar-free jam.",
        "Sugar-free since May, no longer moving.",
        "The re-run starts at five o'clock, not at four-o'clock.",
        "prolonged stays, unmoved, o'clockwork",
        "a long wait, then moving-day",
    ]
    for text in texts:
        assert phrases.find(text) == _one_by_one(entries, text), text
    assert phrases.all("moved, unmoved, moved to Rome") == ["moved", "moved to"]


def _unfiltered(phrases: Phrases, text: str) -> list[str]:
    """Every match of the list's patterns, run on the text whatever words it holds, after its
    exceptions, also run whatever it holds."""
    if phrases._except:
        text = phrases._except.sub(lambda match: "\x00" * len(match.group(0)), text)
    return [match.group(0) for pattern in (phrases._en, phrases._zh) if pattern for match in pattern.finditer(text)]


def test_a_text_that_cannot_hold_an_entry_skips_the_list_and_no_other_does() -> None:
    starts = _EnglishStarts(["no longer", "moved to", "relocat*", "*-free"])
    assert not starts.possible("User lives in Denver, longer than planned.")  # "longer" without "no"
    assert not starts.possible("User is moving to Rome, tax free.")  # "*-free" needs a hyphen
    for text in ("They NO   LONGER smoke", "moved to Rome", "relocating soon", "sugar-free jam"):
        assert starts.possible(text), text
    assert _EnglishStarts(["a.m."]).possible("no dot here")  # an entry it cannot read: always run


@pytest.mark.parametrize("path", LEXICONS, ids=lambda path: path.name)
def test_every_list_finds_what_its_whole_pattern_finds(path: Path) -> None:
    """Each entry of the file and each of its exceptions, in texts of several shapes, is found
    (or not) exactly as the list's patterns run without the word filter find it."""
    loaded = lexicon(path.stem)
    for section in loaded.sections():
        phrases = loaded[section]
        texts = []
        table = loaded._data[section]
        for entry in [*phrases.en, *phrases.zh, *table.get("except_en", []), *table.get("except_zh", [])]:
            written = entry.replace("*", "ing").replace("…", "吃辣")
            texts += [f"User {written} now.", f"{written.upper()}!", f"the {written}-like one", f"用户{written}了", f"re{written} x"]
        for text in texts:
            assert phrases.find(text) == next(iter(_unfiltered(phrases, text)), None), (section, text)
            assert phrases.all(text) == _unfiltered(phrases, text), (section, text)
