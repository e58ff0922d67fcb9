"""Resource bombs, measured: wall time and peak Python memory of one check each.

Usage: python bench/bench_bombs.py   (needs the tests folder next to it for the generators)
The tests assert the same bombs with a generous margin; these are the real figures.
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bombs import BOMBS

from ioa_semantic import Checker


def main() -> None:
    checker = Checker("cs-translation", cache_size=0)
    at = datetime(2026, 6, 1, tzinfo=UTC)
    print(f"{'bomb':38} {'KiB':>7} {'ms':>8} {'peak MiB':>9}  verdict and first code")
    for name, build in BOMBS.items():
        data = build()
        start = time.perf_counter()
        decision = checker.check(data, at=at)
        elapsed = time.perf_counter() - start
        tracemalloc.start()  # a run of its own: tracing slows a check down tenfold
        checker.check(data, at=at)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        codes = sorted({f.code for f in decision.findings if f.severity == "error"})
        print(f"{name:38} {len(data) / 1024:7.0f} {elapsed * 1000:8.1f} {peak / 2**20:9.1f}  "
              f"{decision.verdict.value} {codes[:1]}")


if __name__ == "__main__":
    main()
