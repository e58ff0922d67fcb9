"""The batch audit on a Dask cluster, measured: registrations per second with 1 and 2 workers.

Usage: python bench/bench_dask.py [--size 100000] [--corpus 5000] [--partition-bytes N]
(run with the interpreter of an environment where the project is installed with [dask]).

It writes N registrations to a temporary JSON Lines file: ``--corpus uniform``, the default,
is ``bench_audit``'s generator (about 420 bytes each, 1% invalid across every invalid
class); ``--corpus 5000`` (or any number of senders) and ``--corpus each`` are
bench/traffic.py's real-traffic corpora (senders with layouts, prefixes, media types and
scripts of their own, 4% invalid). Then it times the installed ``ioa-check audit`` (process
wall time, from start to exit):

* locally, ``--jobs 1`` and ``--jobs 2``;
* with ``--scheduler tcp://...`` against a LocalCluster of 1 and then 2 worker processes
  (one thread each) started beforehand, as a standing cluster would be;
* with ``--scheduler local:2``, which starts and stops its own cluster.

Every run's output is compared with the local one. Last, the client's own ceiling: how many
results per second one process unpickles (as they arrive from workers), counts and hands to
the reporter, the part of the work that does not spread over workers.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import traffic
from bench_audit import write_corpus

CLI = str(Path(sys.executable).parent / "ioa-check")


def timed(args: list[str], output: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run([CLI, "audit", *args, "--profile", "cs-translation", "--format", "json",
                           "--output", str(output)], capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1) or proc.stderr:
        raise SystemExit(f"ioa-check failed ({proc.returncode}): {proc.stderr.decode()}")
    return elapsed


def client_ceiling(path: Path, report: str) -> float:
    """Results per second that one client unpickles, counts and hands to a reporter."""
    from ioa_semantic import Checker
    from ioa_semantic.audit.inputs import documents
    from ioa_semantic.audit.run import Audit
    from ioa_semantic.audit.workers import batched, judge_batch
    from ioa_semantic.reporters.audit import AUDIT_LINES, AUDIT_REPORTERS

    items = list(documents([str(path)]))[:50000]
    results = [result for result, _ in judge_batch(Checker("cs-translation"), items)]
    shipped = pickle.dumps(results, protocol=5)
    start = time.perf_counter()
    audit = Audit(None)
    counted = (audit.record(r, None) for r in pickle.loads(shipped))
    AUDIT_REPORTERS[report](audit, batched(counted, AUDIT_LINES.get(report)), io.StringIO())
    return len(results) / (time.perf_counter() - start)


def main() -> None:
    from distributed import LocalCluster

    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--corpus", default="uniform",
                        help="uniform (bench_audit's), a number of senders, or each "
                             "(bench/traffic.py's corpora)")
    parser.add_argument("--partition-bytes", type=int, default=None,
                        help="passed on to ioa-check (default: its own, 8 MiB)")
    opts = parser.parse_args()
    cut = ["--partition-bytes", str(opts.partition_bytes)] if opts.partition_bytes else []
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "registrations.jsonl"
        if opts.corpus == "uniform":
            size_bytes = write_corpus(corpus, opts.size)
        else:
            senders = None if opts.corpus == "each" else int(opts.corpus)
            traffic.write(corpus, traffic.registrations(opts.size, senders))
            size_bytes = corpus.stat().st_size
        print(f"{opts.size:,d} registrations ({opts.corpus} corpus), {size_bytes / 2**20:.1f} "
              f"MiB of JSON Lines, {os.cpu_count()} cores")
        print(f"{'run':<42} {'seconds':>8} {'per second':>11}")
        reference = Path(folder) / "local.jsonl"
        runs: list[tuple[str, list[str]]] = [("local --jobs 1", ["--jobs", "1"]),
                                             ("local --jobs 2", ["--jobs", "2"])]
        for name, args in runs:
            out = reference if name.endswith("2") else Path(folder) / "out.jsonl"
            elapsed = timed([str(corpus), *args], out)
            print(f"{name:<42} {elapsed:8.2f} {opts.size / elapsed:11,.0f}")
        for workers in (1, 2):
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                              dashboard_address=":0", silence_logs=logging.ERROR) as cluster:
                out = Path(folder) / "out.jsonl"
                elapsed = timed([str(corpus), "--scheduler", cluster.scheduler_address, *cut], out)
                same = out.read_bytes() == reference.read_bytes()
                print(f"{f'standing LocalCluster, {workers} worker(s)':<42} {elapsed:8.2f} "
                      f"{opts.size / elapsed:11,.0f}   output identical: {same}")
        out = Path(folder) / "out.jsonl"
        elapsed = timed([str(corpus), "--scheduler", "local:2", *cut], out)
        same = out.read_bytes() == reference.read_bytes()
        print(f"{'--scheduler local:2 (starts its cluster)':<42} {elapsed:8.2f} "
              f"{opts.size / elapsed:11,.0f}   output identical: {same}")
        for report in ("json", "sarif"):
            print(f"client ceiling, --format {report} (unpickle, count, report; one core): "
                  f"{client_ceiling(corpus, report):,.0f} results/s")
        lines = reference.read_bytes().count(b"\n")
        print(f"output: {reference.stat().st_size / lines:.0f} bytes per line")


if __name__ == "__main__":
    main()
