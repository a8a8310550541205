"""Multi-route recall: four routes on one connection (the query embedded meanwhile), their
candidates merged and scored by the weighted rerank; hits are counted as accessed after the
answer leaves."""

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from uuid import UUID

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession

from app.core import foreground
from app.core.dependencies import Sessions
from app.core.replica import Reads
from app.core.settings import Settings
from app.embeddings.provider import EmbeddingProvider
from app.memories.schemas import MemoryOut
from app.memories.trust import trust_of
from app.namespaces import repository as namespaces
from app.recall import competitors, relevance, repository, rerank, scoring, timeframe
from app.recall.cache import SearchCache
from app.recall.lexical import or_query, query_terms
from app.recall.repository import Recalled, RouteRows, Scope
from app.recall.schemas import (
    Explain,
    Invalidation,
    Miss,
    RouteCandidate,
    ScoreParts,
    SearchHit,
    SearchRequest,
    SearchResponse,
)
from app.text import STOPWORDS, lexemes

_WORD = re.compile(r"\w+")


@dataclass(slots=True)
class Candidate:
    memory_id: UUID
    routes: dict[str, tuple[int, float]] = field(default_factory=dict)  # route -> (rank, raw score)


@dataclass(slots=True)
class Scored:
    memory: Recalled
    parts: scoring.Parts
    score: float
    routes: list[str]


def effective_weights(request: SearchRequest, settings: Settings) -> scoring.Weights:
    """The configured weights, with whatever parts the request overrides."""
    configured = {
        "semantic": settings.search_weight_semantic,
        "recency": settings.search_weight_recency,
        "confidence": settings.search_weight_confidence,
        "access": settings.search_weight_access,
    }
    requested = request.weights.model_dump(exclude_none=True) if request.weights else {}
    return scoring.Weights(**(configured | requested))


def _key_terms(query: str) -> list[str]:
    """Query words as key segments may spell them: as written (lower case) and stemmed."""
    written = {word for word in _WORD.findall(query.lower()) if word not in STOPWORDS}
    return sorted(written | set(lexemes(query)))


async def _speakers(session: AsyncSession, cache: SearchCache, generations: dict[str, int]) -> list[str]:
    """The namespaces' speakers, remembered until their next write."""
    key = cache.key("speakers", generations)
    known = cache.get(key)
    if known is None:
        known = await repository.speakers(session, list(generations))
        cache.put(key, known)
    return known


# What the cache remembers for namespaces that hold no memory of another embedding model.
_ONE_MODEL = "one model"


async def _skipped_other_model(
    session: AsyncSession, scope: Scope, *, model: str, cache: SearchCache, generations: dict[str, int]
) -> int:
    """In-scope memories of another embedding model, which the vector route cannot see.
    Namespaces holding none are remembered as such until their next write."""
    key = cache.key(("other model", model), generations)
    if cache.get(key) == _ONE_MODEL:
        return 0
    skipped = await repository.count_other_model(session, scope, model=model)
    if skipped is None:
        cache.put(key, _ONE_MODEL)
    return skipped or 0


