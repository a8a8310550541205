"""Write-rate anomalies: a sliding one-minute window of writes per writer, kept in PostgreSQL so
every API process counts the same writes. A writer is a session of one caller (its API key, or
the namespace when no keys are configured), so one tenant cannot spend another's window by
naming its session id; writes without a session share one window per caller. A writer above the
threshold is flagged (log, metric, /debug/anomalies); past the optional hard limit its writes
are refused before anything is stored.

The window is one row per writer and second (`write_rate_counts`): admitting a write locks its
writer's window (a transaction-scoped advisory lock, so processes take turns per writer and
nobody else waits), reads the last minute, refuses or adds to the current second, and commits
at once, before the write itself runs."""

import json
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.auth import Access
from app.core.errors import RateLimited
from app.core.metrics import WRITE_RATE_FLAGS
from app.memories import repository
from app.models import WriteRateFlag

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60

# (caller, session_id or None, namespace): the first two name the window.
Writer = tuple[str, str | None, str]
Window = tuple[str, str | None]


def _at(second: int) -> datetime:
    return datetime.fromtimestamp(second, timezone.utc)


def writer(access: Access, session_id: str | None, namespace: str) -> Writer:
    return (access.principal or f"namespace:{namespace}", session_id, namespace)


def writers_of(access: Access, items: Iterable[dict[str, Any]]) -> list[Writer]:
    """The writer of each batch item; a malformed session or namespace is the item's own 422."""
    return [
        writer(access, session if isinstance(session := item.get("session_id"), str) else None, str(item.get("namespace")))
        for item in items
    ]


def _name(window: Window) -> str:
    return json.dumps(window, ensure_ascii=False)


class WriteRate:
    def __init__(
        self, *, flag_above: int, limit: int | None, flags_kept: int, clock: Callable[[], float] = time.time
    ) -> None:
        self._flag_above = flag_above
        self._limit = limit
        self._flags_kept = flags_kept
        self._clock = clock

    async def admit(self, session: AsyncSession, writers: Iterable[Writer]) -> None:
        """Count these writes; refuse all of them (429) if any writer would pass the hard limit.
        Commits the session: the window must not stay locked while the write runs."""
        writers = list(writers)
        now = int(self._clock())
        adding = Counter((caller, session_id) for caller, session_id, _ in writers)
        last_namespace = {(caller, session_id): namespace for caller, session_id, namespace in writers}
        windows = sorted(adding, key=_name)  # locked in one order by every process
        try:
            seen = {}
            for window in windows:
                await repository.lock_write_window(session, _name(window))
                seen[window] = await repository.window_counts(session, _name(window), since=now - WINDOW_SECONDS)
            for window in windows:
                self._refuse_past_limit(window, seen[window], adding=adding[window], now=now)
            for window in windows:
                await repository.add_writes(session, _name(window), second=now, writes=adding[window], before=now - WINDOW_SECONDS)
                total = sum(count for _, count in seen[window]) + adding[window]
                first = seen[window][0][0] if seen[window] else now
                await self._flag(session, window, last_namespace[window], total=total, first=first, now=now)
        except BaseException:
            await session.rollback()
            raise
        await session.commit()

    def _refuse_past_limit(self, window: Window, counts: list[tuple[int, int]], *, adding: int, now: int) -> None:
        if self._limit is None:
            return
        total = sum(count for _, count in counts)
        excess = total + adding - self._limit
        if excess <= 0:
            return
        # The window has room once the `excess` oldest writes have left it.
        frees_at = now + WINDOW_SECONDS
        left = 0
        for second, count in counts:
            left += count
            if left >= excess:
                frees_at = second + WINDOW_SECONDS
                break
        whose = f"session {window[1]!r}" if window[1] is not None else "this caller (writing without a session)"
        raise RateLimited(
            f"{whose} wrote {total} memories in the last minute; the limit is {self._limit}",
            retry_after_seconds=max(1, math.ceil(frees_at - now)),
        )

    async def _flag(self, session: AsyncSession, window: Window, namespace: str, *, total: int, first: int, now: int) -> None:
        name = _name(window)
        if total <= self._flag_above:
            await repository.close_write_flag(session, name)
            return
        if await repository.extend_write_flag(session, name, namespace=namespace, writes=total, last_seen=_at(now)):
            return
        caller, session_id = window
        await repository.open_write_flag(
            session,
            WriteRateFlag(
                writer=name, session_id=session_id, namespace=namespace, writes=total, first_seen=_at(first), last_seen=_at(now)
            ),
            keep=self._flags_kept,
        )
        WRITE_RATE_FLAGS.inc()
        logger.warning(
            "write-rate anomaly: session %r of %s wrote %d memories to %s within %d seconds (threshold %d)",
            session_id, caller, total, namespace, WINDOW_SECONDS, self._flag_above,
        )

    async def flags(self, session: AsyncSession, *, namespace: str | None) -> list[WriteRateFlag]:
        """Recent flags, newest first."""
        return await repository.write_flags(session, namespace=namespace, limit=self._flags_kept)

    async def forget_idle(self, session: AsyncSession) -> int:
        """Drop the seconds that have left every window (writers that went quiet keep theirs)."""
        return await repository.drop_write_counts(session, before=int(self._clock()) - WINDOW_SECONDS)
