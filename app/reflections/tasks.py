"""A task as replayed from its stored events, what went unexpectedly in it, and whether it
deserves a review."""

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from app.text import normalise

STEP_TYPES = frozenset({"tool_call", "plan_step", "llm_request"})


@dataclass(frozen=True, slots=True)
class Task:
    namespace: str
    task_id: str
    task_type: str | None
    agent_role: str | None
    domain: str | None
    events: list[dict[str, Any]]  # each {"seq", "type", **payload}, in order, full length
    end: dict[str, Any] | None

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [event for event in self.events if event["type"] == "tool_call"]

    @property
    def steps(self) -> int:
        return sum(event["type"] in STEP_TYPES for event in self.events)


def clip(value: Any, limit: int) -> tuple[Any, bool]:
    """The value with every string longer than `limit` cut short, and whether any was."""
    if isinstance(value, str):
        return (value[:limit] + "…", True) if len(value) > limit else (value, False)
    if isinstance(value, dict):
        clipped = {key: clip(item, limit) for key, item in value.items()}
        return {key: item for key, (item, _) in clipped.items()}, any(cut for _, cut in clipped.values())
    if isinstance(value, list):
        clipped_items = [clip(item, limit) for item in value]
        return [item for item, _ in clipped_items], any(cut for _, cut in clipped_items)
    return value, False


def full_text(payload: dict[str, Any]) -> tuple[str, str]:
    """The payload as canonical JSON and its sha256."""
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str)
    return text, hashlib.sha256(text.encode()).hexdigest()


def _differs(expected: str | None, actual: str | None) -> bool:
    return expected is not None and actual is not None and normalise(expected) != normalise(actual)


def _unexpected(event: dict[str, Any]) -> bool:
    kind = event["type"]
    if kind == "tool_call":
        return event.get("status") != "ok"
    if kind == "user_feedback":
        return event.get("sentiment") == "negative"
    if kind == "plan_step":
        return _differs(event.get("expected"), event.get("actual"))
    return False


def _end_missed(end: dict[str, Any] | None) -> bool:
    return end is not None and (end.get("status") != "success" or _differs(end.get("expected"), end.get("actual")))


def unexpected(task: Task) -> list[dict[str, Any]]:
    """The events that did not go as expected, then the task's end if it missed its goal: the
    only things a reviewer is asked to explain."""
    found = [event for event in task.events if _unexpected(event)]
    return found + [{"type": "task_end", **task.end}] if _end_missed(task.end) else found


def _retried(calls: list[dict[str, Any]]) -> bool:
    failed_tools: set[str] = set()
    for call in calls:
        if (call.get("attempt") or 1) > 1 or call["tool"] in failed_tools:
            return True
        if call.get("status") != "ok":
            failed_tools.add(call["tool"])
    return False


def triggers(task: Task, *, min_steps: int) -> list[str]:
    """Why an ended task deserves a review (SPEC section 6); empty: it is not reviewed."""
    checks = {
        "tool_failure": any(call.get("status") != "ok" for call in task.tool_calls),
        "retry": _retried(task.tool_calls),
        "long_task": task.steps >= min_steps,
        "negative_feedback": any(e["type"] == "user_feedback" and _unexpected(e) for e in task.events),
        "expectation_missed": _end_missed(task.end)
        or any(e["type"] == "plan_step" and _unexpected(e) for e in task.events),
    }
    return [name for name, held in checks.items() if held]
