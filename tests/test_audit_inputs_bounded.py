"""The audit reads its inputs within bounds and whole (``ioa_semantic/audit/inputs.py``).

Memory does not grow with a line or a file: a JSON Lines line longer than ``--max-bytes`` is
one ``json.too-large`` result, its bytes counted to its newline and let go (and hashed for a
resumable run), the lines after it audited with their own numbers; a ``*.json`` file over
the limit is read no further than it. A folder is walked whole: one that cannot be read, a
file that is not a regular one (never opened: a named pipe would block the audit) and a
link that cannot be followed are results of their own (``json.unreadable``); links to
folders are followed, each real folder once. Memory is bounded by running the command under
``prlimit --as`` (an address space the unbounded reads of before exhausted, exit 70), on
sparse files; nothing here is timed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic.pipeline.intake import Limits, parse

from support import IOA_CHECK, registration_63

GIB = 1 << 30
MIB = 1 << 20
LIMIT = 1 << 20  # the default --max-bytes
# An address space of 512 MiB: the command starts and audits in about 250 MB of it, and a
# line or a file of 768 MiB held whole does not fit (before, it ended in a MemoryError, exit 70).
BOUND = str(GIB // 2)
PROFILE = ["--profile", "cs-translation", "--format", "json"]


def _registration(index: int) -> bytes:
    doc = registration_63()
    doc["@id"] = f"cs:Capability{index}"
    return json.dumps(doc).encode()


def _bounded(address_space: str) -> list[str]:
    if shutil.which("prlimit") is None:
        pytest.skip("prlimit (util-linux) is needed to bound the audit's address space")
    return ["prlimit", f"--as={address_space}"]


def _results(stdout: bytes) -> list[dict[str, Any]]:
    return [json.loads(text) for text in stdout.splitlines()]


def _codes(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(reason["code"], reason["message"]) for reason in result["reasons"]]


LONG_LINE, LAST_LINE = 768 * MIB, 256 * MIB


@pytest.fixture(scope="module")
def long_lines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """JSON Lines with a line of 768 MiB (sparse: NUL bytes), a blank line of 3 MiB, a CRLF
    line and a last line of 256 MiB without its newline; the rest are registrations. One
    file for the module: it is only read."""
    path = tmp_path_factory.mktemp("long") / "long.jsonl"
    with path.open("wb") as handle:
        handle.write(_registration(0) + b"\n")
        handle.seek(handle.tell() + LONG_LINE)  # line 1: NUL bytes
        handle.write(b"\n" + _registration(2) + b"\n" + b" " * (3 * MIB) + b"\n"
                     + _registration(4) + b"\r\n")
        handle.truncate(handle.tell() + LAST_LINE)  # line 5, no newline
    yield path
    path.unlink()


_LONG_EXPECTED = [
    (0, "valid", []),
    (1, "invalid", [("json.too-large", f"the document has {LONG_LINE} bytes, over the limit "
                                       f"of {LIMIT}")]),
    (2, "valid", []),
    (4, "valid", []),
    (5, "invalid", [("json.too-large", f"the document has {LAST_LINE} bytes, over the limit "
                                       f"of {LIMIT}")]),
]


@pytest.mark.parametrize("how", ["file, --jobs 1", "file, --jobs 2", "- from a file",
                                 "- from a pipe"])
def test_a_line_over_the_limit_is_one_result_and_the_lines_after_it_are_audited(
        long_lines: Path, how: str) -> None:
    """Within 512 MiB of address space, a line of 768 MiB and a last one of 256 MiB are each one
    ``json.too-large`` result naming their size and the limit; a blank line over the limit
    is skipped as any blank line; every other line is audited under its own number."""
    command = [*_bounded(BOUND), IOA_CHECK, "audit", *PROFILE,
               "--jobs", "1" if how.endswith("1") else "2"]
    if how.startswith("file"):
        proc = subprocess.run([*command, long_lines.name], cwd=long_lines.parent,
                              capture_output=True, timeout=600)
    elif how == "- from a file":
        with long_lines.open("rb") as stdin:
            proc = subprocess.run([*command, "-"], stdin=stdin, capture_output=True,
                                  timeout=600)
    else:
        with subprocess.Popen(["cat", str(long_lines)], stdout=subprocess.PIPE) as cat:
            proc = subprocess.run([*command, "-"], stdin=cat.stdout, capture_output=True,
                                  timeout=600)
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]
    source = long_lines.name if how.startswith("file") else "-"
    *results, summary = _results(proc.stdout)
    assert [(r["source"], r["index"], r["status"], _codes(r)) for r in results] == [
        (source, *expected) for expected in _LONG_EXPECTED]
    assert summary["summary"]["total"] == 5


def test_documents_reads_a_line_over_the_limit_within_bounds(long_lines: Path) -> None:
    """``documents`` (what ``impact`` and ``trace --registrations`` read registrations with)
    passes over a long line as the audit does, in the same bounds."""
    script = ("import sys\nfrom ioa_semantic.audit.inputs import documents\n"
              "for source, index, document, problems in documents([sys.argv[1]]):\n"
              "    print(index, document is None, [p.message for p in problems])\n")
    proc = subprocess.run([*_bounded(BOUND), sys.executable, "-c", script, str(long_lines)],
                          capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert proc.stdout.decode().splitlines() == [
        f"{index} {status == 'invalid'} {[message for _, message in codes]}"
        for index, status, codes in _LONG_EXPECTED]


def test_a_file_or_stream_over_the_limit_is_read_no_further(tmp_path: Path) -> None:
    """A ``*.json`` file of 1 GiB, ``/dev/zero`` and a named pipe without end named on the
    command line are each one ``json.too-large`` result, read no further than the limit (a
    file's size, a stream's "more than"); a named pipe (``<(...)``) is read as a file is."""
    if shutil.which("bash") is None or not os.path.exists("/dev/zero"):
        pytest.skip("needs bash (process substitution) and /dev/zero")
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(GIB)
    (tmp_path / "one.json").write_bytes(_registration(1))
    try:
        proc = subprocess.run(
            ["bash", "-c", 'exec "$@" <(cat one.json) big.json /dev/zero '
                           '<(head -c 3G /dev/zero)', "bash", *_bounded(BOUND), IOA_CHECK,
             "audit", *PROFILE, "--jobs", "2"],
            cwd=tmp_path, capture_output=True, timeout=600)
    finally:
        big.unlink()
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]
    *results, _ = _results(proc.stdout)
    stream = (f"the document has more than {LIMIT} bytes (it was read no further), over the "
              f"limit of {LIMIT}")
    assert [(r["status"], _codes(r)) for r in results] == [
        ("valid", []),
        ("invalid", [("json.too-large", f"the document has {GIB} bytes, over the limit of "
                                        f"{LIMIT}")]),
        ("invalid", [("json.too-large", stream)]),
        ("invalid", [("json.too-large", stream)]),
    ]
    assert [r["source"] for r in results][1:3] == ["big.json", "/dev/zero"]


def _normalized(item: tuple[Any, ...], limits: Limits) -> tuple[Any, ...]:
    """An item as the judge will see it: a line over the limit is the intake's finding."""
    source, index, document, _ = item
    if isinstance(document, bytes) and len(document) > limits.max_bytes:
        return source, index, None, parse(document, limits).findings
    return item


