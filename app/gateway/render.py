"""Compact text forms of API answers, for the LLM reading a tool result (structured content
carries the full answer): a line it reads at a glance, ids in full so it can use them."""

from typing import Any


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _memory(memory: dict[str, Any]) -> str:
    facts = [f"id={memory['id']}", f"v{memory['version']}", memory["status"]]
    if memory.get("key"):
        facts.insert(1, f"key={memory['key']}")
    return f"{memory['content']} ({', '.join(facts)})"


def write(answer: dict[str, Any]) -> str:
    head = "Already known" if answer["deduplicated"] else "Stored"
    lines = [f"{head}: {_memory(answer['memory'])}"]
    lines += [
        f"- revision {revision['decision']} of {revision['old_memory_id']} ({revision['status']})"
        for revision in answer.get("revisions", [])
    ]
    return "\n".join(lines)


def search(answer: dict[str, Any]) -> str:
    hits = answer["hits"]
    if not hits:
        return "No memories found."
    lines = [f"{_count(len(hits), 'memory', 'memories')}, best first:"]
    for hit in hits:
        line = f"- {_memory(hit['memory'])} score={hit['score']:.2f}"
        if hit.get("superseded_by"):
            line += f" superseded by {hit['superseded_by']}"
        lines.append(line)
    return "\n".join(lines)


def detail(answer: dict[str, Any]) -> str:
    lines = [_memory(answer["memory"])]
    lines += [f"- v{version['version']} {version['status']}: {version['content']}" for version in answer["versions"]]
    lines += [f"- supersedes {_memory(older)}" for older in answer["supersedes"]]
    lines += [f"- superseded by {_memory(newer)}" for newer in answer["superseded_by"]]
    return "\n".join(lines)


def revised(answer: dict[str, Any]) -> str:
    revision = answer["revision"]
    return f"Revised: {_memory(answer['memory'])}; revision {revision['id']} ({revision['status']})."


def reviewed(answer: dict[str, Any]) -> str:
    revisions = answer["revisions"]
    if not revisions:
        return f"Checked {_count(answer['checked'], 'memory', 'memories')}: no contradictions found."
    found = "; ".join(
        f"{revision['decision']} {revision['new_memory_id']} vs {revision['old_memory_id']} ({revision['status']})"
        for revision in revisions
    )
    checked = _count(answer["checked"], "memory", "memories")
    return f"Checked {checked}, {_count(len(revisions), 'revision', 'revisions')}: {found}."


def memory_feedback(answer: dict[str, Any]) -> str:
    memory = answer["memory"]
    return f"Feedback noted: memory {memory['id']} now has confidence {memory['confidence']:.2f}."


def forgotten(answer: dict[str, Any]) -> str:
    return f"Forgot memory {answer['memory_id']}: search no longer returns it; its history is kept."


def purged(answer: dict[str, Any]) -> str:
    erasure = answer["erasure"]
    also = f", with {_count(len(erasure['also_purged']), 'memory', 'memories')} built from or quoting it" if erasure["also_purged"] else ""
    return f"Purged memory {erasure['memory_id']}{also}: its text is gone everywhere; tombstone {erasure['id']}."


def events(answer: dict[str, Any]) -> str:
    recorded = f"Recorded {_count(answer['accepted'], 'event', 'events')}."
    review = answer.get("review")
    if review is None:
        return recorded
    why = ", ".join(review["triggers"])
    lessons = answer["lessons"]
    if not lessons:
        return f"{recorded} Reviewed ({why}): no lesson. {review.get('note') or ''}".rstrip()
    taught = "; ".join(f"{lesson['lesson']} [{lesson['status']}, id={lesson['id']}]" for lesson in lessons)
    return f"{recorded} Reviewed ({why}): {_count(len(lessons), 'lesson', 'lessons')}: {taught}"


def lessons(answer: dict[str, Any]) -> str:
    lines = [f"Do: {lesson['lesson']} ({lesson['scope']}, id={lesson['id']})" for lesson in answer["recommendations"]]
    lines += [f"Avoid: {lesson['lesson']} ({lesson['scope']}, id={lesson['id']})" for lesson in answer["warnings"]]
    if answer.get("observing"):
        lines.append(f"({_count(answer['observing'], 'lesson', 'lessons')} held back as observing until seen again.)")
    return "\n".join(lines) or "No lessons for this."


def lesson_feedback(answer: dict[str, Any]) -> str:
    lesson = answer["lesson"]
    return f"Feedback noted: lesson {lesson['id']} now has confidence {lesson['confidence']:.2f} ({lesson['status']})."


def field_errors(errors: list[dict[str, Any]]) -> str:
    """`field: message`, one line per error, for arguments or a request the API refused."""
    lines = []
    for error in errors:
        where = [str(part) for part in error.get("loc", ()) if part != "body"]
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        lines.append(f"{'.'.join(where) or 'arguments'}: {message}")
    return "\n".join(lines)


def problem(problem: dict[str, Any]) -> str:
    if problem.get("errors"):
        return field_errors(problem["errors"])
    return f"{problem.get('title', 'Error')}: {problem.get('detail', '')}"


def conversation(answer: dict[str, Any]) -> str:
    if "job" in answer:  # a long conversation continues as a job
        job = answer["job"]
        return f"Remembering {job['progress']['total']} messages in the background (job {job['id']}, {job['status']})."
    lines = [
        f"Remembered {_count(answer['stored'], 'new message', 'new messages')} "
        f"({answer['already_stored']} already known, {answer['rejected']} refused)."
    ]
    lines += [f"- {memory['content']} (key={memory['key']})" for memory in answer["extraction"]["memories"] if memory["status"] < 400]
    lines += [f"- message {m['index']} refused: {m['problem']['detail']}" for m in answer["messages"] if m["status"] == "rejected"]
    return "\n".join(lines)


def context(answer: dict[str, Any]) -> str:
    return answer["context"] or "Nothing relevant is known yet."

