"""Every file the command line reads whole is read bounded (_files.read_bounded).

An envelope is read up to ``--max-bytes`` and one byte more, whatever it is (``/dev/zero``, a
sparse file of gigabytes, a pipe on standard input): past it, it is ``json.too-large`` and the
other envelopes are still checked. A configuration file (a capability, an alignment, a
profile, a key, a bindings file, a manifest) is read only from a regular file, up to its
limit: anything else is refused before it is opened (a named pipe would block the command),
with the usage status naming the file and the limit, or, where the surface turns an
unreadable file into a finding (a tool manifest, a linted file), that finding. The memory
cases run the installed command under ``prlimit``: without the bound each ends in a
MemoryError (exit 70) or blocks on the pipe.

Also here: an ``--opaque-key`` shorter than 16 bytes is refused, what sign, impact and trace
say on standard error shows a file name's escape sequences instead of sending them, and two
of trace's outputs naming one file is a usage error before any work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import AT, EXAMPLES, IOA_CHECK, signed_artifact

# The address space the command gets: ample for a run (rdflib and pyshacl imported), far
# less than the gigabytes an unbounded read would take.
ADDRESS_SPACE = 1_500_000_000
# Only a blocked command (a read of a named pipe no one writes) runs this long.
HANG = 120
ENVELOPE = EXAMPLES / "envelope-6.2.jsonld"
CHECK = ["--profile", "cs-translation", "--at", AT, "--format", "json"]
TRACE = EXAMPLES / "trace" / "mas-lab"
ESCAPE = "\x1b[31m"

pytestmark = pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit")


def ioa(*args: str | Path, cwd: Path, stdin: int | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The installed command under the address-space bound; what it says, as text."""
    return subprocess.run(["prlimit", f"--as={ADDRESS_SPACE}", IOA_CHECK, *map(str, args)],
                          cwd=cwd, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                          capture_output=True, text=True, errors="replace", timeout=HANG,
                          env=env, check=False)


def lines(proc: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in proc.stdout.splitlines()]


def codes(result: dict[str, object]) -> list[str]:
    reasons = result["reasons"]
    assert isinstance(reasons, list)
    return [reason["code"] for reason in reasons]


@pytest.fixture
def sparse(tmp_path: Path) -> Iterator[Path]:
    """A sparse file of 3,500 MB (no disk taken), removed after."""
    path = tmp_path / "big.jsonld"
    subprocess.run(["truncate", "-s", "3500M", str(path)], check=True)
    yield path
    path.unlink(missing_ok=True)


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    """A named pipe no one writes to."""
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


# --- envelopes ----------------------------------------------------------------------------


