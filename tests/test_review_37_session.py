"""Review of the session's trace store and trace serve changes (review37): each test a defect
found, failing before its fix.

* A feed with ``--complete-only`` that is not trace serve's judge: a run stored with calls
  its input does not have is refused, exit 2, as docs/trace.md says ("for any other feed");
  the serve-only tolerance (told as late spans that "have left the spool") swallowed it.
* The service registered a request's trace ids with the judge only after the append had
  returned: a round that began in between read the new segment without the settled one
  holding the same trace's other spans, settled it, and the span (acknowledged, its run's
  segment still retained) was never recorded with its run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the serve extra is not installed")

from test_trace_formats import write_manifests
from test_trace_serve_segments import WHOLE, calls_by_run, trace

from support import IOA_CHECK


def _feed(path: Path, store: Path, manifests: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [IOA_CHECK, "trace", str(path), "--store", str(store), "--manifests", str(manifests),
         "--no-shapes", "--format", "json", *extra],
        capture_output=True, text=True, timeout=300)


def test_a_narrowing_feed_with_complete_only_is_refused_outside_trace_serve(
        tmp_path: Path) -> None:
    manifests = Path(write_manifests(tmp_path, every_tool=False))
    store = tmp_path / "store"
    whole, part = tmp_path / "whole.json", tmp_path / "part.json"
    whole.write_text(json.dumps(trace(4)))
    part.write_text(json.dumps(trace(4, keep={"00f067aa0ba90201", "00f067aa0ba9020d"})))
    first = _feed(whole, store, manifests, "--complete-only")
    assert first.returncode in (0, 1, 3), first.stderr
    second = _feed(part, store, manifests, "--complete-only")
    # The run is stored with calls this input lacks: not recorded, and an error (exit 2) as
    # for any feed but trace serve's judge; not a spool's late spans.
    assert second.returncode == 2, second.stderr
    assert "left the spool" not in second.stderr, second.stderr
    assert list(calls_by_run(store, tmp_path).values()) == [WHOLE]
