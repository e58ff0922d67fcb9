"""``ioa-check audit --scheduler``: the batch audit on a Dask cluster (issue 9).

Through the installed command, against a LocalCluster of two worker processes: the inputs
are cut into partitions (whole files, byte ranges of JSON Lines files cut at line
boundaries), conflicts whose registrations lie in different partitions and files are found
on the cluster, and the output is the local audit's, byte for byte, with the same exit
status; a worker process killed mid-audit is replaced and changes nothing; without
``--scheduler`` nothing of Dask is imported; usage errors are exit 2 with nothing on stdout.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed", reason="the [dask] extra (dask[distributed], fsspec) is not "
                                          "installed")

from distributed import Client, LocalCluster, get_task_stream
from hypothesis import given, settings
from hypothesis import strategies as st
from test_audit import INVALID, line, variant

from ioa_semantic.audit.dask import partitions, read_partition
from ioa_semantic.audit.inputs import documents, items_of, pieces
from ioa_semantic.audit.judge import Item
from ioa_semantic.pipeline.intake import Limits, too_large

from support import AT, IOA_CHECK, registration_63, sarif_of

PARTITION = 16384  # bytes: the 1,200-line file below is cut into about 35 byte ranges


def ioa_check(args: list[str], cwd: Path, stdin: bytes | None = None,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    # The instant pinned: the html report states it (nothing else depends on it).
    return subprocess.run([IOA_CHECK, "audit", *args, "--profile", "cs-translation", "--at", AT],
                          cwd=cwd, input=stdin, capture_output=True, timeout=180, env=env)


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[str, Client]]:
    """Two worker processes of one thread each, shared by the tests of this module."""
    # distributed's LocalCluster, Client and Client.processing are not annotated.
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,  # type: ignore[no-untyped-call]
                      dashboard_address=":0", silence_logs=logging.ERROR) as local, \
            Client(local, set_as_default=False) as client:  # type: ignore[no-untyped-call]
        yield local.scheduler_address, client


@pytest.fixture
def own_cluster() -> Iterator[tuple[str, Client]]:
    """Two worker processes of one thread each, for one test that kills one of them: the
    module's cluster is left whole for the other tests without waiting for the nanny to
    start a process in the killed one's place (on a loaded CI machine that once took more
    than a minute, and it is Dask's doing, not the audit's)."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,  # type: ignore[no-untyped-call]
                      dashboard_address=":0", silence_logs=logging.ERROR) as local, \
            Client(local, set_as_default=False) as client:  # type: ignore[no-untyped-call]
        yield local.scheduler_address, client


