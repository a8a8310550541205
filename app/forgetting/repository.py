"""Every SQL statement of forgetting: what a purge must reach, the erasing itself, tombstones.

The tables that hold a namespace's text are listed here once (`TEXT_COLUMNS`, `JSON_COLUMNS`);
tests/forgetting scans every text and jsonb column of the database after a purge, so a table
added later without an entry here fails that test instead of keeping what was forgotten."""

import json
from collections.abc import Iterable, Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Text, bindparam, delete, func, or_, select, text, tuple_, update
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import (
    ConversationMessage,
    Erasure,
    EventPayload,
    IdempotencyKey,
    Job,
    Memory,
    MemoryVersion,
    Reflection,
    RevisionLog,
    TaskEvent,
    TaskReview,
    WorkingItem,
    WorkingSession,
)

ERASE_JOB = "namespace.erase"

# Text columns that may quote a memory, per table, all filtered by the namespace.
TEXT_COLUMNS: dict[type, tuple[str, ...]] = {
    Memory: ("query_hint", "invalidated_reason"),
    RevisionLog: ("reason", "merged_content", "llm_prompt", "llm_response", "new_content", "note"),
    Reflection: ("situation", "action", "outcome", "lesson"),
    TaskReview: ("llm_prompt", "llm_response", "note"),
    Job: ("error",),
}
JSON_COLUMNS: dict[type, tuple[str, ...]] = {
    Memory: ("source", "metadata"),
    Reflection: ("metadata",),
    TaskEvent: ("payload",),
    Job: ("params", "result"),
}

# Tables deleted row by row when a namespace is erased, children before what they point to.
NAMESPACED = (
    WorkingItem,
    WorkingSession,
    ConversationMessage,
    TaskReview,
    TaskEvent,
    Reflection,
    RevisionLog,
    Memory,
    Job,
)


def _contains_any(column: Any, needles: Sequence[str]) -> Any:
    return or_(*(func.strpos(column, needle) > 0 for needle in needles))


async def lineage(session: AsyncSession, memory_ids: set[UUID]) -> set[UUID]:
    """The memories plus every merge built from any of them, transitively (a merge of a merge)."""
    found = set(memory_ids)
    frontier = set(memory_ids)
    while frontier:
        statement = select(RevisionLog.merged_memory_id).where(
            RevisionLog.decision == "REFINE",
            RevisionLog.merged_memory_id.is_not(None),
            or_(RevisionLog.new_memory_id.in_(frontier), RevisionLog.old_memory_id.in_(frontier)),
        )
        frontier = {row for row in (await session.execute(statement)).scalars()} - found
        found |= frontier
    return found


async def texts_of(session: AsyncSession, memory_ids: Iterable[UUID]) -> set[str]:
    """Every text these memories ever held: their current content and every version's."""
    ids = list(memory_ids)
    current = select(Memory.content).where(Memory.id.in_(ids))
    history = select(MemoryVersion.content).where(MemoryVersion.memory_id.in_(ids))
    return set((await session.execute(current.union(history))).scalars())


async def quoting_memories(
    session: AsyncSession, *, namespace: str, needles: Sequence[str], exclude: set[UUID]
) -> set[UUID]:
    """Other memories of the namespace whose text quotes one of the needles word for word."""
    if not needles:
        return set()
    statement = select(Memory.id).where(
        Memory.namespace == namespace, _contains_any(Memory.content, needles), Memory.id.not_in(exclude)
    )
    return set((await session.execute(statement)).scalars())


async def merge_inputs(session: AsyncSession, merged_ids: set[UUID], *, exclude: set[UUID]) -> list[Memory]:
    """Memories a merge superseded, other than those being purged: what remains of it."""
    statement = (
        select(Memory)
        .where(Memory.superseded_by.in_(merged_ids), Memory.status == "superseded", Memory.id.not_in(exclude))
        .with_for_update()
    )
    return list((await session.execute(statement)).scalars())


def _touches(memory_ids: set[UUID]) -> Any:
    return or_(
        RevisionLog.new_memory_id.in_(memory_ids),
        RevisionLog.old_memory_id.in_(memory_ids),
        RevisionLog.merged_memory_id.in_(memory_ids),
    )


