"""Speed on real traffic: the audit and the check on corpora that look like a directory's inputs.

Usage: python bench/bench_traffic.py [--quick] [--full] [--runs 3] [--jobs 2]
(run with the interpreter of an environment where the project is installed, not editable,
with [test]; needs ../shared for the 12.1 case). The corpora are bench/traffic.py's, from a
fixed seed. One run prints one table, every row next to two references measured in the
same run on the same inputs:

* naive: the per-document pipeline one would write first (pyld expand and to_rdf, an rdflib
  graph, pyshacl on the baseline shapes), on a sample, as bench/bench_audit.py's naive path;
* floor: orjson.loads plus a walk of every node of the document, in this process on one
  core: what no validator of the bytes can beat.

Rows:

* audit: the installed ``ioa-check audit --format json --jobs N`` as a process on a JSON
  Lines file of 100,000 registrations (20,000 with ``--quick``): registrations/s from the
  process's wall time, start-up included, median of ``--runs``; and its peak RSS (the
  largest of the process and its workers, from wait4), median of the runs; with N above 1,
  ``--jobs 1`` too, run for run beside it, and how many times as fast N workers are;
* warm check: ``Checker.check()`` in this process, p50 and p99 in ms, each envelope of the
  stream checked once after a warm-up on envelopes of the same stream (``cache_size=0``, and
  every envelope distinct anyway), compiled and reference engines;
* cold: the installed ``ioa-check`` on one envelope, process wall time, median of 20 runs;
* with ``--full``: an audit of 1,000,000 registrations from 50,000 senders (minutes).

``--save FILE`` writes the run's rows; ``--before FILE`` prints a saved run's value of each
row beside this run's (bench/results/ keeps the runs the performance page quotes).

"x naive" is how many times faster than the naive pipeline; "x floor" is how many times
the floor's cost the figure is (1.0 would be as fast as parsing and walking the JSON).
The load column is the 1-minute load average when the row was measured.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import traffic
from bench_check import machine  # the machine line every benchmark prints

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT.parent / "shared" / "conformance" / "cases" / "draft-12.1-accepted-mapping"
AT = datetime(2026, 6, 1, tzinfo=UTC)
AT_TEXT = "2026-06-01T00:00:00Z"
PARAMS_121 = {"sourceLang": "zh", "targetLang": "en"}
CLI = str(Path(sys.executable).parent / "ioa-check")


class Row(NamedTuple):
    name: str
    size: str
    figure: str
    value: str
    naive: str
    floor: str
    x_naive: str
    x_floor: str
    load: float


def load() -> float:
    return os.getloadavg()[0]


# --- references -----------------------------------------------------------------------------

def walk(node: Any) -> int:
    count = 1
    if type(node) is dict:
        for value in node.values():
            count += walk(value)
    elif type(node) is list:
        for value in node:
            count += walk(value)
    return count


def floor_one(data: bytes) -> int:
    return walk(orjson.loads(data))


class Naive:
    """pyld expand and to_rdf, an rdflib graph, pyshacl on the baseline shapes, per document."""

    def __init__(self) -> None:
        import pyshacl
        import rdflib
        from pyld import jsonld

        from ioa_semantic import data as _resources

        self.jsonld, self.rdflib, self.pyshacl = jsonld, rdflib, pyshacl
        self.shapes = rdflib.Graph().parse(data=_resources.read_text("shapes", "baseline.ttl"),
                                           format="turtle")

    def __call__(self, data: bytes) -> bool:
        document = json.loads(data)
        try:
            nquads = self.jsonld.to_rdf(self.jsonld.expand(document, {"base": None}),
                                        {"format": "application/n-quads"})
        except Exception:  # an expansion error is the naive pipeline's "invalid"
            return False
        conforms, _, _ = self.pyshacl.validate(
            self.rdflib.Graph().parse(data=nquads, format="nt"), shacl_graph=self.shapes,
            inference="none")
        return bool(conforms)


def timed_each(fn: Callable[[bytes], Any], inputs: Iterable[bytes]) -> list[float]:
    samples = []
    for data in inputs:
        start = time.perf_counter()
        fn(data)
        samples.append(time.perf_counter() - start)
    return samples


def p50_p99(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return (statistics.median(ordered) * 1e3,
            ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3)


# --- the audit ------------------------------------------------------------------------------

def audit_once(path: Path, jobs: int) -> tuple[float, float, int]:
    """Wall seconds, peak RSS MiB (the largest of the process and its workers), exit status."""
    argv = [CLI, "audit", str(path), "--profile", "cs-translation", "--format", "json",
            "--jobs", str(jobs), "--output", os.devnull]
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    error = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stderr.close()
    if process.returncode not in (0, 1, 3):
        raise SystemExit(f"audit failed ({process.returncode}): {error.decode()[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024, process.returncode


def audit_rows(size: int, runs: int, jobs: int, sample: int, folder: Path) -> list[Row]:
    naive = Naive()
    rows = []
    for name, make in traffic.REGISTRATION_CORPORA.items():
        path = folder / "corpus.jsonl"
        traffic.write(path, make(size))
        lines = path.read_bytes().splitlines()
        megabytes = path.stat().st_size / 2**20
        floors = []
        for _ in range(3):
            start = time.perf_counter()
            for line in lines:
                floor_one(line)
            floors.append(size / (time.perf_counter() - start))
        floor = statistics.median(floors)
        step = max(1, len(lines) // sample)
        picked = lines[::step][:sample]
        naive_rate = len(picked) / sum(timed_each(naive, picked))
        del lines
        # --jobs 1 beside --jobs N, run for run, so that both meet the same load
        counts = [jobs, 1] if jobs > 1 else [jobs]
        walls: dict[int, list[float]] = {n: [] for n in counts}
        peaks, loads = [], []
        for _ in range(runs):
            loads.append(load())
            for n in counts:
                elapsed, peak, _ = audit_once(path, n)
                walls[n].append(elapsed)
                if n == jobs:
                    peaks.append(peak)
        path.unlink()
        wall = statistics.median(walls[jobs])
        rate = size / wall
        for n in counts:
            spread = f"{size / max(walls[n]):,.0f}-{size / min(walls[n]):,.0f}"
            rated = size / statistics.median(walls[n])
            rows.append(Row(
                f"audit {name}", f"{size:,} ({megabytes:.0f} MiB)",
                f"registrations/s, --jobs {n}, median of {runs} ({spread})"
                + (f"; --jobs {jobs} {rate / rated:.2f} times as fast" if n != jobs else ""),
                f"{rated:,.0f}", f"{naive_rate:,.0f}", f"{floor:,.0f}",
                f"{rated / naive_rate:,.0f}", f"{floor / rated:.1f}",
                statistics.median(loads)))
        rows.append(Row(f"audit {name}", f"{size:,}", "peak RSS MiB (median)",
                        f"{statistics.median(peaks):.0f}", "", "", "", "", statistics.median(loads)))
        said = "; ".join(f"--jobs {n} {', '.join(f'{w:.2f}' for w in walls[n])} s"
                         for n in counts)
        print(f"  audit {name}: {rate:,.0f}/s (walls: {said}), "
              f"peak {statistics.median(peaks):.0f} MiB, naive {naive_rate:,.0f}/s, "
              f"floor {floor:,.0f}/s, load {rows[-1].load:.2f}", flush=True)
    return rows


def full_row(jobs: int, folder: Path) -> Row:
    size, senders = 1_000_000, 50_000
    path = folder / "full.jsonl"
    traffic.write(path, traffic.registrations(size, senders))
    megabytes = path.stat().st_size / 2**20
    before = load()
    elapsed, peak, _ = audit_once(path, jobs)
    path.unlink()
    print(f"  full audit: {elapsed:.1f} s, peak {peak:.0f} MiB", flush=True)
    return Row(f"audit {senders:,} senders", f"{size:,} ({megabytes:.0f} MiB)",
               f"peak RSS MiB, one run, --jobs {jobs} ({size / elapsed:,.0f} registrations/s)",
               f"{peak:.0f}", "", "", "", "", before)


# --- the check ------------------------------------------------------------------------------

def envelope_rows(rounds: int, naive_sample: int) -> list[Row]:
    from ioa_semantic import Checker

    naive = Naive()
    setups: list[tuple[str, dict[str, Any], dict[str, str]]] = [("6.2", {}, {})]
    if CASE.exists():
        setups.append(("12.1 case", {"capabilities": [CASE / "provider.jsonld"],
                                     "alignments": [CASE / "align0.json"]}, PARAMS_121))
    rows = []
    for setup, offered, params in setups:
        engines = {engine: Checker("cs-translation", engine=engine, cache_size=0, **offered)
                   for engine in ("compiled", "reference")}
        for stream, senders in traffic.ENVELOPE_STREAMS.items():
            warmup = traffic.envelopes(300, senders, start=10_000_000)
            measured = traffic.envelopes(rounds, senders)
            floor = p50_p99(timed_each(floor_one, measured))
            naive_times = timed_each(naive, measured[:: max(1, rounds // naive_sample)])
            naive_p = p50_p99(naive_times)
            for engine, checker in engines.items():
                count = rounds if engine == "compiled" else max(200, rounds // 10)
                inputs = measured[:count]
                for data in warmup[: 300 if engine == "compiled" else 50]:
                    checker.check(data, params=params, at=AT)
                verdicts: dict[str, int] = {}

                def check(data: bytes, c: Any = checker, v: dict[str, int] = verdicts,
                          p: dict[str, str] = params) -> None:
                    verdict = c.check(data, params=p, at=AT).verdict.value
                    v[verdict] = v.get(verdict, 0) + 1

                before = load()
                p50, p99 = p50_p99(timed_each(check, inputs))
                if set(verdicts) != {"compatible"}:
                    raise SystemExit(f"{setup} {stream} {engine}: verdicts {verdicts}")
                rows.append(Row(f"check {setup}, {stream}", f"{len(inputs):,} envelopes",
                                f"warm p50 / p99 ms, {engine}", f"{p50:.3f} / {p99:.3f}",
                                f"{naive_p[0]:.1f} / {naive_p[1]:.1f}",
                                f"{floor[0]:.4f} / {floor[1]:.4f}",
                                f"{naive_p[0] / p50:,.0f} / {naive_p[1] / p99:,.0f}",
                                f"{p50 / floor[0]:,.0f} / {p99 / floor[1]:,.0f}", before))
                print(f"  {rows[-1].name} {engine}: p50 {p50:.3f} ms, p99 {p99:.3f} ms "
                      f"(naive {naive_p[0]:.1f}, floor {floor[0]:.4f}), load {before:.2f}",
                      flush=True)
    return rows


def cold_row(runs: int, naive_runs: int) -> Row:
    envelope = ROOT / "examples" / "envelope-6.2.jsonld"

    def median_of(argv: list[str], count: int) -> float:
        times = []
        for _ in range(count):
            start = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True)
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3

    before = load()
    ours = median_of([CLI, str(envelope), "--profile", "cs-translation", "--at", AT_TEXT,
                      "--format", "json"], runs)
    naive = median_of([sys.executable, str(ROOT / "bench" / "naive_cli.py"), str(envelope),
                       AT_TEXT], naive_runs)
    probe = ("import sys, orjson\n"
             "def walk(n):\n"
             "    if type(n) is dict: return 1 + sum(walk(v) for v in n.values())\n"
             "    if type(n) is list: return 1 + sum(walk(v) for v in n)\n"
             "    return 1\n"
             "print(walk(orjson.loads(open(sys.argv[1], 'rb').read())))\n")
    floor = median_of([sys.executable, "-P", "-c", probe, str(envelope)], runs)
    return Row("cold ioa-check, 6.2 envelope", "1 envelope",
               f"process wall ms, median of {runs} (naive: {naive_runs})", f"{ours:.0f}",
               f"{naive:.0f}", f"{floor:.0f}", f"{naive / ours:.1f}", f"{ours / floor:.1f}",
               before)


# --- the table ------------------------------------------------------------------------------

HEADER = Row("row", "size", "figure", "value", "naive", "floor", "x naive", "x floor", 0.0)


def row_key(row: Row) -> tuple[str, str]:
    """What a row of one run shares with the same row of another: its name and its figure
    without the spread of the runs in brackets (nor a --jobs 1 row's ratio to --jobs N)."""
    figure = re.sub(r"; --jobs \d+ [\d.]+ times as fast$", "", row.figure)
    return row.name, re.sub(r", median of \d+", "", re.sub(r" \(.*\)$", "", figure))


def table(rows: list[Row], before: dict[tuple[str, str], Row] | None = None) -> str:
    """The table; with ``before`` (a saved run's rows), each row's value in that run beside
    its own (an empty cell where the run had no such row)."""
    head = [*HEADER[:-1], "load"]
    if before is not None:
        head.insert(4, "before")
    cells = [head]
    for r in rows:
        cell = [*r[:-1], f"{r.load:.2f}"]
        if before is not None:
            old = before.get(row_key(r))
            cell.insert(4, old.value if old is not None else "")
        cells.append(cell)
    lines = ["| " + " | ".join(c) + " |" for c in cells]
    lines.insert(1, "|" + "|".join("---" for _ in cells[0]) + "|")
    return "\n".join(lines)


def saved(path: Path) -> dict[tuple[str, str], Row]:
    """The rows of a run saved with ``--save``, by :func:`row_key`."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {row_key(row): row for row in (Row(**r) for r in data["rows"])}


def save(path: Path, rows: list[Row]) -> None:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    path.write_text(json.dumps({"date": datetime.now(UTC).strftime("%Y-%m-%d"),
                                "machine": machine(), "commit": commit or None,
                                "rows": [r._asdict() for r in rows]}, indent=1,
                               ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true",
                        help="20,000 registrations per audit corpus and 2,000 envelopes a stream")
    parser.add_argument("--full", action="store_true",
                        help="also audit 1,000,000 registrations from 50,000 senders (minutes)")
    parser.add_argument("--runs", type=int, default=3, help="audit runs per corpus (median)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--naive-sample", type=int, default=60)
    parser.add_argument("--cold-runs", type=int, default=20)
    parser.add_argument("--only", choices=["audit", "check", "cold"], action="append")
    parser.add_argument("--size", type=int, help="registrations per audit corpus (overrides)")
    parser.add_argument("--rounds", type=int, help="envelopes per stream (overrides)")
    parser.add_argument("--before", type=Path,
                        help="a run saved with --save: its values in a column beside these "
                             "(bench/results/ holds the runs docs/performance.md quotes)")
    parser.add_argument("--save", type=Path, help="write this run's rows to FILE (JSON)")
    opts = parser.parse_args()
    before = saved(opts.before) if opts.before else None
    size = opts.size or (20_000 if opts.quick else 100_000)
    rounds = opts.rounds or (2_000 if opts.quick else 5_000)
    only = set(opts.only or ["audit", "check", "cold"])
    print(f"machine: {machine()}; start load {load():.2f}; seed {traffic.SEED}", flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder:
        if "audit" in only:
            rows += audit_rows(size, opts.runs, opts.jobs, opts.naive_sample, Path(folder))
        if opts.full:
            rows.append(full_row(opts.jobs, Path(folder)))
    if "check" in only:
        rows += envelope_rows(rounds, opts.naive_sample)
    if "cold" in only:
        rows.append(cold_row(opts.cold_runs, max(3, opts.cold_runs // 4)))
    print()
    print(table(rows, before))
    if opts.save:
        save(opts.save, rows)
    print(f"\nend load {load():.2f}")


if __name__ == "__main__":
    main()
