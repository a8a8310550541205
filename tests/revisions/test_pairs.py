"""What the rules read from a pair: term matching (the grouped look-up finds exactly what
comparing a term with every other term finds), antonyms in both languages, numbers set on a
named thing, the thing an ending word ends, a predecessor said to be gone, value kinds, and
when a stated state began."""

import gc
import time
from datetime import datetime

import pytest

from app.revisions.pairs import Pair, in_terms, terms_match
from app.revisions.signals import read
from app.revisions.values import anchored_numbers, extract_values, since, zh_number

# Stems sharing openings of every length, short words, Chinese bigrams and a non-ASCII word.
VOCABULARY = frozenset(
    "smok smoke smoker intolerant intolerance intoler int into cat cats catalog catalogu "
    "databas databases data run runn running 咖啡 啡因 咖喱 café cafés".split()
)


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [
        ("smok", "smoke", True),
        ("intolerant", "intolerance", True),
        ("catalog", "catalogu", True),
        ("cat", "cats", False),  # too short to extend
        ("data", "databas", False),  # too long an ending
        ("咖啡", "咖喱", False),
        ("café", "cafés", False),  # only ASCII stems extend
    ],
)
def test_terms_match(a: str, b: str, match: bool) -> None:
    assert terms_match(a, b) is match
    assert terms_match(b, a) is match


def test_grouped_lookup_finds_what_comparing_with_every_term_finds() -> None:
    for size in (1, 3, len(VOCABULARY)):
        others = frozenset(sorted(VOCABULARY)[:size])
        for term in [*VOCABULARY, "smoked", "咖啡店", "x"]:
            assert in_terms(term, others) is any(terms_match(term, other) for other in others), (term, sorted(others))


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("The store opens early.", "The store closes early.", ("clos", "open")),
        ("用户喜欢爵士乐。", "用户讨厌爵士乐。", ("讨厌", "喜欢")),
        ("The store opens early.", "The store opens and closes early.", None),  # both words in the new one
    ],
)
def test_antonyms_in_either_language(old: str, new: str, words: tuple[str, str] | None) -> None:
    assert Pair(read(new), read(old), 0.9).antonym == words


@pytest.mark.parametrize(
    ("text", "cjk", "anchored"),
    [
        ("The pool is configured with max_connections 50.", False, {("max_connections", "50", False)}),
        ("The DBA raised max_connections to 200.", False, {("max_connections", "200", True)}),
        ("max_connections = 30", False, {("max_connections", "30", True)}),
        ("The standup is at 10:30 on May 3.", False, set()),  # a clock time, a date
        ("User has 2 kids.", False, set()),  # "has" names nothing
        ("连接池大小改成50。", True, {("大小", "50", True)}),
    ],
)
def test_numbers_set_on_a_named_thing(text: str, cjk: bool, anchored: set) -> None:
    assert anchored_numbers(text, cjk) == anchored


@pytest.mark.parametrize(
    ("old", "new", "renumbered"),
    [
        ("The pool is configured with max_connections 50.", "The DBA raised max_connections to 200.", "max_connection 50 / 200"),
        ("The pool is configured with max_connections 50.", "The DBA set max_connections to 50 again.", None),  # the same number
        ("Ticket 4521 covers the login bug.", "The team moved ticket 4533 to the next sprint.", None),  # names another
    ],
)
def test_renumbered(old: str, new: str, renumbered: str | None) -> None:
    assert Pair(read(new), read(old), 0.9).renumbered == renumbered


def test_a_word_that_is_no_unit_is_read_as_written() -> None:
    """"one was" is a number and a verb, not a quantity of "wa"."""
    values, _ = extract_values("The old one was given away.", False)
    assert values == frozenset({("num", "1")})


@pytest.mark.parametrize(
    ("old", "new", "ended"),
    [
        ("User drives a Honda Civic.", "User sold the Honda and now drives a Tesla.", {"honda"}),  # after the verb
        ("User has a Peloton membership.", "The Peloton membership was cancelled in May.", {"peloton", "membership"}),  # passive
        ("User has a Peloton membership.", "The Peloton membership includes classes; User cancelled Netflix.", set()),
        ("用户在学钢琴，每周上两节课。", "用户说钢琴先放一放了，改学吉他。", {"钢琴"}),  # a Chinese clause before the verb
        ("用户在学钢琴，每周上两节课。", "钢琴课很好，用户把旧电脑卖了。", set()),  # another clause
        ("User's dentist is Dr. Patel.", "User now sees Dr. Kim since Dr. Patel retired.", {"patel"}),  # no object: its subject
        ("User's dentist is Dr. Patel.", "Dr. Patel retired the old drill.", set()),  # an object, not the subject
        ("The café on Elm Street is the team's lunch spot.", "The café on Elm Street shut down in May.", {"caf", "elm", "street"}),
        # to stop at a place is to visit it: nothing ended
        ("The team uses a diner for lunch.", "The team stopped at a diner on the trip.", set()),
    ],
)
def test_the_ended_thing_is_found_where_the_language_puts_it(old: str, new: str, ended: set) -> None:
    assert Pair(read(new), read(old), 0.9).ended == ended


