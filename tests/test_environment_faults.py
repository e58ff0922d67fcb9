"""Environment faults are not bugs (contract section 2, exit status 74).

A full disk, an output in a folder that is missing or read-only, /dev/full: the run ends with
exit status 74 and one line on stderr naming the file, never a traceback and never 70 (an
internal error); an audit with ``--state`` leaves its state as the last checkpoint left it,
so that the same command, with space again, resumes to the whole output. A reader that went
away is still 141 (tests/test_cli.py).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import AT, EXAMPLES, IOA_CHECK, registration_63

AUDIT = [IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation", "--format", "json",
         "--jobs", "1"]


def _registrations(path: Path, count: int) -> None:
    registration = registration_63()
    with path.open("w") as handle:
        for i in range(count):
            registration["@id"] = f"cs:Capability{i % 3000}"
            registration["label"] = f"capability {i}"
            registration["inputs"] = ["text"] if i % 101 == 7 else ["text/plain"]
            handle.write(json.dumps(registration) + "\n")


def _run(args: list[str], cwd: Path, **options: Any) -> subprocess.CompletedProcess[bytes]:
    options.setdefault("stdout", subprocess.PIPE)
    options.setdefault("stderr", subprocess.PIPE)
    proc = subprocess.run(args, cwd=cwd, timeout=120, **options)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc


def _one_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    err = proc.stderr.decode()
    assert err.count("\n") == 1, err
    return err


# --- /dev/full -------------------------------------------------------------------------------


needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")


@needs_dev_full
@pytest.mark.parametrize("state", [[], ["--state", "s.json"]], ids=["plain", "state"])
def test_an_audit_into_dev_full_is_exit_74_naming_it(tmp_path: Path, state: list[str]) -> None:
    _registrations(tmp_path / "r.jsonl", 50)
    proc = _run([*AUDIT, "--output", "/dev/full", *state], tmp_path)
    if state:
        # A resumable run reads its output back: a device is refused before anything is
        # written (usage), not failed on as the environment's "Invalid argument".
        assert proc.returncode == 2
        assert _one_line(proc).startswith("ioa-check: --output /dev/full is a stream")
        return
    assert proc.returncode == 74
    assert proc.stderr == b"ioa-check: cannot write /dev/full: No space left on device\n"


@needs_dev_full
def test_an_audit_on_stdout_into_dev_full_is_exit_74(tmp_path: Path) -> None:
    _registrations(tmp_path / "r.jsonl", 50)
    with open("/dev/full", "wb") as full:
        proc = _run(AUDIT, tmp_path, stdout=full)
    assert proc.returncode == 74
    assert proc.stderr == b"ioa-check: cannot write standard output: No space left on device\n"


@needs_dev_full
@pytest.mark.parametrize("form", ["json", "text"])
def test_a_check_into_dev_full_is_exit_74(tmp_path: Path, form: str) -> None:
    """The plain check: its results are flushed before the quick exit (see _cli.entry), so a
    stdout that takes nothing is said, not an internal error."""
    with open("/dev/full", "wb") as full:
        proc = _run([IOA_CHECK, str(EXAMPLES / "envelope-6.2.jsonld"), "--profile",
                     "cs-translation", "--at", AT, "--format", form], tmp_path, stdout=full)
    assert proc.returncode == 74
    assert proc.stderr == b"ioa-check: cannot write standard output: No space left on device\n"


COMMANDS_ON_STDOUT = {
    "trace": ["trace", str(EXAMPLES / "trace" / "mas-lab" / "run"), "--no-shapes"],
    "trace json": ["trace", str(EXAMPLES / "trace" / "mas-lab" / "run"), "--no-shapes",
                   "--format", "json"],
    "lint": ["lint", "--profile", "cs-translation"],
    "list": ["check", "--list"],
    "version": ["--version"],
    "keygen": ["keygen"],  # bytes, through sys.stdout.buffer
}


@needs_dev_full
@pytest.mark.parametrize("closed", [False, True], ids=["dev-full", "closed"])
@pytest.mark.parametrize("command", sorted(COMMANDS_ON_STDOUT))
def test_every_command_on_a_stdout_that_takes_nothing_is_exit_74(
        tmp_path: Path, command: str, closed: bool) -> None:
    """Each command's standard output goes through one place (cli.main): a full disk, or a
    process started without a standard output (``>&-``), is said and exit 74. The trace and
    lint reports were a traceback and exit 70, a closed one exit 1 ("incompatible")."""
    args = [IOA_CHECK, *COMMANDS_ON_STDOUT[command]]
    if closed:
        proc = _run(args, tmp_path, stdout=None, pass_fds=(), preexec_fn=lambda: os.close(1))
        reason = os.strerror(errno.EBADF)
    else:
        with open("/dev/full", "wb") as full:
            proc = _run(args, tmp_path, stdout=full)
        reason = os.strerror(errno.ENOSPC)
    assert proc.returncode == 74, proc.stderr
    assert proc.stderr == f"ioa-check: cannot write standard output: {reason}\n".encode()


def test_a_process_without_standard_error_keeps_its_exit_status(tmp_path: Path) -> None:
    """Started without a standard error (``2>&-``), a command cannot say what failed; its
    exit status still says it (it was 1, "incompatible", whatever happened)."""
    def status(args: list[str], **options: Any) -> int:
        return subprocess.run(args, cwd=tmp_path, timeout=120, preexec_fn=lambda: os.close(2),
                              **options).returncode

    assert status([IOA_CHECK, "ok.jsonld", "--profile", "no-such-profile"]) == 2
    envelope = [IOA_CHECK, str(EXAMPLES / "envelope-6.2.jsonld"), "--profile",
                "cs-translation", "--at", AT]
    assert status(envelope, stdout=subprocess.DEVNULL) == 0
    if os.path.exists("/dev/full"):
        with open("/dev/full", "wb") as full:
            assert status(envelope, stdout=full) == 74


def test_a_large_report_on_a_stdout_that_takes_part_of_it_is_exit_74(tmp_path: Path) -> None:
    """An HTML trace report of a long run is one text of megabytes: written at once, the
    part a file size limit let through was counted as the whole, and the report was cut
    short under the verdict's exit status. A file limit stands for a disk that fills."""
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps({
        "run_id": "r", "agent_id": "a", "kind": f"tool_call_{phase}", "call_id": f"t{i}",
        "tool_name": "x", "timestamp": i}) + "\n" for i in range(3000)
        for phase in ("start", "end")))
    import resource

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (200 << 10, 200 << 10))

    with open(tmp_path / "report.html", "wb") as out:
        proc = _run([IOA_CHECK, "trace", str(events), "--no-shapes", "--format", "html"],
                    tmp_path, stdout=out, preexec_fn=limited)
    assert proc.returncode == 74, proc.stderr
    assert proc.stderr == b"ioa-check: cannot write standard output: File too large\n"