def named(iri: str, version: str) -> dict[str, Any]:
    doc = variant(**{"@id": iri})
    doc["@context"]["ontologyId"] = {"@id": "ioa:ontologyId", "@type": "@id"}
    doc["@context"]["ontologyVersion"] = "ioa:ontologyVersion"
    doc["ontologyId"] = "https://example.org/onto/agent-core"
    doc["ontologyVersion"] = version
    return doc


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Valid registrations, every invalid class, an indeterminate one, unreadable lines and
    files, arrays, and conflicts whose registrations lie in different partitions and files."""
    folder = tmp_path_factory.mktemp("corpus")
    rows = [line(variant(**{"@id": f"cs:Cap{i % 1000}"})).encode() for i in range(1200)]
    rows[3] = line(variant(**{"@id": "cs:Split"})).encode()
    rows[1190] = line(variant(**{"@id": "cs:Split", "outputs": ["application/pdf"]})).encode()
    rows[100] = line(named("cs:Cap100", "1.0")).encode()
    rows[1100] = line(named("cs:Cap100", "2.0")).encode()  # another ontology version
    for k, (doc, _) in enumerate(INVALID.values()):
        rows[50 + 97 * k] = line(doc).encode()
    remote = registration_63()
    remote["@context"] = "https://example.org/ioa/context.jsonld"  # indeterminate
    rows[300] = line(remote).encode()
    rows[400] = b"\n"  # skipped, but still counted in the line numbers
    rows[401] = b"{broken\n"
    rows[402] = b'{"label": "\xff\xfe"}\n'
    rows[403] = b'{"@context": {}, "a": 1, "a": 2}\n'
    rows[-1] = rows[-1].rstrip(b"\n")  # no newline after the last line
    (folder / "big.jsonl").write_bytes(b"".join(rows))
    (folder / "sub").mkdir()
    split_again = variant(**{"@id": "cs:Split", "inputs": ["TEXT/plain"]})
    (folder / "sub" / "arrays.json").write_text(json.dumps(
        [split_again, 5, variant(**{"@id": "cs:Cap999"})]))
    (folder / "sub" / "one.jsonld").write_text(json.dumps(
        variant(**{"@id": "cs:Cap7", "inputs": ["text/html"]})))
    (folder / "sub" / "bin.jsonld").write_bytes(b"\xff\xfe\x00\x01")
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "dead.jsonl").symlink_to(folder / "nowhere")
    (folder / "tail.jsonl").write_text(line(variant(**{"@id": "cs:Cap5"})) * 3)
    return folder


@pytest.mark.parametrize("fmt", ["json", "text", "sarif", "html"])
def test_the_cluster_audit_prints_what_the_local_audit_prints(
        cluster: tuple[str, Client], corpus: Path, fmt: str) -> None:
    address, client = cluster
    local = ioa_check([".", "--format", fmt, "--jobs", "1"], corpus)
    with get_task_stream(client) as stream:
        remote = ioa_check([".", "--format", fmt, "--scheduler", address,
                            "--partition-bytes", str(PARTITION)], corpus)
    assert remote.stderr == b"", remote.stderr.decode()
    assert (remote.returncode, remote.stdout) == (local.returncode, local.stdout)
    assert remote.returncode == 1
    if fmt == "sarif":  # placed on the cluster's workers as the local audit places them
        results = sarif_of(remote.stdout)["runs"][0]["results"]
        assert any(loc["physicalLocation"]["region"]["startColumn"] > 1
                   for r in results for loc in r["locations"])
    judged = {str(task["key"]) for task in stream.data if str(task["key"]).endswith("-judge")}
    big = (corpus / "big.jsonl").stat().st_size
    # Every byte range of big.jsonl, and every other file, was a task of its own.
    assert len(judged) == -(-big // PARTITION) + 5
    if fmt != "json":
        return
    records = [json.loads(row) for row in remote.stdout.splitlines()]
    conflicts = [r["conflict"] for r in records if "conflict" in r]
    assert [(c["id"].rsplit("#")[1], [(r["source"], r["index"]) for r in c["registrations"]])
            for c in conflicts] == [
        ("Split", [("./big.jsonl", 3), ("./big.jsonl", 1190), ("./sub/arrays.json", 0)]),
        ("Cap7", [("./big.jsonl", 7), ("./big.jsonl", 1007), ("./sub/one.jsonld", None)]),
        ("Cap100", [("./big.jsonl", 100), ("./big.jsonl", 1100)])]
    starts = [0]
    for row in (corpus / "big.jsonl").read_bytes().splitlines(keepends=True):
        starts.append(starts[-1] + len(row))
    # The conflicting lines of big.jsonl lie in byte ranges many partitions apart.
    assert starts[3] // PARTITION == 0 and starts[1190] // PARTITION > 25
    assert starts[100] // PARTITION < starts[1100] // PARTITION
    results = [r for r in records if "index" in r]
    assert [r["index"] for r in results if r["source"] == "./big.jsonl"] == [
        i for i in range(1200) if i != 400]
    summary = records[-1]["summary"]
    assert summary["status"] == {"valid": 1191, "invalid": 16, "indeterminate": 1}
    assert summary["total"] == len(results) and summary["conflicts"] == 3


# Lines whose json.syntax messages give a position: the error lies at the end of the line's
# text (where a line break kept with it would move it to the next line), inside it, or after
# a whole object; around them, what a line's text may end with.
AWKWARD = [
    b'{"@id": ',  # end of input: "line 1 column 9", not "line 2 column 1"
    b'{"@id": "cs:A", ',
    b'[1,',
    b'{"a"',
    b'{',
    b'"unterminated',
    b'{"a": 1} x',  # trailing garbage after a JSON object
    b'{"a": 1}{"b": 2}',
    b'{"a": 1,}',
    b'{broken   ',  # trailing white space
    b'{"a": tru}',
    b'{"a": 1}\t \t',
    b'{"a": "\xff\xfe"}',  # not UTF-8
    b'\xc3\x28{"a": 1}',
    b'{"a": [1, 2',
    b'   {"a": ',  # leading white space too
    b'{"a": 1}\r',  # a CRLF line's \r is the line's text, as it is locally
    b'',  # blank
    b'   \t',  # white space only
    b'nul\x00l',
]


@pytest.fixture(scope="module")
def awkward(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """JSON Lines with syntax errors at the end of a line's text and within it, trailing
    white space and garbage, CRLF, blank lines, bytes that are not UTF-8, valid registrations
    between them, and a last line without its newline."""
    folder = tmp_path_factory.mktemp("awkward")
    good = line(registration_63()).encode()
    rows: list[bytes] = []
    for k in range(300):
        rows.append(AWKWARD[k % len(AWKWARD)] + (b"\r\n" if k % 7 == 3 else b"\n"))
        if k % 5 == 0:
            rows.append(good if k % 10 else good.replace(b"\n", b"\r\n"))
    rows.append(b'{"@id": "cs:Last", ')  # the last line, without a newline
    (folder / "r.jsonl").write_bytes(b"".join(rows))
    (folder / "end.jsonl").write_bytes(b'{"a": 1} trailing')
    return folder


@pytest.mark.parametrize("fmt", ["json", "text", "sarif"])
def test_syntax_error_positions_are_the_local_audits_byte_for_byte(
        cluster: tuple[str, Client], awkward: Path, fmt: str) -> None:
    """A worker parses a line's text as the local audit does, without its line break: every
    json.syntax message names the same position, whatever partition the line falls in."""
    address, _ = cluster
    data = (awkward / "r.jsonl").read_bytes()
    local = ioa_check([".", "-", "--format", fmt, "--jobs", "1"], awkward, stdin=data)
    remote = ioa_check([".", "-", "--format", fmt, "--scheduler", address,
                        "--partition-bytes", "4096"], awkward, stdin=data)
    assert remote.stderr == b"", remote.stderr.decode()
    assert (remote.returncode, remote.stdout) == (local.returncode, local.stdout)
    assert local.returncode == 1
    if fmt != "json":
        return
    records = [json.loads(row) for row in local.stdout.splitlines()]
    messages = [reason["message"] for r in records if "reasons" in r for reason in r["reasons"]
                if reason["code"] == "json.syntax"]
    # Many partitions, and positions both at the end of a line's text and within it.
    assert len(data) // 4096 > 5
    assert "not JSON: Expecting value at line 1 column 9" in messages
    assert any("line 1 column 1" not in m and "line 1" in m for m in messages)
    assert not any("line 2" in m for m in messages)


def test_local_n_starts_a_cluster_of_its_own_and_reads_standard_input(tmp_path: Path) -> None:
    body = "".join(line(variant(**{"@id": f"cs:Cap{i % 40}"})) for i in range(120))
    body += line(variant(**{"@id": "cs:Cap3", "outputs": ["application/pdf"]}))
    (tmp_path / "r.jsonl").write_text(body)
    (tmp_path / "a.json").write_text(json.dumps([registration_63(), variant(inputs=None)]))
    stdin = (line(registration_63()) + "{broken\n" + line(variant(**{"@id": "cs:Cap3"}))).encode()
    args = [".", "-", "--format", "json"]
    local = ioa_check(args, tmp_path, stdin=stdin)
    remote = ioa_check([*args, "--scheduler", "local:2", "--partition-bytes", "4096"], tmp_path,
                       stdin=stdin)
    assert b"Traceback" not in remote.stderr, remote.stderr.decode()
    assert (remote.returncode, remote.stdout) == (local.returncode, local.stdout) == (
        1, local.stdout)
    conflicts = [json.loads(row)["conflict"] for row in remote.stdout.splitlines()
                 if b'"conflict"' in row]
    assert [(r["source"], r["index"]) for r in conflicts[0]["registrations"]] == [
        ("./r.jsonl", 3), ("./r.jsonl", 43), ("./r.jsonl", 83), ("./r.jsonl", 120),
        ("-", 2)]


def test_a_url_is_read_through_fsspec(cluster: tuple[str, Client], corpus: Path) -> None:
    """A folder named by a file:// URL is listed and read by fsspec; results name the URL."""
    address, _ = cluster
    local = ioa_check([".", "--format", "json"], corpus)
    remote = ioa_check([corpus.as_uri(), "--format", "json", "--scheduler", address,
                        "--partition-bytes", str(PARTITION)], corpus)
    assert remote.returncode == local.returncode

    def relative(output: bytes, prefix: str) -> list[Any]:
        return [json.loads(row.decode().replace(prefix, "./")) for row in output.splitlines()]

    expected = relative(local.stdout, "./")
    got = relative(remote.stdout, f"file://{corpus}/")
    # fsspec names the unreadable file by its URL in the message, so compare all but that.
    assert [r for r in got if r.get("source") != "./dead.jsonl"] == [
        r for r in expected if r.get("source") != "./dead.jsonl"]
    dead = [r for r in got if r.get("source") == "./dead.jsonl"]
    assert [(r["status"], r["reasons"][0]["code"]) for r in dead] == [("invalid", "json.unreadable")]


