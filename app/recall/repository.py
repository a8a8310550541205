"""SQL of the recall routes. Each route returns (memory id, raw score) best first."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any
from uuid import UUID

import numpy as np
from sqlalchemy import (
    ColumnElement,
    DateTime,
    Integer,
    Row,
    Select,
    Text,
    any_,
    bindparam,
    case,
    exists,
    func,
    literal_column,
    or_,
    select,
    text,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.selectable import CTE, Subquery

from app.core.database import fetch as _fetch
from app.memories.repository import unexpired
from app.models import (
    Embedding,
    Memory,
    MemoryChunk,
    MemoryRelation,
    MemoryVersion,
    NamespaceState,
)

RouteRows = list[tuple[UUID, float]]
# The lexical route scores like BM25 (Okapi): per query term, its inverse document frequency
# in the namespace times a saturating term frequency over a length norm. Without IDF (ts_rank
# over the whole query, the route before) every shared word counted alike: "the user's" as much
# as "gouache". LoCoMo recall@10 on every fourth tuning question .780 with BM25, .755 without;
# LongMemEval tuning (13 questions) turn recall@5 .923 both, MRR@10 .535 against .554.
LEXICAL_BM25 = True
# BM25's k1 (the textbook value) and b. The term frequency is read from ts_rank of the one term
# (flag 0): it grows 1, 1.25, 1.36, ... towards 1.64 with the occurrences, already saturating.
# No length norm (b = 0): a namespace mixes one-line facts with long turns, and a long memory
# naming the rare word should not lose to a short one naming a common one (with b 0.3 or 0.5
# "where does the user keep their passport" finds "User keeps spare keys ..." before the long
# note that names the passport: tests/recall/test_long_memories.py). Tuning parts: LoCoMo
# recall@10 on every fourth tuning question .781 at b 0, .780 at 0.3, .780 at 0.75; LongMemEval
# tuning (11 questions, 2026-12-02) turn MRR@10 .606 at b 0, .712 at 0.3, .727 at 0.5, .652 at
# 0.75, the same recall_any@5 at each: long pasted turns do crowd out short ones there, which a
# norm would fix at the cost above. The length-normalising ts_rank flags lost on LoCoMo (below).
BM25_K1 = 1.2
BM25_B = 0.0
# ts_rank of a term said once (weight D 0.1 over pi^2/6): the unit of that frequency.
_TS_RANK_ONCE = 0.1 / 1.64493406685
# ts_rank without length normalisation (flag 0), when BM25 is off: on LoCoMo it beat ts_rank_cd
# and every length-normalising flag (recall@10 .685 vs .653 for ts_rank_cd, .623 for flag 1).
LEXICAL_RANK_NORMALISATION = 0


_SIMPLE = literal_column("'simple'::regconfig")


@dataclass(frozen=True, slots=True)
class Scope:
    """The hard filters every route applies."""

    namespaces: Sequence[str]
    statuses: Sequence[str]
    at: datetime
    memory_types: Sequence[str] | None = None
    key_prefix: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    # `at` is a past moment to answer for: statuses are read from memory_versions as of then.
    historical: bool = False


# The version in force at a moment: by effective time first, since a review may record a
# change that took effect before versions written earlier by the clock.
_LATEST_FIRST = (MemoryVersion.created_at.desc(), MemoryVersion.version.desc())


def _status_at(memory: type[Memory], at: datetime) -> ColumnElement:
    return (
        select(MemoryVersion.status)
        .where(MemoryVersion.memory_id == memory.id, MemoryVersion.created_at <= at)
        .order_by(*_LATEST_FIRST)
        .limit(1)
        .scalar_subquery()
    )


async def snapshots_at(session: AsyncSession, memory_ids: Sequence[UUID], *, at: datetime) -> dict[UUID, dict]:
    """Each memory's recorded fields as they stood at `at`."""
    if not memory_ids:
        return {}
    statement = (
        select(MemoryVersion.memory_id, MemoryVersion.snapshot)
        .where(MemoryVersion.memory_id.in_(memory_ids), MemoryVersion.created_at <= at)
        .distinct(MemoryVersion.memory_id)
        .order_by(MemoryVersion.memory_id, *_LATEST_FIRST)
    )
    return dict((await session.execute(statement)).tuples().all())


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"{escaped}%"


