"""Maintenance: the checkup (archive what is expired or long superseded, report on health)
and the vector index tuning it includes."""

import math
from datetime import datetime, timedelta, timezone

from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.core.settings import Settings
from app.maintenance import repository
from app.memories import repository as memories
from app.namespaces import repository as namespaces


class VectorIndexReport(BaseModel):
    rows: int
    lists_before: int
    lists_after: int
    rebuilt: bool


def ideal_lists(rows: int) -> int:
    """pgvector's guidance: about sqrt(rows) lists (rows / 1000 beyond a million)."""
    return max(1, round(math.sqrt(rows)) if rows <= 1_000_000 else rows // 1000)


async def retune_vector_index(engine: AsyncEngine, *, dry_run: bool = False) -> VectorIndexReport:
    """Rebuild the ivfflat index when its list count is off by more than half from ideal. The
    rebuild runs outside any transaction (REINDEX CONCURRENTLY): writes and searches go on
    meanwhile, and no statement timeout cuts a large table's rebuild short. One process
    rebuilds at a time; another asking meanwhile reports no rebuild."""
    async with engine.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")
        rows = await repository.count_embedded(connection)
        before = await repository.vector_index_lists(connection)
        target = ideal_lists(rows)
        rebuild = not dry_run and not (target / 1.5 <= before <= target * 1.5)
        if rebuild:
            rebuild = await repository.rebuild_vector_index(connection, lists=target)
    return VectorIndexReport(rows=rows, lists_before=before, lists_after=target if rebuild else before, rebuilt=rebuild)


class TriggerOutcome(BaseModel):
    judgements: int
    unrelated: int
    false_trigger_rate: float


class CheckupReport(BaseModel):
    dry_run: bool
    archived_expired: int = Field(description="Expired memories archived (or, in a dry run, that would be).")
    archived_superseded: int = Field(description="Memories superseded for longer than the configured days.")
    triggers: dict[str, TriggerOutcome]
    orphans: int = Field(description="Active memories with no relations and no access for the configured idle days.")
    embedding_mismatches: int = Field(description="Memories embedded with another model than the configured one.")
    vector_index: VectorIndexReport
    namespaces_forgotten: int = Field(
        default=0, description="Namespaces holding no memory any more whose shared state (cache generation, counters) was dropped."
    )


async def _archive(
    sessions: async_sessionmaker[AsyncSession], kind: str, *, now: datetime, settings: Settings, dry_run: bool
) -> int:
    """Archive in batches, one transaction each, so no long lock holds the table. Archived
    memories stay readable by id with their history; nothing is deleted."""
    condition = repository.archivable(
        kind, now=now, superseded_before=now - timedelta(days=settings.checkup_superseded_days)
    )
    if dry_run:
        async with sessions() as session:
            return await repository.count_where(session, condition)
    archived = 0
    while True:
        async with sessions.begin() as session:
            batch = await repository.batch_where(session, condition, limit=settings.checkup_batch)
            for memory in batch:
                memory.status = "archived"
                await memories.save_change(session, memory, changed_by=f"checkup:{kind}", at=now)
        archived += len(batch)
        if len(batch) < settings.checkup_batch:
            return archived


async def checkup(
    sessions: async_sessionmaker[AsyncSession], engine: AsyncEngine, *, settings: Settings, dry_run: bool
) -> CheckupReport:
    """The health check: archive what is expired or long superseded, report how the
    triggers fare, orphans and embedding-model mismatches, and re-tune the vector index."""
    now = datetime.now(timezone.utc)
    archived_expired = await _archive(sessions, "expired", now=now, settings=settings, dry_run=dry_run)
    archived_superseded = await _archive(sessions, "superseded", now=now, settings=settings, dry_run=dry_run)
    async with sessions.begin() as session:
        triggers = {
            trigger: TriggerOutcome(judgements=total, unrelated=false, false_trigger_rate=round(false / total, 3))
            for trigger, total, false in await repository.trigger_outcomes(session)
        }
        orphans = await repository.count_orphans(session, idle_since=now - timedelta(days=settings.checkup_idle_days))
        mismatches = await repository.count_other_models(session, model=settings.embedding_model)
        forgotten = 0 if dry_run else await namespaces.forget_empty(session)
    vector_index = await retune_vector_index(engine, dry_run=dry_run)
    return CheckupReport(
        dry_run=dry_run,
        archived_expired=archived_expired,
        archived_superseded=archived_superseded,
        triggers=triggers,
        orphans=orphans,
        embedding_mismatches=mismatches,
        vector_index=vector_index,
        namespaces_forgotten=forgotten,
    )