def kill_a_busy_worker(client: Client, proc: subprocess.Popen[bytes],
                       running: Callable[[str], bool]) -> tuple[str, list[str], int]:
    """Wait until a worker runs a task of ``proc``'s (``running`` its key), then SIGKILL the
    worker's process: the worker, the keys it was running and the process killed."""
    deadline = time.monotonic() + 60
    busy: dict[str, list[str]] = {}
    while not busy:
        assert proc.poll() is None, "the command ended before a worker could be killed"
        assert time.monotonic() < deadline
        busy = {worker: [str(key) for key in keys if running(str(key))]
                for worker, keys in client.processing().items()}  # type: ignore[no-untyped-call]
        busy = {worker: keys for worker, keys in busy.items() if keys}
        time.sleep(0.01)
    worker, interrupted = next(iter(busy.items()))
    victim = client.run(os.getpid, workers=[worker])[worker]
    os.kill(victim, signal.SIGKILL)
    return worker, interrupted, victim


def test_a_worker_killed_mid_audit_has_its_work_judged_again_and_the_output_is_unchanged(
        own_cluster: tuple[str, Client], tmp_path: Path) -> None:
    address, client = own_cluster
    body = "".join(line(variant(**{"@id": f"cs:Cap{i}"})) for i in range(3000))
    body += line(variant(**{"@id": "cs:Cap1", "outputs": ["application/pdf"]}))
    (tmp_path / "r.jsonl").write_text(body)
    local = ioa_check(["r.jsonl", "--format", "json"], tmp_path)
    assert local.returncode == 1
    with get_task_stream(client) as stream:
        proc = subprocess.Popen([IOA_CHECK, "audit", "r.jsonl", "--profile", "cs-translation",
                                 "--format", "json", "--output", "out.jsonl", "--scheduler",
                                 address, "--partition-bytes", "32768"], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            # A worker judging one of this audit's partitions is killed.
            worker, interrupted, victim = kill_a_busy_worker(
                client, proc, lambda key: key.endswith("-judge"))
            _, stderr = proc.communicate(timeout=180)
        finally:
            proc.kill()
    assert b"Traceback" not in stderr
    assert proc.returncode == 1
    assert (tmp_path / "out.jsonl").read_bytes() == local.stdout
    # What the killed process was judging was judged again by another.
    redone = {str(task["key"]): task["worker"] for task in stream.data}
    assert all(redone[key] != worker for key in interrupted)
    assert victim not in client.run(os.getpid).values()


def test_without_scheduler_nothing_of_dask_is_imported(corpus: Path) -> None:
    script = ("import sys; from ioa_semantic.cli.main import main; "
              "status = main(['audit', '.', '--profile', 'cs-translation', '--output', "
              "'/dev/null', '--jobs', '1']); "
              "print(sorted({'dask', 'distributed', 'fsspec'} & set(sys.modules))); "
              "sys.exit(status)")
    proc = subprocess.run([sys.executable, "-c", script], cwd=corpus, capture_output=True,
                          timeout=120)
    assert (proc.returncode, proc.stdout) == (1, b"[]\n")


def test_without_dask_the_message_says_what_to_install(corpus: Path) -> None:
    # A None entry in sys.modules makes the import fail as if the package were absent.
    script = ("import sys; sys.modules['distributed'] = None; "
              "from ioa_semantic.cli.main import main; "
              "sys.exit(main(['audit', '.', '--profile', 'cs-translation', '--scheduler', "
              "'local:1']))")
    proc = subprocess.run([sys.executable, "-c", script], cwd=corpus, capture_output=True,
                          timeout=120)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert b"pip install 'ioa-semantic[dask]'" in proc.stderr
    assert b"Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [
    ["--scheduler", "local:0"],
    ["--scheduler", "local:two"],
    ["--scheduler", "local:1", "--state", "s.json", "--output", "o.jsonl", "--format", "json"],
    ["--partition-bytes", "1000"],
    ["--scheduler", "local:1", "--partition-bytes", "0"],
])
def test_usage_errors_are_exit_2_with_nothing_on_stdout(tmp_path: Path, args: list[str]) -> None:
    proc = ioa_check(["r.jsonl", *args], tmp_path)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert b"Traceback" not in proc.stderr