def _filters(scope: Scope) -> dict[str, Any]:
    """The scope's filter values by name; None where it does not filter."""
    return {
        "namespaces": list(scope.namespaces),
        "statuses": list(scope.statuses),
        "at": scope.at,
        "memory_types": list(scope.memory_types) if scope.memory_types else None,
        "key_like": _like_prefix(scope.key_prefix) if scope.key_prefix else None,
        "created_after": scope.created_after,
        "created_before": scope.created_before,
    }


def _conditions(memory: type[Memory], *, historical: bool, filters: dict[str, Any]) -> list[ColumnElement[bool]]:
    """The hard filters over `memory`, from the values of `_filters` or from bound parameters."""
    at = filters["at"]
    conditions = [
        memory.namespace.in_(filters["namespaces"]),
        (_status_at(memory, at) if historical else memory.status).in_(filters["statuses"]),
        # Expired memories never come back, whatever the status filter says.
        unexpired(memory, at),
        memory.created_at <= at,
    ]
    if filters["memory_types"] is not None:
        conditions.append(memory.memory_type.in_(filters["memory_types"]))
    if filters["key_like"] is not None:
        conditions.append(memory.key.like(filters["key_like"]))
    if filters["created_after"] is not None:
        conditions.append(memory.created_at >= filters["created_after"])
    if filters["created_before"] is not None:
        conditions.append(memory.created_at <= filters["created_before"])
    return conditions


def _in_scope(scope: Scope, memory: type[Memory] = Memory) -> list[ColumnElement[bool]]:
    return _conditions(memory, historical=scope.historical, filters=_filters(scope))


_LISTS = frozenset({"namespaces", "statuses", "memory_types"})
_MOMENTS = frozenset({"at", "created_after", "created_before"})


def _bound_filters(present: frozenset[str]) -> dict[str, Any]:
    """Bound parameters `scope_<name>` for the filters `present`, None for the others."""
    return {
        name: bindparam(
            f"scope_{name}", expanding=name in _LISTS, type_=DateTime(timezone=True) if name in _MOMENTS else None
        )
        if name in present
        else None
        for name in ("namespaces", "statuses", "at", "memory_types", "key_like", "created_after", "created_before")
    }


def _scope_parameters(scope: Scope) -> tuple[frozenset[str], dict[str, Any]]:
    """The filters the scope has (the shape a statement is cached by) and their values under
    the names `_bound_filters` gives them."""
    filters = {name: value for name, value in _filters(scope).items() if value is not None}
    return frozenset(filters), {f"scope_{name}": value for name, value in filters.items()}


async def _rows(session: AsyncSession, statement: Executable, parameters: dict[str, Any] | None = None) -> RouteRows:
    return [(memory_id, float(score)) for memory_id, score in await _fetch(session, statement, parameters)]


def _nearest(candidates: Callable[..., Select], vector: Any, *, exact: ColumnElement[bool], name: str) -> Subquery:
    """(id, similarity) of the `limit` candidates nearest the query (bound parameters
    `embedding`, `limit`); `candidates(*columns)` selects them, `vector` is their vector column.
    Small namespaces are read whole and ordered exactly: the ivfflat index is shared by every
    namespace, and its probes found a small namespace's best match at rank 19-41 once the table
    held other namespaces. Larger ones go through the index, whose probes and iterative scan are
    set per connection. `exact` is a one-time filter: PostgreSQL runs only the scan it allows."""
    distance = vector.cosine_distance(bindparam("embedding", type_=Embedding()))
    similarity = (1 - distance).label("similarity")
    limit = bindparam("limit", type_=Integer)
    # `+ 0`: an order the index cannot serve, so the planner reads the scope and sorts it.
    read_whole = candidates(similarity).where(exact).order_by(distance + 0).limit(limit)
    indexed = candidates(similarity).where(~exact).order_by(distance).limit(limit)
    return union_all(select(read_whole.subquery()), select(indexed.subquery())).subquery(name)


