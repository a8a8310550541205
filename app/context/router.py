from fastapi import APIRouter, BackgroundTasks

from app.context import service
from app.context.schemas import ContextRequest, ContextResponse
from app.core.auth import AccessDep
from app.core.database import SessionDep
from app.core.dependencies import EmbedderDep, ReadsDep, SessionsDep, SettingsDep
from app.recall.router import SearchCacheDep

router = APIRouter(prefix="/v1/context", tags=["context"])


@router.post("", response_model=ContextResponse)
async def build_context(
    body: ContextRequest,
    session: SessionDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
    reads: ReadsDep,
    sessions: SessionsDep,
    cache: SearchCacheDep,
    access: AccessDep,
    background: BackgroundTasks,
) -> ContextResponse:
    """What to know before a turn, within a token budget: the session's working memory, recalled
    memories (dated, with what they replaced) and lessons, as Markdown and as structured parts."""
    access.check(*body.all_namespaces)
    return await service.build(
        session,
        request=body,
        embedder=embedder,
        settings=settings,
        reads=reads,
        sessions=sessions,
        cache=cache,
        after_answer=background.add_task,
    )
