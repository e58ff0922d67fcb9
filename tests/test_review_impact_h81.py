"""A review of ``impact --audit-report`` with a hostile eye, each finding held here:

* a report of other inputs, or of these in another order, was compared as if it were theirs
  (a flip of a registration the inputs do not hold; a conflict the registrations added make
  with an input missed): the report's every registration is held to the inputs' (its place,
  and the IRI a valid one declares), and a report that is not theirs is exit 2 (docs/impact.md:
  "a report that is not of the inputs named" is a usage error);
* a report line nested past the recursion limit was a traceback, and a line of gigabytes
  was read whole (a MemoryError): each is a line that is not the audit's, exit 2;
* members of the wrong type (``"source": 1``, ``"index": false``) were read as places.

And of ``audit``: a ``--state`` that is a device, a named pipe or a user's file was read
whole, waited on, or called a state to delete; a journal replaced by a named pipe hung the
resume; standard input closed (``<&-``) was a traceback; SIGTERM left the report written
aside (``.partial``) in the user's folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from test_impact_registrations import SHIPPED, TRUSTED, registration

from ioa_semantic.cli.main import main
from ioa_semantic.impact import registrations as impact_registrations

from support import IOA_CHECK, terminated_while_writing_aside, write_registrations


@pytest.fixture
def two(tmp_path: Path) -> dict[str, Path]:
    a = tmp_path / "a.jsonl"
    a.write_text(registration("cs:X") + "\n" + registration("cs:Y", note="n") + "\n")
    b = tmp_path / "b.jsonl"
    b.write_text(registration("cs:P") + "\n" + registration("cs:Q") + "\n")
    c = tmp_path / "c.jsonl"
    c.write_text(registration("cs:P", outputs=["application/pdf"]) + "\n")
    notes = tmp_path / "notes.ttl"
    notes.write_text(SHIPPED.replace(TRUSTED, TRUSTED[:-1] + '; iop:ignorableTerm "note" .'))
    out = {"a": a, "b": b, "c": c, "notes": notes}
    for name in ("a", "b"):
        report = tmp_path / f"{name}-report.jsonl"
        main(["audit", str(out[name]), "--profile", "cs-translation", "--format", "json",
              "--output", str(report), "--jobs", "1"])
        out[f"{name}-report"] = report
    return out


def _impact(report: Path, inputs: Path, *change: str) -> int:
    return main(["impact", "--audit-report", str(report), "--registrations", str(inputs),
                 "--audited-profile", "cs-translation", *change])


def test_a_report_of_other_inputs_is_refused_whatever_the_change(
        two: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    for change in (["--profile", str(two["notes"])], ["--add-registrations", str(two["c"])]):
        assert _impact(two["a-report"], two["b"], *change) == 2, change
        err = capsys.readouterr().err
        assert "the audit report is not of these inputs" in err, err
    # The report of these inputs: compared, and the conflict the added one makes found.
    assert _impact(two["b-report"], two["b"], "--add-registrations", str(two["c"])) == 1
    assert "conflict" in capsys.readouterr().out


def test_a_report_in_another_order_is_compared_place_by_place_or_refused(
        two: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Judged again, each registration is compared with the report's line for its place,
    wherever that line stands; where the registrations are not judged again (registrations
    added), the report must follow the inputs line by line. And an input named twice is
    two passes over it, in the report as in the inputs."""
    lines = two["b-report"].read_text().splitlines(keepends=True)
    swapped = two["b-report"].with_name("swapped.jsonl")
    swapped.write_text(lines[1] + lines[0] + "".join(lines[2:]))
    assert _impact(two["b-report"], two["b"], "--profile", str(two["notes"])) == 0
    said = capsys.readouterr().out
    assert _impact(swapped, two["b"], "--profile", str(two["notes"])) == 0
    assert capsys.readouterr().out == said.replace(str(two["b-report"]), str(swapped))
    assert _impact(swapped, two["b"], "--add-registrations", str(two["c"])) == 2
    assert "is not where the report has it" in capsys.readouterr().err
    twice = two["b-report"].with_name("twice.jsonl")
    main(["audit", str(two["b"]), str(two["b"]), "--profile", "cs-translation", "--format",
          "json", "--output", str(twice), "--jobs", "1"])
    assert main(["impact", "--audit-report", str(twice), "--registrations", str(two["b"]),
                 "--registrations", str(two["b"]), "--audited-profile", "cs-translation",
                 "--profile", str(two["notes"])]) == 0


@pytest.mark.parametrize("line", [
    "[" * 100_000 + "]" * 100_000,
    '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
    '{"source": 1, "index": 0, "id": null, "status": "valid", "reasons": []}',
    '{"source": "b.jsonl", "index": false, "id": null, "status": "valid", "reasons": []}',
    '{"source": "b.jsonl", "index": 0, "id": 5, "status": "valid", "reasons": []}',
])
def test_a_hostile_report_line_is_a_usage_error_never_a_traceback(
        two: dict[str, Path], capsys: pytest.CaptureFixture[str], line: str) -> None:
    report = two["b-report"].with_name("hostile.jsonl")
    report.write_text(line + "\n")
    assert _impact(report, two["b"], "--profile", str(two["notes"])) == 2
    err = capsys.readouterr().err
    assert "not a line of ioa-check audit --format json" in err and "Traceback" not in err