def test_an_unreachable_scheduler_is_exit_2_within_the_connect_timeout(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    # That it ends at all is what is asserted (ioa_check's timeout is a hang guard); how soon
    # after the 2 s connect timeout is a time, which a loaded machine stretches.
    proc = ioa_check(["r.jsonl", "--scheduler", f"tcp://127.0.0.1:{port}", "--output", "o.jsonl"],
                     tmp_path, env=env)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}".encode() in proc.stderr
    assert b"Traceback" not in proc.stderr
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("address", ["bogus", "tcp://127.0.0.1", "tcp://127.0.0.1:port"])
def test_a_scheduler_address_dask_cannot_read_is_exit_2_without_a_traceback(
        tmp_path: Path, address: str) -> None:
    # A Client made for it would be half made, and print a traceback as it closed itself
    # on the way out (after twice the connect timeout).
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    proc = ioa_check(["r.jsonl", "--scheduler", address, "--output", "o.jsonl"], tmp_path,
                     env=env)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert f"cannot reach the Dask scheduler at {address}".encode() in proc.stderr
    assert b"Traceback" not in proc.stderr


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.sampled_from([b"{}", b"", b"  ", b"[1, 2]", b"x" * 40, b"{\"a\": 1}",
                                      b"{\"a\": 1}\r", b"{\"a\": ", b" " * 70,
                                      b"{\"long\": \"" + b"y" * 90 + b"\"}"]),
                     max_size=60),
       final_newline=st.booleans(), size=st.integers(1, 120), limited=st.booleans(),
       stdin=st.booleans())
