"""The bomb suite: every shape of input that could make a stage superlinear, at sizes up to
the default limits, through both engines (issue: bounded cost).

Work is held to grow at most n log n: each shape's check is counted (tests/operations.py: the
lines run and the functions called, never a clock) at a quarter of its largest size and at its
largest, each less what a check of size 1 costs, and the ratio may not exceed what n log n
allows; the counts are the same on a busy machine, so no room for noise is needed. The
installed command is held to the memory bound at the largest size (a slow test: it runs each
shape as a process of its own). Times, and the 2 s the issue bounds them to, are
bench/bench_bombs.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from bombs import FAMILIES, largest, within_limits
from operations import caches_off, counted, growth, n_log_n_ratio, operations

from ioa_semantic import Checker, Limits, Verdict

from support import IOA_CHECK, PEAK_PROBE

AT = datetime(2026, 6, 1, tzinfo=UTC)
ENGINES = {name: Checker("cs-translation", engine=name, cache_size=0)
           for name in ("compiled", "reference")}
SIZES = {name: largest(build) for name, build in FAMILIES.items()}


@counted
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("shape", FAMILIES)
def test_work_grows_at_most_n_log_n(shape: str, engine: str) -> None:
    build, n = FAMILIES[shape], SIZES[shape]
    checker = ENGINES[engine]
    checker.check(build(1), at=AT)  # what a first check loads once is no work of the size

    def work(size: int) -> int:
        data = build(size)
        return operations(lambda: checker.check(data, at=AT))

    small = max(1, n // 4)
    with caches_off():
        assert growth(work, small, n) <= n_log_n_ratio(small, n), n


@pytest.mark.parametrize("shape", FAMILIES)
def test_each_shape_at_its_largest_is_judged_within_the_limits(shape: str) -> None:
    """The largest envelope of each shape passes every limit (so the suite measures the
    worst case, not a refusal), and one over it is refused with the limit's reason."""
    build, n = FAMILIES[shape], SIZES[shape]
    assert within_limits(build(n))
    beyond = build(n * 4)
    if within_limits(beyond):
        return  # a shape only the byte limit bounds (a long string): measured at 1 MiB
    decision = ENGINES["compiled"].check(beyond, at=AT)
    assert decision.verdict is Verdict.INVALID
    assert {f.code for f in decision.findings} <= {
        "json.too-large", "json.too-many-values", "jsonld.too-many-contexts",
        "jsonld.too-many-terms"}


@pytest.mark.parametrize(("limit", "data", "code"), [
    ("max_values", {"capabilityRefs": [f"cs:C{i}" for i in range(40)]}, "json.too-many-values"),
    ("max_contexts", {"@context": [{"a": "https://a.example/"}] * 3}, "jsonld.too-many-contexts"),
    ("max_terms", {"@context": {f"t{i}": f"https://t.example/{i}" for i in range(40)}},
     "jsonld.too-many-terms"),
])
@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_each_limit_is_refused_with_its_reason_and_can_be_raised(
        limit: str, data: dict[str, object], code: str, engine: str, tmp_path: Path) -> None:
    envelope = json.dumps(data).encode()
    tight = Checker("cs-translation", engine=engine, limits=Limits(**{limit: 2}))
    decision = tight.check(envelope, at=AT)
    assert [f.code for f in decision.findings] == [code]
    assert f"--{limit.replace('_', '-')}" in decision.findings[0].message
    loose = Checker("cs-translation", engine=engine, limits=Limits(**{limit: 100}))
    assert code not in {f.code for f in loose.check(envelope, at=AT).findings}
    path = tmp_path / "envelope.jsonld"
    path.write_bytes(envelope)
    for value, refused in (("2", True), ("100", False)):
        run = subprocess.run([IOA_CHECK, str(path), "--profile", "cs-translation",
                              "--format", "json", f"--{limit.replace('_', '-')}", value,
                              "--engine", engine, "--at", "2026-06-01T00:00:00Z"],
                             capture_output=True, text=True, timeout=120)
        codes = {r["code"] for r in json.loads(run.stdout)["reasons"]}
        assert (code in codes) is refused


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("shape", FAMILIES)
def test_the_installed_command_answers_each_shape_at_its_largest_within_memory(
        shape: str, engine: str, tmp_path: Path) -> None:
    """Under 300 MiB, as the issue bounds them, with an answer. The 2 s it also bounds them
    to is a time, which a loaded machine stretches: bench/bench_bombs.py measures it and
    marks a row over it; the growth is held above by counting."""
    path = tmp_path / "envelope.jsonld"
    path.write_bytes(FAMILIES[shape](SIZES[shape]))
    probe = subprocess.run(
        [sys.executable, "-c", PEAK_PROBE, IOA_CHECK, str(path), "--profile", "cs-translation",
         "--format", "json", "--engine", engine, "--at", "2026-06-01T00:00:00Z"],
        capture_output=True, text=True, timeout=300, env={**os.environ})
    peak_kib, status, size = probe.stdout.split()
    assert int(status) in (0, 1, 3, 4) and int(size) > 0
    assert int(peak_kib) < 300 * 1024, peak_kib
