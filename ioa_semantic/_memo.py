"""Caches bounded in bytes and safe to share between threads.

Every cache that outlives one check (reviewed contexts, the compiled engine's active
contexts, a Checker's decisions) is one of these: least recently used first out, bounded by
the bytes its entries are said to weigh (each caller sizes its entries from what it keys
them by, which the document limits bound), and guarded by a lock, so that threads sharing a
Checker never see an entry half added or half evicted.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """A least-recently-used map of at most ``max_bytes`` bytes (as its entries are sized)
    and, when given, at most ``max_entries`` entries."""

    def __init__(self, max_bytes: int, max_entries: int | None = None) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def put(self, key: K, value: V, size: int) -> None:
        """Remember ``value`` as weighing ``size`` bytes; one heavier than the whole bound
        is not remembered."""
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes or (
                    self.max_entries is not None and len(self._entries) > self.max_entries):
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted

    def resize(self, max_bytes: int) -> None:
        with self._lock:
            self.max_bytes = max_bytes
            while self._bytes > max_bytes and self._entries:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted

    @property
    def size(self) -> int:
        """The bytes its entries weigh now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)
