"""The turns around a hit come back as its context, below it; recency counts only as far as a
memory answers the query."""

from datetime import datetime, timezone
from uuid import uuid4

from httpx import AsyncClient

from app.recall import relevance, scoring
from tests.recall.test_search import ids, search, write

NS = "user:context"
SESSION = [
    ("user", "I'm excited to see St. Peter's Basilica. Any recommendations for good places to eat near the Vatican?"),
    (
        "agent",
        "There are many great food options near the Vatican. Pizzarium serves pizza by the slice, Antica "
        "Salumeria Ragusa is a deli famous for its cured meats and cheeses, and Sciascia Caffè has the best espresso.",
    ),
    ("user", "I'll be sure to try some of those places out. Are there any souvenir shops around the Vatican?"),
]
ELSEWHERE = [
    "I'm planning a trip to Florence next spring and want to see the Uffizi.",
    "Can you suggest a recipe for a quick weeknight pasta?",
    "My sister recommended a bakery in Lisbon with great custard tarts.",
]


async def test_the_answer_holding_the_evidence_ranks_above_the_question_that_asked_for_it(client: AsyncClient):
    said = [
        await write(client, text, namespace=NS, session_id="trip", source={"kind": kind}, created_at=f"2025-05-26T10:00:0{i}+00:00")
        for i, (kind, text) in enumerate(SESSION)
    ]
    for i, text in enumerate(ELSEWHERE):
        await write(client, text, namespace=NS, session_id=f"other-{i}", source={"kind": "user"}, created_at="2025-05-20T10:00:00+00:00")
    found = await search(
        client,
        "Can you remind me of the name of that deli near the Vatican with the best cured meats and cheeses?",
        namespace=NS,
        top_k=3,
        record_access=False,
        reference_time="2025-05-30T00:00:00+00:00",
    )
    # The agent's answer is trusted less (0.8) than the user's turns around it; added to their own
    # scores, its lift put both of them first.
    assert ids(found)[0] == said[1]["id"]


def test_a_neighbours_lift_replaces_a_weaker_own_score_instead_of_adding_to_it():
    answer, question, unrelated = uuid4(), uuid4(), uuid4()
    evidence = relevance.Evidence(
        cosine={answer: 0.9, question: 0.85, unrelated: 0.7},
        vector_hits=[answer, question, unrelated],
        lexical_rank={answer: 2.0, question: 0.4},
        session={answer: ("ns", "s"), question: ("ns", "s"), unrelated: ("ns", "t")},
        speaker={answer: None, question: None, unrelated: None},
    )
    evidence.link(question, answer, 1)
    scores = relevance.score(evidence, query="deli")
    assert scores[answer].semantic == 1.0
    # The question's own score (with its session's lift) stands, its neighbour's half does not add.
    assert scores[question].semantic < 0.8
    assert scores[unrelated].semantic < scores[question].semantic


def test_recency_counts_as_far_as_the_memory_answers_the_query():
    now = datetime(2025, 5, 30, tzinfo=timezone.utc)
    assert scoring.recency(said_at=now, at=now, decay_per_hour=0.01, relevance=1.0) == 1.0
    assert scoring.recency(said_at=now, at=now, decay_per_hour=0.01, relevance=0.0) == 0.0
    week_old = scoring.recency(said_at=datetime(2025, 5, 23, tzinfo=timezone.utc), at=now, decay_per_hour=0.01, relevance=1.0)
    # Said this morning and half as relevant, a memory no longer outweighs the best match of a week ago.
    weights = scoring.Weights(semantic=0.4, recency=0.3, confidence=0.2, access=0.1)
    fresh = scoring.Parts(semantic=0.5, recency=scoring.recency(said_at=now, at=now, decay_per_hour=0.01, relevance=0.5), confidence=1, access=0, lexical=None)
    best = scoring.Parts(semantic=1.0, recency=week_old, confidence=1, access=0, lexical=None)
    assert best.final(weights) > fresh.final(weights)
