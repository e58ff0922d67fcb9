"""Where a warm compiled check spends its time, stage by stage.

Usage: python bench/bench_stages.py [--rounds N]
(run with the interpreter of an environment where the project is installed; needs ../shared
for the 12.1 case). Each stage is timed on the output of the one before, in one loop that
runs them in order; "check" is the whole ``Checker.check()`` with the decision
cache off. The stages do not add up to the whole exactly: the rest is the checker's own
bookkeeping (the dependencies block, the Decision itself). An envelope the compiled
decision gives way on (it has a reason to give) takes the index and the eight queries' rows
instead; this map is of the common, compatible envelope.

This is the map for the hot-path work (issue 5): it says which stage a change must shrink.
It reaches into private modules on purpose and is not a test.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime

from bench_check import CASE, ENVELOPE_62, PARAMS, machine

from ioa_semantic import Checker
from ioa_semantic.compiled import engine as compiled_engine
from ioa_semantic.compiled import reader, walk
from ioa_semantic.compiled.engine import CompiledEngine
from ioa_semantic.pipeline import decision as _decision
from ioa_semantic.pipeline.shapes import Located

AT = datetime(2026, 6, 1, tzinfo=UTC)


def stages(checker: Checker, data: bytes, params: dict[str, str],
           rounds: int) -> list[tuple[str, float]]:
    """Mean microseconds of each stage, run in sequence as a check runs them.

    Timing the stages interleaved, not each in a loop of its own, keeps the caches as cold
    or warm as they are in a real check; a stage alone in a tight loop looks faster.
    """
    engine = checker.stages
    assert isinstance(engine, CompiledEngine), "the stages are the compiled engine's"
    shapes, policy, limits = engine.compiled_shapes, checker.policy, checker.limits
    decision = engine.decision
    single = shapes.single_valued["envelope"]
    names = ("intake: orjson read (proven on the walk)", "expansion: context review (cached)",
             "expansion: restricted expand", "shapes: compiled conformance",
             "baseline: extra types, ambiguous bindings", "decision: task parameters",
             "decision: compiled (tables)")
    totals = [0.0] * len(names)
    whole = 0.0
    clock = time.perf_counter
    for round_ in range(rounds + 300):
        t0 = clock()
        document, _ = reader.read_unproven(data, limits)
        t1 = clock()
        reviewed = compiled_engine.cached_active_context(document["@context"], policy)
        assert reviewed is not None, "the envelope is not on the compiled path"
        active = reviewed[0]
        t2 = clock()
        expanded = walk.expand_restricted(document, active, policy.allowed_schemes, single)
        assert expanded is not None
        node, nodes, _, reached = expanded
        t3 = clock()
        assert shapes.conforms(shapes.shapes.envelope, reached)
        t4 = clock()
        located = tuple(map(Located._make, nodes))
        assert not compiled_engine._beyond_the_shapes(located, reached, "envelope",
                                                checker.profile.permitted_types)
        t5 = clock()
        task = _decision.task_from(node, params)
        t6 = clock()
        assert decision.evaluate(node, task, AT) is not None, "the decision gave way"
        t7 = clock()
        checker.check(data, params=params, at=AT)
        t8 = clock()
        if round_ >= 300:  # the first rounds warm up
            marks = (t0, t1, t2, t3, t4, t5, t6, t7)
            for index in range(len(names)):
                totals[index] += marks[index + 1] - marks[index]
            whole += t8 - t7
    return [("check (whole)", whole / rounds * 1e6),
            *((name, total / rounds * 1e6) for name, total in zip(names, totals, strict=True))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3000)
    opts = parser.parse_args()
    print(f"machine: {machine()}")
    inputs = [("6.2 envelope, profile only", ENVELOPE_62.read_bytes(), {}, {})]
    if CASE.exists():
        inputs.append(("12.1 case, provider + artifact", (CASE / "envelope.jsonld").read_bytes(),
                       PARAMS, {"capabilities": [CASE / "provider.jsonld"],
                                "alignments": [CASE / "align0.json"]}))
    for name, data, params, offered in inputs:
        checker = Checker("cs-translation", cache_size=0, **offered)
        rows = stages(checker, data, params, opts.rounds)
        whole = rows[0][1]
        print(f"\n{name}: mean microseconds over {opts.rounds} rounds")
        for stage, micros in rows:
            print(f"  {stage:40} {micros:8.1f}  {micros / whole:6.1%}")


if __name__ == "__main__":
    main()
