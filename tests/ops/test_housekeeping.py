"""The shared tables are swept: write-rate seconds past every window, day-old idempotency answers."""

from datetime import datetime, timedelta, timezone

from sqlalchemy import func, select, text

from app.memories.write_rate import WriteRate
from app.models import IdempotencyKey, WriteRateCount
from app.ops.housekeeping import sweep


async def test_a_sweep_drops_what_expired_and_keeps_the_rest(engine, settings):
    from app.core.database import create_sessionmaker

    sessions = create_sessionmaker(engine)
    now = datetime.now(timezone.utc)
    async with sessions.begin() as session:
        session.add_all(
            [
                WriteRateCount(writer="sweep-test", second=int(now.timestamp()) - 120, writes=3),
                WriteRateCount(writer="sweep-test", second=int(now.timestamp()), writes=1),
                IdempotencyKey(caller="sweep-test", key="old", request_hash="h", status=200, created_at=now - timedelta(days=2)),
                IdempotencyKey(caller="sweep-test", key="new", request_hash="h", status=200),
            ]
        )
    try:
        assert await sweep(sessions, write_rate=WriteRate(flag_above=10, limit=None, flags_kept=10), keep_answers_seconds=86_400)
        async with sessions() as session:
            seconds = await session.scalar(select(func.count()).select_from(WriteRateCount).where(WriteRateCount.writer == "sweep-test"))
            keys = (await session.execute(select(IdempotencyKey.key).where(IdempotencyKey.caller == "sweep-test"))).scalars().all()
        assert seconds == 1 and keys == ["new"]
    finally:
        async with engine.begin() as connection:
            await connection.execute(text("DELETE FROM write_rate_counts WHERE writer = 'sweep-test'"))
            await connection.execute(text("DELETE FROM idempotency_keys WHERE caller = 'sweep-test'"))
