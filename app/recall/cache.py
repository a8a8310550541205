"""A short-lived cache of identical searches in this process, keyed on the namespaces'
generations: every committed write bumps its namespace's generation in PostgreSQL
(app.namespaces.tracking), so a write through any process misses every process's cached
searches of it at once. Capped by bytes, not entries: a cached answer can hold 100 hits of
8,000 characters each."""

import sys
import time
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any


class SearchCache:
    def __init__(self, *, ttl_seconds: float, max_bytes: int) -> None:
        self._ttl = ttl_seconds
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: OrderedDict[Hashable, tuple[float, int, Any]] = OrderedDict()

    @staticmethod
    def key(request_key: Hashable, generations: Mapping[str, int]) -> Hashable:
        return (request_key, tuple(sorted(generations.items())))

    def get(self, key: Hashable) -> Any | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] < time.monotonic():
            self._drop(key)
            return None
        self._entries.move_to_end(key)
        return entry[2]

    def put(self, key: Hashable, value: Any, *, size: int | None = None) -> None:
        """Keep `value`, whose size in bytes is `size` (by default Python's own measure of it)."""
        size = sys.getsizeof(value) if size is None else size
        if self._ttl <= 0 or size > self._max_bytes:
            return
        if key in self._entries:
            self._drop(key)
        self._entries[key] = (time.monotonic() + self._ttl, size, value)
        self._bytes += size
        while self._bytes > self._max_bytes:
            self._drop(next(iter(self._entries)))

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def _drop(self, key: Hashable) -> None:
        _, size, _ = self._entries.pop(key)
        self._bytes -= size
