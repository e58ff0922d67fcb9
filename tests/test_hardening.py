"""Hostile input: resource bombs answered quickly and within memory, or refused by a limit;
an audit over a folder whose files vanish, are folders, binary or truncated completes and
names them. Covers R-6.1-10, R-6.4-6, R-7.1-11 (issue: adversarial hardening)."""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest
from bombs import BOMBS
from operations import caches_off, growth, n_log_n_ratio, operations

from ioa_semantic import Checker, Verdict
from ioa_semantic.audit.inputs import documents
from ioa_semantic.audit.run import Audit

from support import registration_63

AT = datetime(2026, 6, 1, tzinfo=UTC)
CHECKER = Checker("cs-translation", cache_size=0)


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_each_bomb_is_answered_fast_within_memory_or_refused_by_a_limit(name: str) -> None:
    """Within 200 MiB, and in work (tests/operations.py: lines run and calls, counted, not
    timed) at most one operation per input byte and 10,000 besides: the worst bomb, @graph
    nested 60 deep, costs 0.7 a byte, a blow-up (exponential nesting, a quadratic scan) far
    more. The measured times, about 1 s at worst here, are in bench/bench_bombs.py."""
    data = BOMBS[name]()
    CHECKER.check(data, at=AT)  # what a first check loads once
    decisions = []
    assert operations(lambda: decisions.append(CHECKER.check(data, at=AT))) <= 10_000 + len(data)
    decision = decisions[0]
    tracemalloc.start()  # memory in a run of its own: tracing slows a check down tenfold
    CHECKER.check(data, at=AT)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 200 << 20, peak
    assert decision.verdict is not Verdict.COMPATIBLE or name == "a context with 10,000 terms"
    if decision.verdict is Verdict.INVALID:
        assert any(f.code.split(".")[0] in ("json", "jsonld", "envelope")
                   for f in decision.findings if f.severity == "error")


def test_many_envelopes_in_one_cli_run(tmp_path: Path) -> None:
    """200 envelopes in one run of the installed command, each answered; from 20 to 200 the
    work grows at most as n log n does (counted in process, not timed: an envelope that
    costs more for every one before it is what this catches). The subprocess's timeout is a
    hang guard only."""
    import contextlib
    import io
    import os
    import subprocess

    from ioa_semantic.cli.main import main

    from support import IOA_CHECK, dumps, envelope_62

    names = []
    for i in range(200):
        (tmp_path / f"e{i}.jsonld").write_bytes(dumps(envelope_62()))
        names.append(f"e{i}.jsonld")
    proc = subprocess.run([IOA_CHECK, *names, "--profile", "cs-translation", "--at",
                           "2026-06-01T00:00:00Z", "--format", "json"], cwd=tmp_path,
                          capture_output=True, timeout=120)
    assert proc.returncode == 0
    assert len(proc.stdout.splitlines()) == 200

    def work(count: int) -> int:
        argv = [*names[:count], "--profile", "cs-translation", "--at", "2026-06-01T00:00:00Z",
                "--format", "json"]
        with contextlib.redirect_stdout(io.TextIOWrapper(io.BytesIO(), encoding="utf-8")):
            return operations(lambda: main(argv))

    here = os.getcwd()
    try:
        os.chdir(tmp_path)
        work(1)  # what a first run loads once
        with caches_off():
            assert growth(work, 20, 200) <= n_log_n_ratio(20, 200)
    finally:
        os.chdir(here)


def test_an_audit_names_what_vanished_or_cannot_be_read(tmp_path: Path) -> None:
    good = json.dumps(registration_63())
    (tmp_path / "a.jsonld").write_text(good)
    (tmp_path / "b.jsonl").write_text(good + "\n" + good + "\n")
    (tmp_path / "c-vanishes.jsonld").write_text(good)
    (tmp_path / "d-folder.json").mkdir()  # a folder with a registration's name is walked
    (tmp_path / "e-binary.jsonld").write_bytes(bytes(range(256)))
    (tmp_path / "f-truncated.jsonld").write_text(good[: len(good) // 2])
    (tmp_path / "g.jsonld").write_text(good)
    audit = Audit(Checker("cs-translation"))
    results = []
    for item in documents([str(tmp_path)]):
        results.append(audit.registration(item[2], item[0], item[1]) if item[2] is not None
                       else audit.unreadable(item[0], item[1], item[3]))
        if item[0].endswith("b.jsonl") and item[1] == 1:
            (tmp_path / "c-vanishes.jsonld").unlink()  # gone between the walk and the read
    by_file = {(Path(r.source).name, r.position): (r.status, [f.code for f in r.reasons])
               for r in results}
    assert by_file == {
        ("a.jsonld", None): ("valid", []),
        ("b.jsonl", 0): ("valid", []),
        ("b.jsonl", 1): ("valid", []),
        ("c-vanishes.jsonld", None): ("invalid", ["json.unreadable"]),
        ("e-binary.jsonld", None): ("invalid", ["json.encoding"]),
        ("f-truncated.jsonld", None): ("invalid", ["json.syntax"]),
        ("g.jsonld", None): ("valid", []),
    }
