"""The trace audit at scale: one long mas-lab run and one large OTLP file, each read by a floor,
a naive pipeline and the installed ``ioa-check trace`` (without and with ``--store``), with
each row's peak memory, in one run.

Usage: python bench/bench_trace_scale.py [--events 120000] [--traces 1400] [--rounds 3]
(run with the interpreter of an environment where the project is installed with [trace] and
the test extra: the OTLP traffic is made by the real OpenTelemetry SDK, as in
bench/bench_trace_otlp.py).

The mas-lab run: a lead agent delegating again and again to three specialists, each calling
one to four tools (one call in fifty an undeclared one) and a model, with ids, inputs and
outputs, as mas-lab writes its events (about 2 events a call). Rows:

* floor: ``orjson.loads`` of each line;
* naive: the stdlib ``json.loads`` of each line and the events (spans) grouped by call
  (span) id into dicts (what a first script would do: no checks, no attribution, no
  verdict);
* ``ioa-check trace FILE --no-shapes --format json``, the whole process (start-up included);
* the same with ``--store DIR`` (a new private store) and ``--max-memory 8GiB`` (the default
  512 MiB refuses runs of this size with a store: the row says what storing takes);
* the same with ``--store`` under the default bound: the reason it gives, and its peak;
* the store's floor: Oxigraph's bulk loader given the very quads the ``--store`` row wrote
  (the fed store's N-Quads, in memory first, loaded into a new store in the feed's chunks of
  ``CHUNK_QUADS`` as the feed loads them, flushed, and compacted where the feed compacts):
  what writing the graph costs with nothing else done, the least a feed of that store can
  take.

Peak memory is each row's process's maximum resident set (``ru_maxrss`` of a small wrapper's
children, started from a small launcher: a process forked from this one would count this
one's memory). The floor and naive rows run in a process of their own, which holds the
file's lines in memory before it times them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import trace_runs  # noqa: E402

IOA_CHECK = str(Path(sys.executable).parent / "ioa-check")
AT = "2026-12-02T00:00:00Z"


def maslab_run(folder: Path, count: int, seed: int = 3) -> Path:
    """A run folder of about ``count`` events."""
    rng = random.Random(seed)
    clock = [1_800_000_000.0]
    out: list[bytes] = []

    def event(kind: str, agent: str, call: str, parent: str | None, **more: Any) -> None:
        clock[0] += 0.001
        value: dict[str, Any] = {"kind": kind, "agent_id": agent, "run_id": "long-run",
                                 "call_id": call, "timestamp": round(clock[0], 3)}
        if parent:
            value["parent_call_id"] = parent
        value.update(more)
        out.append(orjson.dumps(value))

    event("mas_call_start", "mas", "root", None)
    event("execution_start", "lead", "lead", "root", input="task")
    index = 0
    while len(out) < count - 4:
        agent = rng.choice(trace_runs.SPECIALISTS)
        via, own = f"to-{index}", f"{agent}-{index}"
        event("tool_call_start", "lead", via, "lead", tool_name=f"delegate_to_{agent}",
              arguments={"task": f"part {index}"})
        event("execution_start", agent, own, via, input=f"part {index}")
        event("llm_call_start", agent, f"{own}-llm", own, model=trace_runs.MODEL,
              input=f"plan {index}")
        event("llm_call_end", agent, f"{own}-llm", own, model=trace_runs.MODEL, output="ok",
              usage={"input_tokens": 10, "output_tokens": 5})
        for number in range(rng.randint(1, 4)):
            tool = rng.choice(trace_runs.DECLARED[agent]) if rng.random() > 0.02 else "pay"
            call = f"{own}-t{number}"
            event("tool_call_start", agent, call, own, tool_name=tool,
                  arguments={"n": number, "q": f"query {index}"})
            event("tool_call_end", agent, call, own, tool_name=tool,
                  output=f"result {index} {number}")
        event("execution_end", agent, own, via, output="part done")
        event("tool_call_end", "lead", via, "lead", tool_name=f"delegate_to_{agent}",
              output="part done")
        index += 1
    event("execution_end", "lead", "lead", "root", output="done")
    event("mas_call_end", "mas", "root", None)
    run = folder / "long-run"
    (run / "traces").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_hash": "long-run"}))
    (run / "traces" / "events.jsonl").write_bytes(b"\n".join(out) + b"\n")
    return run


def floor(lines: list[bytes]) -> int:
    for line in lines:
        orjson.loads(line)
    return len(lines)


def naive(lines: list[bytes]) -> int:
    calls: dict[str, dict[str, Any]] = {}
    for line in lines:
        event = json.loads(line)
        if "resourceSpans" in event:  # an OTLP request: its spans, by span id
            for resource in event["resourceSpans"]:
                for scope in resource.get("scopeSpans", ()):
                    for span in scope.get("spans", ()):
                        calls[str(span.get("spanId"))] = span
        else:
            calls.setdefault(str(event.get("call_id")), {}).update(event)
    return len(lines)


# Runs commands and answers with each one's wall time, peak resident set and exit status. It
# is started before the bench allocates anything: a child's peak counts the memory of the
# process it was forked from until it execs, and this one is small.
LAUNCHER = """
import json, subprocess, sys, time
for line in sys.stdin:
    args = json.loads(line)
    start = time.perf_counter()
    child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = child.communicate()
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "status": child.returncode, "out": out.decode(),
                      "err": err.decode()}), flush=True)