# --- folders that take no file ---------------------------------------------------------------


def test_an_output_or_state_in_a_missing_folder_is_exit_74(tmp_path: Path) -> None:
    """Decided: 74, not 2 (a usage error): the command is right, the file system is not as it
    needs (the contract's "an output or state file that cannot be written"). Nothing is
    audited, nothing printed on stdout."""
    _registrations(tmp_path / "r.jsonl", 5)
    proc = _run([*AUDIT, "--output", "no/out.jsonl"], tmp_path)
    assert (proc.returncode, proc.stdout) == (74, b"")
    assert _one_line(proc) == "ioa-check: cannot write no/out.jsonl: No such file or directory\n"
    proc = _run([*AUDIT, "--output", "out.jsonl", "--state", "no/s.json"], tmp_path)
    assert (proc.returncode, proc.stdout) == (74, b"")
    assert _one_line(proc) == "ioa-check: cannot write no/s.json: No such file or directory\n"
    assert (tmp_path / "out.jsonl").read_text() == ""  # known before anything was judged


def _mount(folder: Path, options: str) -> bool:
    folder.mkdir(exist_ok=True)
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Any]:
    """``mount(folder, options)``: a tmpfs of its own (root only; skipped where it fails),
    unmounted after the test."""
    folders: list[Path] = []

    def mount(folder: Path, options: str) -> Path:
        if not _mount(folder, options):
            pytest.skip("cannot mount a tmpfs here (needs root)")
        folders.append(folder)
        return folder

    yield mount
    for folder in reversed(folders):
        subprocess.run(["umount", str(folder)], capture_output=True, timeout=30)