@pytest.mark.parametrize("block", [7, 64, 4096])
@pytest.mark.parametrize("max_bytes", [5, 100, 3000])
def test_pieces_and_documents_give_the_same_items_and_results_for_long_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int, max_bytes: int) -> None:
    """Whatever the block size and the limit, the pieces an audit cuts (a long line passed
    over, its result carried by the block after it) hold the items ``documents`` reads, each
    line without its newline, and a line over the limit has the intake's own finding, its size
    counted without the newline as the intake counts the line it is given."""
    from ioa_semantic.audit import inputs as _inputs

    monkeypatch.setattr(_inputs, "_BLOCK_BYTES", block)
    registration = _registration(0)
    (tmp_path / "a.jsonl").write_bytes(
        b"x\n\n   \n" + b"q" * 5000 + b"\r\n" + b" " * 9000 + b"\n" + registration + b"\n"
        + b"\t\n" + b"y" * 250 + b"\n" + registration + b"\r\n" + b"z" * 7000)
    (tmp_path / "b.jsonl").write_bytes(b"w" * 20_000 + b"\n" + registration)
    (tmp_path / "c.json").write_bytes(registration)
    paths = [str(tmp_path)]
    limits = Limits(max_bytes=max_bytes)
    expected = [_normalized(item, limits) for item in _inputs.documents(paths, limits=limits)]
    got = [_normalized(item, limits) for piece in _inputs.pieces(paths, limits=limits)
           for item in _inputs.items_of(piece)]
    assert got == expected
    assert [(source[len(str(tmp_path)) + 1:], index) for source, index, _, _ in got] == [
        ("a.jsonl", 0), ("a.jsonl", 3), ("a.jsonl", 5), ("a.jsonl", 7), ("a.jsonl", 8),
        ("a.jsonl", 9), ("b.jsonl", 0), ("b.jsonl", 1), ("c.json", None)]
    sizes = {index: problems[0].message for source, index, _, problems in got
             if source.endswith("a.jsonl") and problems}
    if max_bytes == 3000:  # the lines over it, whatever the block, counted alike
        assert sizes == {3: "the document has 5001 bytes, over the limit of 3000",
                         9: "the document has 7000 bytes, over the limit of 3000"}


