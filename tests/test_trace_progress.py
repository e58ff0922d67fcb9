"""A long trace feed shows how far it is on a terminal, and nothing elsewhere (issue 37,
item 5): lines read, the input, the rate, on stderr, gone when the report is written."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import trace_runs

from support import IOA_CHECK


def _run(tmp_path: Path) -> tuple[Path, Path]:
    spec = trace_runs.Spec("long", trace_runs.BASE_TIME,
                           {"finder": ["search"] * 300, "booker": ["reserve"] * 300})
    return trace_runs.write_run(tmp_path, spec), trace_runs.write_manifests(tmp_path / "m")


def test_progress_is_shown_on_a_terminal(tmp_path: Path) -> None:
    folder, manifests = _run(tmp_path)
    leader, follower = pty.openpty()
    report = tmp_path / "report.jsonl"
    try:
        # The report to a file: a pipe left unread while the terminal is read would fill.
        with report.open("wb") as out:
            proc = subprocess.Popen([IOA_CHECK, "trace", str(folder), "--manifests",
                                     str(manifests), "--no-shapes", "--format", "json",
                                     "--batch-size", "50"], stdout=out, stderr=follower,
                                    env={**os.environ, "COLUMNS": "160", "TERM": "xterm"})
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other side closed: the process ended
                break
            if not chunk:
                break
            shown += chunk
        proc.wait(timeout=120)
    finally:
        os.close(leader)
    assert proc.returncode in (0, 1, 3) and report.read_bytes().strip()
    assert b"lines read, input 1 of 1" in shown and b"lines/s" in shown, shown[-400:]


def test_no_progress_when_stderr_is_no_terminal(tmp_path: Path) -> None:
    folder, manifests = _run(tmp_path)
    proc = subprocess.run([IOA_CHECK, "trace", str(folder), "--manifests", str(manifests),
                           "--no-shapes", "--batch-size", "50"], capture_output=True,
                          timeout=120)
    assert b"lines read" not in proc.stderr and b"lines/s" not in proc.stdout
