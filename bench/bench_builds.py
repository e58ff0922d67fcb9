"""The two builds side by side: the compiled one (mypyc) and the pure one, from one source.

Usage: python bench/bench_builds.py COMPILED_PYTHON PURE_PYTHON [--rounds 2] [--size 20000]
(each the interpreter of an environment where the project is installed, one with
``pip install .`` where a C compiler exists, one with ``IOA_SEMANTIC_BUILD=pure``; each
says which it is, and a wrong one is refused). The builds take turns, round after round,
so that the load of a shared machine falls on both alike:

* warm check: ``Checker.check()`` (compiled engine, ``cache_size=0``) on each of 2,000
  envelopes of bench/traffic.py's streams after 300 of warm-up, p50 / p99 ms;
* audit: the environment's ``ioa-check audit --jobs 2`` on ``--size`` registrations of the
  uniform, 5,000-sender and every-sender-distinct corpora, registrations/s from wall time.

Each figure is the median of the rounds; "x compiled" is how many times faster the compiled
build is; the header gives the range of the 1-minute load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import traffic  # noqa: E402  (the corpora and streams, from the fixed seed)

CORPORA = ("uniform (bench_audit)", "5,000 senders", "each its own sender")

# Run by each build's interpreter: the warm checks, one JSON line of p50 / p99 per stream.
CHECKS = """
import json, sys, time
from datetime import UTC, datetime
sys.path.insert(0, sys.argv[1])
import traffic
from ioa_semantic import Checker, build_kind
checker = Checker("cs-translation", cache_size=0)
at = datetime(2026, 6, 1, tzinfo=UTC)
out = {"build": build_kind()}
for stream, senders in traffic.ENVELOPE_STREAMS.items():
    for data in traffic.envelopes(300, senders, start=10_000_000):
        checker.check(data, at=at)
    times = []
    for data in traffic.envelopes(2000, senders):
        start = time.perf_counter()
        checker.check(data, at=at)
        times.append(time.perf_counter() - start)
    times.sort()
    out[stream] = [times[len(times) // 2] * 1000, times[int(len(times) * 0.99)] * 1000]
print(json.dumps(out))
"""


def load() -> float:
    return os.getloadavg()[0]


def checks(python: str) -> dict[str, list[float]]:
    # From outside the clone: `python -c` puts its working directory first on sys.path, and
    # the clone's ioa_semantic is the source, not the build installed.
    done = subprocess.run([python, "-c", CHECKS, str(BENCH)], capture_output=True, check=True,
                          cwd=tempfile.gettempdir())
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def audit(python: str, path: Path, size: int) -> float:
    cli = str(Path(python).parent / "ioa-check")
    start = time.perf_counter()
    subprocess.run([cli, "audit", str(path), "--profile", "cs-translation", "--format", "json",
                    "--jobs", "2", "--output", os.devnull], check=False,
                   stdout=subprocess.DEVNULL)
    return size / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("compiled", help="the compiled build's python")
    parser.add_argument("pure", help="the pure build's python")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--size", type=int, default=20_000)
    opts = parser.parse_args()
    # Absolute, not resolved: each build runs from a temporary folder, and a venv's python
    # resolved is the base interpreter, outside the venv.
    builds = {"compiled": os.path.abspath(opts.compiled), "pure": os.path.abspath(opts.pure)}
    figures: dict[tuple[str, str], list[float]] = {}
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        corpora = {}
        for name in CORPORA:
            corpora[name] = Path(folder, f"{len(corpora)}.jsonl")
            traffic.write(corpora[name], traffic.REGISTRATION_CORPORA[name](opts.size))
        for _ in range(opts.rounds):
            for build, python in builds.items():
                loads.append(load())
                found = checks(python)
                if found.pop("build") != build:
                    raise SystemExit(f"{python} is not the {build} build")
                for stream, (p50, p99) in found.items():
                    figures.setdefault((f"check {stream} p50 ms", build), []).append(p50)
                    figures.setdefault((f"check {stream} p99 ms", build), []).append(p99)
                for name, path in corpora.items():
                    figures.setdefault((f"audit {name} /s", build), []).append(
                        audit(python, path, opts.size))
    print(f"| row | compiled | pure | x compiled |  (load {min(loads):.1f}-{max(loads):.1f},"
          f" median of {opts.rounds})")
    print("|---|---|---|---|")
    for row in dict.fromkeys(row for row, _ in figures):
        compiled = statistics.median(figures[row, "compiled"])
        pure = statistics.median(figures[row, "pure"])
        # How many times faster the compiled build is: a time's ratio, or a rate's.
        rate = row.startswith("audit")
        gain = compiled / pure if rate else pure / compiled
        digits = 0 if rate else 3
        print(f"| {row} | {compiled:,.{digits}f} | {pure:,.{digits}f} | {gain:.2f} |")


if __name__ == "__main__":
    main()
