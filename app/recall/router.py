from fastapi import APIRouter, Request

from app.core.database import SessionDep
from app.core.dependencies import EmbedderDep, SettingsDep
from app.recall import service
from app.recall.schemas import SearchRequest, SearchResponse

router = APIRouter(prefix="/v1/memories", tags=["search"])


@router.post("/search", response_model=SearchResponse)
async def search_memories(
    body: SearchRequest, request: Request, session: SessionDep, embedder: EmbedderDep, settings: SettingsDep
) -> SearchResponse:
    """Recall memories through the key, vector, recency and lexical routes, reranked by weighted score."""
    return await service.search(
        session,
        request=body,
        embedder=embedder,
        settings=settings,
        read_sessions=request.app.state.read_sessions,
        cache=request.app.state.search_cache,
    )
