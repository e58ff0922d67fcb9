"""One Checker shared by 16 threads (issue: bounded cost, "thread-safe for real").

Envelopes with contexts of their own (so that every context cache is filled and evicted while
other threads read it), valid ones and malformed ones (so that pyld runs on many threads at
once), checked by 16 threads with no decision cache: every decision equals the one a single
thread gives, and nothing raises.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from ioa_semantic import Checker

from support import envelope_62

AT = datetime(2026, 6, 1, tzinfo=UTC)


def _envelopes(count: int) -> list[bytes]:
    out = []
    for i in range(count):
        envelope = envelope_62()
        envelope["@context"][f"t{i}"] = f"https://terms.example/{i}/"
        if i % 3 == 1:
            del envelope["intentRef"]  # the reporting path, pyld included
        elif i % 3 == 2:
            envelope["@context"] = [envelope["@context"], {f"u{i}": f"https://u.example/{i}#"}]
            envelope[f"u{i}:note"] = "x"  # an unknown property: pyld, and a finding
        out.append(json.dumps(envelope).encode())
    return out


@pytest.fixture(autouse=True)
def _switch_often() -> Iterator[None]:
    """Threads switch every microsecond, not every 5 ms: races that the default interval
    hides for thousands of checks show within a few."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def _plain(decision: Any) -> Any:
    return decision.as_dict()


@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_sixteen_threads_share_one_checker(engine: str) -> None:
    envelopes = _envelopes(600)
    expected = [_plain(Checker("cs-translation", engine=engine, cache_size=0).check(e, at=AT))
                for e in envelopes]
    shared = Checker("cs-translation", engine=engine, cache_size=0)
    start = threading.Barrier(16)

    def run(offset: int) -> list[tuple[int, Any]]:
        start.wait()
        order = [(offset * 37 + k) % len(envelopes) for k in range(len(envelopes) // 4)]
        return [(i, _plain(shared.check(envelopes[i], at=AT))) for i in order]

    with ThreadPoolExecutor(16) as pool:
        results = [r for batch in pool.map(run, range(16)) for r in batch]
    assert len(results) == 16 * (len(envelopes) // 4)
    for i, got in results:
        assert got == expected[i], i


def test_sixteen_threads_share_one_checker_with_its_decision_cache() -> None:
    envelopes = _envelopes(60)
    expected = [_plain(Checker("cs-translation", cache_size=0).check(e, at=AT)) for e in envelopes]
    shared = Checker("cs-translation", cache_size=8)  # evicting all the time

    def run(offset: int) -> list[tuple[int, Any]]:
        return [(i, _plain(shared.check(envelopes[i], at=AT)))
                for i in ((offset + k) % len(envelopes) for k in range(200))]

    with ThreadPoolExecutor(16) as pool:
        for batch in pool.map(run, range(16)):
            for i, got in batch:
                assert got == expected[i]


def test_the_context_caches_stay_within_their_bytes() -> None:
    """Distinct contexts of about 40 KB each, far more than the bound holds: what the caches
    count stays under the bound, and checks go on giving the same decisions."""
    from ioa_semantic import cache_bytes
    from ioa_semantic.compiled.engine import _CONTEXTS
    from ioa_semantic.pipeline.baseline import _REVIEWS

    before = cache_bytes()
    cache_bytes(contexts=4 << 20, reviews=4 << 20)
    try:
        checker = Checker("cs-translation", cache_size=0)
        for i in range(200):
            envelope = envelope_62()
            envelope["@context"].update({f"t{i}x{j}": f"https://t.example/{i}/{j}"
                                         for j in range(800)})
            for data in (json.dumps(envelope).encode(),
                         json.dumps({**envelope, "intentRef": "rel"}).encode()):
                checker.check(data, at=AT)
            assert _CONTEXTS.size <= 4 << 20 and _REVIEWS.size <= 4 << 20
        assert len(_CONTEXTS) < 200
    finally:
        cache_bytes(**before)
