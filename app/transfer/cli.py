"""`python -m app export-namespace NS -o FILE` and `python -m app import-namespace FILE`: the
same export and import as the API, straight against the database, with a progress bar and
without the request-size limit."""

import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm

from app.core.database import create_engine, create_sessionmaker, resolve_database_url
from app.core.settings import Settings
from app.embeddings.provider import build_provider
from app.transfer import service
from app.transfer.service import IdMode


async def export_to(namespace: str, output: Path | None, *, settings: Settings) -> int:
    engine = create_engine(settings, resolve_database_url(settings))
    records = 0
    try:
        out = sys.stdout if output is None else output.open("w", encoding="utf-8")
        try:
            async with create_sessionmaker(engine)() as session:
                with tqdm(desc=f"export {namespace}", unit=" records", file=sys.stderr) as bar:
                    async for line in service.export_lines(session, namespace=namespace):
                        out.write(line)
                        records += 1
                        bar.update()
        finally:
            if output is not None:
                out.close()
    finally:
        await engine.dispose()
    return records


async def import_from(path: Path, *, namespace: str | None, ids: IdMode, settings: Settings) -> dict[str, Any]:
    with path.open(encoding="utf-8") as lines:
        source, records = service.parse(lines, max_records=settings.import_max_records)
    engine = create_engine(settings, resolve_database_url(settings))
    memories = sum(1 for _, record in records if record["type"] == "memory")
    try:
        with tqdm(total=memories, desc=f"import into {namespace or source}", unit=" memories", file=sys.stderr) as bar:

            async def progress(done: int) -> None:
                bar.update(done - bar.n)

            async with create_sessionmaker(engine).begin() as session:
                return await service.import_records(
                    session,
                    source=source,
                    namespace=namespace or source,
                    records=records,
                    ids=ids,
                    embedder=build_provider(settings),
                    progress=progress,
                )
    finally:
        await engine.dispose()