# --- resuming over long lines -----------------------------------------------------------------

# ioa-check audit in a process of its own, "killed" once the given number of pieces are
# checkpointed: the piece after them is written and not checkpointed, as a SIGKILL leaves it.
_KILLED_AFTER = """
import sys
from ioa_semantic.audit import checkpoint
from ioa_semantic.cli.main import main

class Killed(BaseException):
    pass

after, advance = int(sys.argv[1]), checkpoint.Checkpoint.advance

def advancing(self, audit):
    if self.done == after:
        raise Killed
    advance(self, audit)

checkpoint.Checkpoint.advance = advancing
try:
    status = main(sys.argv[2:])
except Killed:
    print("killed", file=sys.stderr)
    sys.exit(99)
sys.exit(status)
"""
LONG = 320 * MIB  # held whole, with the blocks joined to it: more than BOUND


@pytest.fixture
def resumable(tmp_path: Path) -> Iterator[Path]:
    """a.jsonl: registrations, a line of 320 MiB, registrations, a last line of 64 MiB;
    big.json: 600 MiB; c.jsonl: registrations. Sparse, removed after the test."""
    lines = b"".join(_registration(i) + b"\n" for i in range(1500))
    with (tmp_path / "a.jsonl").open("wb") as handle:
        handle.write(lines)
        handle.seek(handle.tell() + LONG)
        handle.write(b"\n" + lines)
        handle.truncate(handle.tell() + 64 * MIB)
    with (tmp_path / "big.json").open("wb") as handle:
        handle.truncate(600 * MIB)
    (tmp_path / "c.jsonl").write_bytes(b"".join(_registration(i) + b"\n"
                                                for i in range(2000, 3500)))
    yield tmp_path
    for name in ("a.jsonl", "big.json"):
        (tmp_path / name).unlink()


_INPUTS = ["a.jsonl", "big.json", "c.jsonl"]


def _run(folder: Path, *extra: str, killed_after: int | None = None,
         jobs: str = "1") -> subprocess.CompletedProcess[bytes]:
    args = ["audit", *_INPUTS, *PROFILE, "--jobs", jobs, *extra]
    command = ([sys.executable, "-c", _KILLED_AFTER, str(killed_after), *args]
               if killed_after is not None else [IOA_CHECK, *args])
    return subprocess.run([*_bounded(BOUND), *command], cwd=folder, capture_output=True,
                          timeout=600)


def _pieces(folder: Path) -> int:
    script = ("import sys\nfrom ioa_semantic.audit.inputs import pieces\n"
              "print(sum(1 for _ in pieces(sys.argv[1:])))\n")
    proc = subprocess.run([*_bounded(BOUND), sys.executable, "-c", script, *_INPUTS],
                          cwd=folder, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return int(proc.stdout)


def _kill(folder: Path, after: int) -> bool:
    """A resumable run killed after ``after`` pieces; False if it finished first."""
    for name in ("out.jsonl", "state.json", "state.json.index"):
        (folder / name).unlink(missing_ok=True)
    proc = _run(folder, "--output", "out.jsonl", "--state", "state.json", killed_after=after)
    if proc.returncode == 99:
        assert json.loads((folder / "state.json").read_text())["pieces"] == after
        return True
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]
    return False


def _resume(folder: Path) -> subprocess.CompletedProcess[bytes]:
    return _run(folder, "--output", "out.jsonl", "--state", "state.json", jobs="2")


def test_a_run_over_long_lines_resumes_to_the_uninterrupted_output(resumable: Path) -> None:
    """Killed after every piece in turn (before, at and after the long line, the file over
    the limit and the last line without newline), each resume proves what was read, the
    long line's bytes hashed as they were passed over, and ends in the uninterrupted
    output, in 512 MiB of address space."""
    whole = _run(resumable, "--output", "whole.jsonl")
    assert whole.returncode == 1, whole.stderr.decode()[-2000:]
    expected = (resumable / "whole.jsonl").read_bytes()
    results = _results(expected)
    assert [(r["source"], r["index"]) for r in results if r.get("status") == "invalid"] == [
        ("a.jsonl", 1500), ("a.jsonl", 3001), ("big.json", None)]
    total = _pieces(resumable)
    assert total > 6  # several before, at and after every long input
    for after in range(1, total):
        assert _kill(resumable, after)
        resumed = _resume(resumable)
        assert (resumed.returncode, resumed.stderr) == (1, b""), resumed.stderr.decode()
        assert (resumable / "out.jsonl").read_bytes() == expected, after
    assert not _kill(resumable, total)


