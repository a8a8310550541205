"""A short-lived cache of identical searches, invalidated by any committed write to a namespace."""

import time
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from app.models import Memory

_generations: dict[str, int] = {}


def generation(namespace: str) -> int:
    return _generations.get(namespace, 0)


@event.listens_for(Session, "before_flush")
def _note_written_namespaces(session: Session, flush_context: Any, instances: Any) -> None:
    """Every ORM change of a memory marks its namespace; its cached searches are dropped once
    the change commits (dropping them earlier would let a search re-cache the old state)."""
    changed = (*session.new, *session.dirty, *session.deleted)
    mark_written(session, (instance.namespace for instance in changed if isinstance(instance, Memory)))


def mark_written(session: Session | AsyncSession, namespaces: Iterable[str]) -> None:
    """Drop the namespaces' cached searches once the session commits; for writes that bypass
    the ORM's flush (re-embedding)."""
    session.info.setdefault("written_namespaces", set()).update(namespaces)


@event.listens_for(Session, "after_commit")
def _invalidate_after_commit(session: Session) -> None:
    for namespace in session.info.pop("written_namespaces", ()):
        _generations[namespace] = generation(namespace) + 1


@event.listens_for(Session, "after_soft_rollback")
def _forget_rolled_back_writes(session: Session, previous_transaction: Any) -> None:
    if not session.in_transaction():
        session.info.pop("written_namespaces", None)


class SearchCache:
    def __init__(self, *, ttl_seconds: float, max_entries: int) -> None:
        self._ttl = ttl_seconds
        self._max_entries = max_entries
        self._entries: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()

    @staticmethod
    def key(request_key: Hashable, namespaces: Iterable[str]) -> Hashable:
        return (request_key, tuple((namespace, generation(namespace)) for namespace in namespaces))

    def get(self, key: Hashable) -> Any | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] < time.monotonic():
            self._entries.pop(key, None)
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: Hashable, value: Any) -> None:
        if self._ttl <= 0 or self._max_entries <= 0:
            return
        self._entries[key] = (time.monotonic() + self._ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)