async def _run_routes(
    session: AsyncSession,
    scope: Scope,
    *,
    request: SearchRequest,
    embedder: EmbeddingProvider,
    settings: Settings,
    cache: SearchCache,
    generations: dict[str, int],
    window: asyncio.Future[timeframe.Window | None],
) -> tuple[dict[str, RouteRows], np.ndarray]:
    """The four routes on one connection: the query is embedded on its own thread while the key,
    recency and lexical routes run, then the vector route. Four connections per search (one per
    route) saturated the pool at a handful of concurrent searches, and on two cores running the
    routes at once bought little."""
    limit = settings.search_route_candidates
    embedding = asyncio.ensure_future(embedder.embed_query(request.query))
    try:
        # A speaker's name matches every line they said; the speaker boost (relevance.py) uses
        # the name instead (LoCoMo recall@10 +0.015).
        named = relevance.named_speakers(request.query, await _speakers(session, cache, generations))
        key, recency = await repository.key_and_recency_routes(
            session,
            scope,
            key_prefix=request.key_prefix,
            terms=_key_terms(request.query),
            key_limit=limit,
            recency_limit=settings.search_recency_candidates,
        )
        terms = query_terms(request.query, without=named)
        lexical = await repository.lexical_route(
            session,
            scope,
            tsquery=or_query(terms),
            terms=terms,
            text=request.query,
            limit=limit,
            match_cap=settings.lexical_match_cap,
        )
        vector_of_query = await embedding
    except BaseException:
        embedding.cancel()  # the database failed: nobody waits for the vector any more
        raise
    exact_max = settings.search_exact_max
    vector = await repository.vector_route(
        session,
        scope,
        embedding=vector_of_query,
        model=embedder.name,
        limit=limit,
        chunks=relevance.CHUNK_SHARE > 0,
        exact_max=exact_max,
    )
    routes = {"key": key, "vector": vector, "recency": recency, "lexical": lexical}
    named_time = await window
    if named_time:
        routes["time"] = await repository.time_route(
            session,
            scope,
            embedding=vector_of_query,
            model=embedder.name,
            start=named_time.start,
            end=named_time.end,
            limit=limit,
            exact_max=exact_max,
        )
    return routes, vector_of_query


async def _load(session: AsyncSession, memory_ids: list[UUID], *, embedding: np.ndarray) -> dict[UUID, tuple[Recalled, float]]:
    """The memories with their cosine to the query, their later windows' counted (relevance.memory_cosine)."""
    loaded = await repository.load(session, memory_ids, embedding=embedding)
    return {memory_id: (memory, relevance.memory_cosine(own, chunk)) for memory_id, (memory, own, chunk) in loaded.items()}


def _merge(routes: dict[str, RouteRows]) -> dict[UUID, Candidate]:
    candidates: dict[UUID, Candidate] = {}
    for route, rows in routes.items():
        for rank, (memory_id, raw) in enumerate(rows, start=1):
            candidates.setdefault(memory_id, Candidate(memory_id)).routes[route] = (rank, raw)
    return candidates


def _evidence(
    routes: dict[str, RouteRows],
    loaded: dict[UUID, tuple[Recalled, float]],
    neighbours: list[tuple[UUID, UUID, int]],
    window: timeframe.Window | None,
) -> relevance.Evidence:
    dense_rows = [*routes["vector"], *routes.get("time", [])]
    evidence = relevance.Evidence(
        cosine={memory_id: cosine for memory_id, (_, cosine) in loaded.items()},
        vector_hits=list(dict.fromkeys(memory_id for memory_id, _ in dense_rows if memory_id in loaded)),
        lexical_rank={memory_id: raw for memory_id, raw in routes["lexical"] if memory_id in loaded},
        session={
            memory_id: (memory.namespace, memory.session_id) if memory.session_id else None
            for memory_id, (memory, _) in loaded.items()
        },
        speaker={memory_id: memory.source.get("speaker") for memory_id, (memory, _) in loaded.items()},
        in_window={memory_id for memory_id, (memory, _) in loaded.items() if window and window.holds(memory.created_at)},
    )
    for anchor, other, offset in neighbours:
        if anchor in loaded and other in loaded:
            evidence.link(anchor, other, offset)
    return evidence


def _semantic(memory_id: UUID, candidates: dict[UUID, Candidate], relevances: dict[UUID, relevance.Relevance]) -> float:
    fit = relevances.get(memory_id)
    semantic = fit.semantic if fit else 0.0
    routes = candidates[memory_id].routes if memory_id in candidates else {}
    return max(semantic, scoring.KEY_MATCH_RELEVANCE) if "key" in routes else semantic