def test_byte_ranges_read_back_as_the_local_audit_reads_the_file(
        tmp_path_factory: pytest.TempPathFactory, rows: list[bytes], final_newline: bool,
        size: int, limited: bool, stdin: bool) -> None:
    """Cut at any size, a JSON Lines file's (or standard input's) partitions hold every line
    once, and their line counts number each line as the local audit numbers it; each line's
    text is the local audit's, without its line break; a line over the byte limit is the
    local audit's result for it, wherever the cuts fall."""
    path = tmp_path_factory.mktemp("lines") / "r.jsonl"
    path.write_bytes(b"\n".join(rows) + (b"\n" if final_newline and rows else b""))
    limits = Limits(max_bytes=64) if limited else None
    got: list[Item] = []
    before = 0
    with path.open("rb") as stream:
        for part in partitions(["-" if stdin else str(path)], size, stream, limits):
            items, lines = read_partition(part, limits)
            for source, index, document, problems in items:
                assert index is not None  # a readable file's items have their line numbers
                got.append((str(path) if stdin else source, before + index, document,
                            problems))
            before += lines
    got = _as_judged(got, limits)
    assert got == _as_judged([item for piece in pieces([str(path)], limits=limits)
                              for item in items_of(piece)], limits)
    # The items documents() reads, less their line breaks.
    assert got == _as_judged([(source, index, document.removesuffix(b"\n")
                               if isinstance(document, bytes) else document, problems)
                              for source, index, document, problems in documents(
                                  [str(path)], limits=limits)], limits)


def _as_judged(items: list[Item], limits: Limits | None) -> list[Item]:
    """``items`` with each line over the byte limit as the intake judges it: a reader may
    hold such a line (it fell within one block) or pass over it (it did not), and either
    way its result is the same finding."""
    if limits is None:
        return items
    return [(source, index, None, (too_large(len(document), limits.max_bytes),))
            if isinstance(document, bytes) and len(document) > limits.max_bytes
            else (source, index, document, problems)
            for source, index, document, problems in items]


@pytest.mark.parametrize("stdin", [False, True], ids=["file", "standard input"])
def test_a_line_longer_than_memory_is_never_held_by_a_worker_or_the_client(
        tmp_path: Path, stdin: bool) -> None:
    """A JSON Lines line of 64 MiB under a 1 MiB limit is passed over in pieces, by the
    worker reading a file's byte range and by the client cutting standard input alike: the
    largest allocation while it is read is a small fraction of it (tracemalloc counts every
    bytes object made), and it is reported as too large at its line."""
    import tracemalloc

    path = tmp_path / "r.jsonl"
    with path.open("wb") as out:
        out.write(b'{"a": 1}\n{"x": "')
        for _ in range(64):
            out.write(b"z" * (1 << 20))
        out.write(b'"}\n{"b": 2}\n')
    limits = Limits(max_bytes=1 << 20)
    found: list[Item] = []
    before = 0  # the lines of the partitions before, as the client numbers them
    tracemalloc.start()
    try:
        with path.open("rb") as stream:
            # Partitions of 4 MiB: the long line starts in the first and spans many.
            for part in partitions(["-" if stdin else str(path)], 4 << 20, stream, limits):
                items, lines = read_partition(part, limits)
                found += [(source, index + before, document, problems)
                          for source, index, document, problems in items
                          if index is not None]
                before += lines
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak
    assert [(index, problems[0].code if problems else None) for _, index, _, problems in found
            ] == [(0, None), (1, "json.too-large"), (2, None)]