@pytest.mark.parametrize(
    ("text", "retired"),
    [
        ("Songs now come from Deezer; the previous plan was cancelled.", "previous ... cancelled"),
        ("User's new bike arrived and the old one was given away.", "the old ... given away"),
        ("用户换了新卡，原来的卡注销了。", "原来的 ... 注销"),
        ("User cancelled the plan. The previous one was better.", None),  # two sentences
        ("User's previous job was in Boston.", None),
    ],
)
def test_a_text_saying_its_predecessor_is_gone(text: str, retired: str | None) -> None:
    assert read(text).retired == retired


@pytest.mark.parametrize(
    ("text", "cjk", "values"),
    [
        ("Orders ship to 14 Maple Lane.", False, {("num", "14")}),  # a street's name is no unit
        ("The laptop has 16 GB of memory.", False, {("qty:gb", "16")}),  # short capitals are
        ("用户2019年搬到了上海。", True, {("year", "2019")}),  # a year, not 2019 years
        ("用户工作了20年了。", True, {("qty:年", "20")}),
        # 早上 and 上午 are both the morning
        ("用户每周六上午去游泳。", True, {("weekday", "6"), ("daypart", "morning")}),
        ("每周六早上用户都会去游泳。", True, {("weekday", "6"), ("daypart", "morning")}),
    ],
)
def test_value_kinds(text: str, cjk: bool, values: set) -> None:
    assert extract_values(text, cjk)[0] == frozenset(values)


@pytest.mark.parametrize(
    ("text", "cjk", "began"),
    [
        ("User has been vegetarian since February.", False, (None, 2)),
        ("Since 2023 the user works remotely.", False, (2023, None)),
        ("User has worked there since mid-March 2024.", False, (2024, 3)),
        ("User has lived here ever since.", False, None),
        ("用户从三月开始不喝酒了。", True, (None, 3)),
        ("用户2024年5月以来一直吃素。", True, (2024, 5)),
    ],
)
def test_when_a_state_began(text: str, cjk: bool, began: tuple | None) -> None:
    assert since(text, cjk) == began


@pytest.mark.parametrize(
    ("old_at", "new_at", "after"),
    [
        ("2024-07-03", "2025-04-11", True),  # February 2025, after last July
        ("2025-02-20", "2025-04-11", False),  # written after February began
        ("2023-12-01", "2025-01-11", True),  # written in January: last year's February, after December 2023
        ("2024-07-03", "2025-01-11", False),  # February 2024 began before the old memory was written
    ],
)
def test_a_state_begun_after_the_old_memory(old_at: str, new_at: str, after: bool) -> None:
    new = read("User hasn't run since February.")
    old = read("User runs every morning.")
    at = {name: datetime.fromisoformat(value + "T12:00:00+00:00") for name, value in (("old", old_at), ("new", new_at))}
    assert Pair(new, old, 0.82, new_at=at["new"], old_at=at["old"]).began_after_old is after


@pytest.mark.parametrize(
    ("numeral", "value"),
    [("两万三", 23000), ("三千五", 3500), ("一百二", 120), ("一百零二", 102), ("十五", 15), ("五千", 5000), ("12", 12)],
)
def test_chinese_numerals_as_spoken(numeral: str, value: int) -> None:
    assert zh_number(numeral) == value


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("User goes to the gym twice a week.", {("qty:time", "2")}),
        ("User goes to the gym four times a week.", {("qty:time", "4")}),
        ("Once the build passes, deploy.", set()),  # "once" as "when"
    ],
)
def test_how_often_in_words(text: str, values: set) -> None:
    assert extract_values(text, False)[0] == frozenset(values)


@pytest.mark.parametrize("run", ["一" * 8000, "十" * 8000, "万" * 8000, "中" + "7" * 8000])
def test_a_long_run_of_numerals_is_read_in_linear_time(run: str) -> None:
    # A numeral tried from inside its run made a failing search cost the square of the run's
    # length: 0.5-1.4 s for `since` and 3.9 s for the values of 8,000 一.
    started = time.process_time()
    since(run, True)
    extract_values(run, True)
    assert time.process_time() - started < 0.3


@pytest.mark.parametrize("unit", ["sk-", "a.b.", "1,", "Dr. ", "v2 "])
def test_a_long_run_of_one_pattern_is_read_in_linear_time(unit: str) -> None:
    # A name, a code or an amount tried from each word boundary inside a long run made a failing
    # search cost the square of the run's length: 0.4-1.6 s for 8,000 characters (the largest
    # memory) of "sk-", "a.b." or "1,".
    text = (unit * 8_000)[:8_000]
    gc.disable()  # the algorithm is measured, not the collector's passes over the test run's heap
    try:
        started = time.process_time()
        read.__wrapped__(text)
        elapsed = time.process_time() - started
    finally:
        gc.enable()
    assert elapsed < 0.25


def test_numerals_read_from_the_start_of_their_run() -> None:
    values, _ = extract_values("地铁12号线，一万二千元，3月15日", True)
    assert values == {("id", "号线 12"), ("money", "12000"), ("date", "3-15")}
    assert since("从十二月开始不喝咖啡了", True) == (None, 12)


