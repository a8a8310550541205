"""Revision calls made on purpose: explicit revise, pending apply/dismiss, rollback, review."""

from datetime import datetime, timezone
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.core import foreground
from app.core.auth import Access
from app.core.dependencies import Sessions
from app.core.errors import Conflict, NotFound, VersionConflict
from app.memories import records
from app.memories import repository as memories
from app.memories.sensitive import refuse_sensitive
from app.models import Memory, RevisionLog
from app.revisions import repository
from app.revisions.service import (
    Context,
    Reviewed,
    apply,
    log_revision,
    needs_review,
    read_for_review,
    revise_stored,
    tag,
)


async def _memory(session: AsyncSession, memory_id: UUID | None) -> Memory:
    memory = await memories.get(session, memory_id, for_update=True) if memory_id else None
    if memory is None:
        raise NotFound(f"no memory with id {memory_id}")
    return memory


async def _addressed(session: AsyncSession, memory_id: UUID, access: Access) -> Memory:
    """The memory a client addressed by id, read without a lock (slow work may come before it); 404 if
    it does not exist, 403 outside the caller's namespaces."""
    memory = await memories.get(session, memory_id)
    if memory is None:
        raise NotFound(f"no memory with id {memory_id}")
    access.check(memory.namespace)
    return memory


def _listed(ids: list[UUID]) -> str:
    """Ids as clients know them; a list's own str() would show each as UUID('...')."""
    return ", ".join(str(each) for each in ids)


async def _revision(session: AsyncSession, revision_id: UUID) -> RevisionLog:
    revision = await repository.get(session, revision_id, for_update=True)
    if revision is None:
        raise NotFound(f"no revision with id {revision_id}")
    return revision


async def revise(
    session: AsyncSession,
    *,
    memory_id: UUID,
    content: str,
    expected_version: int,
    reason: str | None,
    context: Context,
    access: Access,
) -> tuple[Memory, RevisionLog]:
    """Replace a memory's content in place; refused (409) unless the caller saw its latest version."""
    refuse_sensitive({"content": content, "reason": reason})  # the reason is shown in /debug/revisions
    memory = await _addressed(session, memory_id, access)
    embedding = (await context.embedder.embed_passages([content]))[0]  # before the lock: it is slow
    await memories.lock_namespace(session, memory.namespace)
    await memories.reload(session, memory)
    if memory.version != expected_version:
        raise VersionConflict(f"memory {memory_id} is at version {memory.version}, not {expected_version}")
    if memory.status not in ("active", "uncertain"):
        raise Conflict(f"memory {memory_id} is {memory.status}; only active memories can be revised")
    now = datetime.now(timezone.utc)
    revision = await log_revision(
        session,
        memory,
        trigger="manual",
        old_memory_id=memory.id,
        new_content=content,
        decision="CONFLICT",
        reason=reason or "revised through the API",
        confidence=1.0,
        judge="api",
        status="applied",
        resolved_at=now,
    )
    memory.content, memory.content_hash = content, records.content_hash(content)
    memory.embedding, memory.embedding_model = embedding, context.embedder.name
    memory.lexemes = memories.lexeme_vector(content)
    memory.revised_at = now
    await memories.save_change(session, memory, changed_by=tag(revision), at=now)
    await session.refresh(memory)
    return memory, revision


async def invalidate(
    session: AsyncSession, *, memory_id: UUID, reason: str, context: Context, access: Access
) -> tuple[Memory, RevisionLog, list[Memory]]:
    """Mark a memory as never right: it leaves search but keeps its history, and what it had
    replaced holds again. Logged as a revision, so it rolls back like one."""
    refuse_sensitive(reason)
    memory = await _addressed(session, memory_id, access)
    await memories.lock_namespace(session, memory.namespace)
    await memories.reload(session, memory)
    if memory.status not in ("active", "uncertain", "superseded"):
        raise Conflict(f"memory {memory_id} is {memory.status}; only active, uncertain or superseded memories can be invalidated")
    now = datetime.now(timezone.utc)
    revision = await log_revision(
        session,
        memory,
        trigger="manual",
        old_memory_id=memory.id,
        decision="INVALIDATE",
        reason=reason,
        confidence=1.0,
        judge="api",
        status="applied",
        resolved_at=now,
    )
    memory.status, memory.invalidated_reason, memory.invalidated_at = "invalidated", reason, now
    await memories.save_change(session, memory, changed_by=tag(revision), at=now)
    restored = []
    for older in await repository.replaced_by(session, memory.id):
        older.status, older.superseded_by = "active", None
        await memories.save_change(session, older, changed_by=tag(revision), at=now)
        restored.append(older)
    await session.flush()
    await session.refresh(memory)
    return memory, revision, restored


async def _release_if_settled(session: AsyncSession, memory: Memory, revision: RevisionLog) -> None:
    """An uncertain memory becomes active again once no judgement about it is pending."""
    if memory.status == "uncertain" and not await repository.pending_for(session, memory.id, exclude=revision.id):
        memory.status = "active"
        await memories.save_change(session, memory, changed_by=tag(revision), at=datetime.now(timezone.utc))


