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

* floor: ``orjson.loads`` of each line, in this process;
* naive: the stdlib ``json.loads`` of each line and the events grouped by call id into
  dicts (what a first script would do: no checks, no attribution, no verdict), in this process;
* ``ioa-check trace FILE --no-shapes --format json``, the whole process (start-up included);
* the same with ``--store DIR`` (a new private store) and ``--max-memory 8GiB`` (the default
  512 MiB refuses runs of this size with a store: the row says what storing takes);
* the same with ``--store`` under the default bound: the reason it gives, and its peak.

Peak memory is the process's maximum resident set (``wait4``'s ``ru_maxrss``); in-process
rows report the growth of this process's maximum over the row.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
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
        calls.setdefault(str(event.get("call_id")), {}).update(event)
    return len(lines)


def in_process(function: Callable[[list[bytes]], int], lines: list[bytes],
               rounds: int) -> tuple[float, int]:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        function(lines)
        times.append(time.perf_counter() - start)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    return sorted(times)[len(times) // 2], grown * 1024


def process(args: list[str], rounds: int, fresh: Callable[[], list[str]] | None = None,
            ) -> tuple[float, int, int, str]:
    """The median wall time, the largest peak resident set, the exit status and the last
    stderr of ``rounds`` runs of ``ioa-check args`` (``fresh`` adds arguments made anew for
    each run: a new store)."""
    times, peak, status, err = [], 0, 0, ""
    for _ in range(rounds):
        more = fresh() if fresh else []
        start = time.perf_counter()
        child = subprocess.Popen([IOA_CHECK, *args, *more], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE)
        assert child.stderr is not None
        err = child.stderr.read().decode()
        _, wait_status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(wait_status)
        times.append(time.perf_counter() - start)
        peak = max(peak, usage.ru_maxrss * 1024)
        status = child.returncode
    return sorted(times)[len(times) // 2], peak, status, err.strip()


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
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        run = maslab_run(folder, opts.events)
        manifests = trace_runs.write_manifests(folder / "manifests")
        otlp, spans = otlp_file(folder, opts.traces)
        stores = iter(range(1_000_000))

        def store() -> list[str]:
            return ["--store", str(folder / f"store-{next(stores)}"), "--at", AT]

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
            seconds, grown = in_process(floor, lines, opts.rounds)
            row("floor: orjson.loads a line", units, seconds, grown, unit, "in-process")
            seconds, grown = in_process(naive, lines, opts.rounds)
            row("naive: json.loads, grouped by call id", units, seconds, grown, unit,
                "in-process")
            base = ["trace", str(run if path != otlp else otlp), "--no-shapes", "--format", "json"]
            if declared:
                base += ["--manifests", str(declared)]
            seconds, peak, status, err = process(base, opts.rounds)
            row("ioa-check trace", units, seconds, peak, unit, f"exit {status}")
            seconds, peak, status, err = process([*base, "--max-memory", "8GiB"], 1, store)
            row("ioa-check trace --store (--max-memory 8GiB)", units, seconds, peak, unit,
                f"exit {status}")
            seconds, peak, status, err = process(base, 1, store)
            bound = err.splitlines()[0][:140] if "--max-memory" in err else f"exit {status}"
            row("ioa-check trace --store (default bound)", units, seconds, peak, unit, bound)
    return 0


if __name__ == "__main__":
    sys.exit(main())
