from datetime import datetime, timezone
from typing import Annotated

from fastapi import APIRouter, Path, Query

from app.core.auth import AccessDep
from app.core.database import SessionDep
from app.core.dependencies import SettingsDep
from app.core.validation import StorableText
from app.memories.schemas import Namespace
from app.working import service
from app.working.schemas import WorkingMemory

router = APIRouter(prefix="/v1/sessions", tags=["working memory"])


@router.get("/{session_id}/working", response_model=WorkingMemory)
async def get_working_memory(
    session_id: Annotated[StorableText, Path(min_length=1, max_length=200)],
    namespace: Annotated[Namespace, Query()],
    session: SessionDep,
    settings: SettingsDep,
    access: AccessDep,
) -> WorkingMemory:
    """A session's working memory, most important first, with its token count and budget."""
    access.check(namespace)
    return await service.current(
        session, namespace=namespace, session_id=session_id, settings=settings, now=datetime.now(timezone.utc)
    )
