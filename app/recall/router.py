from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Depends, Request

from app.core.auth import AccessDep
from app.core.database import ReadSessionDep
from app.core.dependencies import EmbedderDep, ReadsDep, SessionsDep, SettingsDep
from app.core.links import MEMORY, links
from app.recall import service
from app.recall.cache import SearchCache
from app.recall.schemas import SearchRequest, SearchResponse

router = APIRouter(prefix="/v1/memories", tags=["search"])


def get_search_cache(request: Request) -> SearchCache:
    return request.app.state.search_cache


SearchCacheDep = Annotated[SearchCache, Depends(get_search_cache)]


# Recall, then act on what it found: feedback on the best hit, or a correction.
@router.post("/search", response_model=SearchResponse, responses={200: links(MEMORY.at("/hits/0/memory"))})
async def search_memories(
    body: SearchRequest,
    session: ReadSessionDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
    reads: ReadsDep,
    sessions: SessionsDep,
    cache: SearchCacheDep,
    access: AccessDep,
    background: BackgroundTasks,
) -> SearchResponse:
    """Recall memories through the key, vector, recency and lexical routes, reranked by weighted score."""
    access.check(*body.all_namespaces)
    return await service.search(
        session,
        request=body,
        embedder=embedder,
        settings=settings,
        reads=reads,
        sessions=sessions,
        cache=cache,
        after_answer=background.add_task,
    )