def _write_at(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as handle:
        handle.seek(offset)
        handle.write(data)


def _refused(folder: Path, named: str) -> None:
    before = (folder / "out.jsonl").read_bytes()
    proc = _resume(folder)
    assert proc.returncode == 2, proc.stderr.decode()
    assert "cannot resume from state.json" in proc.stderr.decode() and named in \
        proc.stderr.decode(), proc.stderr.decode()
    assert (folder / "out.jsonl").read_bytes() == before


def test_a_change_in_a_long_line_or_a_file_over_the_limit_is_proven(resumable: Path) -> None:
    """Killed past a.jsonl and big.json: a byte changed inside the long line passed over is
    refused (its bytes were hashed, not held); a byte of big.json past what was read, its size
    the same, resumes (its result is its size), while a size changed is refused."""
    whole = _run(resumable, "--output", "whole.jsonl")
    expected = (resumable / "whole.jsonl").read_bytes()
    assert whole.returncode == 1
    last = _pieces(resumable) - 1  # c.jsonl being read, the others read to their end
    middle = len(b"".join(_registration(i) + b"\n" for i in range(1500))) + LONG // 2

    assert _kill(resumable, last)
    _write_at(resumable / "a.jsonl", middle, b"x")
    _refused(resumable, "a.jsonl: changed where it was already audited")
    _write_at(resumable / "a.jsonl", middle, b"\0")

    assert _kill(resumable, last)
    _write_at(resumable / "big.json", 300 * MIB, b"x")
    resumed = _resume(resumable)
    assert (resumed.returncode, resumed.stderr) == (1, b"")
    assert (resumable / "out.jsonl").read_bytes() == expected

    assert _kill(resumable, last)
    with (resumable / "big.json").open("ab") as handle:
        handle.write(b"x")
    _refused(resumable, "big.json: changed where it was already audited")


# --- walking folders --------------------------------------------------------------------------


def _denied(folder: Path) -> list[str] | None:
    """A command prefix under which ``folder`` (mode 000) cannot be read, or None: as root,
    without the capabilities that override permissions (or as nobody, where it can reach
    the folder); as anyone else, as is."""
    probe = [sys.executable, "-c", "import os, sys; os.listdir(sys.argv[2]); print('parent'); "
             "os.listdir(sys.argv[1])", str(folder), str(folder.parent)]
    candidates: list[list[str]] = [[]]
    if shutil.which("setpriv"):
        candidates += [["setpriv", "--bounding-set", "-dac_override,-dac_read_search"],
                       ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]]
    for prefix in candidates:
        try:
            proc = subprocess.run([*prefix, *probe], capture_output=True, timeout=60)
        except OSError:
            continue
        if proc.stdout.strip() == b"parent" and b"PermissionError" in proc.stderr:
            return prefix
    return None


def test_a_folder_that_cannot_be_read_is_a_result_of_its_own(tmp_path: Path) -> None:
    """A subfolder, or the folder named, that cannot be listed is a ``json.unreadable``
    result naming it and why: the audit is not passed off as complete (exit 1, not 0)."""
    tree = tmp_path / "regs"
    (tree / "locked").mkdir(parents=True)
    (tree / "a.jsonl").write_bytes(_registration(0) + b"\n")
    (tree / "locked" / "hidden.jsonl").write_bytes(_registration(1) + b"\n")
    (tree / "z.json").write_bytes(_registration(2))
    (tree / "locked").chmod(0)
    try:
        prefix = _denied(tree / "locked")
        if prefix is None:
            pytest.skip("no way here to make a folder unreadable to the audit (root, and "
                        "setpriv cannot drop the capabilities nor change the user)")
        runs = {name: subprocess.run([*prefix, IOA_CHECK, "audit", name, *PROFILE],
                                     cwd=tmp_path, capture_output=True, timeout=120)
                for name in ("regs", "regs/locked")}
    finally:
        (tree / "locked").chmod(stat.S_IRWXU)
    for name, proc in runs.items():
        assert proc.returncode == 1, (name, proc.stderr.decode())
    *results, _ = _results(runs["regs"].stdout)
    assert [(r["source"], r["status"], _codes(r)) for r in results] == [
        ("regs/a.jsonl", "valid", []),
        ("regs/locked", "invalid", [("json.unreadable", "regs/locked: the folder cannot be "
                                                        "read: Permission denied")]),
        ("regs/z.json", "valid", [])]
    *results, summary = _results(runs["regs/locked"].stdout)
    assert [(r["source"], _codes(r)) for r in results] == [
        ("regs/locked", [("json.unreadable", "regs/locked: the folder cannot be read: "
                                             "Permission denied")])]
    assert summary["summary"]["status"]["invalid"] == 1


