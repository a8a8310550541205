"""Reviewers turn an ended task into lesson drafts, behind one interface: rules for what a
program can see (offline default), and an LLM through litellm that falls back to the rules
when it gives no usable answer, and says so."""

import asyncio
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol, Self

from pydantic import BaseModel, Field, field_validator, model_validator

from app.core.settings import Settings
from app.llm.client import Verdict, ask_or_fall_back
from app.memories.records import normalise
from app.reflections.schema_check import ArgumentError, SchemaChecker
from app.reflections.schemas import Attribution, PathType, Scope
from app.reflections.tasks import Task, clip, unexpected

# A rule sees a fact, but one task is one observation: 1 - 1/(1+1), the dedup formula's
# value for a lesson seen once, so it stays `observing` until it happens again.
RULE_CONFIDENCE = 0.5
UNSURE_CONFIDENCE = 0.3
_PROMPT_FIELD_CHARS = 500
_WHEN_DO = re.compile(
    r"^\s*(when|whenever|if|before|after)\b.+,\s*\S|^\s*(当|如果|在).+[，,]\s*\S", re.IGNORECASE | re.DOTALL
)


@dataclass(frozen=True, slots=True)
class Draft:
    lesson: str
    scope: str
    attribution: str
    path_type: str
    confidence: float
    situation: str = ""
    action: str = ""
    outcome: str = ""


Review = Verdict[Draft]


class Reviewer(Protocol):
    async def review(self, task: Task) -> Review: ...


def _param_lesson(tool: str, error: ArgumentError) -> tuple[str, str]:
    """(lesson, what the call did) for the first way the arguments broke the schema."""
    field = ".".join(str(part) for part in error.path) or "the arguments"
    if error.keyword == "type":
        return (
            f"When calling {tool}, pass `{field}` as {' or '.join(error.expected)}.",
            f"passed `{field}` = {error.instance} ({error.instance_type})",
        )
    if error.keyword == "required":
        return f"When calling {tool}, include the required field `{error.expected}`.", f"left out `{error.expected}`"
    return (
        f"When calling {tool}, make `{field}` satisfy the input schema ({error.keyword}: {error.expected}).",
        f"passed `{field}` = {error.instance}",
    )


def _outcome(call: dict[str, Any]) -> str:
    return f"{call['status']}: {call.get('error') or call.get('result') or 'no detail'}"


