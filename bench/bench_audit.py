"""The batch audit, measured: registrations per second and peak memory, against the naive way.

Usage: python bench/bench_audit.py [--sizes 10000,100000] [--distinct-sizes 100000] [--jobs N]
       [--sample 500]
(run with the interpreter of an environment where the project is installed with [test]).

It writes N synthetic registrations in the 6.3 shape with the 6.3 context (about 400 bytes
each, varied IRIs, about 1% invalid spread over every invalid class) to a temporary folder,
audits them with the installed ``ioa-check audit`` (process wall time and peak RSS of the
process and its workers), deletes the file, and times the naive per-document pipeline
(pyld expand and to_rdf, an rdflib graph, pyshacl on the baseline shapes) on a sample.
The registrations differ in their IRI and label, as one sender's do, so that most are
answered by their kind; ``--distinct-sizes`` also audits corpora where each registration
has a media type of its own, so that every one is judged in full.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REGISTRATION = json.loads((ROOT / "examples" / "registration-6.3.jsonld").read_text())

INVALID_CLASSES = [
    lambda d: d.pop("@id"),
    lambda d: d.__setitem__("@id", "TechTranslation"),
    lambda d: d.__setitem__("@id", "xx:Thing"),
    lambda d: d.__setitem__("@type", "ioa:Intent"),
    lambda d: d.pop("inputs"),
    lambda d: d.__setitem__("outputs", []),
    lambda d: d.__setitem__("inputs", ["text"]),
    lambda d: d.__setitem__("outputs", [5]),
    lambda d: d.__setitem__("type", "Capability"),
]


def registration(i: int, distinct: bool = False) -> str:
    doc = json.loads(json.dumps(REGISTRATION))
    doc["@id"] = f"cs:Capability{i}"
    doc["label"] = f"Capability number {i} for technical document translation"
    if distinct:  # a media type of its own: every registration a kind of its own
        doc["inputs"] = [f"text/x-variant{i}"]
    if i % 100 == 37:
        INVALID_CLASSES[(i // 100) % len(INVALID_CLASSES)](doc)
    return json.dumps(doc)


def write_corpus(path: Path, size: int, distinct: bool = False) -> int:
    with path.open("w") as handle:
        for i in range(size):
            handle.write(registration(i, distinct) + "\n")
    return path.stat().st_size


def audit(path: Path, jobs: int) -> tuple[float, float]:
    cli = str(Path(sys.executable).parent / "ioa-check")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run([cli, "audit", str(path), "--profile", "cs-translation", "--format", "json",
                    "--jobs", str(jobs), "--output", os.devnull], capture_output=True)
    elapsed = time.perf_counter() - start
    peak = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024
    return elapsed, peak


def naive_rate(sample: int) -> float:
    import pyshacl
    import rdflib
    from pyld import jsonld

    from ioa_semantic import data as _resources

    shapes = rdflib.Graph().parse(data=_resources.read_text("shapes", "baseline.ttl"),
                                  format="turtle")
    docs = [json.loads(registration(i)) for i in range(sample)]
    start = time.perf_counter()
    for doc in docs:
        nquads = jsonld.to_rdf(jsonld.expand(doc, {"base": None}),
                               {"format": "application/n-quads"})
        pyshacl.validate(rdflib.Graph().parse(data=nquads, format="nt"), shacl_graph=shapes,
                         inference="none")
    return sample / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--distinct-sizes", default="100000",
                        help="also audit corpora whose registrations are each a kind of their "
                             "own (a media type apiece), which no registration's kind answers")
    opts = parser.parse_args()
    naive = naive_rate(opts.sample)
    print(f"naive per-document pipeline (pyld + pyshacl), {opts.sample} registrations: "
          f"{naive:,.0f} registrations/s")
    print(f"{'registrations':>14} {'MiB in':>7} {'seconds':>8} {'per second':>11} "
          f"{'vs naive':>9} {'peak RSS MiB':>13}   (--jobs {opts.jobs})")
    runs = [(int(s), False) for s in opts.sizes.split(",") if s] + [
        (int(s), True) for s in opts.distinct_sizes.split(",") if s]
    with tempfile.TemporaryDirectory() as folder:
        for size, distinct in runs:
            path = Path(folder) / f"registrations-{size}.jsonl"
            size_bytes = write_corpus(path, size, distinct)
            elapsed, peak = audit(path, opts.jobs)
            path.unlink()
            rate = size / elapsed
            print(f"{size:14,d} {size_bytes / 2**20:7.1f} {elapsed:8.2f} {rate:11,.0f} "
                  f"{rate / naive:8.1f}x {peak:13.0f}"
                  + ("   each registration a kind of its own" if distinct else ""))


if __name__ == "__main__":
    main()
