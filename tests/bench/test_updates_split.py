"""The update benchmark's split and bookkeeping, on made-up cases."""

from collections import Counter

from app.bench import updates


def case(case_id: str, relation: str, lang: str, memories: list[str], **expected) -> dict:
    return {
        "id": case_id,
        "relation": relation,
        "lang": lang,
        "memories": [{"content": content, "at": "2025-01-01T00:00:00Z"} for content in memories],
        "expect_active_count": expected.get("active", len(memories)),
        "expect_not_active_contains": expected.get("stale", []),
        "expect_top1_contains": expected.get("top1", []),
    }


CASES = [
    case(f"{lang}-{relation.lower()}-{n}", relation, lang, ["a", "b"])
    for lang in ("en", "zh")
    for relation in updates.RELATIONS
    for n in range(5)
]


def ids(parts: dict[str, list[dict]]) -> dict[str, set[str]]:
    return {name: {c["id"] for c in cases} for name, cases in parts.items()}


def test_the_split_is_fixed_disjoint_complete_and_stratified() -> None:
    parts = updates.split(CASES)
    sides = ids(parts)
    assert not sides["tune"] & sides["report"] and sides["tune"] | sides["report"] == {c["id"] for c in CASES}
    strata = Counter((c["relation"], c["lang"]) for c in parts["tune"])
    assert set(strata.values()) == {3}  # 5 per stratum: 3 to tuning, 2 to report
    assert ids(updates.split(list(reversed(CASES)))) == sides  # the order of the files does not matter


def test_a_cases_side_depends_on_its_stratum_only() -> None:
    together = updates.split(CASES)
    stratum = [c for c in CASES if c["relation"] == "CONFLICT" and c["lang"] == "en"]
    assert updates.split(stratum)["tune"] == [c for c in together["tune"] if c in stratum]


def test_who_must_stay_active() -> None:
    coexist = case("c", "COEXIST", "en", ["x", "y"])
    assert updates.must_stay_active(coexist) == [True, True]
    conflict = case("k", "CONFLICT", "en", ["lives in Austin", "likes tea", "moved to Denver"], active=2, stale=["Austin"], top1=["Denver"])
    assert updates.must_stay_active(conflict) == [False, True, True]
    refine = case("r", "REFINE", "en", ["has a dog", "likes tea", "the dog is a beagle"], active=2, top1=["dog", "beagle"])
    assert updates.must_stay_active(refine) == [False, True, False]


def test_the_report_split_carries_no_per_case_failures() -> None:
    failed = updates.CaseResult("x", "CONFLICT", "en", passed=False, failures=("top-1 wrong",), expected_active=2, wrongly_superseded=1)
    kept = updates.CaseResult("y", "COEXIST", "zh", passed=True, failures=(), expected_active=2, wrongly_superseded=0)
    report = updates.summarise([failed, kept], with_failures=False)
    assert "failures" not in report
    assert report["pass_rate"]["all"] == 0.5 and report["wrong_supersede_rate"] == 0.25
    assert updates.summarise([failed, kept], with_failures=True)["failures"] == {"x": ["top-1 wrong"]}


def test_the_oracle_answers_bystanders_unrelated() -> None:
    conflict = case("k", "CONFLICT", "en", ["lives in Austin", "likes tea", "moved to Denver"], active=2, stale=["Austin"], top1=["Denver"])
    assert updates._oracle_decision(conflict, "moved to Denver", "lives in Austin") == "CONFLICT"
    assert updates._oracle_decision(conflict, "moved to Denver", "likes tea") == "UNRELATED"
    assert updates._oracle_decision(conflict, "likes tea", "lives in Austin") == "UNRELATED"
