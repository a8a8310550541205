"""The retrieval benchmarks' protocol: which data tunes, which reports, and how hits count."""

import pytest

from app.bench import ablation, lme_retrieval, retrieval
from app.recall import relevance


def test_locomo_tunes_on_the_first_five_conversations_and_reports_on_the_rest():
    assert [retrieval.split_of(index) for index in range(10)] == ["tuning"] * 5 + ["report"] * 5


def test_turn_and_session_recall_count_any_and_all():
    ranked = ["s1:4", "s2:0", "s1:5"]
    assert lme_retrieval.recall(ranked, {"s2:0", "s3:1"}, 2) == (1.0, 0.0)
    assert lme_retrieval.recall(ranked, {"s2:0", "s1:5"}, 2) == (1.0, 0.0)
    assert lme_retrieval.recall(ranked, {"s2:0", "s1:5"}, 3) == (1.0, 1.0)
    outcome = {"question_id": "q", "question_type": "multi-session", "split": "report", "evidence": ["s3:1", "s1:0"]}
    systems = {"hindsight": ranked, "bm25": ["s3:1"], "dense": ["s9:9"]}
    summary = lme_retrieval.summarise([{**outcome, "ranked": systems}])
    assert summary["report"]["hindsight"]["turn_any@5"] == 0.0
    assert summary["report"]["hindsight"]["session_any@5"] == 1.0  # s1:4 is in an evidence session
    assert summary["report/multi-session"]["bm25"]["turn_any@5"] == 1.0


def test_an_ablation_variant_switches_its_component_off_and_back():
    variant = ablation.VARIANTS["-session lift"]
    before = relevance.SESSION_LIFT
    with variant.applied():
        assert relevance.SESSION_LIFT == 0.0
    assert relevance.SESSION_LIFT == before


def test_the_longmemeval_run_order_keeps_types_and_splits_together():
    from datetime import datetime, timezone

    from app.bench.longmemeval import Question, Turn

    def question(question_id: str, kind: str) -> Question:
        turn = Turn(f"{question_id}:0", "s", "user", "hi", datetime(2023, 1, 1, tzinfo=timezone.utc), True)
        return Question(question_id, kind, "q?", (turn,))

    pool = [question(f"q{n}", kind) for kind in "ab" for n in range(40)]
    tuning = {kind: [q for q in pool if q.question_type == kind and q.split == "tuning"][:2] for kind in "ab"}
    report = {kind: [q for q in pool if q.question_type == kind and q.split == "report"][:2] for kind in "ab"}
    sample = tuning["a"] + report["a"] + tuning["b"] + report["b"]
    order = lme_retrieval.interleaved(sample)
    assert [(q.question_type, q.split) for q in order[:4]] == [("a", "tuning"), ("b", "tuning"), ("a", "report"), ("b", "report")]
    assert sorted(q.question_id for q in order) == sorted(q.question_id for q in sample)


async def test_a_kept_haystack_is_written_once_and_an_interrupted_one_is_refused(client):
    from datetime import datetime, timedelta, timezone

    from app.bench.longmemeval import Question, Turn

    app = client._transport.app  # the ASGI app under test
    start = datetime(2023, 5, 1, tzinfo=timezone.utc)
    turns = tuple(
        Turn(f"s{i // 4}:{i % 4}", f"s{i // 4}", "user" if i % 2 == 0 else "assistant", f"Turn {i} about the {word}.",
             start + timedelta(days=i // 4, seconds=i), i == 5)
        for i, word in enumerate(["garden", "violin", "ferret", "kayak", "pottery", "lighthouse", "tango", "origami"])
    )
    question = Question("keep-q1", "single-session-user", "Which lighthouse did I mention?", turns, start + timedelta(days=3))
    embedder = lme_retrieval.CachingEmbedder(app.state.embedder)
    await lme_retrieval.run(app, client, [question], embedder=embedder, ablate=False, reuse=True)
    namespace = "bench:lme-r:keep-q1"
    assert await lme_retrieval._stored(app, namespace, question) == (8, True)
    second = await lme_retrieval.run(app, client, [question], embedder=embedder, ablate=False, reuse=True)
    assert await lme_retrieval._stored(app, namespace, question) == (8, True)  # searched, not written again
    assert "s1:1" in second["questions"][0]["ranked"]["hindsight"]
    longer = Question("keep-q1", question.question_type, question.question, turns + (Turn("s2:0", "s2", "user", "A later turn.", start + timedelta(days=2), False),) * 5)
    other = Question("keep-q2", question.question_type, question.question, turns)
    assert (await lme_retrieval.run(app, client, [other], embedder=embedder, reuse=True, stored_only=True))["questions"] == []
    with pytest.raises(RuntimeError, match="interrupted"):
        await lme_retrieval.run(app, client, [longer], embedder=embedder, ablate=False, reuse=True)