async def resolve_pending(
    session: AsyncSession, *, revision_id: UUID, accept: bool, context: Context, access: Access
) -> RevisionLog:
    """Apply (accept) or dismiss a judgement that was held back for low confidence."""
    revision = await _revision(session, revision_id)
    access.check(revision.namespace)
    if revision.status != "pending":
        raise Conflict(f"revision {revision_id} is {revision.status}, not pending")
    await memories.lock_namespace(session, revision.namespace)
    new = await _memory(session, revision.new_memory_id)
    old = await _memory(session, revision.old_memory_id)
    if accept:
        stale = [memory.id for memory in (new, old) if memory.status not in ("active", "uncertain")]
        if stale:
            raise Conflict(f"memories {_listed(stale)} changed since the judgement; dismiss it and review again")
        await apply(session, revision, new, old, context=context)
    else:
        revision.status, revision.resolved_at = "dismissed", datetime.now(timezone.utc)
        await repository.unlink_revision(session, revision.id)  # the likely-update link was wrong
    await _release_if_settled(session, new, revision)
    await session.flush()
    return revision


async def rollback(
    session: AsyncSession, *, revision_id: UUID, context: Context, access: Access
) -> tuple[RevisionLog, list[Memory]]:
    """Put every memory the revision touched back exactly as it was before it, from
    memory_versions; memories the revision created are deleted (kept in history)."""
    revision = await _revision(session, revision_id)
    access.check(revision.namespace)
    if revision.status == "rolled_back":
        raise Conflict(f"revision {revision_id} is already rolled back")
    await memories.lock_namespace(session, revision.namespace)
    first_change: dict[UUID, int] = {}
    last_change: dict[UUID, int] = {}
    for version in await repository.versions_written_by(session, tag(revision)):
        first_change.setdefault(version.memory_id, version.version)
        last_change[version.memory_id] = version.version
    affected = {memory_id: await _memory(session, memory_id) for memory_id in first_change}
    # Restoring over later changes would undo them silently (a later supersede, a delete).
    changed_since = [memory_id for memory_id, memory in affected.items() if memory.version != last_change[memory_id]]
    if changed_since:
        raise Conflict(f"memories {_listed(changed_since)} changed after this revision; roll back the later changes first")
    now = datetime.now(timezone.utc)
    restored = []
    for memory_id, version in first_change.items():
        memory = affected[memory_id]
        before = await repository.version_before(session, memory_id, version)
        if before is None:
            memory.status = "deleted"
        elif memories.restore_snapshot(memory, before.snapshot):
            memory.embedding = (await context.embedder.embed_passages([memory.content]))[0]
            memory.embedding_model = context.embedder.name
        await memories.save_change(session, memory, changed_by=f"rollback:{revision.id}", at=now)
        restored.append(memory)
    await repository.unlink_revision(session, revision.id)
    revision.status, revision.resolved_at = "rolled_back", now
    await session.flush()
    for memory in restored:
        await session.refresh(memory)
    return revision, restored


# A review reads the candidates of this many memories at once: enough to save most statements,
# few enough that what a judgement changes makes it read again little.
_REVIEW_READ = 10


async def review(
    session: AsyncSession, *, namespace: str, since: datetime | None, limit: int, context: Context
) -> tuple[list[RevisionLog], int]:
    """Periodic trigger: judge the namespace's recent memories against older ones, in one pass.
    The pass reads without the namespace lock, the candidates of the next few memories at once
    (read_for_review): a memory whose candidates were all judged before, the usual case once its
    write judged them, costs no lock. One with a candidate left is judged under the lock
    (revise_stored reads its candidates again there, and lets the lock go while a slow judge
    thinks), and that is committed before the pass goes on, so writes to the namespace wait for
    one judgement at most, never for the pass. The pass steps aside while a search is answered
    in this process."""
    recent = await repository.recent_revisable(session, namespace=namespace, since=since, limit=limit)
    pending = list(reversed(recent))  # oldest first, as they were written
    revisions: list[RevisionLog] = []
    found: dict[UUID, Reviewed | None] | None = None
    for position, memory in enumerate(pending):
        if foreground.waiting():
            await session.commit()  # no snapshot kept open while it waits
            await foreground.step_aside(context.settings.embedding_yield_seconds)  # for a search (app/core/foreground.py)
        if found is None or memory.id not in found:
            found = await read_for_review(session, pending[position : position + _REVIEW_READ], context=context)
        reviewed = found[memory.id]
        if reviewed is None or not await needs_review(session, memory, reviewed, context=context):
            continue
        revisions += await revise_stored(session, memory, embedding=reviewed.embedding, context=context, periodic=True)
        await session.commit()  # lets the namespace go
        found = None  # what was applied may change the next memories' candidates
    return revisions, len(recent)


async def listing(session: AsyncSession, *, namespace: str | None, status: str | None, limit: int) -> list[RevisionLog]:
    return await repository.listing(session, namespace=namespace, status=status, limit=limit)


async def periodic_review(sessions: Sessions, *, namespace: str, context: Context) -> int:
    """The review due after a namespace's last N writes (settings.review_every_writes), run after
    the write that made it due has answered; how many judgements it logged."""
    async with sessions() as session:
        revisions, _ = await review(session, namespace=namespace, since=None, limit=context.settings.review_batch, context=context)
        await session.commit()
    return len(revisions)
