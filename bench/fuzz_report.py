"""Run the differential fuzzer and report every failure class with one minimized example.

    python bench/fuzz_report.py --count 3000 --seed 1 [--out bench/out/fuzz] [--audit-batches 30]

N mutated envelopes and registrations (tests/fuzzing.py) go through both engines and the
audit's judging of one registration; batches of registrations go through the audit command in
two line orders. Failures are grouped by class (an exception's type and where it was raised;
a divergence between the engines with both code sets; a malformed input judged other than
invalid, or judged compatible; output that fails the schema; nondeterminism; inputs of the
same JSON value judged differently; audit results that depend on line order). Each class gets
one example, minimized, written as JSON to the output folder (one file per class and
``summary.json``); the summary is printed. Exit status 1 when something was found.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import fuzzing  # noqa: E402


def _class_id(signature: tuple[str, ...]) -> str:
    digest = hashlib.sha1(repr(signature).encode()).hexdigest()[:8]
    head = "-".join(s for s in signature[:3] if s)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in head)[:60]
    return f"{safe}-{digest}"


def _observed(m: fuzzing.Mutant) -> dict[str, Any]:
    if m.kind == "envelope":
        return fuzzing.run_envelope(m)[1]
    return fuzzing.run_registration(m)[1]


def main(argv: list[str] | None = None) -> int:  # noqa: C901
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "fuzz"))
    parser.add_argument("--audit-batches", type=int, default=20,
                        help="batches of registrations audited in two line orders")
    parser.add_argument("--batch-size", type=int, default=40)
    parser.add_argument("--minimize-budget", type=int, default=150)
    parser.add_argument("--no-minimize", action="store_true")
    opts = parser.parse_args(argv)

    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    counts: Counter[tuple[str, ...]] = Counter()
    variants: dict[tuple[str, ...], Counter[str]] = {}
    first: dict[tuple[str, ...], tuple[fuzzing.Mutant | None, fuzzing.Failure]] = {}
    inputs = {"envelope": 0, "registration": 0}
    for m in fuzzing.mutants(opts.count, opts.seed):
        inputs[m.kind] += 1
        try:
            failures = fuzzing.run(m)
        except Exception as exc:  # the harness itself: reported, never hidden
            failures = [fuzzing._exception("harness", exc, m.kind)]
        for f in failures:
            counts[f.signature] += 1
            variants.setdefault(f.signature, Counter())[
                m.expect_op or " ".join(e.op for e in m.effects)] += 1
            if f.signature not in first or len(m.data) < len(first[f.signature][0].data):
                first[f.signature] = (m, f)
    rng = random.Random(opts.seed)
    registrations = list(fuzzing.mutants(opts.audit_batches * opts.batch_size, opts.seed + 7,
                                         kind="registration"))
    seeds = [fuzzing.replay(s, []) for s in fuzzing.usable_seeds("registration")]
    for b in range(opts.audit_batches):
        batch = registrations[b * opts.batch_size:(b + 1) * opts.batch_size]
        batch += seeds + seeds  # clean ones, twice: the kinds the audit remembers
        for f in fuzzing.run_audit_order(batch, rng):
            counts[f.signature] += 1
            first.setdefault(f.signature, (None, f))
    elapsed = time.monotonic() - started

    classes = []
    for signature, (m, f) in sorted(first.items(), key=lambda kv: (kv[0][0], kv[0])):
        entry: dict[str, Any] = {"class": signature[0], "signature": list(signature),
                                 "count": counts[signature], "detail": f.detail,
                                 "variants": dict(variants.get(signature, Counter())
                                                  .most_common(20))}
        if m is not None:
            small = m if opts.no_minimize else fuzzing.minimize(
                m, signature, opts.minimize_budget)
            entry["example"] = small.describe()
            try:
                entry["example"]["observed"] = _observed(small)
            except Exception as exc:
                entry["example"]["observed"] = f"{type(exc).__name__}: {exc}"
            for g in fuzzing.run(small):
                if g.signature == signature:
                    entry["detail"] = g.detail
                    break
        ident = _class_id(signature)
        entry["file"] = f"{ident}.json"
        (out / entry["file"]).write_text(json.dumps(entry, indent=2, ensure_ascii=True) + "\n")
        classes.append(entry)
    summary = {"count": opts.count, "seed": opts.seed, "inputs": inputs,
               "audit_batches": opts.audit_batches, "seconds": round(elapsed, 1),
               "classes": [{"signature": c["signature"], "count": c["count"], "file": c["file"]}
                           for c in classes]}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=True) + "\n")

    print(f"{sum(inputs.values())} inputs ({inputs['envelope']} envelopes, "
          f"{inputs['registration']} registrations) and {opts.audit_batches} audit batches in "
          f"{elapsed:.0f} s; {len(classes)} failure classes; details in {out}")
    by_class: dict[str, list[dict[str, Any]]] = {}
    for c in classes:
        by_class.setdefault(c["class"], []).append(c)
    for name, entries in by_class.items():
        print(f"\n== {name}: {len(entries)} classes, {sum(e['count'] for e in entries)} inputs")
        for e in entries:
            print(f"  [{e['count']:4d}] {' | '.join(e['signature'][1:])}")
            example = e.get("example")
            if example:
                text = example["input"]
                shown = text if len(text) <= 400 else text[:400] + "..."
                print(f"         input ({example['seed']}, ops {example['effects']}): "
                      f"{shown!a}")
                print(f"         variants: {list(e['variants'])[:6]!a}")
                print(f"         expected: {example['expected']}  observed: "
                      f"{json.dumps(example.get('observed'), ensure_ascii=True)[:300]}")
            else:
                print(f"         {json.dumps(e['detail'], ensure_ascii=True)[:400]}")
    return 1 if classes else 0


if __name__ == "__main__":
    sys.exit(main())
