"""The one tokenizer: what the lexical index, recall and the revision rules read."""

import gc
import time

import pytest

from app.text import is_cjk, lexemes, sentences, stem


def test_lowercases_and_drops_stopwords():
    assert lexemes("What did THE Dog eat?") == ["dog", "eat"]


def test_inflections_meet_their_base_form():
    assert lexemes("painting painted paints") == lexemes("paint") * 3
    assert stem("making") == stem("make")
    assert stem("created") == stem("create")
    assert stem("stories") == stem("story")
    assert stem("tried") == stem("try")
    assert stem("running") == stem("run")
    assert stem("watches") == stem("watch")


def test_stemmer_leaves_short_and_special_words_alone():
    assert stem("thing") == "thing"
    assert stem("class") == "class"
    assert stem("called") == "call"
    assert stem("family") == "family"
    assert stem("need") == "need"


def test_possessives_and_contractions():
    assert lexemes("Caroline's dog") == lexemes("Caroline dog")
    assert lexemes("I don't know") == ["know"]
    assert lexemes("I\u2019m happy") == ["happy"]


def test_digits_are_kept():
    assert lexemes("In 2022 she ran 5 km") == ["2022", "ran", "5", "km"]


def test_cjk_runs_become_overlapping_bigrams():
    assert lexemes("用户对花生过敏") == ["用户", "户对", "对花", "花生", "生过", "过敏"]
    assert set(lexemes("花生")) <= set(lexemes("用户对花生过敏"))
    assert lexemes("茶") == ["茶"]


def test_mixed_scripts_are_split():
    assert lexemes("我喜欢Python3编程") == ["我喜", "喜欢", "python3", "编程"]


def test_full_width_text_is_normalised():
    assert lexemes("ＡＢＣ　２０２３") == ["abc", "2023"]


def test_lexemes_are_safe_tsquery_words():
    for term in lexemes("a:b & c|d !e (f) 'g' <-> h* 中文"):
        assert all(ch.isalnum() for ch in term), term


def test_a_text_is_cjk_from_two_characters():
    assert is_cjk("用户喜欢 Python")
    assert not is_cjk("User likes 茶")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ines teaches chemistry. She coaches the chess club!", ["Ines teaches chemistry.", "She coaches the chess club!"]),
        ("The clinic is on Elm St. Mondays are busy.", ["The clinic is on Elm St. Mondays are busy."]),
        ("Booked via J. R. Tolkien Travel in the U.S. office.", ["Booked via J. R. Tolkien Travel in the U.S. office."]),
        ("The fee rose to 3.5 euros; nobody complained", ["The fee rose to 3.5 euros;", "nobody complained"]),
        ("用户住在成都。周末去爬山！", ["用户住在成都。", "周末去爬山！"]),
        ("first line\nsecond line", ["first line", "second line"]),
        ("ok. i work nights. Dr. Ruiz said approx. 20 minutes", ["ok.", "i work nights.", "Dr. Ruiz said approx. 20 minutes"]),
        ("Is it raining?! Yes. It starts at 9 a.m. on the dot", ["Is it raining?!", "Yes.", "It starts at 9 a.m. on the dot"]),
    ],
)
def test_sentences_end_at_end_marks_not_abbreviations(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize("unit", ["Dr. ", "U.S. ", "Why?! "])
def test_sentences_are_read_in_linear_time(unit: str) -> None:
    # Each abbreviation joined to the sentence before it once read that whole sentence again and
    # copied it: 0.2-0.3 s for 8,000 characters (the largest memory) of "Dr. " or "U.S. ".
    text = (unit * 8_000)[:8_000]
    gc.disable()  # the algorithm is measured, not the collector's passes over the test run's heap
    try:
        started = time.process_time()
        found = sentences(text)
        elapsed = time.process_time() - started
    finally:
        gc.enable()
    assert elapsed < 0.1
    assert "".join(found).replace(" ", "") == text.replace(" ", "")
