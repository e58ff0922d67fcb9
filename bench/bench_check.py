"""The hot path, measured: warm check(), cold command line and memory, against the naive stack.

Usage: python bench/bench_check.py [--rounds N] [--cold-runs N]
(run with the interpreter of an environment where the project is installed with [test];
needs ../shared for the 12.1 case). Prints the machine, then one table per measure, with
ratios. Decision caching is off (cache_size=0): every round does the whole check.

"naive" is the stack one would write first, per envelope: stdlib json, a jsonschema
validator (built once), pyld expand and to_rdf, an rdflib graph, pyshacl on the baseline shapes, then the
reference decision (a fresh Oxigraph store and the named SPARQL queries).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT.parent / "shared" / "conformance" / "cases" / "draft-12.1-accepted-mapping"
ENVELOPE_62 = ROOT / "examples" / "envelope-6.2.jsonld"
AT = datetime(2026, 6, 1, tzinfo=UTC)
PARAMS = {"sourceLang": "zh", "targetLang": "en"}


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({model}), "
            f"Python {platform.python_version()}")


def percentiles(fn: Callable[[], Any], rounds: int) -> tuple[float, float]:
    for _ in range(min(200, rounds)):
        fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.median(samples) * 1e3, samples[max(0, int(len(samples) * 0.99) - 1)] * 1e3


def naive_check(checker: Any, schema: Any, shapes: Any, data: bytes,
                params: dict[str, str]) -> str:
    import pyshacl
    import rdflib
    from pyld import jsonld

    document = json.loads(data)
    schema.is_valid(document)
    nquads = jsonld.to_rdf(jsonld.expand(document, {"base": None}), {"format": "application/n-quads"})
    pyshacl.validate(rdflib.Graph().parse(data=nquads, format="nt"), shacl_graph=shapes,
                     inference="none")
    return str(checker.check(data, params=params, at=AT).verdict.value)


def warm(rounds: int) -> None:
    import rdflib

    from ioa_semantic import Checker
    from ioa_semantic import data as _resources

    inputs = [("6.2 envelope, profile only", ENVELOPE_62.read_bytes(), {}, {}, "compatible")]
    if CASE.exists():
        inputs.append(("12.1 case, provider + artifact", (CASE / "envelope.jsonld").read_bytes(),
                       PARAMS, {"capabilities": [CASE / "provider.jsonld"],
                                "alignments": [CASE / "align0.json"]}, "compatible"))
    # A malformed envelope takes the reporting path, which names every reason: what a
    # sender of bad input costs the receiver.
    malformed = json.loads(ENVELOPE_62.read_bytes())
    del malformed["intentRef"]
    inputs.append(("6.2 without intentRef (invalid)", json.dumps(malformed).encode(), {}, {},
                   "invalid"))
    from jsonschema import Draft202012Validator

    # Built once, as a careful naive user would; validate() would rebuild it on every call.
    schema = Draft202012Validator(_resources.read_json("shapes", "envelope.schema.json"))
    shapes = rdflib.Graph().parse(data=_resources.read_text("shapes", "baseline.ttl"),
                                  format="turtle")
    print(f"\nwarm Checker.check(), {rounds} rounds, milliseconds")
    print(f"{'input':32} {'engine':10} {'p50':>8} {'p99':>8} {'vs naive p50':>13} {'p99':>6}")
    for name, data, params, offered, expected in inputs:
        compiled = Checker("cs-translation", engine="compiled", cache_size=0, **offered)
        reference = Checker("cs-translation", engine="reference", cache_size=0, **offered)
        verdicts = {compiled.check(data, params=params, at=AT).verdict.value,
                    reference.check(data, params=params, at=AT).verdict.value,
                    naive_check(reference, schema, shapes, data, params)}
        assert verdicts == {expected}, verdicts
        naive = percentiles(lambda r=reference, d=data, p=params: naive_check(r, schema, shapes, d, p),
                            max(rounds // 20, 50))
        rows = [("compiled", percentiles(lambda c=compiled, d=data, p=params: c.check(
                     d, params=p, at=AT), rounds)),
                ("reference", percentiles(lambda c=reference, d=data, p=params: c.check(
                     d, params=p, at=AT), max(rounds // 10, 100))),
                ("naive", naive)]
        for engine, (p50, p99) in rows:
            print(f"{name:32} {engine:10} {p50:8.3f} {p99:8.3f} {naive[0] / p50:12.1f}x "
                  f"{naive[1] / p99:5.1f}x")


def cold(runs: int) -> None:
    bin_dir = Path(sys.executable).parent
    at = "2026-06-01T00:00:00Z"
    commands = {
        "ioa-check (compiled)": [str(bin_dir / "ioa-check"), str(ENVELOPE_62), "--profile",
                                 "cs-translation", "--at", at, "--format", "json"],
        "ioa-check --engine reference": [str(bin_dir / "ioa-check"), str(ENVELOPE_62),
                                         "--profile", "cs-translation", "--at", at, "--format",
                                         "json", "--engine", "reference"],
        "naive CLI (bench/naive_cli.py)": [sys.executable, str(ROOT / "bench" / "naive_cli.py"),
                                           str(ENVELOPE_62), at],
    }
    print(f"\ncold start: process wall time for one envelope, {runs} runs, milliseconds")
    medians = {}
    for name, argv in commands.items():
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True)
            times.append(time.perf_counter() - start)
        medians[name] = statistics.median(times) * 1e3
    naive = medians["naive CLI (bench/naive_cli.py)"]
    for name, median in medians.items():
        print(f"{name:34} median {median:7.1f}   naive/this {naive / median:5.1f}x")


def memory() -> None:
    probe = ("import ioa_semantic\n"
             "checker = ioa_semantic.Checker('cs-translation')\n"
             "rss = [l for l in open('/proc/self/status') if l.startswith('VmRSS')][0]\n"
             "print(int(rss.split()[1]) // 1024)\n")
    rss = int(subprocess.run([sys.executable, "-P", "-c", probe], check=True, capture_output=True,
                             text=True).stdout)
    print(f"\nmemory: whole-process RSS after building a Checker for cs-translation in a fresh "
          f"interpreter: {rss} MiB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5000)
    parser.add_argument("--cold-runs", type=int, default=20)
    opts = parser.parse_args()
    print(f"machine: {machine()}")
    warm(opts.rounds)
    cold(opts.cold_runs)
    memory()


if __name__ == "__main__":
    main()
