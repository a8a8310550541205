"""Export a namespace as JSON Lines, and import such a file so the round trip reproduces it.

Export: a header line, then every memory with its versions (oldest first), its relations,
revisions (judge input and output included), lessons, task events (with their full payload)
and reviews, each row as stored. Import into an empty namespace: `ids=keep` restores the same
ids (a restore, or a move to another server), `ids=new` gives every memory, revision, lesson
and review a new id, rewritten wherever the file mentions it (links, version snapshots, tags),
so a copy can live beside its original. A file from another namespace is moved into the
target: namespaces and the namespace part of keys are rewritten. Vectors are kept when they
come from the embedding model in use, recomputed otherwise. Every text goes through the
sensitive-data guard; nothing is written unless the whole file is valid."""

import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from datetime import datetime, timezone
from typing import Any, Literal

from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.core.auth import Access
from app.core.errors import Conflict, Unprocessable
from app.embeddings.provider import EmbeddingProvider
from app.memories import repository as memories
from app.memories.records import content_hash
from app.memories.sensitive import refuse_sensitive_off_loop
from app.models import Memory, MemoryRelation, MemoryVersion, Reflection, RevisionLog, TaskEvent, TaskReview
from app.namespaces.tracking import mark_written
from app.text import lexemes
from app.transfer import repository, rows

FORMAT = "hindsight-namespace"
VERSION = 1
IdMode = Literal["keep", "new"]
Progress = Callable[[int], Awaitable[None]]
_ORDER = ("memory", "relation", "revision", "lesson", "event", "review")
_MODELS = {"memory": Memory, "revision": RevisionLog, "lesson": Reflection, "review": TaskReview}


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


async def export_lines(session: AsyncSession, *, namespace: str) -> AsyncIterator[str]:
    """The namespace as JSON Lines, a page of memories at a time, from one snapshot (a fresh
    session reads in a repeatable-read transaction, so writes meanwhile do not tear it)."""
    if isinstance(session.bind, AsyncEngine):  # not a session joined to an outer transaction (tests)
        await session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
    exported_at = datetime.now(timezone.utc).isoformat()
    yield _line(
        {"type": "header", "format": FORMAT, "version": VERSION, "namespace": namespace, "exported_at": exported_at}
    )
    async for page in repository.memory_pages(session, namespace):
        versions = await repository.versions_of(session, [row["id"] for row in page])
        for row in page:
            record = {"type": "memory", "row": rows.dump("memory", row)}
            record["versions"] = [rows.dump("version", version) for version in versions[row["id"]]]
            yield _line(record)
    for kind in ("relation", "revision", "lesson", "event", "review"):
        for row in await repository.rows_of(session, kind, namespace):
            record = {"type": kind, "row": rows.dump(kind, row)}
            if kind == "event":
                record["full_text"] = row["full_text"]
            yield _line(record)


def _bad(line: int, why: str) -> Unprocessable:
    return Unprocessable(f"line {line}: {why}", errors=[{"loc": ["body", line], "msg": why, "type": "import"}])


def parse(lines: Iterable[str], *, max_records: int) -> tuple[str, list[tuple[int, dict[str, Any]]]]:
    """(the namespace the file came from, its records with their line numbers); 422 on any bad line."""
    source: str | None = None
    records: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # nesting deep enough to exhaust the parser is no export either
            raise _bad(number, "not JSON") from None
        if not isinstance(record, dict):
            raise _bad(number, "a line must be a JSON object")
        kind = record.get("type")
        if source is None:
            if kind != "header" or record.get("format") != FORMAT or record.get("version") != VERSION:
                raise _bad(number, f"the first line must be the header of a {FORMAT} export, version {VERSION}")
            if not isinstance(record.get("namespace"), str):
                raise _bad(number, "the header must name its namespace")
            source = record["namespace"]
            continue
        if kind not in _ORDER:
            raise _bad(number, f"unknown record type (one of {', '.join(_ORDER)})")
        allowed = (
            {"type", "row"}
            | ({"versions"} if kind == "memory" else set())
            | ({"full_text"} if kind == "event" else set())
        )
        if extra := sorted(set(record) - allowed):
            raise _bad(number, f"unknown fields: {', '.join(extra[:5])}")
        records.append((number, record))
        if len(records) > max_records:
            raise _bad(number, f"more than {max_records} records")
    if source is None:
        raise _bad(1, "empty: no header")
    return source, records


