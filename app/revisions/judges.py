"""The two judges behind one interface: rules (offline default) and an LLM through litellm,
which falls back to the rules when it fails and says so."""

import json
from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from app.core.settings import Settings
from app.llm.client import UnusableAnswer, Verdict, ask_or_fall_back
from app.revisions.judgement import Candidate, Decision, JudgedMemory, Judgement
from app.revisions.rules import RuleJudge

Ruling = Verdict[Judgement]


class Judge(Protocol):
    # Whether a ruling can take long (a network call): then a write asks with the namespace
    # lock released. The rule judge decides in milliseconds of CPU, less than the second
    # neighbour scan that releasing the lock costs, so it rules under the lock.
    slow: bool

    async def rule(self, new: JudgedMemory, candidates: Sequence[Candidate]) -> Ruling: ...


class RulesJudge:
    slow = False

    def __init__(self, *, threshold: float = 0.7, disabled: frozenset[str] = frozenset()) -> None:
        self._rules = RuleJudge(threshold=threshold, disabled=disabled)

    async def rule(self, new: JudgedMemory, candidates: Sequence[Candidate]) -> Ruling:
        return Ruling(self._rules.judge(new, candidates), decided_by="rules")


SYSTEM_PROMPT = """You keep an AI agent's long-term memory consistent. A NEW memory was just \
written; decide, for each OLD memory listed, how the new one relates to it. Each memory comes \
with when it was written (written_at, the time in the world it describes) and who said it \
(source: user, agent, tool or web, most trusted first).
- CONFLICT: the same subject AND the same attribute, and the new memory changes or contradicts \
the old one, so the old is no longer true. The old memory will be hidden from search.
- REFINE: the new memory adds detail to the SAME statement (e.g. "User has a dog" / "The dog is \
a beagle"); give merged_content, one text keeping every detail of both. Another attribute of the \
same subject ("The service is written in Go" / "The service's on-call rotation is weekly") is \
COEXIST, never REFINE.
- COEXIST: related, and both stay true (different attributes, different days of one schedule, \
a temporary state beside a lasting one, another person's fact).
- UNRELATED: different things that merely share words.
- DUPLICATE: the new memory restates the old one.
A plan or intention for the future never contradicts a current fact. Judge all old memories \
together: they give each other context. Superseding wrongly hides a true memory, which is worse \
than keeping both: when unsure, COEXIST and UNRELATED are the safe answers. Give your \
confidence that each decision is right (0..1); below the service's threshold nothing is changed. \
Answer with JSON only:
{"judgements": [{"candidate": <number>, "decision": "CONFLICT|REFINE|COEXIST|UNRELATED|DUPLICATE", \
"confidence": <0..1>, "reason": "<short>", "merged_content": "<REFINE only, else null>"}]}"""


class _LLMJudgement(BaseModel):
    candidate: int = Field(ge=0)
    decision: Decision
    confidence: float = Field(ge=0, le=1)
    reason: str = Field(max_length=2_000)
    merged_content: str | None = Field(default=None, max_length=20_000)


class _LLMAnswer(BaseModel):
    judgements: list[_LLMJudgement]


def _user_prompt(new: JudgedMemory, candidates: Sequence[Candidate]) -> str:
    return json.dumps(
        {
            "new": {
                "content": new.content,
                "key": new.key,
                "written_at": new.created_at.isoformat(),
                "source": new.source,
                "confidence": new.confidence,
            },
            "old": [
                {
                    "candidate": index,
                    "content": candidate.memory.content,
                    "key": candidate.memory.key,
                    "written_at": candidate.memory.created_at.isoformat(),
                    "source": candidate.memory.source,
                    "confidence": candidate.memory.confidence,
                    "similarity": round(candidate.similarity, 3),
                }
                for index, candidate in enumerate(candidates)
            ],
        },
        ensure_ascii=False,
    )


class LLMJudge:
    slow = True

    def __init__(self, *, model: str, timeout_seconds: float, retries: int, fallback: Judge) -> None:
        self._model = model
        self._timeout = timeout_seconds
        self._retries = retries
        self._fallback = fallback

    async def rule(self, new: JudgedMemory, candidates: Sequence[Candidate]) -> Ruling:
        def read(answer: _LLMAnswer) -> list[Judgement]:
            by_candidate = {item.candidate: item for item in answer.judgements}
            if set(by_candidate) != set(range(len(candidates))):
                raise UnusableAnswer(f"answer judged candidates {sorted(by_candidate)}, expected 0..{len(candidates) - 1}")
            return [
                Judgement(
                    memory_id=candidate.memory.id,
                    decision=by_candidate[index].decision,
                    confidence=by_candidate[index].confidence,
                    reason=by_candidate[index].reason,
                    merged_content=by_candidate[index].merged_content if by_candidate[index].decision == "REFINE" else None,
                )
                for index, candidate in enumerate(candidates)
            ]

        return await ask_or_fall_back(
            model=self._model,
            system=SYSTEM_PROMPT,
            user=_user_prompt(new, candidates),
            schema=_LLMAnswer,
            timeout_seconds=self._timeout,
            retries=self._retries,
            read=read,
            fallback=lambda: self._fallback.rule(new, candidates),
        )


def build_judge(settings: Settings, *, disabled_rules: frozenset[str] = frozenset()) -> Judge:
    """The rule judge, or the LLM judge with the rules as its fallback when a model is set;
    `disabled_rules` switches named rules off (the benchmark's ablation)."""
    rules = RulesJudge(threshold=settings.revision_confidence_threshold, disabled=disabled_rules)
    if not settings.llm_model:
        return rules
    return LLMJudge(
        model=settings.llm_model, timeout_seconds=settings.llm_timeout_seconds, retries=settings.llm_retries, fallback=rules
    )
