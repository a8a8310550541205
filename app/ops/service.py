"""Readiness: is the database reachable, and is its schema current?"""

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.migrations import current_revision


async def readiness(engine: AsyncEngine, *, expected_revision: str) -> dict[str, Any]:
    try:
        async with engine.connect() as connection:
            revision = await current_revision(connection)
    except Exception as exc:  # any failure to reach the database means "not ready"
        return {"ready": False, "database": "unreachable", "detail": type(exc).__name__}
    return {
        "ready": revision == expected_revision,
        "database": "reachable",
        "migration": revision,
        "expected_migration": expected_revision,
    }
