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
import subprocess
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


def test_a_late_span_in_a_round_begun_right_after_its_append_joins_its_run(
        tmp_path: Path) -> None:
    """The judge thread's round may begin the moment an append returns, before the request's
    handler goes on: the round must know the new segment's traces already (they are the
    spool's with the bytes), so it reads the retained segment of the same trace too."""
    from io import StringIO

    from starlette.testclient import TestClient

    from ioa_semantic.service.traces import Judge, create_app, judge_command
    from ioa_semantic.trace.spool import Segment, Spool

    manifests = Path(write_manifests(tmp_path, every_tool=False))
    store = tmp_path / "store"
    log = StringIO()

    class RacedSpool(Spool):
        """A spool whose every append is followed, at once, by a judging round: the judge
        thread winning the race against the request's handler."""

        def append(self, message: bytes, *args: object, **kwargs: object) -> Segment:
            segment = super().append(message, *args, **kwargs)  # type: ignore[arg-type]
            inputs = judge._inputs()
            if inputs:
                judge._round(inputs)
            return segment

    spool = RacedSpool(str(tmp_path / "spool"))
    command = judge_command(str(store), 300.0, ["--manifests", str(manifests)])
    judge = Judge(command, spool, 3600.0, log, retain=100000.0)
    client = TestClient(create_app(spool, judge))
    try:
        answer = client.post("/v1/traces", json=trace(3))
        assert answer.status_code == 200, answer.text
        late = trace(3, keep={"00f067aa0ba9020d"},
                     renamed={"00f067aa0ba9020d": "00f067aa0ba902ff"})
        answer = client.post("/v1/traces", json=late)
        assert answer.status_code == 200, answer.text
        # The judge thread's next rounds, until nothing is left to read.
        for _ in range(3):
            inputs = judge._inputs()
            if inputs:
                judge._round(inputs)
    finally:
        spool.close()
    assert "late spans" not in log.getvalue(), log.getvalue()
    # The run's first segment was retained: the late span joined its run.
    assert list(calls_by_run(store, tmp_path).values()) == [WHOLE + 1], log.getvalue()


def test_a_span_appended_while_a_round_starts_is_never_told_late(tmp_path: Path) -> None:
    """A round reads the segments it chose, as they were when it chose them: a late span
    appended between the choice and the judging process's reading (the active segment grew)
    was read without its run's retained segment, and told as late ("its spans have left the
    spool", counted in lateRuns) though that segment was there and a later round recorded it."""
    from io import StringIO

    from starlette.testclient import TestClient

    from ioa_semantic.service.traces import Judge, create_app, judge_command
    from ioa_semantic.trace.spool import Spool

    manifests = Path(write_manifests(tmp_path, every_tool=False))
    store = tmp_path / "store"
    log = StringIO()
    spool = Spool(str(tmp_path / "spool"))
    command = judge_command(str(store), 300.0, ["--manifests", str(manifests)])
    judge = Judge(command, spool, 3600.0, log, retain=100000.0)
    client = TestClient(create_app(spool, judge))
    try:
        assert client.post("/v1/traces", json=trace(3)).status_code == 200
        judge._round(judge._inputs())
        # Another trace's spans come; the judge chooses what its next round reads...
        assert client.post("/v1/traces", json=trace(4)).status_code == 200
        chosen = judge._inputs()
        # ... and the late span of the first trace comes before the judging process reads.
        late = trace(3, keep={"00f067aa0ba9020d"},
                     renamed={"00f067aa0ba9020d": "00f067aa0ba902ff"})
        assert client.post("/v1/traces", json=late).status_code == 200
        judge._round(chosen)
        for _ in range(3):
            inputs = judge._inputs()
            if inputs:
                judge._round(inputs)
    finally:
        spool.close()
    assert judge.late == 0 and "late spans" not in log.getvalue(), log.getvalue()
    assert sorted(calls_by_run(store, tmp_path).values()) == [WHOLE, WHOLE + 1], log.getvalue()