def test_links_are_followed_and_each_real_folder_is_read_once(tmp_path: Path) -> None:
    """A link to a folder outside is walked under its own path; a link to a folder of the
    tree, and a cycle of links, add nothing (each real folder once, under its own path); a
    link to a file is read as that file; a link to nothing, named as a registration file, is
    unreadable. Results stay in sorted path order."""
    tree, outside = tmp_path / "regs", tmp_path / "outside"
    for folder in (tree / "a", tree / "z", outside / "deep"):
        folder.mkdir(parents=True)
    (tree / "a" / "one.jsonl").write_bytes(_registration(1) + b"\n")
    (tree / "z" / "two.json").write_bytes(_registration(2))
    (outside / "o.jsonl").write_bytes(_registration(3) + b"\n")
    (outside / "deep" / "d.json").write_bytes(_registration(4))
    (tree / "b-outside").symlink_to("../outside")
    (tree / "0-also-a").symlink_to("a")  # sorted before a: still read as a
    (tree / "z" / "up").symlink_to("..")  # a cycle
    (outside / "back").symlink_to("../regs")  # a cycle through the link
    (tree / "z" / "file.jsonl").symlink_to("../a/one.jsonl")
    (tree / "gone.json").symlink_to("nowhere")
    proc = subprocess.run([IOA_CHECK, "audit", "regs", *PROFILE], cwd=tmp_path,
                          capture_output=True, timeout=120)
    assert proc.returncode == 1, proc.stderr.decode()
    *results, _ = _results(proc.stdout)
    assert [(r["source"], r["status"], [code for code, _ in _codes(r)]) for r in results] == [
        ("regs/a/one.jsonl", "valid", []),
        ("regs/b-outside/deep/d.json", "valid", []),
        ("regs/b-outside/o.jsonl", "valid", []),
        ("regs/gone.json", "invalid", ["json.unreadable"]),
        ("regs/z/file.jsonl", "valid", []),
        ("regs/z/two.json", "valid", [])]


def test_what_is_not_a_regular_file_in_a_folder_is_not_opened(tmp_path: Path) -> None:
    """A named pipe (which nobody writes: opening it would wait forever), a socket and a link
    to a device, found by the walk, are each a ``json.unreadable`` result, "not a regular
    file"; the files beside them are audited."""
    tree = tmp_path / "regs"
    tree.mkdir()
    os.mkfifo(tree / "pipe.jsonl")
    listening = socket.socket(socket.AF_UNIX)
    try:
        listening.bind(str(tree / "socket.json"))
    except OSError:
        pytest.skip("cannot make a Unix socket here (path too long?)")
    (tree / "null.jsonld").symlink_to(os.devnull)
    (tree / "z.jsonl").write_bytes(_registration(0) + b"\n")
    try:
        # The timeout only ends a run that would hang: no time is asserted.
        proc = subprocess.run([IOA_CHECK, "audit", "regs", *PROFILE, "--jobs", "1"],
                              cwd=tmp_path, capture_output=True, timeout=120)
    finally:
        listening.close()
    assert proc.returncode == 1, proc.stderr.decode()
    *results, _ = _results(proc.stdout)
    assert [(r["source"], r["status"], _codes(r)) for r in results] == [
        ("regs/null.jsonld", "invalid", [(
            "json.unreadable", "regs/null.jsonld: cannot be read: not a regular file (a "
                               "character device), so it was not opened")]),
        ("regs/pipe.jsonl", "invalid", [(
            "json.unreadable", "regs/pipe.jsonl: cannot be read: not a regular file (a named "
                               "pipe), so it was not opened")]),
        ("regs/socket.json", "invalid", [(
            "json.unreadable", "regs/socket.json: cannot be read: not a regular file (a "
                               "socket), so it was not opened")]),
        ("regs/z.jsonl", "valid", [])]
