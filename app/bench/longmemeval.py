"""LongMemEval (bench/longmemeval/longmemeval_s_dev.json.zst): loading, a sample stratified by
question type, and a split by question id into a tuning part and a report part. Answers and
evidence labels are read here, for scoring only."""

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import zstandard

# The file was compressed with a long window (zstd --long=27).
_WINDOW_LOG = 27


@dataclass(frozen=True)
class Turn:
    turn_id: str  # "<session id>:<index>"
    session_id: str
    role: str
    content: str
    at: datetime
    evidence: bool


@dataclass(frozen=True)
class Question:
    question_id: str
    question_type: str
    question: str
    turns: tuple[Turn, ...]
    asked_at: datetime | None = None  # the question's date: search's reference_time

    @property
    def evidence(self) -> set[str]:
        return {turn.turn_id for turn in self.turns if turn.evidence}

    @property
    def split(self) -> str:
        """`tuning` or `report`, by a hash of the id: stable, and blind to the content."""
        return "tuning" if int(hashlib.sha256(self.question_id.encode()).hexdigest()[:8], 16) % 2 == 0 else "report"


def _date(text: str) -> datetime:
    # "2023/03/27 (Mon) 00:49"
    return datetime.strptime(text[:10] + text[-6:], "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)


def _question(raw: dict) -> Question:
    turns = []
    for session_id, date, session in zip(
        raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"], strict=True
    ):
        start = _date(date)
        for index, turn in enumerate(session):
            if not turn["content"].strip():
                continue  # a handful of empty turns: nothing a client would send
            turns.append(
                Turn(
                    turn_id=f"{session_id}:{index}",
                    session_id=session_id,
                    role=turn["role"],
                    content=turn["content"],
                    at=start + timedelta(seconds=index),  # turns of a session share its date; seconds keep their order
                    evidence=bool(turn.get("has_answer")),
                )
            )
    return Question(raw["question_id"], raw["question_type"], raw["question"], tuple(turns), _date(raw["question_date"]))


def load(path: Path) -> list[Question]:
    """Every question with evidence turns (abstention questions have none)."""
    with path.open("rb") as compressed:
        reader = zstandard.ZstdDecompressor(max_window_size=2**_WINDOW_LOG).stream_reader(compressed)
        raw = json.loads(reader.read())
    questions = [_question(item) for item in raw if not item["question_id"].endswith("_abs")]
    return [question for question in questions if question.evidence]


def sample(questions: list[Question], *, per_type: int) -> list[Question]:
    """`per_type` questions of each type, half from each split (the report part gets an odd one),
    chosen by a hash of the id (not by content), in type order."""
    by_type: dict[str, dict[str, list[Question]]] = defaultdict(lambda: defaultdict(list))
    for question in sorted(questions, key=lambda q: hashlib.sha256(f"sample:{q.question_id}".encode()).hexdigest()):
        by_type[question.question_type][question.split].append(question)
    chosen = []
    for question_type in sorted(by_type):
        splits = by_type[question_type]
        report = splits["report"][: per_type - per_type // 2]  # an odd count favours the report part
        tuning = splits["tuning"][: per_type - len(report)]
        chosen += tuning + report
    return chosen
