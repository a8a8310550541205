"""SQL of `idempotency_keys`."""

from datetime import datetime, timedelta, timezone

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import IdempotencyKey

# `status` while the first request runs is NULL; once its transaction committed, APPLIED until
# its answer is stored.
APPLIED = 0


async def claim(session: AsyncSession, *, caller: str, key: str, request_hash: str, stale_before: datetime) -> bool:
    """Take the key for a request; False if another request holds it. A claim whose request
    never finished (its process died) is taken over once it is older than `stale_before`."""
    statement = (
        insert(IdempotencyKey)
        .values(caller=caller, key=key, request_hash=request_hash)
        .on_conflict_do_update(
            index_elements=[IdempotencyKey.caller, IdempotencyKey.key],
            set_={"request_hash": request_hash, "created_at": datetime.now(timezone.utc)},
            where=(IdempotencyKey.status.is_(None)) & (IdempotencyKey.created_at < stale_before),
        )
        .returning(IdempotencyKey.key)
    )
    return (await session.execute(statement)).first() is not None


async def get(session: AsyncSession, *, caller: str, key: str) -> IdempotencyKey | None:
    statement = select(IdempotencyKey).where(IdempotencyKey.caller == caller, IdempotencyKey.key == key)
    return (await session.execute(statement)).scalar_one_or_none()


async def mark_applied(session: AsyncSession, *, caller: str, key: str) -> None:
    statement = (
        update(IdempotencyKey)
        .where(IdempotencyKey.caller == caller, IdempotencyKey.key == key, IdempotencyKey.status.is_(None))
        .values(status=APPLIED)
    )
    await session.execute(statement)


async def store(session: AsyncSession, *, caller: str, key: str, status: int, content_type: str | None, body: bytes) -> None:
    statement = (
        update(IdempotencyKey)
        .where(IdempotencyKey.caller == caller, IdempotencyKey.key == key)
        .values(status=status, content_type=content_type, body=body)
    )
    await session.execute(statement)


async def release(session: AsyncSession, *, caller: str, key: str) -> None:
    """The request failed before anything was applied: a retry runs it again."""
    statement = delete(IdempotencyKey).where(
        IdempotencyKey.caller == caller, IdempotencyKey.key == key, IdempotencyKey.status.is_(None)
    )
    await session.execute(statement)


async def forget_older_than(session: AsyncSession, seconds: float) -> int:
    cutoff = datetime.now(timezone.utc) - timedelta(seconds=seconds)
    return (await session.execute(delete(IdempotencyKey).where(IdempotencyKey.created_at < cutoff))).rowcount or 0