class RuleReviewer:
    """Lessons a program can see for itself: arguments that break the tool's schema, a timeout
    a retry got past, and the same failing call repeated."""

    name = "rules"

    def __init__(self, checker: SchemaChecker) -> None:
        self._checker = checker

    async def review(self, task: Task) -> Review:
        param_drafts, notes = await self._param_errors(task)
        drafts = param_drafts + self._timeouts_retried(task) + self._repeated_failures(task)
        drafts += self._timeouts_unrecovered(task)
        return Review(drafts, decided_by=self.name, note="; ".join(notes) or None)

    async def _argument_errors(self, task: Task) -> tuple[list[ArgumentError | None], list[str]]:
        """Each tool call's schema error (its tool's last schema in the task), and notes on
        schemas that could not be used. One check per tool, all tools at once."""
        calls = task.tool_calls
        schemas = {call["tool"]: call["input_schema"] for call in calls if call.get("input_schema")}
        tools = list(schemas)
        checks = await asyncio.gather(
            *(
                self._checker.check(schemas[tool], [call.get("args") or {} for call in calls if call["tool"] == tool])
                for tool in tools
            )
        )
        errors: list[ArgumentError | None] = [None] * len(calls)
        notes = []
        for tool, check in zip(tools, checks, strict=True):
            if check.note:
                notes.append(f"{tool}: {check.note}")
            indexes = [index for index, call in enumerate(calls) if call["tool"] == tool]
            for index, error in zip(indexes, check.errors, strict=True):
                errors[index] = error
        return errors, notes

    async def _param_errors(self, task: Task) -> tuple[list[Draft], list[str]]:
        errors, notes = await self._argument_errors(task)
        drafts = []
        for index, call in enumerate(task.tool_calls):
            error = errors[index]
            if error is None:
                continue
            lesson, action = _param_lesson(call["tool"], error)
            fixed_later = any(
                later["tool"] == call["tool"] and later.get("status") == "ok" and errors[later_index] is None
                for later_index, later in enumerate(task.tool_calls[index + 1 :], start=index + 1)
            )
            drafts.append(
                Draft(
                    lesson=lesson,
                    scope=f"tool:{call['tool']}",
                    attribution="param_error",
                    path_type="verified" if fixed_later else "falsified",
                    confidence=RULE_CONFIDENCE,
                    situation=f"calling {call['tool']}",
                    action=action,
                    outcome=f"{_outcome(call)}; {error.message}",
                )
            )
        return drafts, notes

    def _timeouts_retried(self, task: Task) -> list[Draft]:
        calls = task.tool_calls
        recovered = {
            call["tool"]
            for index, call in enumerate(calls)
            if call.get("status") == "timeout"
            and any(later["tool"] == call["tool"] and later.get("status") == "ok" for later in calls[index + 1 :])
        }
        # No wait time in the lesson: how long to back off is the environment's, not the lesson's.
        return [
            Draft(
                lesson=f"When {tool} times out, retry the call with exponential backoff instead of giving up.",
                scope=f"tool:{tool}",
                attribution="external_env",
                path_type="verified",
                confidence=RULE_CONFIDENCE,
                situation=f"{tool} timed out",
                action="retried the same call",
                outcome="a retry succeeded",
            )
            for tool in sorted(recovered)
        ]

    def _timeouts_unrecovered(self, task: Task) -> list[Draft]:
        """A tool that timed out twice or more and never answered afterwards. The same request
        timing out each time points at the tool's limit (degrade: send less, go another way);
        different requests timing out point at the environment (back off, then degrade)."""
        drafts = []
        for tool in sorted({call["tool"] for call in task.tool_calls}):
            calls = [call for call in task.tool_calls if call["tool"] == tool]
            timeouts = [index for index, call in enumerate(calls) if call.get("status") == "timeout"]
            if len(timeouts) < 2 or any(call.get("status") == "ok" for call in calls[timeouts[-1] :]):
                continue
            requests = {json.dumps(calls[index].get("args") or {}, sort_keys=True, default=str) for index in timeouts}
            same = len(requests) == 1
            drafts.append(
                Draft(
                    lesson=f"When {tool} times out again on the same request, stop resending it unchanged: degrade "
                    "(a smaller request, another way, or report it unavailable)."
                    if same
                    else f"When {tool} keeps timing out, retry with exponential backoff a bounded number of times, "
                    "then degrade instead of failing the task.",
                    scope=f"tool:{tool}",
                    attribution="tool_limit" if same else "external_env",
                    path_type="falsified",
                    confidence=RULE_CONFIDENCE,
                    situation=f"{tool} timed out {len(timeouts)} times",
                    action=f"sent {'the same request' if same else f'{len(requests)} different requests'} again",
                    outcome=f"no call of {tool} answered after the first timeout",
                )
            )
        return drafts

    def _repeated_failures(self, task: Task) -> list[Draft]:
        failures = Counter(
            (call["tool"], json.dumps(call.get("args") or {}, sort_keys=True, default=str))
            for call in task.tool_calls
            if call.get("status") == "error"
        )
        return [
            Draft(
                lesson=f"When {tool} fails, change the arguments or the plan before calling it again; "
                "do not repeat the identical call.",
                scope=f"tool:{tool}",
                attribution="planning_flaw",
                path_type="falsified",
                confidence=RULE_CONFIDENCE,
                situation=f"{tool} failed",
                action=f"repeated the identical call {count} times with {args}",
                outcome="every repeat failed the same way",
            )
            for (tool, args), count in failures.items()
            if count >= 2
        ]


SYSTEM_PROMPT = """You review an AI agent's finished task to learn from what did not go as \
expected. Look ONLY at the items under "unexpected"; everything that went as planned needs no \
lesson. For each unexpected item, first attribute its cause to exactly one of:
- param_error: the agent passed wrong or malformed arguments;
- tool_limit: the tool cannot do what was asked;
- planning_flaw: wrong plan, wrong order, or repeating what already failed;
- external_env: network, rate limits, outages, anything outside the agent's control;
- unverified: the events do not show the cause. When unsure, choose unverified with confidence 0.3.
Then write one lesson in the form "When <situation>, <do this>." that would have avoided it. \
Never invent a fixed wait time. scope is "tool:<tool name>" for a lesson about one tool, \
"task:<task type>" for the task as a whole. path_type is "verified" when the events show the \
recommended action working, "falsified" when the lesson warns against an action that failed, \
"tentative" otherwise. Answer with JSON only:
{"lessons": [{"situation": "...", "action": "what the agent did", "outcome": "what happened", \
"attribution": "...", "lesson": "When ..., ...", "scope": "tool:...", \
"path_type": "verified|falsified|tentative", "confidence": <0..1>}]}"""


