"""Knowledge-update benchmark (bench/updates/*.jsonl): each case writes its memories in order
through the API, searches, and checks what is active. Expected answers are read here only,
never by the service.

The cases are split once, by a hash of their id, into a tuning part and a report part
(`split`). Rules are tuned on the tuning part; the report part is only read in aggregate:
its summary carries no per-case failures."""

import hashlib
import json
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import litellm
from httpx import AsyncClient
from tqdm import tqdm

RELATIONS = ("CONFLICT", "REFINE", "COEXIST", "UNRELATED", "DUPLICATE")
# The split is drawn once and never redrawn: another salt would leak report cases into tuning.
SPLIT_SALT = "hindsight-updates-split-v1"
SPLITS = ("tune", "report")


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    relation: str
    lang: str
    passed: bool
    failures: tuple[str, ...]
    expected_active: int  # memories that must stay active: every one of a COEXIST case, bystanders...
    wrongly_superseded: int  # ...of which ended superseded


def load(*paths: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def _split_key(case_id: str) -> str:
    return hashlib.sha256(f"{SPLIT_SALT}:{case_id}".encode()).hexdigest()


def split(cases: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Tuning and report parts, stratified by relation and language: within each stratum the
    cases are ordered by a hash of their id and dealt alternately, the first to tuning."""
    strata: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for case in cases:
        strata[(case["relation"], case["lang"])].append(case)
    parts: dict[str, list[dict[str, Any]]] = {name: [] for name in SPLITS}
    for stratum in sorted(strata):
        for position, case in enumerate(sorted(strata[stratum], key=lambda case: _split_key(case["id"]))):
            parts[SPLITS[position % 2]].append(case)
    return parts


def _contains(text: str, phrase: str) -> bool:
    return phrase.casefold() in text.casefold()


def must_stay_active(case: dict[str, Any], contents: list[str] | None = None) -> list[bool]:
    """For each memory of a case (or each of `contents`, memories derived from the case),
    whether it must end active. Every memory of a case whose expected active count is all of
    them; in a CONFLICT case, the memories that hold none of the stale phrases; in a REFINE or
    DUPLICATE case, the bystanders, which hold none of the phrases the merged or kept memory
    must show. (The data set agrees: these counts add up to `expect_active_count` in every
    case, the merged memory counted once.)"""
    if contents is None:
        contents = [memory["content"] for memory in case["memories"]]
    if case["expect_active_count"] == len(case["memories"]):
        return [True] * len(contents)
    phrases = case["expect_not_active_contains"]
    if case["relation"] != "CONFLICT":
        phrases = phrases + case["expect_top1_contains"]
    return [not any(_contains(content, phrase) for phrase in phrases) for content in contents]


async def run_case(client: AsyncClient, case: dict[str, Any]) -> CaseResult:
    namespace = f"{case['namespace']}:bench-{uuid.uuid4().hex[:8]}"
    written: list[str] = []
    for memory in case["memories"]:
        key = memory.get("key")
        body = {
            "namespace": namespace,
            "content": memory["content"],
            "created_at": memory["at"],
            "key": key.replace(case["namespace"], namespace, 1) if key else None,
        }
        response = await client.post("/v1/memories", json=body)
        response.raise_for_status()
        written.append(response.json()["memory"]["id"])
    search = await client.post(
        "/v1/memories/search",
        json={"query": case["query"], "namespace": namespace, "top_k": 10, "record_access": False},
    )
    search.raise_for_status()
    hits = [hit["memory"]["content"] for hit in search.json()["hits"]]
    recent = (await client.get("/debug/recent", params={"namespace": namespace, "limit": 500})).json()["memories"]
    by_id = {memory["id"]: memory for memory in recent}
    return judge_case(
        case,
        hits=hits,
        active=sum(memory["status"] == "active" for memory in recent),
        written=[(memory["content"], by_id[memory_id]["status"]) for memory, memory_id in zip(case["memories"], written)],
    )


def judge_case(case: dict[str, Any], *, hits: list[str], active: int, written: list[tuple[str, str]]) -> CaseResult:
    """Score a case on what search answered, how many memories stayed active, and which of the
    `written` memories (content, status now) that must stay active were superseded."""
    failures = []
    top1 = hits[0] if hits else ""
    missing = [phrase for phrase in case["expect_top1_contains"] if not _contains(top1, phrase)]
    if missing:
        failures.append(f"top-1 {top1!r} lacks {missing}")
    stale = [phrase for phrase in case["expect_not_active_contains"] if any(_contains(hit, phrase) for hit in hits)]
    if stale:
        failures.append(f"active hits still say {stale}")
    if active != case["expect_active_count"]:
        failures.append(f"{active} active, expected {case['expect_active_count']}")
    keep = must_stay_active(case, [content for content, _ in written])
    lost = [content for (content, status), must in zip(written, keep) if must and status == "superseded"]
    failures += [f"wrongly superseded: {content!r}" for content in lost]
    return CaseResult(
        case_id=case["id"],
        relation=case["relation"],
        lang=case["lang"],
        passed=not failures,
        failures=tuple(failures),
        expected_active=sum(keep),
        wrongly_superseded=len(lost),
    )


def summarise(results: list[CaseResult], *, with_failures: bool) -> dict[str, Any]:
    """Pass rates per relation and language and the wrong-supersede rate; per-case failures
    only when asked (never for the report split)."""
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for result in results:
        groups["all"].append(result)
        groups[result.relation].append(result)
        groups[result.lang].append(result)
        groups[f"{result.relation}/{result.lang}"].append(result)
    expected_active = sum(result.expected_active for result in results)
    wrong = sum(result.wrongly_superseded for result in results)
    summary: dict[str, Any] = {
        "pass_rate": {name: round(sum(r.passed for r in group) / len(group), 3) for name, group in sorted(groups.items())},
        "cases": {name: len(group) for name, group in sorted(groups.items())},
        "expected_active": expected_active,
        "wrongly_superseded": wrong,
        "wrong_supersede_rate": round(wrong / max(expected_active, 1), 4),
        "cases_with_wrong_supersede": sum(1 for r in results if r.wrongly_superseded),
    }
    if with_failures:
        summary["failures"] = {r.case_id: list(r.failures) for r in results if not r.passed}
    return summary


async def run(client: AsyncClient, cases: list[dict[str, Any]], *, label: str, with_failures: bool) -> dict[str, Any]:
    results = []
    for case in tqdm(cases, desc=f"updates ({label})", unit="case", leave=False):
        with current_case(case):
            results.append(await run_case(client, case))
    return summarise(results, with_failures=with_failures)


# --- the LLM path with an oracle for answers (litellm's mock_response) ----------------------

_cases: list[dict[str, Any]] = []


@contextmanager
def current_case(case: dict[str, Any]) -> Iterator[None]:
    _cases.append(case)
    try:
        yield
    finally:
        _cases.pop()


def _oracle_decision(case: dict[str, Any], new: str, old: str) -> str:
    """What a judge that knew the case would answer for one candidate: the case's relation
    between the memories it is about, UNRELATED when either side is a bystander."""
    if case["relation"] in ("COEXIST", "UNRELATED"):
        return case["relation"]
    keep = dict(zip((memory["content"] for memory in case["memories"]), must_stay_active(case)))
    if case["relation"] == "CONFLICT":
        # The chain of updates: the stale memories and the latest one, which shows the answer.
        latest = all(_contains(new, phrase) for phrase in case["expect_top1_contains"])
        in_chain = keep.get(new) is False or latest
        return "CONFLICT" if in_chain and keep.get(old) is False else "UNRELATED"
    # A merged memory is no memory of the case: it is part of what the case is about.
    return "UNRELATED" if keep.get(new, False) or keep.get(old, False) else case["relation"]


def _oracle_answer(messages: list[dict[str, str]], *, per_candidate: bool) -> str:
    asked = json.loads(messages[-1]["content"])
    case = _cases[-1]
    judgements = []
    for old in asked["old"]:
        decision = _oracle_decision(case, asked["new"]["content"], old["content"]) if per_candidate else case["relation"]
        judgements.append(
            {
                "candidate": old["candidate"],
                "decision": decision,
                "confidence": 0.95,
                "reason": "oracle: the benchmark's expected relation",
                "merged_content": f"{old['content']} {asked['new']['content']}" if decision == "REFINE" else None,
            }
        )
    return json.dumps({"judgements": judgements})


@contextmanager
def oracle_llm(*, per_candidate: bool = True) -> Iterator[None]:
    """litellm answers every judge call with the oracle's decisions (no network): each
    candidate's expected relation, or (`per_candidate=False`) the case's relation for every
    candidate, bystanders included."""
    real = litellm.acompletion

    async def answer(*, messages: list[dict[str, str]], **kwargs: Any):
        mocked = _oracle_answer(messages, per_candidate=per_candidate)
        return await partial(real, mock_response=mocked)(messages=messages, **kwargs)

    litellm.acompletion = answer
    try:
        yield
    finally:
        litellm.acompletion = real
