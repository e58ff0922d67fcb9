"""The bomb suite of the other inputs, measured: alignment artifacts, capability registrations,
profiles and execution traces at the largest sizes of tests/test_bombs_sources.py.

Usage: python bench/bench_bombs_sources.py [--before DIR] [--shapes A,B] [--fractions 0.25,1]
(needs the tests folder and ../shared next to it; the installed ``ioa-check`` beside this
Python). Each input is run by the installed command as a process of its own: wall time
(start-up included), peak resident memory of the process, and the outcome (verdicts, or the
configuration error). ``--before DIR`` runs each input a second time with DIR first on
PYTHONPATH (a checkout's folder holding ``ioa_semantic``, e.g. from ``git archive main
ioa_semantic``), for a column of the code before a change.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_bombs_sources import FAMILIES, SIZES, Measure, measure, outcome

BOUND_SECONDS = 2.0  # per input at its largest, start-up included ("Bounded cost"); timed
# here, never in a unit test (issue 35), which counts the growth instead


def _run(shape: str, n: int, folder: Path, before: str | None) -> tuple[float, Measure,
                                                                        Measure | None]:
    case = FAMILIES[shape](n)
    kib = sum(len(d) for d in case.files.values()) / 1024
    old = None
    if before:
        saved = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = before + (os.pathsep + saved if saved else "")
        try:
            old = measure(case, folder / "before")
        finally:
            if saved is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = saved
    return kib, measure(case, folder / "after"), old


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", metavar="DIR")
    parser.add_argument("--shapes", default="", help="comma-separated family names (default all)")
    parser.add_argument("--fractions", default="1",
                        help="sizes to run, as fractions of each family's largest")
    opts = parser.parse_args()
    shapes = [s for s in opts.shapes.split(",") if s] or list(FAMILIES)
    fractions = [float(f) for f in opts.fractions.split(",")]
    print(f"machine: {sys.platform}, {os.cpu_count()} cores, Python {sys.version.split()[0]}; "
          f"the installed ioa-check as a process per run; {time.strftime('%Y-%m-%d')}")
    before = "  before s  MiB" if opts.before else ""
    print(f"{'shape':32} {'n':>8} {'KiB':>6}{before} {'seconds':>9} {'MiB':>4}  outcome")
    over = 0
    with tempfile.TemporaryDirectory() as scratch:
        for shape in shapes:
            for fraction in fractions:
                n = max(2, int(SIZES[shape] * fraction))
                kib, new, old = _run(shape, n, Path(scratch) / f"{len(shape)}-{n}", opts.before)
                cells = f"  {old.seconds:8.2f} {old.peak_mib:4.0f}" if old else ""
                same = "" if old is None or outcome(old) == outcome(new) else \
                    f" (before: {outcome(old)})"
                mark = f"  OVER {BOUND_SECONDS:g} s" if new.seconds > BOUND_SECONDS else ""
                over += bool(mark)
                print(f"{shape:32} {n:8} {kib:6.0f}{cells} {new.seconds:9.2f} "
                      f"{new.peak_mib:4.0f}  {outcome(new)}{same}{mark}", flush=True)
    print(f"{over} of {len(shapes) * len(fractions)} runs over {BOUND_SECONDS:g} s")


if __name__ == "__main__":
    main()
