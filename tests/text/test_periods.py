"""The recurring times a text names, and whether one holds the time a question asks about."""

import pytest

from app.text.periods import MAX_CHARS, WEEKDAYS, WEEKEND, Period, period


@pytest.mark.parametrize(
    ("text", "days", "months"),
    [
        ("On weekends the user teaches spin classes.", WEEKEND, frozenset()),
        ("User works weekdays at the bank.", WEEKDAYS, frozenset()),
        ("Office hours are Monday through Thursday.", frozenset({0, 1, 2, 3}), frozenset()),
        ("The club meets Friday to Sunday.", frozenset({4, 5, 6}), frozenset()),
        ("From November to March the user takes the train.", frozenset(), frozenset({11, 12, 1, 2, 3})),
        ("The pool is open June-August.", frozenset(), frozenset({6, 7, 8})),
        ("User skis in the winter.", frozenset(), frozenset({12, 1, 2})),
        ("In the fall the user hikes.", frozenset(), frozenset({9, 10, 11})),
        ("The leaves fall and the user may rest; we march on.", frozenset(), frozenset()),
        ("May I ask what the user does?", frozenset(), frozenset()),
        ("用户周一到周五在公司上班。", WEEKDAYS, frozenset()),
        ("用户工作日坐地铁，周末开车。", WEEKDAYS | WEEKEND, frozenset()),
        ("用户十一月到三月坐公交。", frozenset(), frozenset({11, 12, 1, 2, 3})),
        ("用户冬天去滑雪，12月20日出发。", frozenset(), frozenset({12, 1, 2})),
        ("用户每个月去一次，三个月一个疗程。", frozenset(), frozenset()),
    ],
)
def test_period_reads_days_and_months(text: str, days: frozenset[int], months: frozenset[int]) -> None:
    assert period(text) == Period(days, months)


def test_fit_holds_excludes_or_says_nothing() -> None:
    weekend = period("at the weekend")
    assert period("On weekends the user teaches.").fit(weekend) == -1
    assert period("User works weekdays.").fit(weekend) == 1
    assert period("User likes tea.").fit(weekend) == 0
    # A period of another kind says nothing of the asked one.
    assert period("From May to July the user swims.").fit(weekend) == 0
    # Both kinds asked: it must hold on each kind it names.
    asked = period("on Saturdays in July")
    assert period("In summer the user sails on weekends.").fit(asked) == -1
    assert period("In winter the user sails on weekends.").fit(asked) == 1


def test_only_the_first_characters_are_read() -> None:
    filler = "x" * MAX_CHARS
    assert period(f"On weekends {filler}") == Period(WEEKEND, frozenset())
    assert period(f"{filler} on weekends") == Period()