@lru_cache(maxsize=256)
def _nearest_statement(historical: bool, present: frozenset[str], *, windows: bool, said_between: bool) -> Select:
    """The vector route's statement, built once per shape (see `_full_text`): the memories
    nearest by their own vector and, with `windows`, by their later windows' (memory_chunks),
    each scored by its nearest vector; `said_between` keeps memories said from `start` until
    `end` (the time route)."""
    filters = _bound_filters(present)
    model = bindparam("model", type_=Text)
    conditions = [*_conditions(Memory, historical=historical, filters=filters), Memory.embedding_model == model]
    if said_between:
        start, end = bindparam("start", type_=DateTime(timezone=True)), bindparam("end", type_=DateTime(timezone=True))
        conditions += [Memory.created_at >= start, Memory.created_at < end]
    size = (
        select(func.coalesce(func.sum(NamespaceState.memories), 0))
        .where(NamespaceState.namespace.in_(filters["namespaces"]))
        .scalar_subquery()
    )
    exact = size <= bindparam("exact_max", type_=Integer)

    def own(*columns: Any) -> Select:
        return select(Memory.id.label("id"), *columns).where(*conditions)

    def later_windows(*columns: Any) -> Select:
        return (
            select(MemoryChunk.memory_id.label("id"), *columns)
            .join(Memory, Memory.id == MemoryChunk.memory_id)
            .where(MemoryChunk.namespace.in_(filters["namespaces"]), MemoryChunk.embedding_model == model, *conditions)
        )

    scans = [_nearest(own, Memory.embedding, exact=exact, name="own")]
    if windows:
        scans.append(_nearest(later_windows, MemoryChunk.embedding, exact=exact, name="windows"))
    found = union_all(*(select(scan.c.id, scan.c.similarity) for scan in scans)).subquery("found")
    best = func.max(found.c.similarity)
    # Relaxed order is only nearly sorted, and the scans interleave: sorted here.
    return select(found.c.id, best).group_by(found.c.id).order_by(best.desc()).limit(bindparam("limit", type_=Integer))


async def _nearest_rows(
    session: AsyncSession, scope: Scope, *, windows: bool, between: tuple[datetime, datetime] | None, **values: Any
) -> RouteRows:
    present, parameters = _scope_parameters(scope)
    statement = _nearest_statement(scope.historical, present, windows=windows, said_between=between is not None)
    parameters |= values
    if between is not None:
        parameters |= {"start": between[0], "end": between[1]}
    return await _rows(session, statement, parameters)


async def vector_route(
    session: AsyncSession, scope: Scope, *, embedding: np.ndarray, model: str, limit: int, chunks: bool, exact_max: int
) -> RouteRows:
    """Cosine neighbours (`_nearest`): the memories nearest by their own vector and, with
    `chunks`, those whose later windows are nearest, each scored by its nearest vector. One
    statement; namespaces of up to `exact_max` memories together are read exactly."""
    return await _nearest_rows(
        session, scope, windows=chunks, between=None, embedding=embedding, model=model, limit=limit, exact_max=exact_max
    )


async def time_route(
    session: AsyncSession,
    scope: Scope,
    *,
    embedding: np.ndarray,
    model: str,
    start: datetime,
    end: datetime,
    limit: int,
    exact_max: int,
) -> RouteRows:
    """The memories said within a time window the query names, nearest to the query first."""
    return await _nearest_rows(
        session, scope, windows=False, between=(start, end), embedding=embedding, model=model, limit=limit, exact_max=exact_max
    )


async def count_other_model(session: AsyncSession, scope: Scope, *, model: str) -> int | None:
    """In-scope memories the vector route cannot see: their vectors are in another model's
    space. None when the namespaces hold no memory of another model at all (almost always,
    which the embedding_model index answers at once); only otherwise is the scope counted."""
    # Spelt as two ranges: a btree cannot answer `<>`, and a scan for a row that is not there
    # reads the whole table.
    other = or_(Memory.embedding_model < model, Memory.embedding_model > model, Memory.embedding_model.is_(None))
    held = exists(select(Memory.id).where(Memory.namespace.in_(scope.namespaces), other))
    in_scope = select(func.count()).select_from(Memory).where(*_in_scope(scope), other).scalar_subquery()
    return await session.scalar(select(case((held, in_scope), else_=None)))


