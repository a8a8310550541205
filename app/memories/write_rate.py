"""Write-rate anomalies: a sliding one-minute window of writes per writer, kept in this
process's memory. A writer is a session of one caller (its API key, or the namespace when no
keys are configured), so one tenant cannot spend another's window by naming its session id;
writes without a session share one window per caller. A writer above the threshold is flagged
(log, metric, /debug/anomalies); past the optional hard limit its writes are refused before
anything is stored."""

import logging
import math
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from app.core.auth import Access
from app.core.errors import RateLimited
from app.core.metrics import WRITE_RATE_FLAGS

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60.0
# Past this many tracked sessions, those idle for a whole window are dropped.
_SWEEP_ABOVE_SESSIONS = 10_000

# (caller, session_id or None, namespace): the first two name the window.
Writer = tuple[str, str | None, str]
Window = tuple[str, str | None]


def _at(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, timezone.utc)


@dataclass(slots=True)
class Flag:
    """One burst of a writer: open while it stays above the threshold."""

    session_id: str | None
    namespace: str
    writes: int
    first_seen: datetime
    last_seen: datetime


def writer(access: Access, session_id: str | None, namespace: str) -> Writer:
    return (access.principal or f"namespace:{namespace}", session_id, namespace)


def writers_of(access: Access, items: Iterable[dict[str, Any]]) -> list[Writer]:
    """The writer of each batch item; a malformed session or namespace is the item's own 422."""
    return [
        writer(access, session if isinstance(session := item.get("session_id"), str) else None, str(item.get("namespace")))
        for item in items
    ]


class WriteRate:
    def __init__(
        self, *, flag_above: int, limit: int | None, flags_kept: int, clock: Callable[[], float] = time.time
    ) -> None:
        self._flag_above = flag_above
        self._limit = limit
        self._clock = clock
        self._times: dict[Window, deque[float]] = {}
        self._open: dict[Window, Flag] = {}
        self.flags: deque[Flag] = deque(maxlen=flags_kept)

    def admit(self, writers: Iterable[Writer]) -> None:
        """Count these writes; refuse all of them (429) if any writer would pass the hard limit."""
        writers = list(writers)
        now = self._clock()
        if len(self._times) > _SWEEP_ABOVE_SESSIONS:
            self._forget_idle(now)
        for window, adding in Counter((caller, session) for caller, session, _ in writers).items():
            self._refuse_past_limit(window, adding=adding, now=now)
        for caller, session_id, namespace in writers:
            self._record((caller, session_id), namespace, now=now)

    def _window(self, window: Window, now: float) -> deque[float]:
        times = self._times.setdefault(window, deque())
        while times and times[0] <= now - WINDOW_SECONDS:
            times.popleft()
        return times

    def _refuse_past_limit(self, window: Window, *, adding: int, now: float) -> None:
        if self._limit is None:
            return
        times = self._window(window, now)
        excess = len(times) + adding - self._limit
        if excess <= 0:
            return
        # The window has room once the `excess` oldest writes have left it.
        frees_at = times[excess - 1] + WINDOW_SECONDS if excess <= len(times) else now + WINDOW_SECONDS
        whose = f"session {window[1]!r}" if window[1] is not None else "this caller (writing without a session)"
        raise RateLimited(
            f"{whose} wrote {len(times)} memories in the last minute; the limit is {self._limit}",
            retry_after_seconds=max(1, math.ceil(frees_at - now)),
        )

    def _record(self, window: Window, namespace: str, *, now: float) -> None:
        times = self._window(window, now)
        times.append(now)
        if len(times) <= self._flag_above:
            self._open.pop(window, None)
            return
        flag = self._open.get(window)
        if flag is None:
            self._open[window] = self._raise_flag(window, namespace, times)
            return
        flag.namespace, flag.writes, flag.last_seen = namespace, max(flag.writes, len(times)), _at(now)

    def _raise_flag(self, window: Window, namespace: str, times: deque[float]) -> Flag:
        caller, session_id = window
        flag = Flag(session_id, namespace, len(times), first_seen=_at(times[0]), last_seen=_at(times[-1]))
        self.flags.append(flag)
        WRITE_RATE_FLAGS.inc()
        logger.warning(
            "write-rate anomaly: session %r of %s wrote %d memories to %s within %d seconds (threshold %d)",
            session_id, caller, len(times), namespace, WINDOW_SECONDS, self._flag_above,
        )
        return flag

    def _forget_idle(self, now: float) -> None:
        idle = [window for window, times in self._times.items() if not times or times[-1] <= now - WINDOW_SECONDS]
        for window in idle:
            del self._times[window]
            self._open.pop(window, None)
