"""The recurring times a text names: days of the week ("on weekends", "Monday to Friday",
工作日, 周一到周五) and months of the year ("From November to March", "in January", 冬天,
十一月到三月).

Two memories can both hold because each covers its own time ("works weekdays at the bank" /
"teaches spin classes on weekends"); a question that names a time ("at the weekend", "in
January") is answered by the one whose time holds it, not by the one whose time excludes it.
Seasons are read as the northern hemisphere's months. A month name is only read capitalised
in English ("may", "march" are verbs far more often).
"""

import re
from dataclasses import dataclass

from app.text.calendar_words import MONTH_ABBREVIATIONS, WEEKDAY_ABBREVIATIONS

_EN_DAY = r"(mon|tues|wednes|thurs|fri|satur|sun)days?"
_EN_MONTH = (
    r"(January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\b\.?"
)
_EN_RANGE = r"\s*(?:to|through|thru|till|until|-|–)\s*"
_SEASONS = {
    "spring": (3, 4, 5),
    "summer": (6, 7, 8),
    "autumn": (9, 10, 11),
    "fall": (9, 10, 11),
    "winter": (12, 1, 2),
}
# "fall" is a verb unless a determiner or "in" says it is the season.
_EN_SEASON = r"\b(?:(spring|summer|autumn|winter)s?|(?:in|the|this|next|last|every)\s+(fall))\b"

_ZH_NUMBERS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_ZH_DAY = r"(?:周|星期|礼拜)([一二三四五六日天])"
_ZH_MONTH = r"(\d{1,2}|十[一二]?|[一二三四五六七八九])月"
_ZH_RANGE = r"\s*(?:到|至|-|–|~|～)\s*"
_ZH_SEASONS = {"春": (3, 4, 5), "夏": (6, 7, 8), "秋": (9, 10, 11), "冬": (12, 1, 2)}
_ZH_SEASON = r"([春夏秋冬])(?:天|季)"

# Only a text's first characters are read: a search reads up to ten hits on the event loop
# (about 0.4 ms per 1,000 characters on this machine under load).
MAX_CHARS = 2_000

WEEKDAYS = frozenset(range(0, 5))
WEEKEND = frozenset((5, 6))


@dataclass(frozen=True, slots=True)
class Period:
    days: frozenset[int] = frozenset()  # 0 = Monday
    months: frozenset[int] = frozenset()  # 1 = January

    def fit(self, asked: "Period") -> int:
        """-1 when this period holds the asked time, 1 when it names the same kind of time and
        excludes it, 0 when either says nothing of that kind (days or months)."""
        fits = [
            bool(mine & theirs)
            for mine, theirs in ((self.days, asked.days), (self.months, asked.months))
            if mine and theirs
        ]
        if not fits:
            return 0
        return -1 if all(fits) else 1


def _span(first: int, last: int, size: int, start: int) -> frozenset[int]:
    """first..last inclusive on a cycle of `size` values numbered from `start`."""
    values, current = [first], first
    while current != last:
        current = start + (current - start + 1) % size
        values.append(current)
    return frozenset(values)


def _en_day(word: str) -> int:
    return WEEKDAY_ABBREVIATIONS.index(word[:3].lower())


def _en_month(word: str) -> int:
    return MONTH_ABBREVIATIONS.index(word[:3].lower()) + 1


def _zh_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if text.startswith("十"):
        return 10 + (_ZH_NUMBERS[text[1]] if len(text) > 1 else 0)
    return _ZH_NUMBERS.get(text)


def _zh_day(char: str) -> int:
    return 6 if char in "日天" else _ZH_NUMBERS[char] - 1


def _month(number: int | None) -> int | None:
    return number if number is not None and 1 <= number <= 12 else None


_EN_DAY_RANGE = re.compile(rf"\b{_EN_DAY}{_EN_RANGE}{_EN_DAY}\b", re.IGNORECASE)
_EN_MONTH_RANGE = re.compile(rf"\b{_EN_MONTH}{_EN_RANGE}{_EN_MONTH}")
_ZH_DAY_RANGE = re.compile(rf"{_ZH_DAY}{_ZH_RANGE}(?:周|星期|礼拜)?([一二三四五六日天])")
_ZH_MONTH_RANGE = re.compile(rf"{_ZH_MONTH}{_ZH_RANGE}{_ZH_MONTH}")


def _ranges(pattern: re.Pattern[str], text: str) -> tuple[list[tuple[str, str]], str]:
    """The (first, last) of each range the pattern finds, and the text with the ranges blanked,
    so their ends are not read again as single days or months."""
    return pattern.findall(text), pattern.sub(" ", text)


def _english(text: str) -> Period:
    days: set[int] = set()
    months: set[int] = set()
    ranges, text = _ranges(_EN_DAY_RANGE, text)
    for first, last in ranges:
        days |= _span(_en_day(first), _en_day(last), 7, 0)
    days |= {_en_day(word) for word in re.findall(rf"\b{_EN_DAY}\b", text, re.IGNORECASE)}
    lowered = text.lower()
    if re.search(r"\bweekdays?\b|\bworkdays?\b|\bworking days?\b", lowered):
        days |= WEEKDAYS
    if re.search(r"\bweekends?\b", lowered):
        days |= WEEKEND
    ranges, text = _ranges(_EN_MONTH_RANGE, text)
    for first, last in ranges:
        months |= _span(_en_month(first), _en_month(last), 12, 1)
    text = re.sub(r"^\s*May\b", " ", text)  # "May I ...": a question's opening verb
    months |= {_en_month(word) for word in re.findall(rf"\b{_EN_MONTH}", text)}
    for season, fall in re.findall(_EN_SEASON, lowered):
        months |= set(_SEASONS[season or fall])
    return Period(frozenset(days), frozenset(months))


def _chinese(text: str) -> Period:
    days: set[int] = set()
    months: set[int] = set()
    ranges, text = _ranges(_ZH_DAY_RANGE, text)
    for first, last in ranges:
        days |= _span(_zh_day(first), _zh_day(last), 7, 0)
    days |= {_zh_day(char) for char in re.findall(_ZH_DAY, text)}
    if "工作日" in text:
        days |= WEEKDAYS
    if "周末" in text:
        days |= WEEKEND
    ranges, text = _ranges(_ZH_MONTH_RANGE, text)
    for first, last in ranges:
        start, end = _month(_zh_number(first)), _month(_zh_number(last))
        if start and end:
            months |= _span(start, end, 12, 1)
    months |= {month for word in re.findall(_ZH_MONTH, text) if (month := _month(_zh_number(word)))}
    for season in re.findall(_ZH_SEASON, text):
        months |= set(_ZH_SEASONS[season])
    return Period(frozenset(days), frozenset(months))


def period(text: str) -> Period:
    """The days of the week and months of the year the first MAX_CHARS of `text` name, in
    English and Chinese."""
    text = text[:MAX_CHARS]
    english, chinese = _english(text), _chinese(text)
    return Period(english.days | chinese.days, english.months | chinese.months)