def _scorer(
    candidates: dict[UUID, Candidate],
    relevances: dict[UUID, relevance.Relevance],
    *,
    at: datetime,
    weights: scoring.Weights,
    settings: Settings,
) -> Callable[[Recalled], Scored]:
    def score(memory: Recalled) -> Scored:
        routes = candidates[memory.id].routes if memory.id in candidates else {}
        fit = relevances.get(memory.id)
        semantic = _semantic(memory.id, candidates, relevances)
        parts = scoring.Parts(
            semantic=semantic,
            recency=scoring.recency(
                said_at=memory.created_at, at=at, decay_per_hour=settings.recency_lambda_per_hour, relevance=semantic
            ),
            confidence=memory.confidence,
            access=scoring.access(memory.access_count, relevance=semantic),
            lexical=fit.lexical if fit else None,
            trust=trust_of(memory.source, settings),
        )
        return Scored(memory=memory, parts=parts, score=parts.final(weights), routes=sorted(routes) or ["context"])

    return score


def _rank(
    memories: dict[UUID, Recalled],
    candidates: dict[UUID, Candidate],
    relevances: dict[UUID, relevance.Relevance],
    score: Callable[[Recalled], Scored],
    *,
    top_k: int,
    weights: scoring.Weights,
) -> list[Scored]:
    """Rerank the relevance shortlist by the weighted formula: the memories at least
    RELEVANCE_FLOOR as relevant as the best, topped up to top_k in relevance order, and
    whatever the key and recency routes brought. Neighbours the lifts never reached drop out."""
    semantic = {memory_id: _semantic(memory_id, candidates, relevances) for memory_id in memories}
    by_relevance = sorted(
        (memory_id for memory_id in memories if memory_id in candidates or semantic[memory_id] > 0),
        key=semantic.__getitem__,
        reverse=True,
    )
    floor = scoring.RELEVANCE_FLOOR * semantic[by_relevance[0]] if by_relevance else 0.0
    shortlist = [
        score(memories[memory_id])
        for position, memory_id in enumerate(by_relevance)
        if semantic[memory_id] >= floor
        or position < top_k
        or {"key", "recency"} & candidates.get(memory_id, Candidate(memory_id)).routes.keys()
    ]
    shortlist.sort(key=lambda item: (*item.parts.order_key(weights), item.memory.created_at), reverse=True)
    return shortlist


def _diversify(ranked: list[Scored], *, top_k: int) -> list[Scored]:
    """Room for more than one session among the top k (app/recall/relevance.py, `diversify`)."""
    by_id = {item.memory.id: item for item in ranked}
    order = relevance.diversify(
        list(by_id),
        score={memory_id: item.score for memory_id, item in by_id.items()},
        session={
            memory_id: (item.memory.namespace, item.memory.session_id) if item.memory.session_id else None
            for memory_id, item in by_id.items()
        },
        places=top_k,
    )
    return [by_id[memory_id] for memory_id in order]


def _below_replacements(ranked: list[Scored]) -> list[Scored]:
    """A superseded memory (searched for with `statuses`) goes just after what replaced it
    when both are in the list: it was true once, its replacement is true now. Chains follow,
    since each memory is placed after its replacement's final place."""
    position = {item.memory.id: index for index, item in enumerate(ranked)}
    placed: dict[UUID, list[Scored]] = {}
    roots: list[Scored] = []
    for item in ranked:
        replacement = item.memory.superseded_by
        if item.memory.status == "superseded" and replacement in position and replacement != item.memory.id:
            placed.setdefault(replacement, []).append(item)
        else:
            roots.append(item)
    ordered: list[Scored] = []
    seen: set[UUID] = set()

    def emit(item: Scored) -> None:
        if item.memory.id in seen:
            return
        seen.add(item.memory.id)
        ordered.append(item)
        for follower in placed.get(item.memory.id, []):
            emit(follower)

    for item in roots:
        emit(item)
    ordered += [item for item in ranked if item.memory.id not in seen]  # a cycle of replacements: as ranked
    return ordered


