"""Time expressions in a query ("last Saturday", "two weeks ago", "in May", 上周, 去年), read
against the search's reference time into a window of memory time.

dateparser finds and resolves them in many languages; a window spans the period it reports
(a day, the ISO week, the calendar month or year of the date it resolved to). Single lowercase
words resolving to anything coarser than a day ("may", "march") are verbs far more often than
dates in a question, so they are ignored, as is any expression holding such a word in lower
case ("one may be" is not the first of May); so are clock times alone."""

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from dateparser.date import DateDataParser
from dateparser.languages.loader import default_loader
from dateparser.search import search_dates

from app.text import cjk_characters
from app.text.calendar_words import MONTHS, WEEKDAYS

# The languages searched for expressions: detection over every language dateparser knows
# costs ~10x more and finds "dates" in ordinary words of other languages.
LANGUAGES = ("en", "zh")
# A query longer than this is not searched for time expressions (pasted text, not a question).
MAX_QUERY_CHARS = 500

_WORD = re.compile(r"^[a-z]+$")
logging.getLogger("dateparser").setLevel(logging.WARNING)


@dataclass(frozen=True, slots=True)
class Window:
    start: datetime
    end: datetime
    text: str  # the expression as written in the query

    def holds(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


def _settings(reference: datetime) -> dict:
    naive = reference.astimezone(timezone.utc).replace(tzinfo=None)
    return {"RELATIVE_BASE": naive, "PREFER_DATES_FROM": "past", "RETURN_TIME_AS_PERIOD": True}


@lru_cache(maxsize=8)
def _parser(reference: datetime) -> DateDataParser:
    return DateDataParser(languages=list(LANGUAGES), settings=_settings(reference))


def _span(date: datetime, period: str) -> tuple[datetime, datetime] | None:
    day = date.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=timezone.utc)
    if period == "day":
        return day, day + timedelta(days=1)
    if period == "week":
        monday = day - timedelta(days=day.weekday())
        return monday, monday + timedelta(days=7)
    if period == "month":
        first = day.replace(day=1)
        return first, (first + timedelta(days=32)).replace(day=1)
    if period == "year":
        first = day.replace(month=1, day=1)
        return first, first.replace(year=first.year + 1)
    return None  # a clock time alone narrows nothing


@lru_cache(maxsize=1)
def _month_names() -> frozenset[str]:
    """Month names and abbreviations of the Latin-script languages searched, from dateparser's data."""
    names: set[str] = set()
    for language in LANGUAGES:
        info = default_loader.get_locale(language).info
        for month in MONTHS:
            names.update(name.lower() for name in info.get(month, []) if _WORD.match(name.lower()))
    return frozenset(names)


def _lowercase_month(word: str) -> bool:
    """A month name written in lower case ("may", "march"): a verb, in a question."""
    return bool(_WORD.match(word)) and word in _month_names()


_UNITS = ("year", "month", "week", "day", "fortnight", "decade", "century")
_TOKEN = re.compile(r"[^\W\d_]+")
_DATE_NUMBER = re.compile(r"(?<![\w#])\d{1,4}(?:[-/.]\d{1,4}){0,2}(?:st|nd|rd|th)?(?!\w)")


@lru_cache(maxsize=1)
def _date_words() -> frozenset[str]:
    """Every word dateparser's English data can build a date from (months, weekdays, units,
    relative words such as yesterday or ago): a query with none of them, no digit and no CJK
    holds no time expression, and is not handed to the parser (4-14 ms of CPU a query)."""
    words: set[str] = set()
    for language in LANGUAGES:
        info = default_loader.get_locale(language).info
        for key in (*MONTHS, *WEEKDAYS, *_UNITS):
            words.update(token for name in info.get(key, []) for token in _TOKEN.findall(name.lower()))
        # Relative words that are a date by themselves (yesterday, today); "last", "this" and
        # "next" only count beside a unit or a name above.
        for phrases in info.get("relative-type", {}).values():
            words.update(phrase.lower() for phrase in phrases if _WORD.match(phrase.lower()))
    return frozenset(words)


def may_hold_a_date(query: str) -> bool:
    """Cheap (microseconds): whether `window` could find anything, i.e. a query of at most
    MAX_QUERY_CHARS with CJK text, a date-sized number (a day, a year, 5/27, 2023-05-27) or a
    date word."""
    return len(query) <= MAX_QUERY_CHARS and (
        bool(cjk_characters(query))
        or bool(_DATE_NUMBER.search(query))
        or not _date_words().isdisjoint(_TOKEN.findall(query.lower()))
    )


def window(query: str, *, reference: datetime) -> Window | None:
    """The first time expression of the query that resolves to a period, as a window."""
    if not may_hold_a_date(query):
        return None
    reference = reference.replace(microsecond=0)
    try:
        found = search_dates(query, languages=list(LANGUAGES), settings=_settings(reference)) or []
    except Exception:  # noqa: BLE001 - a parser failure must never fail the search
        return None
    for text, _ in found:
        data = _parser(reference).get_date_data(text)
        if data.date_obj is None or data.period is None:
            continue
        if any(_lowercase_month(word) for word in text.split()):
            continue  # "one may be", "march on": a verb, not a month
        single_word = bool(_WORD.match(text.strip()))
        if single_word and data.period != "day":
            continue
        if not (single_word or " " in text.strip() or any(c.isdigit() for c in text) or cjk_characters(text) or text[:1].isupper()):
            continue
        span = _span(data.date_obj, data.period)
        if span is not None:
            return Window(start=span[0], end=span[1], text=text)
    return None
