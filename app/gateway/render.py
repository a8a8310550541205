"""Compact text forms of API answers, for the LLM reading a tool result (structured content
carries the full answer)."""

import json
from typing import Any


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
    lines = [f"{len(hits)} memories, best first:"]
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


def lessons(answer: dict[str, Any]) -> str:
    lines = [f"Do: {lesson['lesson']} ({lesson['scope']})" for lesson in answer["recommendations"]]
    lines += [f"Avoid: {lesson['lesson']} ({lesson['scope']})" for lesson in answer["warnings"]]
    return "\n".join(lines) or "No lessons for this."


def conversation(answer: dict[str, Any]) -> str:
    if "job" in answer:  # a long conversation continues as a job
        job = answer["job"]
        return f"Remembering {job['progress']['total']} messages in the background (job {job['id']}, {job['status']})."
    lines = [f"Remembered {answer['stored']} new messages ({answer['already_stored']} already known, {answer['rejected']} refused)."]
    lines += [f"- {memory['content']} (key={memory['key']})" for memory in answer["extraction"]["memories"] if memory["status"] < 400]
    lines += [f"- message {m['index']} refused: {m['problem']['detail']}" for m in answer["messages"] if m["status"] == "rejected"]
    return "\n".join(lines)


def context(answer: dict[str, Any]) -> str:
    return answer["context"] or "Nothing relevant is known yet."


def compact(answer: dict[str, Any]) -> str:
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