def _ids_of(records: list[tuple[int, dict[str, Any]]]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {kind: set() for kind in _MODELS}
    for _, record in records:
        if (
            record["type"] in _MODELS
            and isinstance(record.get("row"), dict)
            and isinstance(record["row"].get("id"), str)
        ):
            found[record["type"]].add(record["row"]["id"])
    return found


def _rewriter(source: str, target: str, mapping: dict[str, str]) -> Callable[[Any, str | None], Any]:
    """Rewrites ids by the mapping in every string, and the namespace in `namespace` and `key` fields."""

    def text(value: str, field: str | None) -> str:
        if mapping:
            value = rows.UUID_TEXT.sub(lambda match: mapping.get(match.group(0), match.group(0)), value)
        if source != target and field == "namespace" and value == source:
            return target
        if source != target and field == "key" and value.startswith(f"{source}:"):
            return target + value[len(source) :]
        return value

    def rewrite(value: Any, field: str | None = None) -> Any:
        if isinstance(value, str):
            return text(value, field)
        if isinstance(value, list):
            return [rewrite(item) for item in value]
        if isinstance(value, dict):
            return {rewrite(key): rewrite(item, key) for key, item in value.items()}
        return value

    return rewrite


async def _vectors(embedder: EmbeddingProvider, loaded: list[dict[str, Any]], *, text_field: str) -> None:
    """Keep vectors of the model in use; recompute the others (another model or dimension)."""
    stale = [
        row
        for row in loaded
        if row.get("embedding_model") != embedder.name
        or not row.get("embedding")
        or len(row["embedding"]) != embedder.dim
    ]
    if not stale:
        return
    vectors = await embedder.embed_passages([row[text_field] for row in stale])
    for row, vector in zip(stale, vectors, strict=True):
        row["embedding"] = vector
        row["embedding_model"] = embedder.name
        if "embedding_dim" in row or text_field == "content":
            row["embedding_dim"] = len(vector)


async def import_records(
    session: AsyncSession,
    *,
    source: str,
    namespace: str,
    records: list[tuple[int, dict[str, Any]]],
    ids: IdMode,
    embedder: EmbeddingProvider,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Check every record, then write them all in the caller's transaction."""
    known = _ids_of(records)
    mapping = {old: str(uuid.uuid4()) for kind in known.values() for old in kind} if ids == "new" else {}
    rewrite = _rewriter(source, namespace, mapping)
    loaded: dict[str, list[dict[str, Any]]] = {kind: [] for kind in (*_ORDER, "version", "payload")}
    for number, record in records:
        record = rewrite(record)
        kind = record["type"]
        row = rows.load(kind, record.get("row"), f"line {number}")
        if "namespace" in row and row["namespace"] != namespace:
            raise _bad(number, "a row of another namespace than the header's")
        await refuse_sensitive_off_loop(rows.texts(kind, row), what=f"line {number}")
        if kind == "memory":
            versions = record.get("versions") or []
            if not isinstance(versions, list):
                raise _bad(number, "versions must be a list")
            for index, version in enumerate(versions):
                parsed = rows.load("version", version, f"line {number}.versions.{index}")
                await refuse_sensitive_off_loop(rows.texts("version", parsed), what=f"line {number}")
                loaded["version"].append({**parsed, "memory_id": row.get("id")})
        if kind == "event":
            full_text = record.get("full_text")
            if (full_text is None) != (row.get("payload_hash") is None) or (
                full_text is not None and not isinstance(full_text, str)
            ):
                raise _bad(number, "an event has its full_text exactly when it has a payload_hash")
            if full_text is not None:
                await refuse_sensitive_off_loop(full_text, what=f"line {number}")
                loaded["payload"].append({"hash": row["payload_hash"], "full_text": full_text})
        loaded[kind].append(row)
    for kind in _MODELS:
        if any("id" not in row for row in loaded[kind]):
            raise Unprocessable(f"every {kind} needs its id")
    await memories.lock_namespace(session, namespace)
    if await repository.occupied(session, namespace):
        raise Conflict("the namespace is not empty: import into an empty one (or erase it first)")
    if ids == "keep" and await repository.taken_ids(
        session, {model: {row["id"] for row in loaded[kind]} for kind, model in _MODELS.items()}
    ):
        raise Conflict("some ids of the file are taken (the original still exists?): import with ids=new")
    await _vectors(embedder, loaded["memory"], text_field="content")
    await _vectors(embedder, loaded["lesson"], text_field="lesson")
    links = []
    for row in loaded["memory"]:
        links.append(
            {
                "memory_id": row["id"],
                "new_supersedes": row.pop("supersedes", None),
                "new_superseded_by": row.pop("superseded_by", None),
            }
        )
        row["content_hash"] = content_hash(row["content"])
        row["lexeme_text"] = " ".join(lexemes(row["content"]))
    for row in loaded["lesson"]:
        row["lesson_hash"] = content_hash(row["lesson"])
    written: Counter[str] = Counter()
    try:
        async with session.begin_nested():
            for start in range(0, len(loaded["memory"]), repository.PAGE):
                page = loaded["memory"][start : start + repository.PAGE]
                await repository.insert_memories(session, page)
                written["memory"] += len(page)
                if progress is not None:
                    await progress(written["memory"])
            if links:
                await repository.link_memories(session, links)
            await repository.insert_rows(session, MemoryVersion, loaded["version"])
            await repository.insert_rows(session, RevisionLog, loaded["revision"])
            await repository.insert_rows(session, MemoryRelation, loaded["relation"])
            await repository.insert_rows(session, Reflection, loaded["lesson"])
            await repository.insert_payloads(session, loaded["payload"])
            await repository.insert_rows(session, TaskEvent, loaded["event"])
            await repository.insert_rows(session, TaskReview, loaded["review"])
    except (IntegrityError, DataError) as error:
        constraint = getattr(getattr(error.orig, "__cause__", None), "constraint_name", None) or "a constraint"
        raise Unprocessable(
            f"the file breaks {constraint} (a link to a row it does not hold, or a value out of range)"
        ) from None
    mark_written(session, [namespace])
    counts = {kind: len(loaded[kind]) for kind in (*_ORDER, "version")}
    return {"namespace": namespace, "source_namespace": source, "ids": ids, "imported": counts}


async def import_text(
    session: AsyncSession,
    *,
    body: bytes,
    namespace: str,
    ids: IdMode,
    access: Access,
    embedder: EmbeddingProvider,
    max_records: int,
) -> dict[str, Any]:
    access.check(namespace)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Unprocessable("the body must be UTF-8 JSON Lines") from None
    source, records = parse(text.splitlines(), max_records=max_records)
    return await import_records(
        session, source=source, namespace=namespace, records=records, ids=ids, embedder=embedder
    )
