"""Caches bounded in bytes and safe to share between threads.

Every cache that outlives one check (reviewed contexts, the compiled engine's active
contexts, a Checker's decisions) is one of these: bounded by the bytes its entries are said
to weigh (each caller sizes its entries from what it keys them by, which the document limits
bound), with the least recently used entries evicted first, so that threads sharing a
Checker never see an entry half added or half evicted.

The map is an ``OrderedDict`` in the order the entries were last used, with the bytes they
weigh counted beside it: a lookup is one C call to find the entry and one to move it last.
(It was cachetools' ``LRUCache``, whose lookup ran four Python frames; a warm audit makes
several lookups a registration, and they were a tenth of its time in the pure build.) A
lookup reorders the entries, so every operation takes the lock.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

from collections import OrderedDict
from typing import Generic, TypeVar

from ._runtime import Lock

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """A map of at most ``max_bytes`` bytes (as its entries are sized) and, when given, at
    most ``max_entries`` entries; past them, the least recently used entry goes first."""

    def __init__(self, max_bytes: int, max_entries: int | None = None) -> None:
        self.max_entries = max_entries
        # key -> (value, size), the least recently used first
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._max_bytes = max_bytes
        self._bytes = 0  # what the entries weigh
        self._lock = Lock()
        # Lookups that found their key, and those that did not: what a memo saves, counted
        # (and what the tests read to know that a memo answers, in either build).
        self.hits = 0
        self.misses = 0

    @property
    def max_bytes(self) -> int:
        """The bound on the bytes its entries weigh."""
        return self._max_bytes

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
        return entry[0]

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def put(self, key: K, value: V, size: int) -> None:
        """Remember ``value`` as weighing ``size`` bytes; one heavier than the whole bound
        is not remembered."""
        with self._lock:
            if size > self._max_bytes or (self.max_entries is not None
                                          and self.max_entries < 1):
                return
            # The old entry goes first: what the new one makes room for is counted without it.
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._evict(self._max_bytes - size, self.max_entries)
            self._entries[key] = (value, size)  # the most recently used: the last to go
            self._bytes += size

    def _evict(self, max_bytes: int, max_entries: int | None) -> None:
        """Drop the least recently used entries until they weigh at most ``max_bytes`` and,
        when given, number fewer than ``max_entries`` (room for one more); the lock held."""
        entries = self._entries
        while entries and (self._bytes > max_bytes or (
                max_entries is not None and len(entries) >= max_entries)):
            self._bytes -= entries.popitem(last=False)[1][1]

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def resize(self, max_bytes: int) -> None:
        """Bound it to ``max_bytes`` from now on, evicting the least recently used entries
        that no longer fit."""
        with self._lock:
            self._max_bytes = max_bytes
            if self._bytes > max_bytes:
                self._evict(max_bytes, None)

    def remembered_keys(self) -> list[K]:
        """The keys it holds now, the least recently used first: what was remembered."""
        with self._lock:
            return list(self._entries)

    @property
    def size(self) -> int:
        """The bytes its entries weigh now."""
        with self._lock:
            return self._bytes

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
