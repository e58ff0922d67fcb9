"""The trace store, measured: the load rate into it (events per second) and the history
queries' times on a store of many runs.

Usage: python bench/bench_trace_store.py [--runs 1000] [--repeat 5]
(run with the interpreter of an environment where the project is installed with [trace]).

It writes ``--runs`` generated runs of a small MAS (tests/trace_runs.py: a lead agent
delegating to specialists that call tools, some undeclared; about 40 events a run) and their
manifests to a temporary folder, then times, as wall time of the installed command:

* ``ioa-check trace RUN... --manifests M --no-shapes`` without a store (the audit alone),
* the same with ``--store DIR`` into a new store (the load; a private store, the default),
  and again into the same store (every run already stored: the cursor and the record check
  only), and both into a plain store (``--store-plain-ids``: no second reading of the
  declarations and the runs through the store's key, and checkpoints that hold the fold),
* ``ioa-check trace reaudit DIR`` against revised manifests (every run judged again),

and then each shipped history query in-process on the store of all the runs (the median of
``--repeat`` runs; process start-up excluded), and the store's size on disk.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import trace_runs  # noqa: E402

IOA_CHECK = str(Path(sys.executable).parent / "ioa-check")
AT = "2026-12-02T00:00:00Z"


def timed(args: list[str], cwd: Path) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run([IOA_CHECK, *args], cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1, 3):
        raise SystemExit(f"{args[:3]}...: exit {proc.returncode}: {proc.stderr.decode()}")
    return elapsed, proc.returncode


def size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()

    from ioa_semantic.trace.history import ask, named_queries
    from ioa_semantic.trace.store import TraceStore

    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        specs = trace_runs.generate(opts.runs)
        runs = [str(trace_runs.write_run(folder / "runs", spec)) for spec in specs]
        events = sum(len(trace_runs.events(spec)) for spec in specs)
        first = trace_runs.write_manifests(folder / "rev1")
        revised = trace_runs.write_manifests(
            folder / "rev2", {**trace_runs.DECLARED, "booker": ("reserve", "cancel", "pay")})
        base = ["trace", *runs, "--manifests", str(first), "--no-shapes", "--format", "json"]
        store = folder / "store"

        audit, _ = timed(base, folder)
        load, _ = timed([*base, "--store", str(store), "--at", AT], folder)
        again, _ = timed([*base, "--store", str(store), "--at", AT], folder)
        plain_store = [*base, "--store", str(folder / "plain"), "--store-plain-ids", "--at", AT]
        plain, _ = timed(plain_store, folder)
        plain_again, _ = timed(plain_store, folder)
        reaudit, _ = timed(["trace", "reaudit", str(store), "--manifests", str(revised),
                            "--format", "json"], folder)
        print(f"{opts.runs} runs, {events} events ({events / opts.runs:.0f} a run)")
        print(f"audit without a store  {audit:7.2f} s  {events / audit:8.0f} events/s")
        print(f"load into a new store  {load:7.2f} s  {events / load:8.0f} events/s "
              f"(the store's share: {load - audit:.2f} s, "
              f"{1000 * (load - audit) / opts.runs:.1f} ms a run)")
        print(f"same runs again        {again:7.2f} s  (every run already stored)")
        print(f"load, plain store      {plain:7.2f} s  {events / plain:8.0f} events/s "
              f"(--store-plain-ids)")
        print(f"same runs again, plain {plain_again:7.2f} s")
        print(f"reaudit every run      {reaudit:7.2f} s  {opts.runs / reaudit:8.0f} runs/s")
        print(f"store on disk          {size(store) / 2**20:7.1f} MiB")

        opened = TraceStore(str(store))
        pair = {"runA": specs[0].run_id, "runB": specs[1].run_id}
        for query in named_queries().values():
            given = {k: pair[k] for k in query.parameters}
            times = []
            for _ in range(opts.repeat):
                start = time.perf_counter()
                answer = ask(opened, query.text, given, query.parameters, runs=query.runs)
                times.append(time.perf_counter() - start)
            print(f"query {query.name:20s} {1000 * statistics.median(times):8.1f} ms "
                  f"({len(answer.rows)} rows)")
        del opened
        print(f"(python {sys.version.split()[0]}, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
