"""Caches bounded in bytes and safe to share between threads.

Every cache that outlives one check (reviewed contexts, the compiled engine's active
contexts, a Checker's decisions) is one of these: bounded by the bytes its entries are said
to weigh (each caller sizes its entries from what it keys them by, which the document limits
bound), with the least recently used entries evicted first, so that threads sharing a
Checker never see an entry half added or half evicted.

The map and its eviction are cachetools' ``LRUCache`` (each entry weighed by the size its
caller gives). cachetools is not thread-safe, and a lookup reorders the entries, so every
operation takes the lock.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import threading
from typing import Any, Generic, TypeVar

from cachetools import LRUCache

K = TypeVar("K")
V = TypeVar("V")


def _weight(entry: tuple[Any, int]) -> int:
    """What an entry (value, size) weighs: the size its caller gave."""
    return entry[1]


class BoundedCache(Generic[K, V]):
    """A map of at most ``max_bytes`` bytes (as its entries are sized) and, when given, at
    most ``max_entries`` entries; past them, the least recently used entry goes first."""

    def __init__(self, max_bytes: int, max_entries: int | None = None) -> None:
        self.max_entries = max_entries
        # key -> (value, size)
        self._entries: Any = LRUCache(max_bytes, getsizeof=_weight)
        self._lock = threading.Lock()
        # Lookups that found their key, and those that did not: what a memo saves, counted
        # (and what the tests read to know that a memo answers, in either build).
        self.hits = 0
        self.misses = 0

    @property
    def max_bytes(self) -> int:
        """The bound on the bytes its entries weigh."""
        return int(self._entries.maxsize)

    def get(self, key: K) -> V | None:
        with self._lock:
            try:
                entry = self._entries[key]
            except KeyError:
                self.misses += 1
                return None
            self.hits += 1
        return entry[0]  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def put(self, key: K, value: V, size: int) -> None:
        """Remember ``value`` as weighing ``size`` bytes; one heavier than the whole bound
        is not remembered."""
        with self._lock:
            if size > self._entries.maxsize:
                return
            # The old entry goes first: what the new one makes room for is counted without it.
            self._entries.pop(key, None)
            self._entries[key] = (value, size)  # the most recently used: the last to go
            while self.max_entries is not None and len(self._entries) > self.max_entries:
                self._entries.popitem()

    def resize(self, max_bytes: int) -> None:
        """Bound it to ``max_bytes`` from now on, evicting the least recently used entries
        that no longer fit."""
        with self._lock:
            old = self._entries
            # cachetools fixes a cache's bound when it is made: the entries move, least
            # recently used first, into one of the new bound, which evicts as they arrive.
            self._entries = LRUCache(max_bytes, getsizeof=_weight)
            while old:
                key, entry = old.popitem()
                if entry[1] <= max_bytes:
                    self._entries[key] = entry

    def remembered_keys(self) -> list[K]:
        """The keys it holds now, the least recently used first: what was remembered."""
        with self._lock:
            return list(self._entries)

    @property
    def size(self) -> int:
        """The bytes its entries weigh now."""
        with self._lock:
            return int(self._entries.currsize)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
