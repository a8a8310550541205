"""The newer-competitor preference on its own: pure ordering over plain hits."""

from datetime import datetime, timezone
from uuid import UUID, uuid4

from app.recall.competitors import Hit, Settings, lookups, reorder

SETTINGS = Settings(window=10, similarity=0.86, relevance=0.6)


def hit(content: str, year: int, relevance: float = 1.0, dense: float = 0.0) -> Hit:
    return Hit(uuid4(), content, datetime(year, 1, 1, tzinfo=timezone.utc), relevance, dense)


def order(hits: list[Hit], query: str, *, links=None, similarity=None, settings: Settings = SETTINGS) -> list[UUID]:
    return reorder(hits, query=query, links=links or {}, similarity=similarity or {}, settings=settings)


def near(*hits: Hit, cosine: float = 0.9) -> dict[frozenset[UUID], float]:
    return {frozenset((a.id, b.id)): cosine for a in hits for b in hits if a.id != b.id}


def test_a_present_tense_question_puts_the_newer_of_two_near_memories_first() -> None:
    stale, newer = hit("User lives in Austin.", 2023), hit("User lives in Denver.", 2025, relevance=0.9)
    assert order([stale, newer], "Where does the user live now?", similarity=near(stale, newer)) == [newer.id, stale.id]
    assert order([stale, newer], "现在用户住在哪里？", similarity=near(stale, newer)) == [newer.id, stale.id]


def test_without_a_present_cue_relevance_keeps_its_order() -> None:
    stale, newer = hit("User lives in Austin.", 2023), hit("User lives in Denver.", 2025, relevance=0.9)
    assert order([stale, newer], "Where does the user live?", similarity=near(stale, newer)) == [stale.id, newer.id]


def test_a_held_update_puts_the_newer_first_for_any_question_but_the_past() -> None:
    stale, newer = hit("User plays on a PlayStation.", 2023), hit("User switched to a Nintendo Switch.", 2025, relevance=0.8)
    links = {frozenset((stale.id, newer.id)): "related"}
    assert order([stale, newer], "Which games suit the user's console?", links=links) == [newer.id, stale.id]
    assert order([stale, newer], "Which console did the user use before?", links=links) == [stale.id, newer.id]


def test_memories_that_merely_coexist_reorder_only_for_the_present() -> None:
    old, new = hit("User speaks Spanish.", 2023), hit("User is learning Japanese.", 2025, relevance=0.9)
    links = {frozenset((old.id, new.id)): "coexists"}
    assert order([old, new], "Which language does the user speak?", links=links) == [old.id, new.id]
    assert order([old, new], "Which language is the user studying at the moment?", links=links) == [new.id, old.id]


def test_a_far_less_relevant_newer_memory_does_not_jump() -> None:
    knitting, orchids = hit("User knits a scarf.", 2024), hit("User grows orchids.", 2025, relevance=0.3)
    assert order([knitting, orchids], "What is the user knitting these days?", similarity=near(knitting, orchids)) == [
        knitting.id,
        orchids.id,
    ]


def test_a_newer_memory_the_words_miss_but_the_embedding_finds_as_close_competes_for_the_present() -> None:
    first = hit("User's first instrument was the piano.", 2024, dense=0.9)
    learning = hit("User is taking cello lessons.", 2025, relevance=0.4, dense=1.0)
    links = {frozenset((first.id, learning.id)): "coexists"}
    assert order([first, learning], "Which instrument is the user practising at the moment?", links=links) == [learning.id, first.id]
    # Farther from the query by its embedding too: it stays where relevance put it.
    farther = hit("User is taking cello lessons.", 2025, relevance=0.4, dense=0.8)
    links = {frozenset((first.id, farther.id)): "coexists"}
    assert order([first, farther], "Which instrument is the user practising at the moment?", links=links) == [first.id, farther.id]


def test_unlinked_memories_about_different_people_do_not_compete() -> None:
    mine, brothers = hit("User works at Tencent.", 2023), hit("My brother works at Alibaba.", 2025, relevance=0.95)
    assert order([mine, brothers], "Where does the user work now?", similarity=near(mine, brothers)) == [mine.id, brothers.id]


def test_a_hit_about_the_person_asked_about_comes_before_one_about_someone_else() -> None:
    wife, user = hit("My wife works as an architect.", 2025), hit("I work as a data engineer.", 2025, relevance=0.9)
    assert order([wife, user], "What does the user do for a living?") == [user.id, wife.id]
    assert order([wife, user], "What does the user's wife do for a living?") == [wife.id, user.id]


def test_only_the_window_moves_and_outsiders_keep_their_places() -> None:
    first = hit("User lives in Austin.", 2023)
    middle = hit("User likes green tea.", 2024, relevance=0.95)
    last = hit("User lives in Denver.", 2025, relevance=0.9)
    similarity = near(first, last)
    assert order([first, middle, last], "Where does the user live now?", similarity=similarity) == [last.id, middle.id, first.id]
    narrow = Settings(window=2, similarity=0.86, relevance=0.6)
    assert order([first, middle, last], "Where does the user live now?", similarity=similarity, settings=narrow) == [
        first.id,
        middle.id,
        last.id,
    ]


def test_only_what_the_question_needs_is_looked_up() -> None:
    assert lookups("Which console did the user play on before?") == (False, False)
    assert lookups("Which games suit the user's console?") == (True, False)
    assert lookups("Which console does the user play on now?") == (True, True)


def test_a_question_naming_a_time_puts_the_memory_whose_own_period_holds_it_first() -> None:
    weekdays = hit("User works weekdays as an accountant at a bank.", 2024)
    weekends = hit("On weekends the user coaches a junior football team.", 2025, relevance=0.95)
    assert order([weekdays, weekends], "How does the user spend the weekend?") == [weekends.id, weekdays.id]
    assert order([weekends, weekdays], "What does the user do on Tuesdays?") == [weekdays.id, weekends.id]
    summer = hit("From May to September the user swims in the lake.", 2025)
    winter = hit("From December to February the user goes to the indoor pool.", 2024, relevance=0.9)
    assert order([summer, winter], "Where will the user swim in January?") == [winter.id, summer.id]
    assert order([summer, winter], "Where does the user swim?") == [summer.id, winter.id]


def test_a_period_that_holds_the_asked_time_beats_a_newer_competitor_whose_period_excludes_it() -> None:
    morning = hit("用户工作日早上跑步。", 2023)
    weekend = hit("用户周末早上去爬山。", 2025, relevance=0.95)
    links = {frozenset((morning.id, weekend.id)): "related"}
    assert order([morning, weekend], "用户周三早上做什么运动？", links=links) == [morning.id, weekend.id]
    assert order([morning, weekend], "用户早上做什么运动？", links=links) == [weekend.id, morning.id]