@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_disk_under_the_cluster_is_exit_74_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text("".join(line(variant(**{"@id": f"cs:C{i}"}))
                                              for i in range(50)))
    run = ioa_check(["r.jsonl", "--format", "json", "--scheduler", "local:1", "--output",
                     "/dev/full"], tmp_path)
    assert run.returncode == 74, run.stderr.decode()
    assert run.stderr.decode().strip().splitlines()[-1].startswith(
        "ioa-check: cannot write /dev/full: ")


def test_a_cluster_that_goes_away_is_exit_70_said_in_one_line_with_no_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """The library raises ClusterStopped (audit.dask.connected); the command line alone says
    it and maps it to 70, the output left as it was and the cluster closed as lost."""
    from distributed.comm.core import CommClosedError

    from ioa_semantic.audit import dask as on_dask
    from ioa_semantic.cli.main import main

    closed: list[bool] = []

    class Gone:
        client = None

        def __init__(self, address: str) -> None:
            pass

        def close(self, lost: bool = False) -> None:
            closed.append(lost)

    def lost_on_submit(*args: Any, **options: Any) -> None:
        raise CommClosedError("in <TCP (closed)>: Stream is closed")

    monkeypatch.setattr(on_dask, "Cluster", Gone)
    monkeypatch.setattr(on_dask, "ClusterAudit", lost_on_submit)
    (tmp_path / "r.jsonl").write_text(line(registration_63()) + "\n")
    (tmp_path / "out.jsonl").write_text("")
    monkeypatch.chdir(tmp_path)
    status = main(["audit", "r.jsonl", "--profile", "cs-translation", "--scheduler",
                   "tcp://127.0.0.1:1", "--output", "out.jsonl", "--format", "json"])
    out, err = capsys.readouterr()
    assert (status, out) == (70, "")
    assert err == ("ioa-check: the audit on the Dask cluster stopped: CommClosedError: in "
                   "<TCP (closed)>: Stream is closed\n")
    assert closed == [True]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "r.jsonl"]


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_impact_on_the_cluster_prints_what_impact_prints_locally(
        cluster: tuple[str, Client], corpus: Path, tmp_path: Path, fmt: str) -> None:
    # Issue 40, item 3: an audit's registrations judged again under a profile revision the
    # audit reads (the scheme xx: allowed, another accepted ontology version).
    address, _ = cluster
    report = tmp_path / "audit.jsonl"
    audited = ioa_check([".", "--format", "json", "--jobs", "1", "--output", str(report)],
                        corpus)
    assert audited.returncode == 1, audited.stderr.decode()
    shipped = (Path(__file__).resolve().parents[1]
               / "ioa_semantic/data/profiles/cs-translation.ttl").read_text()
    revised = tmp_path / "revised.ttl"
    revised.write_text(shipped.replace('iop:allowedScheme "https", "http", "urn" ;',
                                       'iop:allowedScheme "https", "http", "urn", "xx" ;')
                       .replace('iop:ontologyVersion "1.0"', 'iop:ontologyVersion "2.0"'))

    def impact(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([IOA_CHECK, "impact", "--audit-report", str(report),
                               "--registrations", ".", "--audited-profile", "cs-translation",
                               "--profile", str(revised), "--format", fmt, *args],
                              cwd=corpus, capture_output=True, timeout=180)

    local = impact("--jobs", "1")
    remote = impact("--scheduler", address)
    assert remote.stderr == b"", remote.stderr.decode()
    assert (remote.returncode, remote.stdout) == (local.returncode, local.stdout)
    if fmt == "json":
        summary = json.loads(remote.stdout.splitlines()[-1])["summary"]
        assert summary["rejudged"] == summary["registrations"] > 1000
        assert summary["flipped"] > 0


@pytest.fixture(scope="module")
def decision_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log of three Checkers' runs, interleaved: 12.1 repeated under several task
    parameters, the other examples, a named instance seen again with another content (5.3),
    a malformed envelope; with the shipped artifact offered or not."""
    from datetime import UTC, datetime

    from ioa_semantic import Checker
    from ioa_semantic.impact import DecisionLog

    folder = tmp_path_factory.mktemp("logged")
    log = str(folder / "decisions.jsonl")
    examples = Path(__file__).resolve().parents[1] / "examples"
    first = (examples / "envelope-12.1.jsonld").read_bytes()
    named = first.replace(b'"@type": "ioa:SemanticProfile",',
                          b'"@type": "ioa:SemanticProfile", "@id": "urn:e:1",')
    envelopes = [first, (examples / "envelope-6.2.jsonld").read_bytes(),
                 (examples / "legal-contract.jsonld").read_bytes(), named,
                 named.replace(b'"LLM"', b'"large language model"'), b'{"@type": ']
    params = [{}, {"sourceLang": "zh", "targetLang": "en"}, {"sourceLang": "fr"}]
    checkers = [Checker("cs-translation", capabilities=[examples / "provider-12.1.jsonld"],
                        alignments=alignments, recorder=DecisionLog(log))
                for alignments in (["cs-doc-v1"], [], ["cs-doc-v1"])]
    june = datetime(2026, 6, 1, tzinfo=UTC)
    for i in range(700):  # about three batches' worth of touched decisions
        checkers[i % 3].check(envelopes[i // 3 % len(envelopes)], params=params[i // 2 % 3],
                              at=june, source=f"e{i % 5}.jsonld")
    return folder


@pytest.mark.parametrize("fmt", ["json", "text", "sarif", "html"])
def test_a_logs_impact_on_the_cluster_prints_what_impact_prints_locally(
        cluster: tuple[str, Client], decision_log: Path, fmt: str) -> None:
    # Issue 40, item 3: a decision log's touched decisions judged on the cluster. Two parts
    # touch most decisions (a profile revision the decisions past the baseline read, and an
    # instant past the artifact's validUntil), so causes are judged part by part too.
    address, _ = cluster
    shipped = (Path(__file__).resolve().parents[1]
               / "ioa_semantic/data/profiles/cs-translation.ttl").read_text()
    (decision_log / "law-too.ttl").write_text(shipped.replace(
        "iop:permittedDomain cs:ComputerScience ;",
        "iop:permittedDomain cs:ComputerScience, law:Law ;"))

    def impact(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([IOA_CHECK, "impact", "decisions.jsonl", "--profile",
                               "law-too.ttl", "--at", "2027-06-01T00:00:00Z", "--format", fmt,
                               *args], cwd=decision_log, capture_output=True, timeout=300)

    local = impact()
    with get_task_stream(cluster[1]) as stream:
        remote = impact("--scheduler", address)
    assert remote.stderr == b"", remote.stderr.decode()
    assert (remote.returncode, remote.stdout) == (local.returncode, local.stdout)
    assert local.returncode == 1
    # Judged on the workers, in batches of 256 touched decisions.
    batches = {str(t["key"]) for t in stream.data if str(t["key"]).startswith("judge_batch")}
    if fmt == "json":
        summary = json.loads(remote.stdout.splitlines()[-1])["summary"]
        assert summary["decisions"] == 700 and summary["rejudged"] > 512
        assert len(batches) == -(-summary["rejudged"] // 256)
        assert summary["flipped"] > 0 and len(summary["causes"]) > 1
        # Each Checker saw the named instance with two contents: the revision memory the
        # workers restore finds the second ambiguous, as the local run does.
        assert b"profile.revision-ambiguous" in remote.stdout


def test_a_worker_killed_mid_impact_has_its_work_judged_again_and_the_output_is_unchanged(
        own_cluster: tuple[str, Client], decision_log: Path) -> None:
    address, client = own_cluster
    shipped = (Path(__file__).resolve().parents[1]
               / "ioa_semantic/data/profiles/cs-translation.ttl").read_text()
    (decision_log / "law-too.ttl").write_text(shipped.replace(
        "iop:permittedDomain cs:ComputerScience ;",
        "iop:permittedDomain cs:ComputerScience, law:Law ;"))
    # An instant of its own: the workers build their Checkers for it afresh (what they
    # built for the other tests' change would judge its batches before one could be killed).
    args = [IOA_CHECK, "impact", "decisions.jsonl", "--profile", "law-too.ttl", "--at",
            "2027-07-01T00:00:00Z", "--format", "json"]
    local = subprocess.run(args, cwd=decision_log, capture_output=True, timeout=300)
    with get_task_stream(client) as stream:
        proc = subprocess.Popen([*args, "--scheduler", address], cwd=decision_log,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            # A worker judging one of this run's batches is killed.
            worker, interrupted, _ = kill_a_busy_worker(
                client, proc, lambda key: key.startswith("judge_batch"))
            stdout, stderr = proc.communicate(timeout=180)
        finally:
            proc.kill()
    assert b"Traceback" not in stderr
    assert (proc.returncode, stdout) == (local.returncode, local.stdout)
    # What the killed process was judging was judged again by another.
    redone = {str(task["key"]): task["worker"] for task in stream.data}
    assert all(redone[key] != worker for key in interrupted)


def test_a_batch_that_kills_its_workers_twice_is_not_judged_and_says_why(
        tmp_path: Path) -> None:
    # Issue 40, item 3: a batch Dask gives up on (KilledWorker: here at its first worker's
    # death) is submitted once more; given up on again, its decisions are counted as not
    # judged again, with why, and the exit status says nothing is established (3): never a
    # traceback, never an outcome invented.
    from datetime import UTC, datetime

    import dask

    from ioa_semantic import Checker
    from ioa_semantic.impact import DecisionLog

    examples = Path(__file__).resolve().parents[1] / "examples"
    checker = Checker("cs-translation", capabilities=[examples / "provider-12.1.jsonld"],
                      alignments=["cs-doc-v1"], recorder=DecisionLog(str(tmp_path / "d.jsonl")))
    for i in range(40):
        checker.check((examples / "envelope-12.1.jsonld").read_bytes(),
                      params={"sourceLang": f"l{i}"}, at=datetime(2026, 6, 1, tzinfo=UTC))
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            LocalCluster(n_workers=1, threads_per_worker=1, processes=True,  # type: ignore[no-untyped-call]
                         dashboard_address=":0", silence_logs=logging.CRITICAL) as local, \
            Client(local, set_as_default=False) as client:  # type: ignore[no-untyped-call]
        proc = subprocess.Popen([IOA_CHECK, "impact", "d.jsonl", "--at", "2027-01-01T00:00:00Z",
                                 "--format", "json", "--scheduler", local.scheduler_address],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            for _ in range(2):  # the batch, then the batch submitted again
                worker, _, _ = kill_a_busy_worker(
                    client, proc, lambda key: key.startswith("judge_batch"))
                # The scheduler has seen the death, and the nanny's new worker is up.
                deadline = time.monotonic() + 60
                while worker in client.scheduler_info()["workers"]:
                    assert time.monotonic() < deadline
                    time.sleep(0.01)
                client.wait_for_workers(1, timeout=60)
            stdout, stderr = proc.communicate(timeout=180)
        finally:
            proc.kill()
    assert b"Traceback" not in stderr, stderr.decode()
    assert proc.returncode == 3
    summary = json.loads(stdout.splitlines()[-1])["summary"]
    assert summary["decisions"] == 40 and summary["rejudged"] == summary["flipped"] == 0
    assert summary["unjudgeable"] == {
        "its batch ended worker processes of the cluster twice (Dask's KilledWorker)": 40}


def test_what_the_walk_does_not_open_and_a_file_over_the_limit_are_the_local_audits(
        cluster: tuple[str, Client], tmp_path: Path) -> None:
    """A named pipe met by the walk, and a ``*.json`` file past the byte limit (read no
    further), are each a result of their own on the cluster as in the local audit: never
    left out (a pipe blocked nothing there, but was silently not audited), never read whole."""
    address, _ = cluster
    (tmp_path / "a.jsonl").write_text(line(registration_63()))
    os.mkfifo(tmp_path / "b.jsonl")
    with open(tmp_path / "c.json", "wb") as big:
        big.truncate(3 << 20)  # sparse: 3 MiB of zero bytes, over --max-bytes 1 MiB
    local = ioa_check([".", "--format", "json", "--jobs", "1"], tmp_path)
    remote = ioa_check([".", "--format", "json", "--scheduler", address], tmp_path)
    assert remote.stderr == b"", remote.stderr.decode()
    assert (remote.returncode, remote.stdout) == (local.returncode, local.stdout)
    records = [json.loads(row) for row in local.stdout.splitlines()]
    codes = {r["source"]: [reason["code"] for reason in r["reasons"]] for r in records
             if "source" in r}
    assert codes == {"./a.jsonl": [], "./b.jsonl": ["json.unreadable"],
                     "./c.json": ["json.too-large"]}