"""


class Launcher:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True)

    def run(self, args: list[str]) -> tuple[float, int, int, str, str]:
        """``args`` run under the wrapper that says their peak: the wall time (the
        wrapper's start-up included, about 20 ms), the peak in bytes, the exit status,
        stdout and stderr."""
        assert self.process.stdin is not None and self.process.stdout is not None
        wrapped = [sys.executable, "-c", PEAK, *args]
        self.process.stdin.write(json.dumps(wrapped) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        peak_line, _, err = answer["err"].partition("\n")
        return (answer["seconds"], int(peak_line), answer["status"], answer["out"], err)


# The wrapper a command runs under: it execs nothing itself, it runs the command and says the
# command's peak (its own is small, so the command's inherited part is too).
PEAK = """
import resource, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
out, err = child.communicate()
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
sys.stdout.write(out.decode())
sys.stderr.write(f"{peak}\\n" + err.decode())
sys.exit(child.returncode)
"""


def in_process(launcher: Launcher, row_name: str, path: Path, rounds: int) -> tuple[float, int]:
    """A floor or naive row, in a process of its own: its median time and its peak."""
    times, peak = [], 0
    for _ in range(rounds):
        _, row_peak, status, out, err = launcher.run(
            [sys.executable, __file__, "--row", row_name, str(path)])
        assert status == 0, err
        times.append(float(out))
        peak = max(peak, row_peak)
    return sorted(times)[len(times) // 2], peak


def process(launcher: Launcher, args: list[str], rounds: int,
            fresh: Callable[[], list[str]] | None = None) -> tuple[float, int, int, str]:
    """The median wall time, the largest peak resident set, the exit status and the last
    stderr of ``rounds`` runs of ``ioa-check args`` (``fresh`` adds arguments made anew for
    each run: a new store)."""
    times, peak, status, err = [], 0, 0, ""
    for _ in range(rounds):
        more = fresh() if fresh else []
        seconds, run_peak, status, _, err = launcher.run([IOA_CHECK, *args, *more])
        times.append(seconds)
        peak = max(peak, run_peak)
    return sorted(times)[len(times) // 2], peak, status, err.strip()


def one_row(name: str, path: str) -> int:
    """``--row``: read ``path``'s lines (or, for the store's floor, the quads of the store
    at ``path``), then time the row's function over them."""
    if name == "store-floor":
        print(store_floor(path))
        return 0
    lines = Path(path).read_bytes().splitlines()
    start = time.perf_counter()
    {"floor": floor, "naive": naive}[name](lines)
    print(time.perf_counter() - start)
    return 0


