"""`python -m app import-conversations FILE.jsonl`: one `POST /v1/conversations` body per line,
remembered straight into the database with a progress bar. Re-running the same file stores
nothing new, so an interrupted import is resumed by running it again."""

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from tqdm import tqdm

from app.conversations import service
from app.conversations.messages import Runtime
from app.conversations.schemas import ConversationWrite
from app.core.database import create_engine, create_sessionmaker, resolve_database_url
from app.core.errors import AppError, validation_errors
from app.core.settings import Settings
from app.embeddings.provider import build_provider
from app.revisions.judges import build_judge
from app.revisions.service import Context


def read(
    path: Path, *, extract: str | None, settings: Settings
) -> tuple[list[ConversationWrite], list[dict[str, Any]]]:
    """The file's conversations, and the lines that are not one (by line number)."""
    conversations, refused = [], []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                body = json.loads(line)
                if extract is not None and isinstance(body, dict):
                    body["extract"] = extract
                conversation = ConversationWrite.model_validate(body)
                service.resolve_mode(conversation.extract, settings)
            except ValueError as error:  # not JSON, or not a conversation
                errors = (
                    validation_errors(error.errors()) if isinstance(error, ValidationError) else [{"msg": str(error)}]
                )
                refused.append({"line": number, "errors": errors})
            except AppError as error:  # a conversation this configuration cannot remember
                refused.append({"line": number, "errors": [{"msg": error.detail}]})
            else:
                conversations.append(conversation)
    return conversations, refused


async def run(path: Path, *, extract: str | None, settings: Settings) -> dict[str, Any]:
    conversations, refused = read(path, extract=extract, settings=settings)
    engine = create_engine(settings, resolve_database_url(settings))
    embedder = build_provider(settings)
    runtime = Runtime(
        sessions=create_sessionmaker(engine), context=Context(judge=build_judge(settings), embedder=embedder, settings=settings)
    )
    totals = {"conversations": 0, "received": 0, "stored": 0, "already_stored": 0, "rejected": 0, "extracted": 0}
    phases = {
        conversation.extract: 1 if service.resolve_mode(conversation.extract, settings) == "none" else 2
        for conversation in conversations
    }
    work = sum(len(conversation.messages) * phases[conversation.extract] for conversation in conversations)
    try:
        with tqdm(total=work, desc="conversations", unit="msg") as bar:
            for conversation in conversations:
                start = bar.n

                async def progress(done: int, _total: int | None, start: int = start) -> None:
                    bar.update(start + done - bar.n)

                result = await service.ingest(runtime, conversation, progress=progress)
                bar.update(start + len(conversation.messages) * phases[conversation.extract] - bar.n)
                totals["conversations"] += 1
                for name in ("received", "stored", "already_stored", "rejected"):
                    totals[name] += getattr(result, name)
                totals["extracted"] += sum(memory.status == 201 for memory in result.extraction.memories)
    finally:
        embedder.close()
        await engine.dispose()
    return {**totals, "refused_lines": refused}
