"""Time expressions in a query, read against the search's reference time."""

from datetime import datetime, timezone

import pytest
from httpx import AsyncClient

from app.recall.timeframe import window
from tests.recall.test_search import ids, search, write

TUESDAY = datetime(2023, 5, 30, 12, tzinfo=timezone.utc)


def day(year: int, month: int, date: int) -> datetime:
    return datetime(year, month, date, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did I do last Saturday?", day(2023, 5, 27), day(2023, 5, 28)),
        ("What did I eat yesterday?", day(2023, 5, 29), day(2023, 5, 30)),
        ("What happened two weeks ago?", day(2023, 5, 15), day(2023, 5, 22)),
        ("What did I cook in May?", day(2023, 5, 1), day(2023, 6, 1)),
        ("我上周买了什么？", day(2023, 5, 22), day(2023, 5, 29)),
        ("去年我去了哪里？", day(2022, 1, 1), day(2023, 1, 1)),
    ],
)
def test_expressions_become_windows_of_memory_time(query, start, end):
    found = window(query, reference=TUESDAY)
    assert found is not None and (found.start, found.end) == (start, end)


@pytest.mark.parametrize("query", ["Which one may be the best?", "What is the user's favourite drink?", "How many days ago did I buy shoes?"])
def test_ordinary_words_are_no_dates(query):
    assert window(query, reference=TUESDAY) is None


async def test_last_saturday_prefers_that_days_memories(client: AsyncClient):
    ns = "user:time"
    sam = await write(client, "User went hiking with Sam.", namespace=ns, memory_type="episodic", created_at="2023-05-27T10:00:00+00:00")
    alex = await write(client, "User went hiking with Alex.", namespace=ns, memory_type="episodic", created_at="2023-05-13T10:00:00+00:00")
    query = "Who did the user go hiking with last Saturday?"
    a_week_after = await search(client, query, namespace=ns, top_k=2, reference_time="2023-05-30T12:00:00+00:00", record_access=False)
    assert ids(a_week_after) == [sam["id"], alex["id"]]
    assert "time" in a_week_after["hits"][0]["routes"]
    two_weeks_before = await search(client, query, namespace=ns, top_k=2, reference_time="2023-05-16T12:00:00+00:00", record_access=False)
    assert ids(two_weeks_before) == [alex["id"], sam["id"]]


def test_a_query_without_date_words_never_reaches_the_parser(monkeypatch):
    from app.recall import timeframe

    def refuse(*args, **kwargs):
        raise AssertionError("parsed")

    monkeypatch.setattr(timeframe, "search_dates", refuse)
    assert window("What is the user's favourite drink? Order #817970", reference=TUESDAY) is None
    monkeypatch.undo()
    assert window("What did I order on 5/27?", reference=TUESDAY) is not None
