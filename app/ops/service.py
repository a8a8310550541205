"""Readiness (is the database reachable, its schema current?), metrics and anomalies."""

from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.core.errors import Unavailable
from app.core.metrics import QUEUE_DEPTH
from app.core.migrations import current_revision
from app.memories.write_rate import WriteRate
from app.ops import repository
from app.ops.schemas import Anomaly


async def readiness(engine: AsyncEngine, *, expected_revision: str) -> dict[str, Any]:
    try:
        async with engine.connect() as connection:
            revision = await current_revision(connection)
    except Exception as exc:  # any failure to reach the database means "not ready"
        return {"ready": False, "database": "unreachable", "detail": type(exc.__cause__ or exc).__name__}
    return {
        "ready": revision == expected_revision,
        "database": "reachable",
        "migration": revision,
        "expected_migration": expected_revision,
    }


async def metrics_exposition(engine: AsyncEngine) -> tuple[bytes, str]:
    """Every metric in Prometheus text format, with the queue depth read now."""
    try:
        async with engine.connect() as connection:
            QUEUE_DEPTH.set(await repository.queued_revisions(connection))
    except (DBAPIError, Unavailable):  # a scrape still answers while the database is down
        QUEUE_DEPTH.set(float("nan"))
    return generate_latest(), CONTENT_TYPE_LATEST


async def anomalies(session: AsyncSession, write_rate: WriteRate, *, namespace: str | None) -> list[Anomaly]:
    """Recent write-rate flags, newest first."""
    return [Anomaly.model_validate(flag, from_attributes=True) for flag in await write_rate.flags(session, namespace=namespace)]
