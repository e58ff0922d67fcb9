"""run.json's ``created_at`` (the seed: "ISO-8601 UTC timestamp") is read to the letter: a
date alone is no timestamp (it gave the session a made-up midnight), and every fraction
digit is kept (nine were cut to six). Through the installed command and its graph."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support import EXAMPLES, IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

RUN = EXAMPLES / "trace" / "mas-lab" / "run"
MANIFESTS = EXAMPLES / "trace" / "mas-lab" / "manifests"


def _run(tmp_path: Path, created_at: str) -> tuple[str, str]:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    meta = json.loads((run / "run.json").read_text())
    meta["created_at"] = created_at
    (run / "run.json").write_text(json.dumps(meta))
    events = [json.loads(line) for line in (run / "traces" / "events.jsonl").read_text().splitlines()]
    for event in events:  # no event times the session: created_at does
        event.pop("timestamp", None)
    (run / "traces" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    graph = tmp_path / "graph.nt"
    proc = subprocess.run([IOA_CHECK, "trace", str(run), "--manifests", str(MANIFESTS),
                           "--no-shapes", "--format", "json", "--emit-kg", str(graph)],
                          capture_output=True, timeout=120)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc.stdout.decode(), graph.read_text()


def test_a_date_alone_is_no_timestamp(tmp_path: Path) -> None:
    report, graph = _run(tmp_path, "2026-02-23")
    assert "trace.run-malformed" in report and "created_at" in report
    assert "1771804800" not in graph  # the made-up midnight


@pytest.mark.parametrize(("written", "seconds"), [
    ("2026-02-23T23:24:48.123456789Z", "1771889088.123456789"),
    ("2026-02-23T23:24:48.694866+00:00", "1771889088.694866"),
    ("2026-02-23 23:24:48", "1771889088"),
    ("2026-02-23T23:24:48+02:00", "1771881888"),
])
def test_a_timestamp_gives_the_session_its_start_to_every_digit(tmp_path: Path, written: str,
                                                                 seconds: str) -> None:
    report, graph = _run(tmp_path, written)
    assert "trace.run-malformed" not in report, report
    assert f'"{seconds}"' in graph, [line for line in graph.splitlines() if "startTime" in line]