@lru_cache(maxsize=256)
def _key_and_recency_statement(historical: bool, present: frozenset[str], *, prefix: bool, terms: bool) -> Select:
    """Both routes in one statement (one round trip): rows (route, id, score), each route's
    newest first. Recency's score is the age in hours at the search's moment, the key route's 1."""
    filters = _bound_filters(present)
    in_scope = _conditions(Memory, historical=historical, filters=filters)
    age_hours = func.extract("epoch", filters["at"] - Memory.created_at) / 3600

    def route(name: str, score: Any, *conditions: ColumnElement[bool]) -> Subquery:
        return (
            select(literal_column(f"'{name}'").label("route"), Memory.id.label("id"), score.label("score"), Memory.created_at)
            .where(*in_scope, *conditions)
            .order_by(Memory.created_at.desc())
            .limit(bindparam(f"{name}_limit", type_=Integer))
            .subquery(name)
        )

    routes = [route("recency", age_hours)]
    if prefix or terms:
        matches: list[ColumnElement[bool]] = []
        if prefix:
            matches.append(Memory.key.like(bindparam("key_like", type_=Text)))
        if terms:
            key_terms = func.hindsight_key_terms(Memory.namespace, Memory.key, type_=ARRAY(Text))
            matches.append(key_terms.overlap(bindparam("terms", type_=ARRAY(Text))))
        routes.append(route("key", literal_column("1.0"), Memory.key.is_not(None), or_(*matches)))
    both = union_all(*(select(found.c.route, found.c.id, found.c.score, found.c.created_at) for found in routes)).subquery()
    return select(both.c.route, both.c.id, both.c.score).order_by(both.c.route, both.c.created_at.desc())


async def key_and_recency_routes(
    session: AsyncSession, scope: Scope, *, key_prefix: str | None, terms: Sequence[str], key_limit: int, recency_limit: int
) -> tuple[RouteRows, RouteRows]:
    """The key route: memories whose key starts with the requested prefix or has a segment the
    query names (`user:u1:phone` for "what is my phone number"), newest first, score 1. The
    recency route: the newest memories in scope, raw score their age in hours at the search's
    moment."""
    present, parameters = _scope_parameters(scope)
    statement = _key_and_recency_statement(scope.historical, present, prefix=bool(key_prefix), terms=bool(terms))
    parameters |= {"key_limit": key_limit, "recency_limit": recency_limit}
    if key_prefix:
        parameters["key_like"] = _like_prefix(key_prefix)
    if terms:
        parameters["terms"] = list(terms)
    found: dict[str, RouteRows] = {"key": [], "recency": []}
    for name, memory_id, score in await _fetch(session, statement, parameters):
        found[name].append((memory_id, float(score)))
    return found["key"], found["recency"]


def _bm25(namespaces: Any, matches: CTE, terms: Any) -> Select:
    """BM25 over the matches, one row per (match, query term it holds). N is the namespaces'
    count of memories ever written (namespace_state; never fewer than the matches), document
    frequencies and the mean length (distinct lexemes) are read over the matches: at most
    `match_cap` rows, so a query of common words costs no more than before."""
    # Each term's tsquery is parsed once here, not once per (match, term) pair of the join.
    term = func.unnest(terms)
    term_rows = select(term.label("term"), func.to_tsquery(_SIMPLE, term).label("query")).subquery("terms")
    term_query = term_rows.c.query
    hits = (
        select(
            matches.c.id,
            matches.c.created_at,
            term_rows.c.term,
            (func.ts_rank(matches.c.lexemes, term_query, 0) / _TS_RANK_ONCE).label("tf"),
            func.length(matches.c.lexemes).label("length"),
        )
        .select_from(matches.join(term_rows, matches.c.lexemes.op("@@")(term_query)))
        .cte("hits")
    )
    frequency = select(hits.c.term, func.count().label("df")).group_by(hits.c.term).cte("frequency")
    matched = select(func.count()).select_from(matches).scalar_subquery()
    written = (
        select(func.coalesce(func.sum(NamespaceState.memories), 0))
        .where(NamespaceState.namespace.in_(namespaces))
        .scalar_subquery()
    )
    documents = func.greatest(written, matched)
    idf = func.ln(1 + (documents - frequency.c.df + 0.5) / (frequency.c.df + 0.5))
    norm: Any = 1.0
    if BM25_B:
        mean_length = select(func.avg(func.length(matches.c.lexemes))).scalar_subquery()
        norm = 1 - BM25_B + BM25_B * hits.c.length / func.greatest(mean_length, 1)
    score = func.sum(idf * hits.c.tf * (BM25_K1 + 1) / (hits.c.tf + BM25_K1 * norm))
    return (
        select(hits.c.id, score.label("score"))
        .join(frequency, frequency.c.term == hits.c.term)
        .group_by(hits.c.id, hits.c.created_at)
        .order_by(score.desc(), hits.c.created_at.desc())
    )