async def dismiss_pending_about(session: AsyncSession, memory_ids: set[UUID]) -> set[UUID]:
    """Held judgements about a purged memory can never be applied: dismissed. The other
    memories they held back (ids returned) may then be free."""
    statement = (
        update(RevisionLog)
        .where(_touches(memory_ids), RevisionLog.status == "pending")
        .values(status="dismissed", resolved_at=func.now())
        .returning(RevisionLog.new_memory_id, RevisionLog.old_memory_id)
    )
    others = {memory_id for row in await session.execute(statement) for memory_id in row if memory_id is not None}
    return others - memory_ids


async def held_back(session: AsyncSession, memory_ids: set[UUID]) -> list[Memory]:
    """Of these, the uncertain memories no pending judgement holds any more."""
    if not memory_ids:
        return []
    still_pending = select(RevisionLog.id).where(
        RevisionLog.status == "pending",
        or_(RevisionLog.new_memory_id == Memory.id, RevisionLog.old_memory_id == Memory.id),
    )
    statement = (
        select(Memory)
        .where(Memory.id.in_(memory_ids), Memory.status == "uncertain", ~still_pending.exists())
        .with_for_update()
    )
    return list((await session.execute(statement)).scalars())


async def blank_revisions_of(session: AsyncSession, memory_ids: set[UUID]) -> int:
    """Judgements about a purged memory keep their decision and ids but lose every text."""
    touches = _touches(memory_ids)
    # Judgements made in the same LLM call share its prompt, which held the memory's text.
    same_call = RevisionLog.llm_prompt.in_(
        select(RevisionLog.llm_prompt).where(touches, RevisionLog.llm_prompt.is_not(None))
    )
    statement = (
        update(RevisionLog)
        .where(or_(touches, same_call))
        .values(reason="[purged]", merged_content=None, llm_prompt=None, llm_response=None, new_content=None, note=None)
    )
    return (await session.execute(statement)).rowcount


def _namespace_filter(model: type, namespace: str) -> Any:
    return model.__table__.c.namespace == namespace


async def redact_text_columns(
    session: AsyncSession, *, namespace: str, needles: Sequence[str], mask: str
) -> dict[str, int]:
    """Replace each needle by the mask in every listed text column of the namespace; rows changed per table."""
    counts: dict[str, int] = {}
    for model, columns in TEXT_COLUMNS.items():
        table = model.__table__
        for name in columns:
            column = table.c[name]
            replaced: Any = column
            for needle in needles:
                replaced = func.replace(replaced, needle, mask)
            statement = (
                update(table)
                .where(_namespace_filter(model, namespace), _contains_any(column, needles))
                .values({name: replaced})
            )
            changed = (await session.execute(statement)).rowcount
            if changed:
                counts[f"{table.name}.{name}"] = changed
    versions = MemoryVersion.__table__
    in_namespace = versions.c.memory_id.in_(select(Memory.id).where(Memory.namespace == namespace))
    replaced = versions.c.content
    for needle in needles:
        replaced = func.replace(replaced, needle, mask)
    statement = (
        update(versions).where(in_namespace, _contains_any(versions.c.content, needles)).values(content=replaced)
    )
    if changed := (await session.execute(statement)).rowcount:
        counts["memory_versions.content"] = changed
    payloads = EventPayload.__table__
    hashes = select(TaskEvent.payload_hash).where(TaskEvent.namespace == namespace, TaskEvent.payload_hash.is_not(None))
    replaced = payloads.c.full_text
    for needle in needles:
        replaced = func.replace(replaced, needle, mask)
    statement = (
        update(payloads)
        .where(payloads.c.hash.in_(hashes), _contains_any(payloads.c.full_text, needles))
        .values(full_text=replaced)
    )
    if changed := (await session.execute(statement)).rowcount:
        counts["event_payloads.full_text"] = changed
    return counts


