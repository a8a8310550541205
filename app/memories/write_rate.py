"""Write-rate anomalies: a sliding one-minute window of writes per session, kept in this
process's memory. A session above the threshold is flagged (log, metric, /debug/anomalies);
past the optional hard limit its writes are refused before anything is stored."""

import logging
import math
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from app.core.errors import RateLimited
from app.core.metrics import WRITE_RATE_FLAGS

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60.0
# Past this many tracked sessions, those idle for a whole window are dropped.
_SWEEP_ABOVE_SESSIONS = 10_000

Writer = tuple[str | None, str]  # (session_id, namespace); writes without a session go uncounted


def _at(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, timezone.utc)


@dataclass(slots=True)
class Flag:
    """One burst of a session: open while the session stays above the threshold."""

    session_id: str
    namespace: str
    writes: int
    first_seen: datetime
    last_seen: datetime


def writers_of(items: Iterable[dict[str, Any]]) -> list[Writer]:
    """The (session, namespace) of each batch item; a malformed session is the item's own 422."""
    return [(item["session_id"], str(item.get("namespace"))) for item in items if isinstance(item.get("session_id"), str)]


class WriteRate:
    def __init__(
        self, *, flag_above: int, limit: int | None, flags_kept: int, clock: Callable[[], float] = time.time
    ) -> None:
        self._flag_above = flag_above
        self._limit = limit
        self._clock = clock
        self._times: dict[str, deque[float]] = {}
        self._open: dict[str, Flag] = {}
        self.flags: deque[Flag] = deque(maxlen=flags_kept)

    def admit(self, writers: Iterable[Writer]) -> None:
        """Count these writes; refuse all of them (429) if any session would pass the hard limit."""
        writers = [(session, namespace) for session, namespace in writers if session is not None]
        now = self._clock()
        if len(self._times) > _SWEEP_ABOVE_SESSIONS:
            self._forget_idle(now)
        for session_id, adding in Counter(session for session, _ in writers).items():
            self._refuse_past_limit(session_id, adding=adding, now=now)
        for session_id, namespace in writers:
            self._record(session_id, namespace, now=now)

    def _window(self, session_id: str, now: float) -> deque[float]:
        times = self._times.setdefault(session_id, deque())
        while times and times[0] <= now - WINDOW_SECONDS:
            times.popleft()
        return times

    def _refuse_past_limit(self, session_id: str, *, adding: int, now: float) -> None:
        if self._limit is None:
            return
        times = self._window(session_id, now)
        excess = len(times) + adding - self._limit
        if excess <= 0:
            return
        # The window has room once the `excess` oldest writes have left it.
        frees_at = times[excess - 1] + WINDOW_SECONDS if excess <= len(times) else now + WINDOW_SECONDS
        raise RateLimited(
            f"session {session_id!r} wrote {len(times)} memories in the last minute; the limit is {self._limit}",
            retry_after_seconds=max(1, math.ceil(frees_at - now)),
        )

    def _record(self, session_id: str, namespace: str, *, now: float) -> None:
        times = self._window(session_id, now)
        times.append(now)
        if len(times) <= self._flag_above:
            self._open.pop(session_id, None)
            return
        flag = self._open.get(session_id)
        if flag is None:
            self._open[session_id] = self._raise_flag(session_id, namespace, times)
            return
        flag.namespace, flag.writes, flag.last_seen = namespace, max(flag.writes, len(times)), _at(now)

    def _raise_flag(self, session_id: str, namespace: str, times: deque[float]) -> Flag:
        flag = Flag(session_id, namespace, len(times), first_seen=_at(times[0]), last_seen=_at(times[-1]))
        self.flags.append(flag)
        WRITE_RATE_FLAGS.inc()
        logger.warning(
            "write-rate anomaly: session %r wrote %d memories to %s within %d seconds (threshold %d)",
            session_id, len(times), namespace, WINDOW_SECONDS, self._flag_above,
        )
        return flag

    def _forget_idle(self, now: float) -> None:
        idle = [session for session, times in self._times.items() if not times or times[-1] <= now - WINDOW_SECONDS]
        for session_id in idle:
            del self._times[session_id]
            self._open.pop(session_id, None)