@pytest.mark.parametrize(
    ("old", "new", "extends"),
    [
        ("User volunteers at the animal shelter.", "User volunteers at the animal shelter on Sundays, walking dogs.", True),
        # qualifiers inserted inside the old statement
        ("User volunteers at the animal shelter.", "User happily volunteers twice a month at the old animal shelter.", True),
        # its words in another order
        ("User volunteers at the animal shelter.", "At the animal shelter the user volunteers on Sundays.", False),
        # nothing added
        ("User volunteers at the animal shelter.", "The user volunteers at the animal shelter!", False),
        # too short a statement to be restated by chance only
        ("User swims.", "User swims on Tuesdays at the lido near the station.", False),
        # a value of the old statement not kept
        ("The build takes 12 minutes on the CI runners.", "The build takes 20 minutes on the CI runners after the cache broke.", False),
        ("The build takes 12 minutes on the CI runners.", "The build takes 12 minutes on the CI runners, most of it in the integration tests.", True),
        # what it adds may be values
        ("用户在学游泳。", "用户在学游泳，每周六上午上课。", True),
        ("用户在学游泳。", "用户周六上午上游泳课。", False),
    ],
)
def test_a_new_text_extending_the_old_statement(old: str, new: str, extends: bool) -> None:
    assert Pair(read(new), read(old), 0.9).extends is extends


@pytest.mark.parametrize(
    ("old", "new", "substituted"),
    [
        ("User prefers window seats.", "User prefers aisle seats.", ("window", "aisl")),  # stems
        # one negation for another says the same thing
        ("User doesn't eat shellfish.", "User never eats shellfish.", None),
        ("用户不吃香菜。", "用户没吃香菜。", None),
        # a negation for a plain word does not
        ("User often eats shellfish.", "User never eats shellfish.", ("often", "never")),
    ],
)
def test_the_slot_a_sentence_changed(old: str, new: str, substituted: tuple[str, str] | None) -> None:
    assert Pair(read(new), read(old), 0.9).substituted == substituted


@pytest.mark.parametrize(
    ("old", "new", "beside"),
    [
        ("User volunteers at the food bank.", "User volunteers at the food bank and coaches soccer.", True),
        ("User volunteers at the food bank.", "User volunteers at the food bank, mostly sorting donations.", False),
        # the old text joined its parts already
        ("User sings and plays guitar.", "User sings and plays guitar in a cover band.", False),
        ("用户在学游泳。", "用户在学游泳，而且每周去两次健身房。", True),
        ("用户在学游泳。", "用户在学游泳，每周六上午上课。", False),
    ],
)
def test_a_part_joined_beside_the_old_statement(old: str, new: str, beside: bool) -> None:
    assert Pair(read(new), read(old), 0.9).adds_beside is beside


@pytest.mark.parametrize(
    ("old", "new", "clashes"),
    [
        # A day of the weekend is no other value than "weekends": both can be true.
        ("User volunteers at the library on weekends.", "User volunteers at the library on Saturdays.", set()),
        ("用户周末会去公园跑步。", "每个月最后一个周日去公园。", set()),
        ("User works from the office on weekdays.", "User works from the office on Saturdays.", {"weekday"}),
        ("User swims on Tuesdays.", "User swims on Thursdays.", {"weekday"}),
    ],
)
def test_a_weekday_and_the_part_of_the_week_it_falls_in(old: str, new: str, clashes: set) -> None:
    assert Pair(read(new), read(old), 0.9).clashes == frozenset(clashes)


@pytest.mark.parametrize(
    ("text", "cue", "negative"),
    [
        # A cue word written capitalised inside a sentence is part of a title or a name.
        ("Next on the user's shelf: The Day the Music Stopped, then a cookbook.", None, False),
        ("User is rereading Never Let Me Go.", None, False),
        ("User left Initech in May.", "left", False),
        ("Left the band last year, the user says.", "Left", False),
        ("User NEVER eats pork.", None, True),  # capitals for weight are still read
        ("I was wrong: the user is 34.", "I was wrong", False),
    ],
)
def test_cue_words_inside_a_title_are_no_cues(text: str, cue: str | None, negative: bool) -> None:
    signals = read(text)
    assert (signals.cue, signals.negative) == (cue, negative)


@pytest.mark.parametrize(
    ("text", "negative", "intention"),
    [
        ("The invoice shows prices in euros rather than dollars.", True, None),
        ("User drinks tea instead of coffee.", True, None),
        ("用户未来想去日本工作。", False, None),  # 未来 is the future, not 未
        ("用户家里的无线网是电信的。", False, None),  # 无线 is wireless
        ("周末主要去河边钓鱼。", False, None),  # 主要 + 去 is no 要去
        ("用户下周要去北京出差。", False, "要去"),
    ],
)
def test_negations_and_intentions_inside_other_words(text: str, negative: bool, intention: str | None) -> None:
    signals = read(text)
    assert (signals.negative, signals.intention) == (negative, intention)