@lru_cache(maxsize=256)
def _full_text(historical: bool, present: frozenset[str], bm25: bool, constants: tuple[float, ...]) -> Select:
    """The full-text match and its ranking, built once per shape of scope (which filters it
    has), its values bound at execution: building the BM25 statement anew cost a few
    milliseconds of CPU a search. `constants` are the module's settings read here, which
    ablations change at run time."""
    filters = _bound_filters(present)
    query = func.to_tsquery(_SIMPLE, bindparam("tsquery", type_=Text))
    matches = (
        select(Memory.id, Memory.lexemes, Memory.created_at)
        .where(*_conditions(Memory, historical=historical, filters=filters), Memory.lexemes.op("@@")(query))
        .limit(bindparam("match_cap", type_=Integer))
        .cte("matches")  # BM25 reads it three times: a CTE runs the index scan once
    )
    if bm25:
        statement = _bm25(filters["namespaces"], matches, bindparam("terms", type_=ARRAY(Text)))
    else:
        rank = func.ts_rank(matches.c.lexemes, query, LEXICAL_RANK_NORMALISATION)
        statement = select(matches.c.id, rank.label("rank")).order_by(rank.desc(), matches.c.created_at.desc())
    return statement.limit(bindparam("limit", type_=Integer))


async def lexical_route(
    session: AsyncSession, scope: Scope, *, tsquery: str, terms: Sequence[str], text: str, limit: int, match_cap: int
) -> RouteRows:
    """Full-text match over the app's own lexemes (CJK bigrams, stemmed English words), ranked
    like BM25 (`terms` are the lexemes `tsquery` ORs). When no word matches, trigram similarity
    (the GIN pg_trgm index) catches misspelt names and codes: "Zbignew" still finds Zbigniew.

    Ranking costs a ts_rank per matching row and term, and a query made only of common words
    matches most of a large namespace; so at most `match_cap` matches are ranked."""
    if tsquery:
        present, parameters = _scope_parameters(scope)
        bm25 = bool(LEXICAL_BM25 and terms)
        statement = _full_text(scope.historical, present, bm25, (BM25_K1, BM25_B, LEXICAL_RANK_NORMALISATION))
        parameters |= {"tsquery": tsquery, "match_cap": match_cap, "limit": limit}
        if bm25:
            parameters["terms"] = list(terms)
        rows = await _rows(session, statement, parameters)
        if rows:
            return rows
    present, parameters = _scope_parameters(scope)
    parameters |= {"text": text, "limit": limit}
    return await _rows(session, _trigram_statement(scope.historical, present), parameters)


@lru_cache(maxsize=256)
def _trigram_statement(historical: bool, present: frozenset[str]) -> Select:
    # `<%` is word_similarity(text, content) above pg_trgm's threshold (0.6 by default).
    words = bindparam("text", type_=Text)
    similarity = func.word_similarity(words, Memory.content)
    return (
        select(Memory.id, similarity.label("similarity"))
        .where(*_conditions(Memory, historical=historical, filters=_bound_filters(present)), words.op("<%")(Memory.content))
        .order_by(similarity.desc(), Memory.created_at.desc())
        .limit(bindparam("limit", type_=Integer))
    )


