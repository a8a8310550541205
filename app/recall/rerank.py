"""An optional cross-encoder reranker through litellm's rerank API (Cohere, Jina, Voyage, or a
local server speaking one of them), off unless `HINDSIGHT_RERANK_MODEL` is set.

It reorders only the first `rerank_candidates` of the ranking (a CPU cross-encoder over hundreds
of candidates takes tens of seconds), and only within `rerank_timeout_seconds`: past it, or on
any error, the ranking stays as it was. Nothing is held meanwhile (no transaction, no lock)."""

import asyncio
import logging
import os
from collections.abc import Sequence
from typing import TypeVar

from app.core.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")


async def _scores(query: str, documents: list[str], settings: Settings) -> dict[int, float]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    extra = {"api_base": settings.rerank_api_base} if settings.rerank_api_base else {}
    response = await litellm.arerank(
        model=settings.rerank_model, query=query, documents=documents, top_n=len(documents), return_documents=False, **extra
    )
    return {int(result["index"]): float(result["relevance_score"]) for result in response.results or []}


async def rerank(query: str, ranked: Sequence[T], contents: Sequence[str], *, settings: Settings) -> list[T]:
    """`ranked` with its first candidates in the reranker's order; unchanged without a model,
    on timeout or on error. `contents[i]` is the text of `ranked[i]`."""
    if not settings.rerank_model or len(ranked) < 2:
        return list(ranked)
    head = min(settings.rerank_candidates, len(ranked))
    try:
        scores = await asyncio.wait_for(
            _scores(query, [text[: settings.rerank_max_chars] for text in contents[:head]], settings),
            timeout=settings.rerank_timeout_seconds,
        )
    except Exception as error:  # noqa: BLE001 - a reranker failing must never fail the search
        log.warning("reranker %s failed (%s): ranking kept", settings.rerank_model, type(error).__name__)
        return list(ranked)
    # Candidates the reranker did not score keep their place after the scored ones.
    order = sorted(range(head), key=lambda i: (i not in scores, -scores.get(i, 0.0), i))
    return [ranked[i] for i in order] + list(ranked[head:])