def test_an_endless_envelope_is_too_large_and_the_next_envelope_is_still_checked(
        tmp_path: Path) -> None:
    proc = ioa("/dev/zero", ENVELOPE, *CHECK, cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    endless, good = lines(proc)
    assert endless["source"] == "/dev/zero" and endless["verdict"] == "invalid"
    assert codes(endless) == ["json.too-large"]
    assert good["verdict"] == "compatible"


def test_a_sparse_envelope_of_gigabytes_is_too_large_with_its_size(
        tmp_path: Path, sparse: Path) -> None:
    proc = ioa(sparse, ENVELOPE, *CHECK, cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    big, good = lines(proc)
    assert codes(big) == ["json.too-large"]
    assert "3670016000 bytes" in str(big["reasons"])
    assert good["verdict"] == "compatible"


def test_an_endless_standard_input_is_too_large(tmp_path: Path) -> None:
    with open("/dev/zero", "rb") as zeros:
        proc = ioa("-", ENVELOPE, *CHECK, cwd=tmp_path, stdin=zeros.fileno())
    assert proc.returncode == 4, proc.stderr
    endless, good = lines(proc)
    assert endless["source"] == "-" and codes(endless) == ["json.too-large"]
    assert good["verdict"] == "compatible"


def test_an_envelope_given_as_a_pipe_is_read_and_an_endless_one_bounded(
        tmp_path: Path) -> None:
    """What a process substitution gives (a pipe) is still an envelope: read, bounded."""
    good_pipe, endless_pipe = tmp_path / "good", tmp_path / "endless"
    os.mkfifo(good_pipe)
    os.mkfifo(endless_pipe)

    def write_good() -> None:
        with open(good_pipe, "wb") as pipe:
            pipe.write(ENVELOPE.read_bytes())

    def write_endless() -> None:
        block = b" " * (1 << 16)
        try:
            with open(endless_pipe, "wb") as pipe:
                while True:
                    pipe.write(block)
        except BrokenPipeError:  # the command read what it reads, and closed it
            pass

    writers = [threading.Thread(target=write_good, daemon=True),
               threading.Thread(target=write_endless, daemon=True)]
    for writer in writers:
        writer.start()
    proc = ioa(good_pipe, endless_pipe, *CHECK, cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    good, endless = lines(proc)
    assert good["verdict"] == "compatible"
    assert codes(endless) == ["json.too-large"]
    for writer in writers:
        writer.join(HANG)


# --- configuration files ----------------------------------------------------------------------


def _trace_args(tmp_path: Path) -> list[str]:
    return ["trace", str(TRACE / "run"), "--manifests", str(TRACE / "manifests"), "--no-shapes",
            "--format", "json"]


CONFIGURATIONS = {
    "capability": lambda path, tmp: [str(ENVELOPE), *CHECK, "--capability", path],
    "alignment": lambda path, tmp: [str(ENVELOPE), *CHECK, "--alignment", path],
    "sign artifact": lambda path, tmp: ["sign", path, "--key", "k.pem"],
    "sign key": lambda path, tmp: ["sign", "cs-doc-v1", "--key", path],
    "bindings": lambda path, tmp: [*_trace_args(tmp), "--bindings", path],
    "opaque key": lambda path, tmp: [*_trace_args(tmp), "--opaque-ids", "--opaque-key", path],
}


@pytest.mark.parametrize("surface", sorted(CONFIGURATIONS))
def test_an_endless_configuration_file_is_a_usage_error_naming_it_and_the_limit(
        tmp_path: Path, surface: str) -> None:
    proc = ioa(*CONFIGURATIONS[surface]("/dev/zero", tmp_path), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "/dev/zero" in proc.stderr and "limit of" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("surface", sorted(CONFIGURATIONS))
def test_a_configuration_file_of_gigabytes_is_a_usage_error_naming_its_size(
        tmp_path: Path, surface: str, sparse: Path) -> None:
    proc = ioa(*CONFIGURATIONS[surface](str(sparse), tmp_path), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "3670016000 bytes, over the limit of" in proc.stderr, proc.stderr


@pytest.mark.parametrize("surface", sorted(CONFIGURATIONS))
def test_a_configuration_file_that_is_a_named_pipe_is_refused_not_waited_on(
        tmp_path: Path, surface: str, fifo: Path) -> None:
    proc = ioa(*CONFIGURATIONS[surface](str(fifo), tmp_path), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert str(fifo) in proc.stderr and "a named pipe, not a regular file" in proc.stderr


def test_a_profile_or_manifests_that_are_a_named_pipe_are_refused(tmp_path: Path) -> None:
    profile = tmp_path / "profile.ttl"
    os.mkfifo(profile)
    proc = ioa(ENVELOPE, "--profile", profile, "--at", AT, cwd=tmp_path)
    assert proc.returncode == 2 and "a named pipe" in proc.stderr, proc.stderr
    manifests = tmp_path / "mas.yaml"
    os.mkfifo(manifests)
    proc = ioa("trace", TRACE / "run", "--manifests", manifests, "--no-shapes", cwd=tmp_path)
    assert proc.returncode == 2 and "--manifests" in proc.stderr, proc.stderr
    assert "a named pipe" in proc.stderr


@pytest.mark.parametrize("kind", ["/dev/zero", "named pipe", "sparse"])
def test_a_tool_manifest_that_cannot_be_read_within_the_limit_is_a_declaration_unavailable(
        tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "mas-lab"
    shutil.copytree(TRACE, folder)
    tool = folder / "manifests" / "tools" / "lookup_schedule.tool.yaml"
    tool.unlink()
    if kind == "/dev/zero":
        tool.symlink_to("/dev/zero")
    elif kind == "named pipe":
        os.mkfifo(tool)
    else:
        subprocess.run(["truncate", "-s", "2G", str(tool)], check=True)
    try:
        proc = ioa("trace", folder / "run", "--manifests", folder / "manifests", "--no-shapes",
                   "--format", "json", cwd=tmp_path)
    finally:
        tool.unlink()
    assert proc.returncode == 3, proc.stderr
    summary = lines(proc)[-1]["summary"]
    assert isinstance(summary, dict)
    (reason,) = [r for r in summary["reasons"] if r["code"] == "capability.declaration-unavailable"]
    assert "lookup_schedule.tool.yaml cannot be read" in reason["message"]


@pytest.mark.parametrize("kind", ["/dev/zero", "named pipe"])
def test_a_linted_file_that_is_no_regular_file_is_its_problem_not_a_hang(
        tmp_path: Path, kind: str) -> None:
    name = "/dev/zero"
    if kind == "named pipe":
        os.mkfifo(tmp_path / "artifact.json")
        name = "artifact.json"
    proc = ioa("lint", name, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert f"{name}: cannot be read: it is a" in proc.stdout and "limit of" in proc.stdout


def test_a_shape_file_to_explain_that_is_a_named_pipe_is_refused_not_waited_on(
        tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p.shapes.ttl")
    proc = ioa("lint", "--explain", "p.shapes.ttl", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "p.shapes.ttl: cannot be read: it is a named pipe, not a regular file" in proc.stderr


# --- the opaque key -----------------------------------------------------------------------------


def test_an_opaque_key_shorter_than_16_bytes_is_refused_saying_how_to_make_one(
        tmp_path: Path) -> None:
    (tmp_path / "short").write_bytes(b"k" * 15)
    proc = ioa(*_trace_args(tmp_path), "--opaque-ids", "--opaque-key", "short", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "--opaque-key short has 15 bytes" in proc.stderr
    assert "at least 16" in proc.stderr and "head -c 32 /dev/urandom" in proc.stderr
    env = {**os.environ, "IOA_CHECK_OPAQUE_KEY": "x"}
    proc = ioa(*_trace_args(tmp_path), "--opaque-ids", cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "$IOA_CHECK_OPAQUE_KEY has 1 byte:" in proc.stderr
    # 16 bytes are enough: the report is worded through the key.
    (tmp_path / "key").write_bytes(os.urandom(16))
    proc = ioa(*_trace_args(tmp_path), "--opaque-ids", "--opaque-key", "key", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "schedule_agent" not in proc.stdout


# --- what standard error names -----------------------------------------------------------------


def test_sign_shows_an_escape_sequence_in_the_artifacts_name(tmp_path: Path) -> None:
    made = ioa("keygen", "--output", "k.pem", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    name = f"a{ESCAPE}.json"
    (tmp_path / name).write_text(json.dumps(signed_artifact()))
    proc = ioa("sign", name, "--key", "k.pem", "--created", "2026-05-01T00:00:00Z",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "a<U+001B>[31m.json: its proof is replaced" in proc.stderr
    assert "\x1b" not in proc.stderr


def test_impact_shows_an_escape_sequence_in_the_logs_name(tmp_path: Path) -> None:
    name = f"log{ESCAPE}.jsonl"
    (tmp_path / name).write_text("not json\n")
    proc = ioa("impact", name, "--at", "2027-01-01T00:00:00Z", cwd=tmp_path)
    assert "log<U+001B>[31m.jsonl, line 1: not a JSON line" in proc.stderr, proc.stderr
    assert "\x1b" not in proc.stderr


def test_trace_shows_an_escape_sequence_in_a_trace_file_past_max_memory(tmp_path: Path) -> None:
    run = tmp_path / f"run{ESCAPE}"
    shutil.copytree(TRACE / "run", run)
    proc = ioa("trace", run, "--manifests", TRACE / "manifests", "--no-shapes", "--format",
               "json", "--max-memory", "1KiB", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "run<U+001B>[31m: cannot be judged within --max-memory" in proc.stderr
    assert "\x1b" not in proc.stderr


# --- trace's outputs --------------------------------------------------------------------------


@pytest.mark.parametrize(("first", "second"), [
    ("--state", "--waiting-list"), ("--emit-kg", "--waiting-list"), ("--emit-kg", "--store-key")])
def test_two_outputs_of_trace_naming_one_file_are_a_usage_error_before_any_work(
        tmp_path: Path, first: str, second: str) -> None:
    options = {first: "out.ttl", second: "./out.ttl"}
    extra = ["--complete-only"] if "--waiting-list" in options else []
    if "--store-key" in options:
        extra += ["--store", "store"]
    proc = ioa(*_trace_args(tmp_path), *extra, *(x for pair in options.items() for x in pair),
               cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert f"{first} out.ttl and {second} ./out.ttl name one file" in proc.stderr
    assert not (tmp_path / "out.ttl").exists()
    assert not (tmp_path / "store").exists()