async def json_rows_quoting(
    session: AsyncSession, *, namespace: str, needles: Sequence[str]
) -> list[tuple[type, str, Any, Any]]:
    """(model, column, primary key, value) of every listed jsonb value whose JSON text quotes a needle."""
    found: list[tuple[type, str, Any, Any]] = []
    for model, columns in [*JSON_COLUMNS.items(), (MemoryVersion, ("snapshot",))]:
        table = model.__table__
        key = table.primary_key.columns.values()[0]
        for name in columns:
            column = table.c[name]
            where = (
                key.in_(
                    select(MemoryVersion.id)
                    .join(Memory, Memory.id == MemoryVersion.memory_id)
                    .where(Memory.namespace == namespace)
                )
                if model is MemoryVersion
                else _namespace_filter(model, namespace)
            )
            statement = select(key, column).where(where, _contains_any(func.cast(column, Text()), needles))
            found += [(model, name, row[0], row[1]) for row in await session.execute(statement)]
    return found


async def write_json(session: AsyncSession, model: type, column: str, key: Any, value: Any) -> None:
    table = model.__table__
    primary = table.primary_key.columns.values()[0]
    await session.execute(
        update(table).where(primary == key).values({column: bindparam("value", type_=JSONB)}), {"value": value}
    )


async def answers_quoting(session: AsyncSession, needles: Sequence[str]) -> list[Any]:
    """Stored Idempotency-Key answers (any namespace: they have none) whose bytes quote a needle."""
    table = IdempotencyKey.__table__
    params = {f"n{index}": needle.encode() for index, needle in enumerate(needles)}
    matches = " OR ".join(f"position(:{name} IN body) > 0" for name in params)
    statement = text(f"SELECT caller, key, body FROM {table.name} WHERE body IS NOT NULL AND ({matches})")
    return list(await session.execute(statement, params))


async def drop_answers_of(session: AsyncSession, namespace: str) -> int:
    """Stored Idempotency-Key answers about the namespace (they name it as JSON does); a
    repeated request then runs again, against the erased namespace."""
    named = [
        json.dumps({"namespace": namespace}, separators=(",", ":"))[1:-1],
        json.dumps({"namespace": namespace})[1:-1],
    ]
    table = IdempotencyKey.__table__
    params = {f"n{index}": form.encode() for index, form in enumerate(named)}
    matches = " OR ".join(f"position(:{name} IN body) > 0" for name in params)
    return (
        await session.execute(text(f"DELETE FROM {table.name} WHERE body IS NOT NULL AND ({matches})"), params)
    ).rowcount


async def write_answer(session: AsyncSession, *, caller: str, key: str, body: bytes) -> None:
    table = IdempotencyKey.__table__
    await session.execute(update(table).where(table.c.caller == caller, table.c.key == key).values(body=body))


async def lessons_quoting(session: AsyncSession, *, namespace: str, needles: Sequence[str]) -> list[Reflection]:
    """Lessons whose text quotes a needle: once redacted, their vectors must follow."""
    statement = select(Reflection).where(Reflection.namespace == namespace, _contains_any(Reflection.lesson, needles))
    return list((await session.execute(statement)).scalars())


async def drop_quoting_working_items(session: AsyncSession, *, namespace: str, needles: Sequence[str]) -> int:
    statement = delete(WorkingItem).where(
        WorkingItem.namespace == namespace, _contains_any(WorkingItem.content, needles)
    )
    return (await session.execute(statement)).rowcount


async def drop_messages_of(session: AsyncSession, *, namespace: str, memory_ids: set[UUID]) -> int:
    """Conversation messages stored as these memories (their hashes would still confirm the text)."""
    ids = [str(memory_id) for memory_id in memory_ids]
    statement = delete(ConversationMessage).where(
        ConversationMessage.namespace == namespace,
        ConversationMessage.memory_ids.op("?|")(bindparam("ids", ids, type_=ARRAY(Text()))),
    )
    return (await session.execute(statement)).rowcount