@lru_cache(maxsize=256)
def _neighbours_statement(historical: bool, present: frozenset[str]) -> Select:
    filters = _bound_filters(present)
    anchor = aliased(Memory, name="anchor")
    width = bindparam("width", type_=Integer)

    def side(before: bool):
        other = aliased(Memory, name="other")
        order = other.created_at.desc() if before else other.created_at.asc()
        position = func.row_number().over(order_by=order)
        return (
            select(other.id.label("id"), (-position if before else position).label("offset"))
            .where(
                other.namespace == anchor.namespace,
                other.session_id == anchor.session_id,
                other.created_at < anchor.created_at if before else other.created_at > anchor.created_at,
                *_conditions(other, historical=historical, filters=filters),
            )
            .order_by(order)
            .limit(width)
        )

    nearby = union_all(side(True), side(False)).lateral("nearby")
    return select(anchor.id, nearby.c.id, nearby.c.offset).join(nearby, true()).where(
        _among(anchor), anchor.session_id.is_not(None)
    )


async def session_neighbours(
    session: AsyncSession, scope: Scope, *, anchors: Sequence[UUID], width: int
) -> list[tuple[UUID, UUID, int]]:
    """(anchor, neighbour, offset) for up to `width` in-scope memories on each side of every
    anchor within its session, by creation order; offset -1 is the memory just before."""
    if not anchors or width <= 0:
        return []
    present, parameters = _scope_parameters(scope)
    parameters |= {"width": width, "memory_ids": list(anchors)}
    rows = await _fetch(session, _neighbours_statement(scope.historical, present), parameters)
    return [(anchor_id, other_id, int(offset)) for anchor_id, other_id, offset in rows]


# A loose index scan over ix_memories_namespace_speaker: one index probe per distinct speaker,
# however many lines they said. The expression is spelt as in the index's predicate (a bound
# key would keep the planner from using the partial index: a seq scan of the namespace).
_SPEAKERS = text(
    """
    WITH RECURSIVE found(namespace, speaker) AS (
        SELECT n.namespace, (
            SELECT min(m.source ->> 'speaker') FROM memories m
            WHERE m.namespace = n.namespace AND (m.source ->> 'speaker') IS NOT NULL
        )
        FROM unnest(CAST(:namespaces AS text[])) AS n(namespace)
        UNION ALL
        SELECT f.namespace, (
            SELECT min(m.source ->> 'speaker') FROM memories m
            WHERE m.namespace = f.namespace AND (m.source ->> 'speaker') IS NOT NULL
              AND (m.source ->> 'speaker') > f.speaker
        )
        FROM found f WHERE f.speaker IS NOT NULL
    )
    SELECT DISTINCT speaker FROM found WHERE speaker IS NOT NULL
    """
)


async def speakers(session: AsyncSession, namespaces: Sequence[str]) -> list[str]:
    """Who speaks in these namespaces (`source.speaker` of their memories)."""
    return list((await session.execute(_SPEAKERS, {"namespaces": list(namespaces)})).scalars())


def _among(memory: Any = Memory) -> ColumnElement[bool]:
    """`id = ANY(:memory_ids)`: one parameter and one statement text whatever the count, where
    `IN` binds one per id and reads as another statement (prepared again) for each count."""
    return memory.id == any_(bindparam("memory_ids", type_=ARRAY(PG_UUID(as_uuid=True))))


# A recalled memory is read, never changed: plain rows with the model's attribute names (its
# loaded columns) cost a fraction of ORM objects, and a search loads a few hundred candidates.
Recalled = Row[Any]
_RECALLED = [
    attribute.columns[0].label(attribute.key) for attribute in Memory.__mapper__.column_attrs if not attribute.deferred
]


def _load_statement() -> Select:
    query = bindparam("embedding", type_=Embedding())
    cosine = func.coalesce(1 - Memory.embedding.cosine_distance(query), 0.0)
    best_chunk = (
        select(func.max(1 - MemoryChunk.embedding.cosine_distance(query)))
        .where(MemoryChunk.memory_id == Memory.id, MemoryChunk.embedding_model == Memory.embedding_model)
        .scalar_subquery()
    )
    return select(*_RECALLED, cosine.label("query_cosine"), best_chunk.label("chunk_cosine")).where(_among())


