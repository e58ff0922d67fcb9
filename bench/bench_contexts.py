"""What a new sender's context costs inside an audit, and its share of a registration.

Usage: python bench/bench_contexts.py [--size 8000] [--rounds 3]
(run with the interpreter of an environment where the project is installed). Registrations
of bench/traffic.py's corpora are judged in this process as an audit's worker judges them
(``judge`` with the judged-by-kind shortcut), and the compiled engine's context step
(``_active_context``: the context review and the active context, on a miss of the
whole-context cache) is timed where it runs, between the other stages, so that its caches
are as cold as in an audit. Prints microseconds per registration: the whole judgement, the
context step, and within it the review and the active context, the median of ``--rounds``
rounds. Each round judges a corpus of senders of its own (another seed) with a Checker of
its own and the whole-context cache emptied, after a first round that is not counted: what
a process that has judged some thousands of registrations pays for new senders.

It reaches into private modules on purpose and is not a test (issue 20, item 2).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import traffic
from bench_check import machine

from ioa_semantic import Checker
from ioa_semantic.audit import kinds as _kinds
from ioa_semantic.audit.run import judge, kinds_for
from ioa_semantic.compiled import engine as _engine


def _timed(into: dict[str, float], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args)
        finally:
            into[name] += time.perf_counter() - start
    return timed


def one_round(lines: list[bytes]) -> dict[str, float]:
    """Microseconds per registration of each part, over ``lines`` judged once each."""
    spent = {"context": 0.0, "review": 0.0, "active": 0.0}
    # The review is review_contexts, or (from issue 20, item 2 on) inline_context_clean and
    # review_contexts where that declines.
    reviews = [name for name in ("review_contexts", "inline_context_clean")
               if hasattr(_engine, name)]
    originals = {name: getattr(_engine, name) for name in (
        "_active_context", "active_context", *reviews)}
    _engine._CONTEXTS.resize(0)  # every round starts with the context caches empty
    _engine._CONTEXTS.resize(64 << 20)
    context = _timed(spent, "context", originals["_active_context"])
    _engine._active_context = context  # type: ignore[assignment]
    _kinds._active_context = context  # type: ignore[assignment]
    for name in reviews:
        setattr(_engine, name, _timed(spent, "review", originals[name]))
    _engine.active_context = _timed(  # type: ignore[assignment]
        spent, "active", originals["active_context"])
    try:
        checker = Checker("cs-translation")
        kinds = kinds_for(checker)
        start = time.perf_counter()
        for data in lines:
            judge(checker, data, "-", None, kinds)
        total = time.perf_counter() - start
    finally:
        for name, function in originals.items():
            setattr(_engine, name, function)
        _kinds._active_context = originals["_active_context"]
    return {"registration": total / len(lines) * 1e6,
            **{name: value / len(lines) * 1e6 for name, value in spent.items()}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=8000, help="registrations per corpus")
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    import ioa_semantic

    print(f"machine: {machine()}; {Path(ioa_semantic.__file__).parent}")
    print("| corpus | registration µs | context µs | review µs | active context µs |")
    print("|---|---|---|---|---|")
    for name in ("5,000 senders", "each its own sender"):
        make = traffic.REGISTRATION_CORPORA[name]
        one_round(list(make(opts.size, traffic.SEED - 1)))
        rounds = [one_round(list(make(opts.size, traffic.SEED + i))) for i in range(opts.rounds)]
        cells = [f"{statistics.median(r[part] for r in rounds):.0f}"
                 for part in ("registration", "context", "review", "active")]
        print(f"| {name} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
