"""How often the audit's memos answer, on bench/traffic.py's corpora (issue 39, item 2).

Usage: python bench/bench_memos.py [--size 20000]
(run with the interpreter of an environment where the project is installed pure, editable or
``IOA_SEMANTIC_BUILD=pure``: it counts lookups by wrapping the package's functions, which a
compiled module calls past; the memos are the same in both builds). Each corpus is audited in
a process of its own (``--jobs 1``, so that every lookup is in that process) and prints, as
hits / lookups: the IRI schemes of the walk, the active contexts (looked up by their
serialization), the compiled shapes' pattern searches, the digests of declarations' parts
(inputs, outputs, ontology) for the conflict index, and the invalid registrations answered by an invalid kind.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import traffic  # noqa: E402  (the corpora, from the fixed seed)

CORPORA = ("uniform (bench_audit)", "5 senders", "5,000 senders", "each its own sender")

# Run in a process of its own per corpus: the counters wrap the package before it audits.
COUNT = """
import os, sys
from ioa_semantic import build_kind
if build_kind() != "pure":
    raise SystemExit("bench_memos.py counts in the pure build (compiled calls go past wrappers)")
from ioa_semantic.audit import conflicts, kinds
from ioa_semantic.compiled import conformance, engine, walk

searches = [0]
class Counted(conformance.SearchMemo):
    def __getitem__(self, text):
        searches[0] += 1
        return super().__getitem__(text)
conformance.SearchMemo = Counted
memos = []
_compile = conformance.compile_conformance
def compile_conformance(shape):
    check = _compile(shape)
    memos.extend(v for v in check.__globals__.values() if isinstance(v, conformance.SearchMemo))
    return check
conformance.compile_conformance = compile_conformance

digests = [0, 0]
_part_digest = conflicts._part_digest
def part_digest(part):
    digests[0] += 1
    digests[1] += part not in conflicts._PART_DIGESTS
    return _part_digest(part)
conflicts._part_digest = part_digest

invalid = [0, 0]  # answered by an invalid kind, reported in full while kinds were asked
_judged = kinds.Kinds.judged
def judged(self, data):
    out = _judged(self, data)
    invalid[0] += type(out) is tuple and type(out[1]) is kinds.Reported
    return out
kinds.Kinds.judged = judged
_remember = kinds.Unknown.remember_reported
def remember_reported(self, status, ident, reasons):
    invalid[1] += self.compiled is None and status != "valid"
    return _remember(self, status, ident, reasons)
kinds.Unknown.remember_reported = remember_reported

from ioa_semantic.cli.main import main
main(["audit", sys.argv[1], "--profile", "cs-translation", "--format", "json", "--jobs", "1",
      "--output", os.devnull])

def rate(hits, lookups):
    return f"{hits:,} / {lookups:,}" + (f" ({hits / lookups:.0%})" if lookups else "")
missed = sum(m.misses for m in memos)
print(f"| {sys.argv[2]} | {rate(walk._SCHEMES.hits, walk._SCHEMES.hits + walk._SCHEMES.misses)}"
      f" | {rate(engine._CONTEXTS.hits, engine._CONTEXTS.hits + engine._CONTEXTS.misses)}"
      f" | {rate(searches[0] - missed, searches[0])} | {rate(digests[0] - digests[1], digests[0])}"
      f" | {rate(invalid[0], invalid[0] + invalid[1])} |")
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=20_000)
    opts = parser.parse_args()
    print(f"| corpus ({opts.size:,} registrations) | IRI schemes | contexts | pattern searches"
          " | declaration parts' digests | invalid answered by kind |  (load "
          f"{os.getloadavg()[0]:.1f})")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name in CORPORA:
            path = Path(folder, "corpus.jsonl")
            traffic.write(path, traffic.REGISTRATION_CORPORA[name](opts.size))
            # From outside the clone: `python -c` puts its working directory on sys.path.
            subprocess.run([sys.executable, "-c", COUNT, str(path), name], check=True,
                           cwd=tempfile.gettempdir())


if __name__ == "__main__":
    main()
