"""bench/bench_impact.py runs, at a small size, and says what it measured (issue 40, item 3:
the figures in docs/performance.md come from it at 1,000,000)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_impact_bench_measures_each_way_of_each_change(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_impact.py"),
                           "--size", "120", "--log-size", "12", "--jobs", "1",
                           "--keep", str(tmp_path / "corpora")],
                          capture_output=True, text=True, timeout=600, check=True)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    measured = [r for r in rows if "way" in r]
    ways = {(r["corpus"], r["change"], r["way"].split(":")[0]) for r in measured}
    for corpus, changes in (("registrations", ("domain", "scheme")), ("log", ("trust", "domain"))):
        for change in changes:
            assert {(corpus, change, way) for way in ("naive", "impact", "floor")} <= ways
    assert all(r["seconds"] >= 0 and r["peak_mib"] > 0 for r in measured)
    said = {(r["corpus"], r["change"], r["way"]): r["said"] for r in measured}
    # A revision an audit does not read: every registration skipped, none differs.
    assert said[("registrations", "domain", "naive: judge everything twice")] == "0"
    assert said[("registrations", "domain", "impact")] == "0 of 120 judged again, 0 flipped"
    assert said[("registrations", "scheme", "impact")].startswith("120 of 120 judged again")
    # A second trusted issuer: no logged decision screened an artifact of it.
    assert said[("log", "trust", "impact")] == "0 of 12 judged again, 0 flipped"
    assert said[("log", "trust", "floor: the log read alone")] == "12"
    # The memo off: the same decisions judged again, each afresh.
    assert said[("log", "domain", "impact, memo off")] == (
        said[("log", "domain", "impact")].replace(" of 12", "") + " (memo off)")
