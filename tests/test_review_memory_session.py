"""A private store's feed holds its report until the runs are recorded (ioa_semantic/reporters/
held.py), on disk past a few MiB. The temporary folder is the environment's, and a feed did not
use it before: a feed whose temporary folder cannot hold the report judges, records and shows
the report as a feed did before it was held, with the same exit status.

trace serve's judge is such a feed: its report goes to /dev/null, a spool's round of thousands
of traces makes a report past the memory part, and a service's temporary folder may be
read-only (a container's root) while its store is not.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

from test_trace import GOLDEN, MANIFESTS, TRACES
from test_trace_store import AT

from ioa_semantic.cli.main import main
from ioa_semantic.reporters import held

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")


def test_a_feed_whose_temporary_folder_cannot_hold_the_report_is_judged_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    args = ["trace", str(GOLDEN), "--manifests", str(MANIFESTS), "--no-shapes", "--format",
            "json"]
    assert main(args) == 3
    alone = capsys.readouterr().out
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    monkeypatch.setattr(held, "HELD_IN_MEMORY", 16)  # the report goes past it
    status = main([*args, "--at", AT, "--store", str(tmp_path / "store")])
    out, err = capsys.readouterr()
    assert (status, err) == (3, "")
    assert out == alone