def test_an_output_in_a_read_only_folder_is_exit_74(tmp_path: Path, mounted: Any) -> None:
    _registrations(tmp_path / "r.jsonl", 5)
    if os.geteuid() == 0:  # root writes in any folder: a read-only file system then
        mounted(tmp_path / "ro", "ro,size=64k")
    else:
        (tmp_path / "ro").mkdir()
        (tmp_path / "ro").chmod(0o555)
    proc = _run([*AUDIT, "--output", "ro/out.jsonl"], tmp_path)
    assert (proc.returncode, proc.stdout) == (74, b"")
    assert _one_line(proc).startswith("ioa-check: cannot write ro/out.jsonl: ")


# --- a disk that fills up --------------------------------------------------------------------


@pytest.mark.parametrize("full", ["output", "state"])
def test_a_disk_full_mid_audit_is_exit_74_and_resumes_once_there_is_space(
        tmp_path: Path, mounted: Any, full: str) -> None:
    """The output (or the state and its journal) on a small tmpfs that the audit fills after
    a checkpoint or two: exit 74 naming a file on it; the tmpfs enlarged, the same command
    resumes from the last checkpoint (not from the start) to the uninterrupted output."""
    _registrations(tmp_path / "r.jsonl", 6000)  # about 5 pieces of 512 KiB
    reference = _run([*AUDIT, "--output", "whole.jsonl"], tmp_path)
    assert reference.returncode == 1
    disk = mounted(tmp_path / "disk", "size=360k")
    output = "disk/out.jsonl" if full == "output" else "out.jsonl"
    state = "disk/s.json" if full == "state" else "s.json"
    resumable = [*AUDIT, "--output", output, "--state", state]
    proc = _run(resumable, tmp_path)
    assert (proc.returncode, proc.stdout) == (74, b"")
    err = _one_line(proc)
    assert err.startswith("ioa-check: cannot write disk/") and "No space left on device" in err
    left = json.loads((tmp_path / state).read_text())
    assert left["pieces"] >= 1  # a real resume follows, from a checkpoint of its own
    subprocess.run(["mount", "-o", "remount,size=16m", str(disk)], check=True, timeout=30)
    proc = _run(resumable, tmp_path)
    assert (proc.returncode, proc.stderr) == (1, b"")
    assert (tmp_path / output).read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    assert not (tmp_path / state).exists()


def test_a_state_that_cannot_be_replaced_is_exit_74_and_resumes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The disk fills as the third state is written (in this process, blocks of 4 KiB): the
    temporary state is removed, the second stays, and a rerun resumes from it."""
    from ioa_semantic.audit import inputs as _inputs
    from ioa_semantic.cli import main as _cli

    monkeypatch.setattr(_inputs, "_BLOCK_BYTES", 4096)
    monkeypatch.chdir(tmp_path)
    _registrations(tmp_path / "r.jsonl", 100)
    args = [*AUDIT[1:], "--output", "out.jsonl", "--state", "s.json"]
    assert _cli.main([*args[:-4], "--output", "whole.jsonl"]) == 1
    replace, replaced = os.replace, []

    def full_on_the_third(source: str, target: str) -> None:
        replaced.append(target)
        if len(replaced) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        replace(source, target)

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", full_on_the_third)
        capsys.readouterr()
        assert _cli.main(args) == 74
    assert capsys.readouterr().err == "ioa-check: cannot write s.json: No space left on device\n"
    assert json.loads((tmp_path / "s.json").read_text())["pieces"] == 2
    assert not (tmp_path / "s.json.tmp").exists()
    assert _cli.main(args) == 1
    assert (tmp_path / "out.jsonl").read_text() == (tmp_path / "whole.jsonl").read_text()
