"""Lexical and dense evidence are fused with equal shares: neither route's first choice wins
by being first alone; the memory with the larger lead, as each route scales its scores, does."""

from uuid import uuid4

from app.recall import relevance


def _evidence(cosine: dict, lexical: dict) -> relevance.Evidence:
    return relevance.Evidence(
        cosine=cosine,
        vector_hits=sorted(cosine, key=cosine.__getitem__, reverse=True),
        lexical_rank=lexical,
        session={key: None for key in cosine},
        speaker={key: None for key in cosine},
    )


def test_a_clear_dense_lead_outweighs_a_smaller_lexical_one():
    # A long turn that repeats the query's words leads BM25 by 1.0 to 0.6; the turn that answers
    # leads the dense route by the full spread of cosines (1.0 to 0.5 after scaling).
    wordy, answer, other = uuid4(), uuid4(), uuid4()
    scores = relevance.score(_evidence({wordy: 0.70, answer: 0.80, other: 0.60}, {wordy: 10.0, answer: 6.0}), query="q")
    assert scores[answer].semantic == 1.0
    assert scores[wordy].semantic < 1.0
    assert scores[other].semantic < scores[wordy].semantic


def test_a_clear_lexical_lead_outweighs_a_smaller_dense_one():
    rare_word, paraphrase, other = uuid4(), uuid4(), uuid4()
    scores = relevance.score(
        _evidence({rare_word: 0.75, paraphrase: 0.80, other: 0.60}, {rare_word: 10.0, paraphrase: 2.0}), query="q"
    )
    assert scores[rare_word].semantic == 1.0 > scores[paraphrase].semantic