@dataclass(slots=True)
class _Links:
    """The judge's links of the first hits, read once for the competitor ordering and the
    partners both."""

    rows: set[tuple[UUID, UUID, str]] = field(default_factory=set)
    read: set[UUID] = field(default_factory=set)

    async def read_for(self, session: AsyncSession, memory_ids: list[UUID]) -> None:
        missing = [memory_id for memory_id in memory_ids if memory_id not in self.read]
        if missing:
            self.rows |= await repository.links_touching(session, missing)
            self.read.update(missing)

    def among(self, memory_ids: list[UUID]) -> dict[frozenset[UUID], str]:
        """The links between any two of these memories (a held update wins over a coexistence)."""
        ids = set(memory_ids)
        links: dict[frozenset[UUID], str] = {}
        for first, second, kind in self.rows:
            pair = frozenset((first, second))
            if first in ids and second in ids and links.get(pair) != competitors.HELD:
                links[pair] = kind
        return links

    def partners(self, memory_ids: list[UUID]) -> dict[UUID, list[UUID]]:
        """Both ends of each judgement that kept both memories (COEXIST, or a likely update held
        for review) touching these memories."""
        ids = set(memory_ids)
        partners: dict[UUID, list[UUID]] = {}
        for first, second, kind in self.rows:
            if kind in competitors.LINKS and (first in ids or second in ids):
                partners.setdefault(first, []).append(second)
                partners.setdefault(second, []).append(first)
        return partners


async def _prefer_newer(
    session: AsyncSession,
    ranked: list[Scored],
    *,
    links: _Links,
    query: str,
    relevances: dict[UUID, relevance.Relevance],
    settings: Settings,
) -> list[Scored]:
    """The first hits in the order app/recall/competitors.py gives competing memories."""
    rules = competitors.Settings(
        window=settings.competitor_window, similarity=settings.competitor_similarity, relevance=settings.competitor_relevance
    )
    window = [
        competitors.Hit(
            item.memory.id,
            item.memory.content,
            item.memory.created_at,
            item.parts.semantic,
            relevances[item.memory.id].dense if item.memory.id in relevances else 0.0,
        )
        for item in ranked[: rules.window]
    ]
    ids = [hit.id for hit in competitors.contenders(window, rules)]
    if len(ids) < 2:
        return ranked
    need_links, need_similarity = competitors.lookups(query)
    order = competitors.reorder(
        window,
        query=query,
        links=links.among(ids) if need_links else {},
        similarity=await repository.similarities_among(session, ids) if need_similarity else {},
        settings=rules,
    )
    by_id = {item.memory.id: item for item in ranked[: rules.window]}
    return [by_id[memory_id] for memory_id in order] + ranked[rules.window :]


def _explain(routes: dict[str, RouteRows], ranked: list[Scored], *, top_k: int, weights: scoring.Weights) -> Explain:
    misses: list[Miss] = []
    if len(ranked) > top_k:
        last_hit = ranked[top_k - 1]
        for position, item in enumerate(ranked[top_k:], start=top_k + 1):
            # Parts shown as they read at three decimals: a difference rounding hides is no reason.
            shown = {
                name: (round(weight * getattr(item.parts, name), 3), round(weight * getattr(last_hit.parts, name), 3))
                for name, weight in weights.as_dict().items()
            }
            held_back = [f"{name}: {mine:.3f} < {theirs:.3f}" for name, (mine, theirs) in shown.items() if mine < theirs]
            held_back = held_back or ["a near tie: no weighted part trails the last hit by 0.001"]
            misses.append(Miss(memory_id=item.memory.id, final_rank=position, score=round(item.score, 6), held_back_by=held_back))
    return Explain(
        routes={
            route: [RouteCandidate(memory_id=memory_id, rank=rank, raw_score=raw) for rank, (memory_id, raw) in enumerate(rows, start=1)]
            for route, rows in routes.items()
        },
        weights=weights.as_dict(),
        misses=misses,
    )


