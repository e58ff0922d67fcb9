"""A resumed audit (``--state``) writes only into files its run wrote.

A state proves its output and journal by their recorded prefixes; a run killed before it had
written anything records empty prefixes, which any file matches. Such a file must then begin
as the run writes it (an audit report, a journal): another ``--output`` or a user's file put
at the journal's path is refused (exit 2), byte for byte as it was, and so is a link at the
journal's path. A file whose bytes prove it the run's own resumes wherever it is now (copied,
moved, restored from a backup). And a report is never one of the audit's own inputs, which a
resumed run, keeping its output, would read forever.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_audit import _regs, _run

from support import IOA_CHECK

ARGS = ["audit", "regs", "--profile", "cs-translation", "--format", "json", "--jobs", "1",
        "--state", "state.json"]


@pytest.fixture
def killed_early(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """A run killed after its first piece, which held only blank lines: its state records an
    output and a journal of 0 bytes."""
    from ioa_semantic.audit import inputs as _inputs

    monkeypatch.setattr(_inputs, "_BLOCK_BYTES", 4096)
    monkeypatch.chdir(tmp_path)
    regs = tmp_path / "regs"
    regs.mkdir()
    (regs / "a.jsonl").write_text("\n" * 12_000)  # three pieces of nothing
    (regs / "b.jsonl").write_text(_regs(40))
    status, err = _run([*ARGS, "--output", "out.jsonl"], capsys, kill_after=1)
    assert status is None, err
    state: dict[str, Any] = json.loads(Path("state.json").read_text())
    assert state["output"]["length"] == 0 and state["journal"]["length"] == 0
    return state


def _refused(capsys: pytest.CaptureFixture[str], args: list[str], *kept: Path) -> str:
    before = {path: path.read_bytes() for path in kept}
    status, err = _run(args, capsys)
    assert status == 2, err
    assert {path: path.read_bytes() for path in kept} == before
    return err


def test_another_output_is_refused_not_overwritten(
        killed_early: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    thesis = Path("thesis.txt")
    thesis.write_text("my thesis, chapter 1\n")
    err = _refused(capsys, [*ARGS, "--output", "thesis.txt"], thesis, Path("state.json"))
    assert "thesis.txt holds what its run did not write" in err


def test_a_link_at_the_journals_path_is_refused_not_followed(
        killed_early: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    victim = Path("victim.txt")
    victim.write_text("precious\n")
    os.remove("state.json.index")
    os.symlink("victim.txt", "state.json.index")
    err = _refused(capsys, [*ARGS, "--output", "out.jsonl"], victim, Path("state.json"))
    assert "is a symbolic link, never followed" in err
    assert os.path.islink("state.json.index")


def test_a_users_file_at_the_journals_path_is_refused(
        killed_early: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    # Made while the journal is there, so it is another file (another inode) for certain.
    Path("notes").write_text("my notes\n")
    os.replace("notes", "state.json.index")
    err = _refused(capsys, [*ARGS, "--output", "out.jsonl"], Path("state.json.index"))
    assert "state.json.index (the journal of state.json) holds what its run did not write" in err


def test_an_output_and_journal_copied_elsewhere_resume(
        killed_early: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Moved to another disk or restored from a backup, the files are new ones with the same
    bytes: what they hold proves them, and the audit resumes to its uninterrupted report."""
    status, _ = _run([*ARGS, "--output", "out.jsonl"], capsys, kill_after=4)
    assert status is None
    state = json.loads(Path("state.json").read_text())
    assert state["output"]["length"] > 0 and state["journal"]["length"] > 0
    for name in ("out.jsonl", "state.json.index"):
        Path("copy").write_bytes(Path(name).read_bytes())
        os.replace("copy", name)
    status, err = _run([*ARGS, "--output", "out.jsonl"], capsys)
    assert err == ""
    resumed = Path("out.jsonl").read_text()
    status_whole, _ = _run([*ARGS[:-2], "--output", "whole.jsonl"], capsys)
    assert (status, resumed) == (status_whole, Path("whole.jsonl").read_text())


