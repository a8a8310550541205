"""Ranking that survives a missed supersede: among the first hits, memories that compete for
one answer are put in an order that favours the right one.

Only hits the query finds about as relevant as the best (within `relevance` of it, or at least
as close to the query as the best by their embeddings alone) in the first `window` move, and
only into places such hits already hold:
- a hit about the person the question names ("the user", "the user's wife") goes before a
  hit about someone else;
- when the question names a time of the week or of the year ("at the weekend", "in January",
  周末), a hit whose own period holds it ("On weekends ...", "From November to March ...") goes
  before one that says nothing of such times, and that before one whose period excludes it
  ("works weekdays ..."): two memories that both hold, each for its own time (app/text/periods.py);
- among competitors, the newer in the world's time (`created_at`, which imports set) goes
  first: always for memories the judge held as a likely update (a `related` link), and for
  every competitor when the question asks about the present ("now", "currently", 现在, 目前
  ...). Competitors are hits the judge linked, or that are near each other (cosine at least
  `similarity`) and about the same person. A question about the past ("used to", 以前) keeps
  the relevance order.

Pure functions over plain values: the search service loads links and similarities for the
window and applies the result.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from app.text.periods import period
from app.text import asks_about_past, asks_about_present
from app.text.people import asked_subject, subject

# Links the judge leaves between two active memories: a held update, or two that both hold.
HELD = "related"
LINKS = frozenset({"related", "coexists"})


@dataclass(frozen=True, slots=True)
class Settings:
    window: int  # how many of the first hits may move
    similarity: float  # cosine from which two unlinked hits about one person compete
    relevance: float  # share of the best hit's relevance a competitor must reach


@dataclass(frozen=True, slots=True)
class Hit:
    id: UUID
    content: str
    created_at: datetime
    relevance: float
    dense: float = 0.0  # the embedding's part of the relevance (0..1 over the candidates)


def _groups(members: list[Hit], edges: set[frozenset[UUID]]) -> list[list[Hit]]:
    """Connected groups of competitors (union-find over the edges), each in rank order."""
    parent = {hit.id: hit.id for hit in members}

    def root(node: UUID) -> UUID:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for edge in edges:
        first, second = tuple(edge)
        parent[root(first)] = root(second)
    groups: dict[UUID, list[Hit]] = {}
    for hit in members:
        groups.setdefault(root(hit.id), []).append(hit)
    return [group for group in groups.values() if len(group) > 1]


def contenders(hits: Sequence[Hit], settings: Settings) -> list[Hit]:
    """The first hits that may trade places: in the window and about as relevant as its best."""
    window = list(hits[: settings.window])
    if len(window) < 2:
        return []
    top = max(window, key=lambda hit: hit.relevance)
    # Words can miss a synonym (the question says one verb, the memory another) that the embedding sees: a
    # hit the embedding finds at least as close to the query as the best hit competes too.
    return [hit for hit in window if hit.relevance >= settings.relevance * top.relevance or hit.dense >= top.dense > 0]


def lookups(query: str) -> tuple[bool, bool]:
    """Whether ordering for this query needs the judge's links, and the hits' similarities:
    a question about the past needs neither, one not about the present only the links."""
    if asks_about_past(query):
        return False, False
    return True, asks_about_present(query)


def _refill(order: list[UUID], hits: list[Hit], key) -> None:
    """Put `hits` back into the places they hold in `order`, sorted by `key`."""
    places = {hit_id: position for position, hit_id in enumerate(order)}
    slots = sorted(places[hit.id] for hit in hits)
    for slot, hit in zip(slots, sorted(hits, key=lambda hit: (*key(hit), places[hit.id])), strict=True):
        order[slot] = hit.id


def reorder(
    hits: Sequence[Hit],
    *,
    query: str,
    links: dict[frozenset[UUID], str],
    similarity: dict[frozenset[UUID], float],
    settings: Settings,
) -> list[UUID]:
    """The hits' ids in their new order (see the module docstring). `links` maps a pair of
    ids to the judge's link type, `similarity` a pair to the cosine of the two memories."""
    order = [hit.id for hit in hits]
    members = contenders(hits, settings)
    if not members:
        return order
    subjects = {hit.id: subject(hit.content) for hit in members}
    named = asked_subject(query)
    asked_time = period(query)
    # Most questions name no time: the hits' texts are then not read for one.
    fits = {hit.id: period(hit.content).fit(asked_time) if asked_time.days or asked_time.months else 0 for hit in members}

    def elsewhere(hit: Hit) -> bool:
        return named is not None and subjects[hit.id] not in (None, named)

    _refill(order, members, lambda hit: (elsewhere(hit), fits[hit.id]))
    if asks_about_past(query):
        return order
    present = asks_about_present(query)
    edges: set[frozenset[UUID]] = set()
    newer_first: set[frozenset[UUID]] = set()
    for index, first in enumerate(members):
        for second in members[index + 1 :]:
            pair = frozenset((first.id, second.id))
            link = links.get(pair)
            near = similarity.get(pair, 0.0) >= settings.similarity and subjects[first.id] == subjects[second.id]
            if link in LINKS or near:
                edges.add(pair)
                if link == HELD or present:
                    newer_first.add(pair)
    for group in _groups(members, edges):
        ids = {hit.id for hit in group}
        if any(pair <= ids for pair in newer_first):
            _refill(order, group, lambda hit: (elsewhere(hit), fits[hit.id], -hit.created_at.timestamp()))
    return order
