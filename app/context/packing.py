"""Packing parts into a context under a hard token budget.

Each kind has a section (working memory, memories, lessons) and may first take up to its share
of the budget (working memory and lessons their configured shares, memories the rest; a kind
with nothing to offer reserves nothing), best-scored first, skipping a part that does not fit
and trying the next. Whatever budget is left then goes to the remaining parts, memories first.
The rendered Markdown is counted whole; should joining have cost more than the parts did, the
lowest-scored part is dropped until it fits. The count is exact for the named tokenizer.
"""

from dataclasses import dataclass
from typing import Any

from app.llm import tokens

SECTIONS = {
    "working": "## Working memory (this session)",
    "memory": "## Relevant memories",
    "lesson": "## Lessons from past tasks",
}
# Leftover budget goes to these kinds in this order.
_TOP_UP = ("memory", "working", "lesson")


@dataclass(slots=True)
class Candidate:
    kind: str  # a key of SECTIONS
    id: str
    text: str  # one Markdown list item
    score: float
    payload: dict[str, Any]
    tokens: int = 0


def render(chosen: list[Candidate]) -> str:
    blocks = []
    for kind, title in SECTIONS.items():
        lines = [candidate.text for candidate in chosen if candidate.kind == kind]
        if lines:
            blocks.append("\n".join([title, *lines]))
    return "\n\n".join(blocks)


def _ordered(chosen: list[Candidate]) -> list[Candidate]:
    order = list(SECTIONS)
    return sorted(chosen, key=lambda c: (order.index(c.kind), -c.score))


def pack(
    candidates: list[Candidate], *, budget: int, shares: dict[str, float], tokenizer: str
) -> tuple[str, list[Candidate]]:
    """The context and the parts it holds (in its order); never more than `budget` tokens."""
    for candidate in candidates:
        candidate.tokens = tokens.count(candidate.text + "\n", tokenizer=tokenizer)
    header = {kind: tokens.count(title + "\n\n", tokenizer=tokenizer) for kind, title in SECTIONS.items()}
    by_kind = {kind: sorted((c for c in candidates if c.kind == kind), key=lambda c: -c.score) for kind in SECTIONS}
    offered = [kind for kind in SECTIONS if by_kind[kind]]
    reserved = {kind: int(budget * shares.get(kind, 0.0)) for kind in offered if kind != "memory"}
    allowance = {**reserved, "memory": budget - sum(reserved.values())}

    chosen: list[Candidate] = []
    used = {kind: 0 for kind in SECTIONS}

    def take(candidate: Candidate, limit: int, spent: int) -> int:
        cost = candidate.tokens + (0 if used[candidate.kind] else header[candidate.kind])
        if spent + cost > limit:
            return 0
        chosen.append(candidate)
        used[candidate.kind] += cost
        return cost

    for kind in offered:
        for candidate in by_kind[kind]:
            take(candidate, allowance[kind], used[kind])
    total = sum(used.values())
    for kind in _TOP_UP:
        for candidate in by_kind[kind]:
            if candidate not in chosen:
                total += take(candidate, budget, total)

    chosen = _ordered(chosen)
    text = render(chosen)
    while chosen and tokens.count(text, tokenizer=tokenizer) > budget:
        chosen.remove(min(chosen, key=lambda c: c.score))
        text = render(chosen)
    return text, chosen
