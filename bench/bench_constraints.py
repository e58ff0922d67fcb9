"""The cost of a profile's own SHACL shapes: the same checks and audits with and without them.

Usage: python bench/bench_constraints.py [--rounds 2000] [--size 20000] [--jobs 2]
(run with the interpreter of an environment where the project is installed, not editable,
with [test]). The inputs are bench/traffic.py's (fixed seed): the 300-layout envelope
stream, and registrations from 5,000 senders. Three profiles, built in a temporary folder
from the shipped cs-translation:

* ``none``: cs-translation itself (no iop:shapes);
* ``compiled``: shapes all in the compiled subset (evaluated without pySHACL);
* ``pyshacl``: the same and shapes pySHACL evaluates (sh:in, sh:maxLength), so one pySHACL
  validation per check, and per batch of registrations in an audit;
* ``sparql``: the same and a SHACL-SPARQL constraint, which may read any node, so that an
  audit evaluates each registration alone.

Each row prints next to the naive pipeline (pyld, rdflib, pyshacl on the baseline shapes,
per document, as bench_traffic.py's) and the floor (orjson.loads plus a walk), measured in
the same run on the same inputs. A check is warm (``Checker.check()`` in this process, each
envelope once, p50 / p99 ms); an audit is the installed command as a process.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import traffic
from bench_check import machine
from bench_traffic import CLI, Naive, floor_one, load, p50_p99, timed_each

ROOT = Path(__file__).resolve().parents[1]
AT = datetime(2026, 6, 1, tzinfo=UTC)
PARAMS = {"targetLang": "en", "sourceLang": "zh"}

PREFIXES = """@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ioa: <https://example.org/ioa/semantic#> .
@prefix iop: <https://ioa-semantic.org/ns/profile#> .
@prefix param: <https://ioa-semantic.org/ns/parameter#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix ex: <https://example.org/house-rules#> .
"""
COMPILED = PREFIXES + """
ex:FewCapabilities a sh:NodeShape ; sh:targetClass ioa:SemanticProfile ;
    sh:property [ sh:path ioa:capabilityRefs ; sh:minCount 1 ; sh:maxCount 10 ; sh:nodeKind sh:IRI ] ;
    sh:property [ sh:path ioa:intentRef ; sh:maxCount 1 ; sh:nodeKind sh:IRI ] .
ex:Labelled a sh:NodeShape ; sh:targetClass ioa:Capability ;
    sh:property [ sh:path rdfs:label ; sh:minCount 1 ; sh:message "a registration needs a label" ] .
"""
PYSHACL = COMPILED + """
ex:EuropeanTarget a sh:NodeShape ; sh:targetClass iop:TaskParameters ;
    sh:property [ sh:path param:targetLang ; sh:in ("en" "de" "fr" "zh") ] .
ex:ShortInputs a sh:NodeShape ; sh:targetClass ioa:Capability ;
    sh:property [ sh:path ioa:inputs ; sh:maxLength 200 ] .
"""
SPARQL = PYSHACL + """
ex:OneVersion a sh:NodeShape ; sh:targetClass ioa:SemanticProfile ;
    sh:sparql [ sh:prefixes ex: ; sh:message "one ontology version" ;
        sh:select \"\"\"SELECT $this WHERE { $this ioa:ontologyVersion ?a, ?b . FILTER (?a != ?b) }\"\"\" ] .
ex: sh:declare [ sh:prefix "ioa" ;
    sh:namespace "https://example.org/ioa/semantic#"^^<http://www.w3.org/2001/XMLSchema#anyURI> ] .
"""


def profiles(folder: Path) -> dict[str, str]:
    text = (ROOT / "ioa_semantic" / "data" / "profiles" / "cs-translation.ttl").read_text()
    anchor = "    iop:trustedIssuer <https://example.org/mapping-authority> ."
    assert anchor in text
    out = {"none": "cs-translation"}
    for name, shapes in (("compiled", COMPILED), ("pyshacl", PYSHACL), ("sparql", SPARQL)):
        (folder / f"{name}.shapes.ttl").write_text(shapes)
        path = folder / f"{name}.ttl"
        path.write_text(text.replace(anchor, anchor[:-2] + f' ;\n    iop:shapes "{name}.shapes.ttl" .'))
        out[name] = str(path)
    return out


def check_rows(rounds: int, chosen: dict[str, str]) -> None:
    from ioa_semantic import Checker

    naive = Naive()
    stream = traffic.envelopes(rounds, traffic.ENVELOPE_STREAMS["300 layouts"])
    warmup = traffic.envelopes(300, traffic.ENVELOPE_STREAMS["300 layouts"], start=10_000_000)
    floor = p50_p99(timed_each(floor_one, stream))
    naive_p = p50_p99(timed_each(naive, stream[:: max(1, rounds // 60)]))
    print(f"| check 6.2, 300 layouts | {rounds:,} envelopes | naive / floor p50 ms | "
          f"{naive_p[0]:.2f} / {floor[0]:.4f} | | load {load():.2f} |")
    base = None
    for name, profile in chosen.items():
        checker = Checker(profile, cache_size=0)
        for data in warmup:
            checker.check(data, params=PARAMS, at=AT)
        verdicts: dict[str, int] = {}

        def check(data: bytes, c: Any = checker, v: dict[str, int] = verdicts) -> None:
            verdict = c.check(data, params=PARAMS, at=AT).verdict.value
            v[verdict] = v.get(verdict, 0) + 1

        before = load()
        p50, p99 = p50_p99(timed_each(check, stream))
        base = base or p50
        routes = ", ".join(f"{r.engine}" for r in checker.constraints.routes) if (
            checker.constraints) else "no shapes"
        print(f"| check, shapes: {name} ({routes}) | {len(stream):,} | warm p50 / p99 ms | "
              f"{p50:.3f} / {p99:.3f} | {p50 / base:.1f}x no shapes, {naive_p[0] / p50:.0f}x "
              f"naive, {p50 / floor[0]:.0f} floors | {verdicts} load {before:.2f} |", flush=True)


def audit_rows(size: int, jobs: int, chosen: dict[str, str], folder: Path) -> None:
    path = folder / "registrations.jsonl"
    traffic.write(path, traffic.registrations(size, 5000))
    base = None
    for name, profile in chosen.items():
        walls = []
        for _ in range(3):
            start = time.perf_counter()
            status = os.spawnv(os.P_WAIT, CLI, [CLI, "audit", str(path), "--profile", profile,
                                                "--format", "json", "--jobs", str(jobs),
                                                "--output", os.devnull])
            walls.append(time.perf_counter() - start)
            if status not in (0, 1, 3):
                raise SystemExit(f"audit under {name} exited {status}")
        wall = sorted(walls)[1]
        rate = size / wall
        base = base or rate
        print(f"| audit, 5,000 senders, shapes: {name} | {size:,} registrations | "
              f"registrations/s, --jobs {jobs}, median of 3 | {rate:,.0f} | "
              f"{base / rate:.1f}x the time of no shapes | load {load():.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--jobs", type=int, default=2)
    opts = parser.parse_args()
    print(f"machine: {machine()}; {datetime.now(UTC):%Y-%m-%d}; seed {traffic.SEED}")
    print("| row | size | figure | value | against | notes |\n|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        chosen = profiles(Path(tmp))
        check_rows(opts.rounds, chosen)
        audit_rows(opts.size, opts.jobs, chosen, Path(tmp))


if __name__ == "__main__":
    main()