class _LLMLesson(BaseModel):
    situation: str = Field(max_length=2_000)
    action: str = Field(max_length=2_000)
    outcome: str = Field(max_length=2_000)
    attribution: Attribution
    lesson: str = Field(min_length=1, max_length=2_000)
    scope: Scope
    path_type: PathType
    confidence: float = Field(ge=0, le=1)

    @field_validator("lesson")
    @classmethod
    def _when_do(cls, lesson: str) -> str:
        if not _WHEN_DO.match(lesson):
            raise ValueError('a lesson reads "When <situation>, <do this>"')
        return lesson

    @model_validator(mode="after")
    def _unsure_is_weak(self) -> Self:
        if self.attribution == "unverified":
            self.confidence = min(self.confidence, UNSURE_CONFIDENCE)
        return self


class _LLMAnswer(BaseModel):
    lessons: list[_LLMLesson] = Field(max_length=10)


def _user_prompt(task: Task) -> str:
    events, _ = clip(task.events, _PROMPT_FIELD_CHARS)
    context = {"task_id": task.task_id, "task_type": task.task_type, "agent_role": task.agent_role, "domain": task.domain}
    return json.dumps(
        {"task": context, "unexpected": clip(unexpected(task), _PROMPT_FIELD_CHARS)[0], "events": events, "end": task.end},
        ensure_ascii=False,
        default=str,
    )


class LLMReviewer:
    def __init__(self, *, model: str, timeout_seconds: float, retries: int, fallback: Reviewer) -> None:
        self._model = model
        self._timeout = timeout_seconds
        self._retries = retries
        self._fallback = fallback

    async def review(self, task: Task) -> Review:
        return await ask_or_fall_back(
            model=self._model,
            system=SYSTEM_PROMPT,
            user=_user_prompt(task),
            schema=_LLMAnswer,
            timeout_seconds=self._timeout,
            retries=self._retries,
            read=lambda answer: [Draft(**lesson.model_dump()) for lesson in answer.lessons],
            fallback=lambda: self._fallback.review(task),
        )


RULES_SEE = (
    "the rules learn from arguments that break the tool's input_schema, timeouts (retried or repeated) and "
    "the same failing call repeated; an LLM reviewer (HINDSIGHT_LLM_MODEL) reads everything else"
)


def _unexpected_item(event: dict[str, Any]) -> str:
    if event["type"] == "tool_call":
        return f"{event['tool']} {event.get('status')}"
    if event["type"] == "task_end":
        return f"task {event.get('status')}"
    return event["type"].replace("_", " ")


def nothing_learned(task: Task, review: Review) -> str:
    """Why a review that ran taught no lesson, for the caller to read."""
    seen = Counter(_unexpected_item(event) for event in unexpected(task))
    items = ", ".join(f"{item} x{count}" if count > 1 else item for item, count in seen.items()) or "nothing unexpected"
    why = f"{review.decided_by} found no lesson in: {items}"
    if review.decided_by == RuleReviewer.name:
        why += f" ({RULES_SEE})"
    return f"{review.note}; {why}" if review.note else why


def distinct(drafts: list[Draft]) -> list[Draft]:
    """One draft per (scope, lesson): a task that made one mistake twice teaches it once."""
    seen: dict[tuple[str, str], Draft] = {}
    for draft in drafts:
        seen.setdefault((draft.scope, normalise(draft.lesson)), draft)
    return list(seen.values())


def build_reviewer(settings: Settings, checker: SchemaChecker) -> Reviewer:
    rules = RuleReviewer(checker)
    if not settings.llm_model:
        return rules
    return LLMReviewer(
        model=settings.llm_model, timeout_seconds=settings.llm_timeout_seconds, retries=settings.llm_retries, fallback=rules
    )