async def _with_partners(
    session: AsyncSession,
    scope: Scope,
    ranked: list[Scored],
    *,
    links: _Links,
    top_k: int,
    score: Callable[[Recalled], Scored],
) -> list[SearchHit]:
    """The top k, each followed by its COEXIST partners in scope: both stay true, so they
    come back together, even past the top k and even when no route found the partner."""
    top = ranked[:top_k]
    top_ids = [item.memory.id for item in top]
    await links.read_for(session, top_ids)  # a hit a superseded one made room for may be new here
    partners = links.partners(top_ids)
    by_id = {item.memory.id: item for item in ranked}
    unfound = {partner for linked in partners.values() for partner in linked} - by_id.keys()
    by_id |= {memory.id: score(memory) for memory in await repository.load_in_scope(session, scope, list(unfound))}
    order: dict[UUID, None] = {}
    for item in top:
        order[item.memory.id] = None
        order.update(dict.fromkeys(partner for partner in partners.get(item.memory.id, []) if partner in by_id))
    return [_hit(by_id[memory_id], related=partners.get(memory_id, [])) for memory_id in order]


def _hit(item: Scored, *, related: list[UUID]) -> SearchHit:
    parts = item.parts
    return SearchHit(
        memory=MemoryOut.of(item.memory),
        score=round(item.score, 6),
        scores=ScoreParts(
            semantic=round(parts.semantic, 6),
            recency=round(parts.recency, 6),
            confidence=round(parts.confidence, 6),
            access=round(parts.access, 6),
            lexical=None if parts.lexical is None else round(parts.lexical, 6),
            trust=round(parts.trust, 6),
        ),
        routes=item.routes,
        superseded_by=item.memory.superseded_by,
        related=related,
    )


async def _as_they_stood(session: AsyncSession, hits: list[SearchHit], *, at: datetime) -> list[SearchHit]:
    """Historical hits show each memory as it stood then (content, status, version, links),
    not as it reads now."""
    snapshots = await repository.snapshots_at(session, [hit.memory.id for hit in hits], at=at)
    stood = []
    for hit in hits:
        recorded = {name: value for name, value in snapshots[hit.memory.id].items() if name in MemoryOut.model_fields}
        unset = {"invalidated_reason": None, "invalidated_at": None}  # older snapshots predate the fields
        then = MemoryOut.model_validate({**hit.memory.model_dump(), **unset, **recorded})
        now = hit.memory
        later = (
            Invalidation(reason=now.invalidated_reason or "", at=now.invalidated_at)
            if now.status == "invalidated" and then.status != "invalidated" and now.invalidated_at
            else None
        )
        stood.append(hit.model_copy(update={"memory": then, "superseded_by": then.superseded_by, "later_invalidated": later}))
    return stood


def _time_window(query: str, *, reference: datetime) -> asyncio.Future[timeframe.Window | None]:
    """The query's time expression. Reading one takes a few milliseconds of CPU: in a thread,
    while the routes run. Most queries cannot hold one, and skip the hop to a thread (a
    wake-up the event loop waits for on a busy machine)."""
    if timeframe.may_hold_a_date(query):
        return asyncio.ensure_future(asyncio.to_thread(timeframe.window, query, reference=reference))
    none: asyncio.Future[timeframe.Window | None] = asyncio.get_running_loop().create_future()
    none.set_result(None)
    return none


async def count_access(sessions: Sessions, memory_ids: list[UUID], *, at: datetime) -> None:
    """Count the hits no writer holds in one statement, then each held one in a transaction of
    its own. One statement waiting for every row deadlocked with writers holding one hit while
    waiting for another (under `make load`); a row at a time cost a round trip per hit."""
    async with sessions() as session:
        counted = await repository.record_access(session, memory_ids, at=at, wait=False)
        await session.commit()
        for memory_id in memory_ids:
            if memory_id not in counted:
                await repository.record_access(session, [memory_id], at=at, wait=True)
                await session.commit()


