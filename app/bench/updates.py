"""Knowledge-update benchmark (bench/updates/updates_dev.jsonl): each case writes its memories
in order through the API, searches, and checks what is active. Expected answers are read here
only, never by the service."""

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


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    relation: str
    lang: str
    passed: bool
    failures: tuple[str, ...]
    expected_active: int  # memories of cases where every memory should stay active
    wrongly_superseded: int


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _contains(text: str, phrase: str) -> bool:
    return phrase.casefold() in text.casefold()


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
    recent = (await client.get("/debug/recent", params={"namespace": namespace, "n": 500})).json()["memories"]
    by_id = {memory["id"]: memory for memory in recent}
    return judge_case(
        case,
        hits=hits,
        active=sum(memory["status"] == "active" for memory in recent),
        written=len(written),
        superseded=sum(1 for memory_id in written if by_id[memory_id]["status"] == "superseded"),
    )


def judge_case(case: dict[str, Any], *, hits: list[str], active: int, written: int, superseded: int) -> CaseResult:
    """Score a case on what search answered and what stayed active: `written` memories of
    which `superseded` ended superseded."""
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
    keep_all = case["expect_active_count"] == len(case["memories"])
    return CaseResult(
        case_id=case["id"],
        relation=case["relation"],
        lang=case["lang"],
        passed=not failures,
        failures=tuple(failures),
        expected_active=written if keep_all else 0,
        wrongly_superseded=superseded if keep_all else 0,
    )


def summarise(results: list[CaseResult]) -> dict[str, Any]:
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for result in results:
        groups["all"].append(result)
        groups[result.relation].append(result)
        groups[result.lang].append(result)
        groups[f"{result.relation}/{result.lang}"].append(result)
    expected_active = sum(result.expected_active for result in results)
    return {
        "pass_rate": {name: round(sum(r.passed for r in group) / len(group), 3) for name, group in sorted(groups.items())},
        "cases": {name: len(group) for name, group in sorted(groups.items())},
        "wrong_supersede_rate": round(sum(r.wrongly_superseded for r in results) / max(expected_active, 1), 3),
        "failures": {r.case_id: list(r.failures) for r in results if not r.passed},
    }


async def run(client: AsyncClient, cases: list[dict[str, Any]], *, label: str) -> dict[str, Any]:
    results = []
    for case in tqdm(cases, desc=f"updates ({label})", unit="case"):
        with case_relation(case["relation"]):
            results.append(await run_case(client, case))
    return summarise(results)


# --- the LLM path's plumbing, with litellm's mock_response ------------------------------

_current_relation: list[str] = []


@contextmanager
def case_relation(relation: str) -> Iterator[None]:
    _current_relation.append(relation)
    try:
        yield
    finally:
        _current_relation.pop()


def _mock_answer(messages: list[dict[str, str]]) -> str:
    """What a judge that knew the case's relation would answer, for every candidate."""
    asked = json.loads(messages[-1]["content"])
    relation = _current_relation[-1]
    return json.dumps(
        {
            "judgements": [
                {
                    "candidate": old["candidate"],
                    "decision": relation,
                    "confidence": 0.9,
                    "reason": "mocked from the benchmark's expected relation",
                    "merged_content": f"{old['content']} {asked['new']['content']}" if relation == "REFINE" else None,
                }
                for old in asked["old"]
            ]
        }
    )


@contextmanager
def mocked_llm() -> Iterator[None]:
    real = litellm.acompletion

    async def answer(*, messages: list[dict[str, str]], **kwargs: Any):
        return await partial(real, mock_response=_mock_answer(messages))(messages=messages, **kwargs)

    litellm.acompletion = answer
    try:
        yield
    finally:
        litellm.acompletion = real