_LOAD = _load_statement()


async def load(
    session: AsyncSession, memory_ids: Sequence[UUID], *, embedding: np.ndarray
) -> dict[UUID, tuple[Recalled, float, float | None]]:
    """The memories with their own vector's cosine to the query (0 for a memory without an
    embedding) and their nearest later window's (None for a memory without chunks)."""
    if not memory_ids:
        return {}
    rows = await _fetch(session, _LOAD, {"embedding": embedding, "memory_ids": list(memory_ids)})
    return {
        row.id: (row, float(row.query_cosine), None if row.chunk_cosine is None else float(row.chunk_cosine))
        for row in rows
    }


@lru_cache(maxsize=256)
def _in_scope_statement(historical: bool, present: frozenset[str]) -> Select:
    return select(*_RECALLED).where(_among(), *_conditions(Memory, historical=historical, filters=_bound_filters(present)))


async def load_in_scope(session: AsyncSession, scope: Scope, memory_ids: Sequence[UUID]) -> list[Recalled]:
    if not memory_ids:
        return []
    present, parameters = _scope_parameters(scope)
    parameters["memory_ids"] = list(memory_ids)
    return list(await _fetch(session, _in_scope_statement(scope.historical, present), parameters))


_ENDS = bindparam("memory_ids", type_=ARRAY(PG_UUID(as_uuid=True)))
_LINKS = select(MemoryRelation.from_memory_id, MemoryRelation.to_memory_id, MemoryRelation.type).where(
    or_(MemoryRelation.from_memory_id == any_(_ENDS), MemoryRelation.to_memory_id == any_(_ENDS))
)


async def links_touching(session: AsyncSession, memory_ids: Sequence[UUID]) -> set[tuple[UUID, UUID, str]]:
    """The judge's links (from, to, type) with an end among these memories."""
    if not memory_ids:
        return set()
    return {(first, second, kind) for first, second, kind in await _fetch(session, _LINKS, {"memory_ids": list(memory_ids)})}


def _similarities_statement() -> Select:
    first, second = aliased(Memory, name="first"), aliased(Memory, name="second")
    return select(first.id, second.id, 1 - first.embedding.cosine_distance(second.embedding)).where(
        _among(first),
        _among(second),
        first.id < second.id,
        first.embedding_model == second.embedding_model,
        first.embedding.is_not(None),
        second.embedding.is_not(None),
    )


_SIMILARITIES = _similarities_statement()


async def similarities_among(session: AsyncSession, memory_ids: Sequence[UUID]) -> dict[frozenset[UUID], float]:
    """The cosine between every two of these memories (of one embedding model)."""
    if len(memory_ids) < 2:
        return {}
    rows = await _fetch(session, _SIMILARITIES, {"memory_ids": list(memory_ids)})
    return {frozenset((a, b)): float(cosine) for a, b, cosine in rows}


def _access_statement(*, wait: bool) -> Any:
    ids = bindparam("memory_ids", type_=ARRAY(PG_UUID(as_uuid=True)))
    counted = update(Memory.__table__).values(
        access_count=Memory.__table__.c.access_count + 1, last_accessed_at=bindparam("at", type_=DateTime(timezone=True))
    )
    if wait:
        counted = counted.where(Memory.__table__.c.id == any_(ids))
    else:
        unheld = select(Memory.id).where(Memory.id == any_(ids)).with_for_update(skip_locked=True)
        counted = counted.where(Memory.__table__.c.id.in_(unheld.scalar_subquery()))
    return counted.returning(Memory.__table__.c.id)


_ACCESS = {wait: _access_statement(wait=wait) for wait in (False, True)}


async def record_access(session: AsyncSession, memory_ids: Sequence[UUID], *, at: datetime, wait: bool) -> set[UUID]:
    """Count these memories as accessed; the ids counted. Without `wait`, a memory a writer
    holds right now is skipped instead of waited for (its row lock is never requested). Plain
    SQL, not the ORM's update: no session holds these memories to keep in step."""
    rows = await _fetch(session, _ACCESS[wait], {"memory_ids": list(memory_ids), "at": at})
    return {memory_id for (memory_id,) in rows}