def store_floor(fed: str) -> float:
    """The seconds Oxigraph's bulk loader takes to write the quads of the store ``fed`` into a
    new store, as the feed writes a long run's graph: chunks of ``CHUNK_QUADS`` quads, IRIs
    not checked again (``RECHECK_IRIS``), then a flush, and a compaction where the feed compacts
    (``COMPACT_QUADS``)."""
    import pyoxigraph as ox

    from ioa_semantic.trace.store import CHUNK_QUADS, COMPACT_QUADS, RECHECK_IRIS

    source = ox.Store.read_only(fed)
    lines = source.dump(format=ox.RdfFormat.N_QUADS).splitlines(keepends=True)
    del source
    chunks = [b"".join(lines[at:at + CHUNK_QUADS]) for at in range(0, len(lines), CHUNK_QUADS)]
    count = len(lines)
    del lines
    with tempfile.TemporaryDirectory() as folder:
        store = ox.Store(folder)
        start = time.perf_counter()
        for chunk in chunks:
            store.bulk_load(chunk, format=ox.RdfFormat.N_QUADS, lenient=not RECHECK_IRIS)
        store.flush()
        if count >= COMPACT_QUADS:
            store.optimize()
        seconds = time.perf_counter() - start
        del store
    return seconds


def row(name: str, units: int, seconds: float, peak: int, unit: str, note: str = "") -> None:
    print(f"| {name} | {seconds:.2f} s | {units / seconds:,.0f} {unit}/s | "
          f"{peak / (1 << 20):,.0f} MiB | {note} |", flush=True)


def otlp_file(folder: Path, traces: int) -> tuple[Path, int]:
    from bench_trace_otlp import traffic

    lines = traffic(traces)
    spans = sum(len(s.get("spans", ())) for line in lines
                for r in orjson.loads(line).get("resourceSpans", ())
                for s in r.get("scopeSpans", ()))
    path = folder / "traces.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path, spans


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=120_000)
    parser.add_argument("--traces", type=int, default=1400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--row", nargs=2, metavar=("NAME", "FILE"), help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.row:
        return one_row(*opts.row)
    launcher = Launcher()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        run = maslab_run(folder, opts.events)
        manifests = trace_runs.write_manifests(folder / "manifests")
        otlp, spans = otlp_file(folder, opts.traces)
        stores = iter(range(1_000_000))

        made: list[Path] = []

        def store() -> list[str]:
            made.append(folder / f"store-{next(stores)}")
            return ["--store", str(made[-1]), "--at", AT]

        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, "
              f"load {os.getloadavg()[0]:.1f}")
        for name, path, units, unit, declared in (
                ("mas-lab run", run / "traces" / "events.jsonl", None, "events", manifests),
                ("OTLP file", otlp, spans, "spans", None)):
            lines = path.read_bytes().splitlines()
            units = units or len(lines)
            print(f"\n{name}: {units:,} {unit}, {len(lines):,} lines, "
                  f"{path.stat().st_size / 1e6:.1f} MB\n")
            print("| row | time | rate | peak memory | note |\n|---|---|---|---|---|")
            seconds, peak = in_process(launcher, "floor", path, opts.rounds)
            row("floor: orjson.loads a line", units, seconds, peak, unit,
                "the lines in memory first")
            seconds, peak = in_process(launcher, "naive", path, opts.rounds)
            row("naive: json.loads, grouped by call or span id", units, seconds, peak, unit,
                "the lines in memory first")
            base = ["trace", str(run if path != otlp else otlp), "--no-shapes", "--format", "json"]
            if declared:
                base += ["--manifests", str(declared)]
            seconds, peak, status, err = process(launcher, base, opts.rounds)
            row("ioa-check trace", units, seconds, peak, unit, f"exit {status}")
            seconds, peak, status, err = process(launcher, [*base, "--max-memory", "8GiB"], 1,
                                                 store)
            row("ioa-check trace --store (--max-memory 8GiB)", units, seconds, peak, unit,
                f"exit {status}")
            seconds, peak = in_process(launcher, "store-floor", made[-1], opts.rounds)
            row("floor of the store: Oxigraph's bulk loader, the same quads", units, seconds,
                peak, unit, "the quads in memory first, in the feed's chunks")
            seconds, peak, status, err = process(launcher, base, 1, store)
            bound = err.splitlines()[0][:140] if "--max-memory" in err else f"exit {status}"
            row("ioa-check trace --store (default bound)", units, seconds, peak, unit, bound)
    return 0


if __name__ == "__main__":
    sys.exit(main())
