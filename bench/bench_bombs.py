"""Resource bombs, measured: the worst time and memory of every shape at the default limits.

Usage: python bench/bench_bombs.py [--engines compiled,reference]
(needs the tests folder next to it for the generators; the installed ``ioa-check`` beside
this Python). For each shape of tests/bombs.py, the largest envelope no default limit refuses
is checked by the installed command, once per engine, as a process of its own: its wall time
(start-up included) and its peak resident memory, next to the verdict and the number of
reasons. The fixed bombs of tests/bombs.py (1 MiB of brackets, deep scoped contexts and so
on) follow. tests/test_bombs.py asserts that the work grows at most n log n (counted, not
timed); the issue's bound of 2 s per shape is a time, so it is held here: a row over it is
marked, and the last line counts them (issue 35: no unit test asserts on elapsed time).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bombs import BOMBS, FAMILIES, largest

IOA_CHECK = str(Path(sys.executable).parent / "ioa-check")
BOUND_SECONDS = 2.0  # per shape at its largest, start-up included ("Bounded cost")

_PROBE = """
import resource, subprocess, sys, time
start = time.perf_counter()
run = subprocess.run(sys.argv[1:], capture_output=True)
elapsed = time.perf_counter() - start
print(elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, run.returncode)
sys.stdout.flush()
sys.stderr.write(run.stdout.decode("utf-8", "replace"))
"""


def measure(data: bytes, engine: str) -> tuple[float, float, str, int]:
    """Wall seconds, peak MiB, verdict and number of reasons of one command run."""
    with tempfile.NamedTemporaryFile(suffix=".jsonld") as handle:
        handle.write(data)
        handle.flush()
        probe = subprocess.run(
            [sys.executable, "-c", _PROBE, IOA_CHECK, handle.name, "--profile",
             "cs-translation", "--format", "json", "--engine", engine,
             "--at", "2026-06-01T00:00:00Z"], capture_output=True, text=True, timeout=600)
    elapsed, peak, _status = probe.stdout.split()
    result = json.loads(probe.stderr.splitlines()[0]) if probe.stderr.strip() else {}
    return (float(elapsed), int(peak) / 1024, result.get("verdict", "?"),
            len(result.get("reasons", [])))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engines", default="compiled,reference")
    engines = parser.parse_args().engines.split(",")
    print(f"machine: {sys.platform}, Python {sys.version.split()[0]}; the installed ioa-check "
          f"as a process per run; {time.strftime('%Y-%m-%d')}")
    print(f"{'shape':32} {'n':>8} {'KiB':>6} " + " ".join(
        f"{engine + ' s':>12} {'MiB':>5}" for engine in engines) + "  verdict, reasons")
    shapes: list[tuple[str, Callable[[], bytes]]] = [
        (name, (lambda b=build: b(largest(b)))) for name, build in FAMILIES.items()]
    shapes += [(f"fixed: {name}", build) for name, build in BOMBS.items()]
    over = 0
    for name, make in shapes:
        data = make()
        cells, verdict, slow = [], "", []
        for engine in engines:
            elapsed, peak, verdict, reasons = measure(data, engine)
            cells.append(f"{elapsed:12.2f} {peak:5.0f}")
            if elapsed > BOUND_SECONDS:
                slow.append(engine)
        over += bool(slow)
        count = largest(FAMILIES[name]) if name in FAMILIES else 0
        mark = f"  OVER {BOUND_SECONDS:g} s: {', '.join(slow)}" if slow else ""
        print(f"{name:32} {count or '':>8} {len(data) / 1024:6.0f} {' '.join(cells)}  "
              f"{verdict}, {reasons}{mark}")
    print(f"{over} of {len(shapes)} shapes over {BOUND_SECONDS:g} s")


if __name__ == "__main__":
    main()
