from typing import Annotated

from fastapi import APIRouter, Query

from app.core.auth import AccessDep
from app.core.database import SessionDep
from app.maintenance import service
from app.maintenance.service import VectorIndexReport

router = APIRouter(prefix="/v1/maintenance", tags=["maintenance"])


@router.post("/vector-index", response_model=VectorIndexReport)
async def retune_vector_index(
    session: SessionDep, access: AccessDep, dry_run: Annotated[bool, Query()] = False
) -> VectorIndexReport:
    """Re-tune the ivfflat index to about sqrt(rows) lists, rebuilding it when far off."""
    access.check(None)  # the index serves every namespace
    return await service.retune_vector_index(session, dry_run=dry_run)