async def unlink_history(session: AsyncSession, *, namespace: str, memory_ids: set[UUID]) -> int:
    """Version snapshots that link to a purged memory link to nothing, as the live rows do once
    it is deleted: a rollback restoring such a snapshot must not point at a row that is gone."""
    ids = [str(memory_id) for memory_id in memory_ids]
    changed = 0
    for link in ("supersedes", "superseded_by"):
        statement = text(
            "UPDATE memory_versions SET snapshot = jsonb_set(snapshot, :path, 'null'::jsonb) "
            "WHERE memory_id IN (SELECT id FROM memories WHERE namespace = :namespace) "
            "AND snapshot ->> :link = ANY(:ids)"
        ).bindparams(bindparam("ids", type_=ARRAY(Text())), bindparam("path", type_=ARRAY(Text())))
        result = await session.execute(statement, {"path": [link], "namespace": namespace, "link": link, "ids": ids})
        changed += result.rowcount
    return changed


async def delete_memories(session: AsyncSession, memory_ids: set[UUID]) -> int:
    """Rows gone; their versions, relations and working items go with them (ON DELETE CASCADE)."""
    statement = delete(Memory).where(Memory.id.in_(memory_ids))
    return (await session.execute(statement)).rowcount


async def add_erasure(session: AsyncSession, **fields: Any) -> Erasure:
    erasure = Erasure(**fields)
    session.add(erasure)
    await session.flush()
    await session.refresh(erasure)
    return erasure


async def erasure_of_memory(session: AsyncSession, memory_id: UUID) -> Erasure | None:
    statement = select(Erasure).where(Erasure.memory_id == memory_id).order_by(Erasure.created_at.desc()).limit(1)
    return (await session.execute(statement)).scalar_one_or_none()


async def erasure_of_job(session: AsyncSession, job_id: UUID) -> Erasure | None:
    return (await session.execute(select(Erasure).where(Erasure.job_id == job_id))).scalar_one_or_none()


async def get_erasure(session: AsyncSession, erasure_id: UUID) -> Erasure | None:
    return await session.get(Erasure, erasure_id, populate_existing=True)


async def erasures(session: AsyncSession, *, namespace: str, limit: int) -> list[Erasure]:
    statement = select(Erasure).where(Erasure.namespace == namespace).order_by(Erasure.created_at.desc()).limit(limit)
    return list((await session.execute(statement)).scalars())


def _erasable(model: type, namespace: str) -> list[Any]:
    """The namespace's rows; jobs erasing it stay (the running one reports on them)."""
    where = [_namespace_filter(model, namespace)]
    if model is Job:
        where.append(Job.kind != ERASE_JOB)
    return where


async def namespace_counts(session: AsyncSession, *, namespace: str) -> dict[str, int]:
    counts = {}
    for model in NAMESPACED:
        where = _erasable(model, namespace)
        counts[model.__tablename__] = await session.scalar(select(func.count()).select_from(model).where(*where)) or 0
    return counts


async def delete_batch(session: AsyncSession, model: type, *, namespace: str, limit: int) -> tuple[int, list[str]]:
    """Delete up to `limit` rows of the namespace from one table; (rows, payload hashes they used)."""
    table = model.__table__
    key = table.primary_key.columns.values()
    chosen = select(*key).where(*_erasable(model, namespace)).limit(limit)
    if model is Memory:
        # What stays until a later batch must not keep links to these in its history: a
        # rollback meanwhile would restore a link to a deleted row.
        ids = set((await session.execute(chosen)).scalars())
        await unlink_history(session, namespace=namespace, memory_ids=ids)
        chosen = select(Memory.id).where(Memory.id.in_(ids))
    returning = [table.c.payload_hash] if model is TaskEvent else [key[0]]
    statement = delete(table).where(tuple_(*key).in_(chosen)).returning(*returning)
    rows = list((await session.execute(statement)).scalars())
    hashes = [value for value in rows if isinstance(value, str)] if model is TaskEvent else []
    return len(rows), hashes


async def delete_orphan_payloads(session: AsyncSession, hashes: Sequence[str]) -> int:
    """Payloads no remaining event points to (another namespace may share the same text)."""
    if not hashes:
        return 0
    used = select(TaskEvent.payload_hash).where(TaskEvent.payload_hash.in_(hashes))
    statement = delete(EventPayload).where(EventPayload.hash.in_(hashes), EventPayload.hash.not_in(used))
    return (await session.execute(statement)).rowcount
