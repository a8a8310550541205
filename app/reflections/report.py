"""The lessons of a namespace as Markdown for a human: by scope, with counts, confidence and conflicts."""

from collections import Counter
from itertools import groupby

from app.models import Reflection

_STATUS_ORDER = {"active": 0, "observing": 1, "deprecated": 2}
_ADVICE = {"verified": "recommendation", "tentative": "recommendation (tentative)", "falsified": "warning"}


def _line(lesson: Reflection) -> str:
    others = ", ".join(f"`{other}`" for other in lesson.metadata_.get("conflicts_with", []))
    conflict = f" · ⚠ conflicts with {others}" if lesson.conflict_flag else ""
    one_line = " ".join(lesson.lesson.split())
    return (
        f"- **{lesson.status}** {_ADVICE[lesson.path_type]}: {one_line}\n"
        f"  `{lesson.id}` · {lesson.attribution} · confidence {lesson.confidence:.2f} · "
        f"seen {lesson.occurrences}× · recalled {lesson.hit_count}× · useful {lesson.useful_count}×{conflict}"
    )


def markdown(namespace: str, lessons: list[Reflection]) -> str:
    statuses = Counter(lesson.status for lesson in lessons)
    conflicts = sum(lesson.conflict_flag for lesson in lessons)
    lines = [
        f"# Lessons in `{namespace}`",
        "",
        f"{len(lessons)} lessons: {statuses['active']} active, {statuses['observing']} observing, "
        f"{statuses['deprecated']} deprecated; {conflicts} in conflict.",
    ]
    for scope, in_scope in groupby(lessons, key=lambda lesson: lesson.scope):
        ordered = sorted(in_scope, key=lambda lesson: (_STATUS_ORDER[lesson.status], -lesson.confidence))
        lines += ["", f"## {scope} ({len(ordered)})", "", *(_line(lesson) for lesson in ordered)]
    return "\n".join(lines) + "\n"
