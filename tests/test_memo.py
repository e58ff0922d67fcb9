"""The bounded caches every long-lived memo is made of: within their bytes, the entries in
use kept over those not used, and safe to share between threads."""

from __future__ import annotations

import threading
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from operations import counted

from ioa_semantic._memo import BoundedCache


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["get", "put"]), st.integers(0, 40),
                          st.integers(0, 60)), max_size=200),
       st.integers(0, 300), st.none() | st.integers(1, 8))
def test_the_bounds_hold_and_what_it_answers_is_what_was_put(
        operations: list[tuple[str, int, int]], max_bytes: int, max_entries: int | None) -> None:
    cache: BoundedCache[int, tuple[int, int]] = BoundedCache(max_bytes, max_entries)
    last: dict[int, tuple[int, int]] = {}
    for step, (operation, key, size) in enumerate(operations):
        if operation == "put":
            cache.put(key, (key, step), size)
            if size <= max_bytes:
                last[key] = (key, step)
        else:
            found = cache.get(key)
            assert found is None or found == last[key]  # never another key's, never stale
        assert cache.size <= max_bytes
        assert max_entries is None or len(cache) <= max_entries
        assert cache.size == sum(entry[1] for entry in cache._entries.values())


def test_an_entry_in_use_outlives_those_not_used() -> None:
    cache: BoundedCache[int, int] = BoundedCache(100)
    for key in range(10):
        cache.put(key, key, 10)
    for _ in range(3):  # one key in use while others come and go
        for key in range(100, 110):
            assert cache.get(3) == 3
            cache.put(key, key, 10)
    assert cache.get(3) == 3
    assert cache.get(0) is None and cache.size <= 100


def test_an_entry_is_not_the_first_to_go_when_it_makes_room_for_itself() -> None:
    cache: BoundedCache[int, int] = BoundedCache(100)
    for key in range(10):
        cache.put(key, key, 10)
        cache.get(key)
    cache.put(99, 99, 95)
    assert cache.get(99) == 99 and len(cache) == 1
    cache.resize(0)
    assert len(cache) == 0 and cache.size == 0


def test_threads_share_a_cache_that_evicts() -> None:
    cache: BoundedCache[tuple[str, int], int] = BoundedCache(2_000)
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            for i in range(20_000):
                key = (name, i % 300)
                found = cache.get(key)
                assert found is None or found == i % 300
                if found is None:
                    cache.put(key, i % 300, 10)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"t{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert cache.size <= 2_000


@counted
def test_a_lookup_runs_no_python_but_its_own() -> None:
    """A hit and a miss are each one frame of Python (the memo's own ``get``): the map is
    reordered in C, not by a cache library's frames (several memo lookups a registration)."""
    import sys

    cache: BoundedCache[str, int] = BoundedCache(1_000)
    cache.put("known", 1, 10)
    frames: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            frames.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        assert cache.get("known") == 1
        assert cache.get("unknown") is None
    finally:
        sys.setprofile(None)
    assert frames == ["get", "get"]


def test_a_long_declaration_is_not_kept_among_the_shared_ones() -> None:
    # Equal declarations are shared (audit.judge._declaration) up to a count; a sender's
    # values may be as long as the intake admits, so what is kept is bounded in characters
    # too: 4,096 declarations of a megabyte each would otherwise be held for the run.
    from ioa_semantic.audit import judge

    def node(ontology: str) -> dict[str, Any]:
        return {judge._INPUTS: [{"@value": "text/plain"}],
                judge._ONTOLOGY_ID: [{"@id": ontology}],
                judge._ONTOLOGY_VERSION: [{"@value": "1.0"}]}

    short, long = node("https://example.org/o"), node("https://example.org/" + "o" * 100_000)
    assert judge._declaration(short, None) is judge._declaration(dict(short), None)
    before = len(judge._DECLARATIONS)
    declared = judge._declaration(long, None)
    assert declared == judge._declaration(dict(long), None)
    assert len(judge._DECLARATIONS) == before and declared not in judge._DECLARATIONS
