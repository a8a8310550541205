"""The lexical route's query text."""

from app.recall.lexical import or_query


def test_or_query_dedupes_and_is_empty_without_terms():
    assert or_query("paint painting the sunrise") == "paint | sunris"
    assert or_query("what is it?") == ""
