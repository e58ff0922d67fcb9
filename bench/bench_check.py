"""Warm check() and cold CLI figures, side by side with the naive pipeline.

Usage: python bench/bench_check.py [--rounds N]   (needs ../shared and the [test] extra)

The naive pipeline is what one would write first: a fresh jsonschema validator, pyld
expand and to_rdf, an rdflib graph, pyshacl on the baseline shapes per document, then the
same decision (fresh SPARQL queries in a fresh store). It decides the same verdicts; the
figures are medians and 99th percentiles over the rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pyshacl
import rdflib
from jsonschema import Draft202012Validator
from pyld import jsonld

from ioa_semantic import Checker, _resources

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT.parent / "shared" / "conformance" / "cases" / "draft-12.1-accepted-mapping"
AT = datetime(2026, 6, 1, tzinfo=UTC)
PARAMS = {"sourceLang": "zh", "targetLang": "en"}


def timings(fn, rounds: int) -> tuple[float, float]:
    for _ in range(20):
        fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.median(samples) * 1e3, samples[int(len(samples) * 0.99) - 1] * 1e3


def naive(checker: Checker, schema: dict, shapes: rdflib.Graph, data: bytes,
          params: dict[str, str]) -> str:
    doc = json.loads(data)
    Draft202012Validator(schema).is_valid(doc)
    nquads = jsonld.to_rdf(jsonld.expand(doc, {"base": None}), {"format": "application/n-quads"})
    graph = rdflib.Graph().parse(data=nquads, format="nt")
    pyshacl.validate(graph, shacl_graph=shapes, inference="none")
    return checker.check(data, params=params, at=AT).verdict.value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2000)
    rounds = parser.parse_args().rounds
    envelope = (ROOT / "examples" / "envelope-6.2.jsonld").read_bytes()
    plain = Checker("cs-translation", cache_size=0)
    mapped = Checker("cs-translation", capabilities=[CASE / "provider.jsonld"],
                     alignments=[CASE / "align0.json"], cache_size=0)
    envelope_121 = (CASE / "envelope.jsonld").read_bytes()
    schema = _resources.read_json("shapes", "envelope.schema.json")
    shapes = rdflib.Graph().parse(data=_resources.read_text("shapes", "baseline.ttl"),
                                  format="turtle")
    rows = []
    for name, checker, data, params in (("6.2 envelope, profile only", plain, envelope, {}),
                                        ("12.1 case, provider + artifact", mapped, envelope_121,
                                         PARAMS)):
        assert checker.check(data, params=params, at=AT).verdict.value == "compatible"
        fast = timings(lambda c=checker, d=data, p=params: c.check(d, params=p, at=AT), rounds)
        slow = timings(lambda c=checker, d=data, p=params: naive(c, schema, shapes, d, p),
                       max(rounds // 10, 50))
        rows.append((name, fast, slow))
    print(f"warm check(), {rounds} rounds (ms)")
    print(f"{'input':34} {'p50':>8} {'p99':>8} {'naive p50':>10} {'naive p99':>10} {'ratio':>6}")
    for name, (p50, p99), (n50, n99) in rows:
        print(f"{name:34} {p50:8.3f} {p99:8.3f} {n50:10.3f} {n99:10.3f} {n50 / p50:6.1f}x")
    cli = str(Path(sys.executable).parent / "ioa-check")
    cold = []
    for _ in range(10):
        start = time.perf_counter()
        subprocess.run([cli, str(ROOT / "examples" / "envelope-6.2.jsonld"), "--profile",
                        "cs-translation", "--at", "2026-06-01T00:00:00Z", "--format", "json"],
                       check=True, capture_output=True)
        cold.append(time.perf_counter() - start)
    print(f"cold ioa-check on one envelope: median {statistics.median(cold) * 1e3:.0f} ms "
          f"over 10 runs")


if __name__ == "__main__":
    main()
