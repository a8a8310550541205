"""What a transaction wrote, per namespace, and what follows once it commits.

Every ORM change of a memory marks its namespace (writes that bypass the ORM mark theirs with
`mark_written`). When the transaction commits, one statement, inside it, bumps each marked
namespace's generation (the search cache keys on it, in every process; a read replica holding
it has the write) and counts the new memories towards the periodic review. A review that falls
due is handed to the writer's `on_review_due`, still inside the transaction (to queue it there),
and work registered with `after_commit` runs once the commit is done. A rollback forgets it all.
"""

from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from app.models import Memory
from app.namespaces import repository

_WRITTEN = "hindsight.written"
_NEW = "hindsight.new_memories"
_STORED = "hindsight.stored_memories"
_REVIEW = "hindsight.review"
_AFTER = "hindsight.after_commit"
ReviewDue = Callable[[Session, str], None]


def mark_written(session: Session | AsyncSession, namespaces: Iterable[str]) -> None:
    """The namespaces changed without the ORM seeing it (bulk statements)."""
    session.info.setdefault(_WRITTEN, set()).update(namespaces)


def count_new(
    session: Session | AsyncSession, namespace: str, count: int, *, review_every: int, on_review_due: ReviewDue | None
) -> None:
    """`count` memories were written to the namespace by clients (they count towards its review)."""
    new = session.info.setdefault(_NEW, {})
    new[namespace] = new.get(namespace, 0) + count
    session.info[_REVIEW] = (review_every, on_review_due)
    count_stored(session, namespace, count)


def count_stored(session: Session | AsyncSession, namespace: str, count: int) -> None:
    """`count` memories were added to the namespace (its size, which picks how a write scans
    its neighbours), whether or not they count towards its review (bulk rows do not)."""
    stored = session.info.setdefault(_STORED, {})
    stored[namespace] = stored.get(namespace, 0) + count
    mark_written(session, [namespace])


def after_commit(session: Session | AsyncSession, work: Callable[[], None]) -> None:
    """Run `work` once the transaction has committed; never if it rolls back."""
    session.info.setdefault(_AFTER, []).append(work)


@event.listens_for(Session, "before_flush")
def _note_written_namespaces(session: Session, flush_context: Any, instances: Any) -> None:
    changed = (*session.new, *session.dirty, *session.deleted)
    mark_written(session, (instance.namespace for instance in changed if isinstance(instance, Memory)))


@event.listens_for(Session, "before_commit")
def _record_commit(session: Session) -> None:
    if session.in_nested_transaction():
        return  # a savepoint: the outer commit records it
    if session.new or session.dirty or session.deleted:
        session.flush()  # changes still pending mark their namespaces now, not after this hook
    written = session.info.pop(_WRITTEN, set())
    new = session.info.pop(_NEW, {})
    stored = session.info.pop(_STORED, {})
    review_every, on_review_due = session.info.pop(_REVIEW, (0, None))
    if not written:
        return
    due = repository.committed(
        session,
        {name: new.get(name, 0) for name in written},
        {name: stored.get(name, 0) for name in written},
        review_every=review_every,
    )
    for namespace in due:
        if on_review_due is not None:
            on_review_due(session, namespace)


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    for work in session.info.pop(_AFTER, []):
        work()


@event.listens_for(Session, "after_soft_rollback")
def _forget_rolled_back_writes(session: Session, previous_transaction: Any) -> None:
    if not session.in_transaction():
        for name in (_WRITTEN, _NEW, _STORED, _REVIEW, _AFTER):
            session.info.pop(name, None)
