"""The retrieval benchmarks' protocol: which data tunes, which reports, and how hits count."""

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