def test_a_report_line_past_the_bound_is_refused_unread(
        two: dict[str, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(impact_registrations, "_MAX_REPORT_LINE", 4096)
    report = two["b-report"].with_name("long.jsonl")
    report.write_text(json.dumps({"source": "b.jsonl", "pad": "x" * 10_000}) + "\n")
    assert _impact(report, two["b"], "--profile", str(two["notes"])) == 2
    assert "a line longer than 4096 bytes" in capsys.readouterr().err


# --- audit --------------------------------------------------------------------------------


def _audit(cwd: Path, *args: str, stdin: int | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([IOA_CHECK, "audit", *args], cwd=cwd, capture_output=stdin is None,
                          stdin=stdin, timeout=60, check=False)


@pytest.mark.parametrize("state", ["/dev/zero", "fifo", "registration.json", "key.pem"])
def test_a_state_that_is_no_state_is_refused_unread_and_never_to_be_deleted(
        tmp_path: Path, state: str) -> None:
    """A device is never read whole, a named pipe never waited on, and a user's file named as
    the state is not called a state to delete: exit 2, one line, and no output made."""
    (tmp_path / "registration.json").write_text(registration("cs:X"))
    (tmp_path / "key.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    if state == "fifo":
        os.mkfifo(tmp_path / "fifo")
    proc = _audit(tmp_path, "registration.json", "--profile", "cs-translation", "--format",
                  "json", "--output", "out.jsonl", "--state", state)
    err = proc.stderr.decode()
    assert (proc.returncode, proc.stdout) == (2, b""), err
    assert f"cannot resume from {state}" in err and "give --state a path of its own" in err
    assert len(err.strip().splitlines()) == 1
    # Never told to delete it; a file that is not JSON may be a state cut short: only then.
    assert "delete" not in err or "if it is this audit's state, delete" in err
    assert not (tmp_path / "out.jsonl").exists()


def test_a_journal_that_is_a_named_pipe_is_refused_on_resume(tmp_path: Path) -> None:
    write_registrations(tmp_path / "r.jsonl", 100_000)
    args = ["r.jsonl", "--profile", "cs-translation", "--format", "json", "--output",
            "out.jsonl", "--state", "st.json", "--jobs", "1"]
    run = subprocess.Popen([IOA_CHECK, "audit", *args], cwd=tmp_path,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while run.poll() is None and not (tmp_path / "st.json").exists():
        pass  # until the run has made a checkpoint of its own
    run.kill()
    run.wait()
    assert run.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    (tmp_path / "st.json.index").unlink()
    os.mkfifo(tmp_path / "st.json.index")
    proc = _audit(tmp_path, *args)
    assert proc.returncode == 2 and b"is not a regular file" in proc.stderr, proc.stderr


def test_standard_input_closed_is_a_result_that_says_so(tmp_path: Path) -> None:
    proc = subprocess.run(f"exec {IOA_CHECK} audit - --profile cs-translation --format json "
                          "<&-", shell=True, cwd=tmp_path, capture_output=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    first = json.loads(proc.stdout.splitlines()[0])
    assert [r["message"] for r in first["reasons"]] == [
        "-: reading stopped: standard input is closed"]


def test_sigterm_leaves_no_partial_file_in_the_users_folder(tmp_path: Path) -> None:
    """``timeout``, a cancelled CI job and ``systemctl stop`` send SIGTERM: the report
    written aside is removed on the way out, as on SIGINT (exit 143)."""
    write_registrations(tmp_path / "r.jsonl", 100_000)
    assert terminated_while_writing_aside(
        ["audit", "r.jsonl", "--profile", "cs-translation", "--format", "json", "--output",
         "report.jsonl", "--jobs", "1"], tmp_path) == 143
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl"]


def test_json_files_named_twice_are_two_passes_in_one_batch(
        two: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A batch holds every file's items but JSON Lines': a .json file named twice puts two
    registrations at one place in it, each compared once (a second pass was compared with
    no result, then the report refused as not of its inputs)."""
    (tmp_path / "p.json").write_text(registration("cs:P"))
    (tmp_path / "q.json").write_text(registration("cs:Q", note="n"))
    inputs = [str(tmp_path / name) for name in ("p.json", "q.json", "p.json", "q.json")]
    report = tmp_path / "twice-report.jsonl"
    main(["audit", *inputs, "--profile", "cs-translation", "--format", "json", "--output",
          str(report), "--jobs", "1"])
    capsys.readouterr()
    named = [arg for path in inputs for arg in ("--registrations", path)]
    assert main(["impact", "--audit-report", str(report), *named, "--audited-profile",
                 "cs-translation", "--profile", str(two["notes"]), "--format", "json"]) == 1
    out = capsys.readouterr().out
    lines = [json.loads(line) for line in out.splitlines()]
    flips = [line for line in lines if "transition" in line]
    assert [f["transition"] for f in flips] == ["invalid -> valid"] * 2
    assert all([r["code"] for r in f["after"]["reasons"]] == ["jsonld.ignored-term"]
               for f in flips), flips
    assert lines[-1]["summary"]["flipped"] == 2
