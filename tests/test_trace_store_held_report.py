"""The report of a feed whose store keeps its own copy of the runs (a private store, the
default) is made before the runs are recorded and held until they are (ioa_semantic/reporters/
held.py): the report's runs and audits are let go in between. Shown, it is the report a run
without the store gives; not shown when the runs cannot be recorded; held on disk when large,
and in memory where the temporary folder cannot take it (tests/test_review_memory_session.py
runs a feed so); a report the disk took and cannot give back is an environment's failure.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

from test_review_37_session import _feed
from test_trace import GOLDEN, MANIFESTS, TRACES
from test_trace_formats import write_manifests
from test_trace_serve_segments import trace
from test_trace_store import AT, feed, ioa

from ioa_semantic._exceptions import WriteFailed
from ioa_semantic.cli.main import main
from ioa_semantic.reporters import held
from ioa_semantic.reporters.held import HeldReport
from ioa_semantic.reporters.trace import REPORTERS
from ioa_semantic.trace import store as store_module
from ioa_semantic.trace.audit import audit
from ioa_semantic.trace.calls import Call, Run
from ioa_semantic.trace.declarations import Declarations
from ioa_semantic.trace.events import Fold, build, resolve
from ioa_semantic.trace.privacy import Disclosure, Private
from ioa_semantic.trace.state import consume

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")


@pytest.mark.parametrize("form", ["json", "text", "html"])
def test_a_private_feeds_report_is_the_report_without_a_store(tmp_path: Path, form: str) -> None:
    alone = ioa(["trace", GOLDEN, "--manifests", MANIFESTS, "--no-shapes", "--format", form],
                tmp_path)
    fed = feed([GOLDEN], tmp_path / "store", tmp_path, "--manifests", MANIFESTS, "--format",
               form)
    assert fed.returncode == alone.returncode == 3, fed.stderr
    assert fed.stdout == alone.stdout and fed.stdout


def test_a_feed_whose_runs_cannot_be_recorded_shows_no_report(tmp_path: Path) -> None:
    """A run stored with calls the input lacks is not recorded (exit 2): the report, made
    before, is not shown, as it was not when it was made after."""
    manifests = Path(write_manifests(tmp_path, every_tool=False))
    store = tmp_path / "store"
    whole, part = tmp_path / "whole.json", tmp_path / "part.json"
    whole.write_text(json.dumps(trace(4)))
    part.write_text(json.dumps(trace(4, keep={"00f067aa0ba90201", "00f067aa0ba9020d"})))
    first = _feed(whole, store, manifests)
    assert first.returncode in (0, 1, 3) and first.stdout, first.stderr
    second = _feed(part, store, manifests)
    assert second.returncode == 2 and "one invocation" in second.stderr, second.stderr
    assert second.stdout == ""


class _Terminal(io.StringIO):
    """A stream that says it is a terminal, as a person's standard output does."""

    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


def test_a_held_report_is_drawn_as_on_its_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """Held for a terminal, the text report is rich's drawing for the terminal, styles and
    all, not the plain text a file would get."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    source = resolve(str(GOLDEN))
    fold = Fold()
    consume(source, fold)
    disclose = Disclosure(None, False)
    run = build(source, fold, disclose)
    results = [(audit(run, Declarations(None, None, None), disclose), None)]
    direct, shown = _Terminal(), _Terminal()
    REPORTERS["text"](results, direct, disclose)
    with HeldReport(shown) as report:
        REPORTERS["text"](results, report, disclose)  # type: ignore[arg-type]
        assert report.isatty() and report.encoding == "utf-8"
        assert shown.getvalue() == ""  # nothing shown before show()
        report.show()
    assert "\x1b[" in direct.getvalue()
    assert shown.getvalue() == direct.getvalue()


def test_a_large_held_report_goes_to_disk_and_comes_back_whole() -> None:
    text = "".join(f"line {n} — ✓ \U0001f600 \udcff\n" for n in range(500_000))
    assert len(text) > held.HELD_IN_MEMORY
    out = io.StringIO()
    with HeldReport(out) as report:
        for start in range(0, len(text), 100_000):
            report.write(text[start:start + 100_000])
        assert report.on_disk
        report.show()
    assert out.getvalue() == text


class _FillingFile:
    """A temporary file on a disk that fills after ``room`` bytes: a short write, then the
    error a full disk gives."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.data = bytearray()
        self.at = 0

    def write(self, data: memoryview) -> int:
        if self.room == 0:
            raise OSError(28, "No space left on device")
        taken = bytes(data[:self.room])
        self.room -= len(taken)
        self.data += taken
        return len(taken)

    def seek(self, at: int) -> None:
        self.at = at

    def read(self, size: int) -> bytes:
        piece = bytes(self.data[self.at:self.at + size])
        self.at += len(piece)
        return piece

    def close(self) -> None:
        pass