@pytest.mark.parametrize("kept", ["out.jsonl", "state.json.index"])
def test_a_users_file_in_place_of_an_empty_prefix_is_refused_even_with_its_inode(
        killed_early: dict[str, Any], capsys: pytest.CaptureFixture[str], kept: str) -> None:
    """A file removed and made again may get its inode back (Linux often hands it out
    again): what it holds must then begin as the run writes it, which a user's does not."""
    stat = os.stat(kept)
    with open(kept, "r+b") as handle:  # the same inode, the user's content
        handle.truncate(0)
        handle.write(b"my thesis, chapter 1\n")
    assert os.stat(kept).st_ino == stat.st_ino
    err = _refused(capsys, [*ARGS, "--output", "out.jsonl"], Path(kept))
    assert "holds what its run did not write" in err


def test_the_same_output_resumes_to_the_uninterrupted_report(
        killed_early: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    status, err = _run([*ARGS, "--output", "out.jsonl"], capsys)
    assert err == ""
    resumed = Path("out.jsonl").read_text()
    status_whole, _ = _run([*ARGS[:-2], "--output", "whole.jsonl"], capsys)
    assert (status, resumed) == (status_whole, Path("whole.jsonl").read_text())


def test_an_output_that_is_an_input_is_refused_before_any_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    Path("regs.jsonl").write_text(_regs(7))
    assert _run(["audit", "regs.jsonl", "--profile", "cs-translation", "--format", "json",
                 "--output", "rep.jsonl"], capsys)[0] == 1
    report = Path("rep.jsonl")
    for more in ([], ["--state", "st.json"]):
        err = _refused(capsys, ["audit", "regs.jsonl", "rep.jsonl", "--profile",
                                "cs-translation", "--format", "json", "--output", "rep.jsonl",
                                *more], report)
        assert "is also an input of the audit" in err
        assert not Path("st.json").exists()


def _audit_to(cwd: Path, args: list[str], stdout_path: str | None = None,
              append: bool = False) -> subprocess.CompletedProcess[bytes]:
    command = [IOA_CHECK, "audit", *args, "--profile", "cs-translation", "--format", "json"]
    if stdout_path is None:
        return subprocess.run(command, cwd=cwd, capture_output=True, timeout=60)
    with open(cwd / stdout_path, "ab" if append else "wb") as out:
        return subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.PIPE, timeout=60)


def test_a_report_the_walk_of_a_folder_input_would_read_is_refused(tmp_path: Path) -> None:
    """With --state the report grows in place: inside a folder the audit walks, it was read
    as it was written, and grew without end (149,600 lines in 30 s); so was standard output
    sent into such a folder, or appended to an input."""
    regs = tmp_path / "regs"
    regs.mkdir()
    (regs / "a.jsonl").write_text(_regs(7))
    before = (regs / "a.jsonl").read_bytes()
    refused = [
        _audit_to(tmp_path, ["regs", "--output", "regs/out.jsonl", "--state", "st.json"]),
        _audit_to(tmp_path, ["regs"], stdout_path="regs/out.jsonl"),
        _audit_to(tmp_path, ["regs/a.jsonl"], stdout_path="regs/a.jsonl", append=True),
    ]
    for proc in refused:
        assert proc.returncode == 2, proc.stderr
        assert b"would be read as it is written" in proc.stderr or (
            b"is also an input of the audit" in proc.stderr)
    assert (regs / "a.jsonl").read_bytes() == before
    assert not (tmp_path / "st.json").exists()
    # Without --state the report is written aside and renamed: the walk never meets it.
    whole = _audit_to(tmp_path, ["regs", "--output", "regs/report.jsonl"])
    assert whole.returncode == 1, whole.stderr
    assert len((regs / "report.jsonl").read_text().splitlines()) == 8
