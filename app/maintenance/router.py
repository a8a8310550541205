from typing import Annotated

from fastapi import APIRouter, Body, Query

from app.core.auth import AccessDep
from app.core.dependencies import EmbedderDep, EngineDep, SessionmakerDep, SettingsDep
from app.idempotency.middleware import IDEMPOTENT
from app.maintenance import service
from app.maintenance.reembed import ReembedReport, reembed
from app.maintenance.schemas import DryRunOptions, ReembedOptions, option
from app.maintenance.service import CheckupReport, VectorIndexReport

router = APIRouter(prefix="/v1/maintenance", tags=["maintenance"])

DryRunBody = Annotated[DryRunOptions | None, Body()]
DryRunQuery = Annotated[bool | None, Query(description="The same as the body's `dry_run`.")]


@router.post("/vector-index", response_model=VectorIndexReport, dependencies=[IDEMPOTENT])
async def retune_vector_index(
    engine: EngineDep, access: AccessDep, options: DryRunBody = None, dry_run: DryRunQuery = None
) -> VectorIndexReport:
    """Re-tune the ivfflat index to about sqrt(rows) lists, rebuilding it when far off."""
    access.check(None)  # the index serves every namespace
    return await service.retune_vector_index(engine, dry_run=option("dry_run", options, dry_run, False))


@router.post("/checkup", response_model=CheckupReport, dependencies=[IDEMPOTENT])
async def checkup(
    sessions: SessionmakerDep,
    engine: EngineDep,
    settings: SettingsDep,
    access: AccessDep,
    options: DryRunBody = None,
    dry_run: DryRunQuery = None,
) -> CheckupReport:
    """Archive expired and long-superseded memories (never delete), report false-trigger rates,
    orphans and embedding-model mismatches, re-tune the vector index; `dry_run` changes nothing."""
    access.check(None)  # the checkup covers every namespace
    return await service.checkup(sessions, engine, settings=settings, dry_run=option("dry_run", options, dry_run, False))


@router.post("/reembed", response_model=ReembedReport, dependencies=[IDEMPOTENT])
async def reembed_memories(
    sessions: SessionmakerDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
    access: AccessDep,
    options: Annotated[ReembedOptions | None, Body()] = None,
    limit: Annotated[int | None, Query(ge=1, description="The same as the body's `limit`.")] = None,
) -> ReembedReport:
    """Re-embed memories embedded with another model than the configured one, in batches."""
    access.check(None)  # re-embedding covers every namespace
    return await reembed(
        sessions,
        embedder=embedder,
        batch=settings.reembed_batch,
        limit=option("limit", options, limit, None),
        max_chars=settings.embedding_max_chars,
        chunks=settings.embedding_chunks,
    )