@pytest.mark.parametrize("room", [None, 0, 10, 25, 200])
def test_a_report_the_temporary_folder_cannot_hold_is_held_in_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, room: int | None) -> None:
    """A temporary folder missing (``None``) or a disk that fills part way: the report is
    held in memory from then on, what the file took read back, and shown whole."""
    monkeypatch.setattr(held, "HELD_IN_MEMORY", 16)
    if room is None:
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    else:
        monkeypatch.setattr(tempfile, "TemporaryFile", lambda *a, **k: _FillingFile(room))
    pieces = [f"piece {n}: ✓ \udcff\n" for n in range(20)]
    out = io.StringIO()
    with HeldReport(out) as report:
        for piece in pieces:
            report.write(piece)
        assert not report.on_disk
        report.show()
    assert out.getvalue() == "".join(pieces)


def test_a_report_the_disk_took_but_cannot_give_back_is_an_environment_failure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Unreadable(_FillingFile):
        def read(self, size: int) -> bytes:
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(held, "HELD_IN_MEMORY", 16)
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda *a, **k: Unreadable(1 << 20))
    with HeldReport(io.StringIO()) as report:
        report.write("x" * 64)
        assert report.on_disk
        with pytest.raises(WriteFailed) as raised:
            report.show()
    assert raised.value.name == held.HOLDER


def test_the_reports_runs_are_let_go_before_the_stores_copies_are_judged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """When a private store's runs are judged, nothing holds the report's runs any longer:
    the calls the two share are held by the store's run alone (a long run's feed held both to
    its end). Counted by references, the one count nothing else moves: the run's calls are
    held by the store's run, the local name here, and getrefcount's own argument."""
    counts: list[int] = []
    judged = store_module.Feed.judged

    def counting(self: store_module.Feed, runs: list[Run], *more: Any) -> Any:
        calls = max(runs, key=lambda run: len(run.calls)).calls
        counts.append(sys.getrefcount(calls))
        del calls
        return judged(self, runs, *more)

    monkeypatch.setattr(store_module.Feed, "judged", counting)
    assert main(["trace", str(GOLDEN), "--manifests", str(MANIFESTS), "--no-shapes", "--at", AT,
                 "--store", str(tmp_path / "store")]) == 3
    assert capsys.readouterr().out
    assert counts == [3]


def _golden_run() -> Run:
    source = resolve(str(GOLDEN))
    fold = Fold()
    consume(source, fold)
    return build(source, fold, Disclosure(None, False))


def test_a_runs_calls_are_let_go_one_at_a_time_as_its_record_is_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A private store's record of a run is made taking the run out of the list given and
    turning its calls one at a time, so that each plain call is let go as its keyed copy is
    made (a long run was held twice: the whole tuple of plain calls until the last copy).
    Counted by references: a plain call being turned is held one more time when the test
    keeps the run than when nothing but the list does; were the tuple of calls held through
    the turning, both counts would be the same."""
    private = Private(bytes(range(32)))
    counts: list[list[int]] = []
    turn = store_module._private_call

    def counting(call: Call, disclose: Private) -> Call:
        counts[-1].append(sys.getrefcount(call))
        return turn(call, disclose)

    monkeypatch.setattr(store_module, "_private_call", counting)
    counts.append([])
    runs = [_golden_run()]
    records = store_module.private_runs(runs, private)
    assert runs == [] and len(records) == 1
    counts.append([])
    held = _golden_run()
    again = store_module.private_runs([held], private)
    assert again == records  # the same records, whoever holds the run
    alone, kept = counts
    assert len(alone) == len(held.calls) > 10
    assert [k - a for a, k in zip(alone, kept, strict=True)] == [1] * len(alone)


def test_runs_keep_their_order_as_their_records_are_made() -> None:
    private = Private(bytes(range(32)))
    runs = [_golden_run()._replace(run_id=f"run-{n}") for n in range(5)]
    wanted = [private.run(f"run-{n}") for n in range(5)]
    records = store_module.private_runs(runs, private)
    assert runs == [] and [record.run_id for record in records] == wanted


def test_a_report_for_the_null_device_is_held_nowhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """trace serve's judge writes its report to the null device: a report nothing reads is
    neither kept in memory nor written to a temporary file; one for a file is."""

    def no_file(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a temporary file was made")

    monkeypatch.setattr(held, "HELD_IN_MEMORY", 16)
    monkeypatch.setattr(tempfile, "TemporaryFile", no_file)
    with open(os.devnull, "w") as null, HeldReport(null) as report:
        for _ in range(100):
            report.write("a line of the report\n")
        assert report._pending == [] and not report.on_disk
        report.show()
    monkeypatch.setattr(held, "HELD_IN_MEMORY", 1 << 20)
    with (tmp_path / "out").open("w") as out, HeldReport(out) as report:
        report.write("a line of the report\n")
        report.show()
    assert (tmp_path / "out").read_text() == "a line of the report\n"
