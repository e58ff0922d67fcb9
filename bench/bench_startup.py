"""What each start-up trick of ``ioa_semantic/_runtime.py`` is worth, measured in one run.

Usage: python bench/bench_startup.py [--runs N]
(run with the interpreter of an environment where the project is installed). Each row is a
whole ``ioa-check`` process on the 6.2 example, run N times interleaved with the others
(so that the machine's drift falls on every row alike); the figure is the median wall time.
Every row but the first undoes one trick before the command runs:

* no quick exit: the process ends through the interpreter's teardown (``sys.exit``);
* collector not paused: ``gc.disable`` made a no-op, so the collector runs during the
  package's imports and the Checker's construction;
* orjson imported at start: the import the first document avoids;
* shutil imported at start: the import ``terminal_columns`` avoids;
* rich imported at start: what the text report imported before it wrote its lines off a
  terminal as plain text (``reporters/lines.py``);
* collector not frozen: ``own_process`` made a no-op, so the collector's first passes after
  the imports and the Checker walk all they allocated (``_runtime.paused(settle=True)``);
* hashlib imported at start: the import ``_runtime.sha256`` avoids (OpenSSL);
* decimal imported at start: what the intake's numbers imported before a number written as
  its float's text did without;
* the other commands imported at start: every command's module, as ``cli.main`` imported
  them all before it imported each when its command runs;
* threading imported at start: the import ``_runtime.Lock`` and ``_runtime.local`` avoid;
* cachetools imported at start: what the Checker's instance memory imported before it was
  a ``BoundedCache``;
* argparse's messages translated: ``untranslated_argparse`` made a no-op, so gettext looks
  for a catalogue of each message (and imports locale).

The last row is a floor: the interpreter starting and exiting, nothing imported.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_check import machine

ROOT = Path(__file__).resolve().parents[1]
ARGV = [str(ROOT / "examples" / "envelope-6.2.jsonld"), "--profile", "cs-translation",
        "--at", "2026-06-01T00:00:00Z"]
ENTRY = ("import sys; sys.argv = ['ioa-check', *sys.argv[1:]]; "
         "from ioa_semantic.cli.main import entry; entry()")
VARIANTS = {
    "as shipped": ENTRY,
    "no quick exit": "import sys; from ioa_semantic.cli.main import main; sys.exit(main(sys.argv[1:]))",
    "collector not paused": "import gc; gc.disable = lambda: None; " + ENTRY,
    "orjson imported at start": "import orjson; " + ENTRY,
    "shutil imported at start": "import shutil; " + ENTRY,
    "rich imported at start": "import rich.console, rich.markup; " + ENTRY,
    "collector not frozen": ("import ioa_semantic._runtime as r; r.own_process = lambda: None; "
                             + ENTRY),
    "hashlib imported at start": "import hashlib; " + ENTRY,
    "decimal imported at start": "import decimal; " + ENTRY,
    "the other commands imported at start": (
        "import ioa_semantic.cli.audit, ioa_semantic.cli.impact, ioa_semantic.cli.keygen, "
        "ioa_semantic.cli.lint, ioa_semantic.cli.serve, ioa_semantic.cli.sign, "
        "ioa_semantic.cli.trace, ioa_semantic.cli.trace_history, ioa_semantic.cli.trace_serve; "
        + ENTRY),
    "threading imported at start": "import threading; " + ENTRY,
    "cachetools imported at start": "import cachetools; " + ENTRY,
    "argparse's messages translated": (
        "import ioa_semantic._runtime as r; r.untranslated_argparse = lambda: None; " + ENTRY),
    "floor: python -c pass": "pass",
}


def run_once(code: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *ARGV], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0 and code != "pass":
        raise SystemExit(f"{code!r} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return elapsed * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    print(machine())
    for code in VARIANTS.values():  # warm the file cache
        run_once(code)
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(args.runs):
        for name, code in VARIANTS.items():
            samples[name].append(run_once(code))
    shipped = statistics.median(samples["as shipped"])
    print(f"\ncold ioa-check on one envelope, median of {args.runs} runs (ms)")
    print(f"{'variant':40} {'median':>8} {'vs shipped':>11}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:40} {median:8.1f} {median - shipped:+10.1f}")


if __name__ == "__main__":
    main()