async def search(
    session: AsyncSession,
    *,
    request: SearchRequest,
    embedder: EmbeddingProvider,
    settings: Settings,
    reads: Reads,
    sessions: Sessions,
    cache: SearchCache,
    after_answer: Callable[..., None],
) -> SearchResponse:
    """Recall memories for a query; see the module docstring. The namespaces' generations are
    read on the primary (`session`), the rest where `reads` says (a standby that has caught up
    with them, else the primary). Hits are counted as accessed through `after_answer`, on
    `sessions` (the primary), once the answer is on its way."""
    started = time.perf_counter()
    at = request.as_of or datetime.now(timezone.utc)
    # The moment the question is asked from: recency and time expressions are measured from it.
    reference = request.reference_time or at
    # A bulk import's embedding and storing yield the cores from the search's first statement on.
    with foreground.user_waiting():
        generations = await namespaces.generations(session, request.all_namespaces)
        cache_key = cache.key(request.model_dump_json(), generations)
        cached: SearchResponse | None = None if request.explain or request.as_of else cache.get(cache_key)
        if cached is not None:
            if request.record_access:
                after_answer(count_access, sessions, [hit.memory.id for hit in cached.hits], at=at)
            return cached.model_copy(update={"took_ms": round((time.perf_counter() - started) * 1000, 3)})

        scope = Scope(
            namespaces=request.all_namespaces,
            statuses=request.statuses,
            at=at,
            memory_types=request.memory_types,
            key_prefix=request.key_prefix,
            created_after=request.created_after,
            created_before=request.created_before,
            historical=request.as_of is not None,
        )
        parsing = _time_window(request.query, reference=reference)
        async with reads.session_for(session, generations) as reader:
            routes, embedding = await _run_routes(
                reader,
                scope,
                request=request,
                embedder=embedder,
                settings=settings,
                cache=cache,
                generations=generations,
                window=parsing,
            )
            window = parsing.result()
            skipped = await _skipped_other_model(reader, scope, model=embedder.name, cache=cache, generations=generations)
            candidates = _merge(routes)
            loaded = await _load(reader, list(candidates), embedding=embedding)
            in_sessions = [memory_id for memory_id, (memory, _) in loaded.items() if memory.session_id]
            neighbours = await repository.session_neighbours(reader, scope, anchors=in_sessions, width=relevance.NEIGHBOUR_WIDTH)
            unloaded = list({other for _, other, _ in neighbours} - loaded.keys())
            loaded |= await _load(reader, unloaded, embedding=embedding)
            relevances = relevance.score(_evidence(routes, loaded, neighbours, window), query=request.query)
            memories = {memory_id: memory for memory_id, (memory, _) in loaded.items()}
            weights = effective_weights(request, settings)
            score = _scorer(candidates, relevances, at=reference, weights=weights, settings=settings)
            ranked = _rank(memories, candidates, relevances, score, top_k=request.top_k, weights=weights)
            if settings.rerank_model:
                await reader.commit()  # a read; no transaction stays open across the reranker's call
                ranked = await rerank.rerank(request.query, ranked, [item.memory.content for item in ranked], settings=settings)
            ranked = _diversify(ranked, top_k=request.top_k)
            links = _Links()
            await links.read_for(reader, [item.memory.id for item in ranked[: max(settings.competitor_window, request.top_k)]])
            ranked = await _prefer_newer(reader, ranked, links=links, query=request.query, relevances=relevances, settings=settings)
            ranked = _below_replacements(ranked)
            hits = await _with_partners(reader, scope, ranked, links=links, top_k=request.top_k, score=score)
            if request.as_of:
                hits = await _as_they_stood(reader, hits, at=at)
    if request.record_access and not request.as_of:
        after_answer(count_access, sessions, [hit.memory.id for hit in hits], at=at)
    response = SearchResponse(
        hits=hits,
        took_ms=round((time.perf_counter() - started) * 1000, 3),
        skipped_other_model=skipped,
        explain=_explain(routes, ranked, top_k=request.top_k, weights=weights) if request.explain else None,
    )
    if not request.explain and not request.as_of:
        cache.put(cache_key, response, size=len(response.model_dump_json()))
    return response
