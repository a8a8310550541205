"""What a revision judge sees and what it decides."""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from uuid import UUID

Decision = Literal["CONFLICT", "REFINE", "COEXIST", "UNRELATED", "DUPLICATE"]


@dataclass(frozen=True, slots=True)
class JudgedMemory:
    """The part of a memory a judge looks at."""

    id: UUID
    content: str
    memory_type: str
    key: str | None
    created_at: datetime
    source: str = "agent"  # who said it: user, agent, tool or web
    confidence: float = 1.0


@dataclass(frozen=True, slots=True)
class Candidate:
    """An older active memory the new one is judged against."""

    memory: JudgedMemory
    similarity: float


@dataclass(frozen=True, slots=True)
class Judgement:
    """A judge's decision about one candidate."""

    memory_id: UUID
    decision: Decision
    confidence: float
    reason: str
    merged_content: str | None = None
