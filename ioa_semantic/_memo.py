"""Caches bounded in bytes and safe to share between threads.

Every cache that outlives one check (reviewed contexts, the compiled engine's active
contexts, a Checker's decisions) is one of these: bounded by the bytes its entries are said
to weigh (each caller sizes its entries from what it keys them by, which the document limits
bound), with the entries not used since they were last passed over evicted first (the
"second chance" approximation of least recently used), so that threads sharing a Checker
never see an entry half added or half evicted.

A lookup takes no lock: it is one dictionary lookup and one store into the entry, each of
which CPython performs whole (a dictionary lookup survives the dictionary changing under
it), so it needs none, and it is what every document costs several times over. Adding and
evicting take the lock.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import threading
from collections import OrderedDict
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """A map of at most ``max_bytes`` bytes (as its entries are sized) and, when given, at
    most ``max_entries`` entries; past them, the oldest entry not used since it was last
    passed over goes first."""

    def __init__(self, max_bytes: int, max_entries: int | None = None) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        # key -> [value, size, used since it was last passed over]
        self._entries: OrderedDict[K, list[Any]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        entry[2] = True
        return entry[0]  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
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
            # Added as used: a new entry is not the first to go when it makes room for itself.
            self._entries[key] = [value, size, True]
            self._bytes += size
            self._evict(self.max_bytes)

    def resize(self, max_bytes: int) -> None:
        with self._lock:
            self.max_bytes = max_bytes
            self._evict(max_bytes)

    def _evict(self, max_bytes: int) -> None:
        """Evict until within the bounds (the lock held): an entry used since it was last
        passed over goes to the back once, so each pass ends within one round."""
        entries = self._entries
        while entries and (self._bytes > max_bytes or (
                self.max_entries is not None and len(entries) > self.max_entries)):
            key, entry = entries.popitem(last=False)
            if entry[2] and len(entries) > 0:
                entry[2] = False
                entries[key] = entry
                continue
            self._bytes -= entry[1]

    @property
    def size(self) -> int:
        """The bytes its entries weigh now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)
