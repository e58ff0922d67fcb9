"""``ioa-check trace --store URL``: the trace store on a SPARQL 1.1 server feeders share.

A real ``oxigraph serve`` (the ``oxigraph`` package of the test extra) is started for each
test on a loopback port. The same runs fed to an embedded store and to the server must give
the same graphs and the same query answers; two ``ioa-check trace`` processes let go at the
same instant on one server must record every run once, with unique verdict numbers; a
server killed under a feeder is exit status 74 with a reason naming it, and a rerun records
what was missing without doubling anything.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyoxigraph
import pytest

from support import IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

from test_trace import GOLDEN, MANIFESTS, TRACES
from test_trace_store import AT, PLAIN, SMOKE, TUTORIALS, feed, graphs, query, rows

from ioa_semantic.trace.remote import LEASE_ENV, LOCK_GRAPH, SparqlServer, Turn
from ioa_semantic.trace.store import (
    HOLD_ENV,
    KILL_AFTER_ENV,
    StoreKeyError,
    StoreUnavailable,
    open_store,
)

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")

IOAT = "https://example.org/ioa/trace#"
INPUTS = [SMOKE, GOLDEN, *TUTORIALS]


def _binary() -> str | None:
    beside = Path(sys.executable).parent / "oxigraph"
    return str(beside) if beside.is_file() else shutil.which("oxigraph")


class Server:
    """``oxigraph serve`` on a free loopback port, its data in ``location``."""

    def __init__(self, location: Path) -> None:
        self.location = location
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = _binary()
        assert binary is not None
        self.proc = subprocess.Popen(
            [binary, "serve", "--location", str(self.location), "--bind",
             f"127.0.0.1:{self.port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60  # a generous start on a busy machine
        while time.monotonic() < deadline:
            try:
                if httpx.post(f"{self.url}/query", content="ASK {}", timeout=2, headers={
                        "content-type": "application/sparql-query"}).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise AssertionError("oxigraph serve did not start within 60 s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def select(self, text: str) -> list[dict[str, str]]:
        answer = httpx.post(f"{self.url}/query", content=text, timeout=60, headers={
            "content-type": "application/sparql-query",
            "accept": "application/sparql-results+json"})
        answer.raise_for_status()
        return [{k: v["value"] for k, v in row.items()}
                for row in answer.json()["results"]["bindings"]]

    def graphs(self) -> dict[str, set[tuple[str, str, str]]]:
        """Every named graph but the feeders' turns, as :func:`test_trace_store.graphs`."""
        export = httpx.get(f"{self.url}/store", timeout=60,
                           headers={"accept": "application/n-quads"})
        export.raise_for_status()
        out: dict[str, set[tuple[str, str, str]]] = {}
        for quad in pyoxigraph.parse(export.content, format=pyoxigraph.RdfFormat.N_QUADS):
            if str(quad.graph_name) != f"<{LOCK_GRAPH}>":
                out.setdefault(str(quad.graph_name), set()).add(
                    (str(quad.subject), str(quad.predicate), str(quad.object)))
        return out

    def verdicts(self) -> list[tuple[str, int]]:
        """(run, verdict number) of every verdict on the server."""
        return sorted((r["run"], int(r["n"])) for r in self.select(
            f"SELECT ?run ?n WHERE {{ GRAPH <urn:ioa-trace:verdicts> {{ ?v <{IOAT}auditedRun> "
            f"?run ; <{IOAT}sequence> ?n }} }}"))

    def runs(self) -> list[str]:
        return sorted(r["g"] for r in self.select(
            f"SELECT ?g WHERE {{ GRAPH ?g {{ ?g <{IOAT}runRecord> ?record }} }}"))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    if _binary() is None:
        if os.environ.get("IOA_CI"):
            pytest.fail("oxigraph (the test extra's `oxigraph` package) is not installed: CI "
                        "must run the shared-store tests")
        pytest.skip("the oxigraph server (pip package oxigraph) is not installed")
    started = Server(tmp_path / "server")
    started.start()
    yield started
    started.kill()


def _exact(server: Server, runs: int) -> None:
    """Every run recorded once: one record and one verdict a run, numbers 1..n, no gap."""
    verdicts = server.verdicts()
    assert len(server.runs()) == runs
    assert sorted(n for _, n in verdicts) == list(range(1, runs + 1))
    assert len({run for run, _ in verdicts}) == runs
    # One verdict node a number: two writers of one number would merge theirs into one node
    # (with two consumers, or two instants where --at is not given).
    for prop in ("consumer", "auditedAt"):
        assert len(server.select(f"SELECT ?v ?x WHERE {{ GRAPH <urn:ioa-trace:verdicts> {{ "
                                 f"?v <{IOAT}{prop}> ?x }} }}")) == runs


def test_the_same_runs_give_the_same_graphs_and_answers_as_the_embedded_store(
        tmp_path: Path, server: Server) -> None:
    embedded = tmp_path / "embedded"
    for store in (embedded, server.url):
        assert feed(INPUTS, store, tmp_path, PLAIN, "--manifests", MANIFESTS).returncode in (
            0, 1, 3)
    assert server.graphs() == graphs(embedded)
    for name in ("runs", "undeclared_uses", "undeclared_flow", "violation_span",
                 "manifest_revisions"):
        assert query(server.url, tmp_path, name) == query(embedded, tmp_path, name), name
    # A reaudit against other declarations appends the same verdicts to both.
    for store in (embedded, server.url):
        proc = subprocess.run([IOA_CHECK, "trace", "reaudit", str(store), "--at", AT,
                               "--format", "json"], cwd=tmp_path, capture_output=True,
                              timeout=300)
        assert b"Traceback" not in proc.stderr and proc.returncode in (0, 1, 3), proc.stderr
    assert server.graphs() == graphs(embedded)
    first, second = (r["runId"] for r in query(embedded, tmp_path, "runs")[:2])
    pair = ["--param", f"runA={first}", "--param", f"runB={second}"]
    assert query(server.url, tmp_path, "verdict_changes", *pair) == query(
        embedded, tmp_path, "verdict_changes", *pair)
    # A --sparql query of the user's runs on the server, bounded as on a folder.
    mine = tmp_path / "mine.rq"
    mine.write_text("SELECT (COUNT(*) AS ?n) WHERE { GRAPH <urn:ioa-trace:verdicts> "
                    f"{{ ?v a <{IOAT}Verdict> }} }}")
    assert query(server.url, tmp_path, None, "--sparql", mine) == query(
        embedded, tmp_path, None, "--sparql", mine)


def _at_once(server: Server, tmp_path: Path, inputs: list[list[Path]], *more: Any,
             one_consumer: bool = False) -> list[subprocess.CompletedProcess[bytes]]:
    """One ``ioa-check trace --store URL`` a list of inputs, each its own consumer (or all
    one), all let go
    at the same instant once each has opened the store (the hold hook of
    ``ioa_semantic.trace.store``)."""
    flags = [tmp_path / f"hold-{index}" for index in range(len(inputs))]
    procs = [subprocess.Popen(
        [IOA_CHECK, "trace", *map(str, paths), "--store", server.url, "--no-shapes",
         "--format", "json", "--at", AT, "--manifests", str(MANIFESTS), "--consumer",
         "feeders" if one_consumer else f"feeder-{index}", *map(str, more)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, HOLD_ENV: str(flag)})
        for index, (paths, flag) in enumerate(zip(inputs, flags, strict=True))]
    deadline = time.monotonic() + 120
    while not all(f.exists() for f in flags) and time.monotonic() < deadline:
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.02)
    for flag in flags:
        flag.unlink()
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert b"Traceback" not in stderr, stderr.decode()
        out.append(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
    return out


def _count(tmp_path: Path, inputs: list[Path] = INPUTS) -> int:
    """The runs ``inputs`` hold, from an embedded store fed with them."""
    return _runs_held(tuple(inputs))


@functools.cache
def _runs_held(inputs: tuple[Path, ...]) -> int:
    """:func:`_count`, once a session for each list of inputs: they are the shared samples,
    which no test changes, and four tests count the same ones."""
    with tempfile.TemporaryDirectory() as folder:
        embedded = Path(folder) / "count"
        feed(list(inputs), embedded, Path(folder), PLAIN, "--manifests", MANIFESTS)
        return len(query(embedded, Path(folder), "runs"))


@pytest.mark.parametrize("one_consumer", [False, True], ids=["two-consumers", "one-consumer"])
def test_two_feeders_of_the_same_inputs_at_once_record_each_run_once(
        tmp_path: Path, server: Server, one_consumer: bool) -> None:
    """Two hosts feeding the same files: under a consumer each, or under one consumer whose
    checkpoints both write (the very same nodes)."""
    for proc in _at_once(server, tmp_path, [INPUTS, INPUTS], PLAIN, one_consumer=one_consumer):
        assert proc.returncode in (0, 1, 3), proc.stderr.decode()
    _exact(server, _count(tmp_path))
    # The turns were taken and all given back.
    assert not server.select(
        f"SELECT ?c WHERE {{ GRAPH <{LOCK_GRAPH}> {{ ?t <{IOAT}claim> ?c FILTER NOT EXISTS "
        f"{{ ?c <{IOAT}done> ?d }} }} }}")


def test_two_feeders_of_different_inputs_at_once_lose_no_run(
        tmp_path: Path, server: Server) -> None:
    first, second = [SMOKE, GOLDEN], TUTORIALS
    for proc in _at_once(server, tmp_path, [first, second], PLAIN):
        assert proc.returncode in (0, 1, 3), proc.stderr.decode()
    _exact(server, _count(tmp_path))


def test_turns_keep_verdict_numbers_unique_under_concurrent_writers(server: Server) -> None:
    """Four writers each take 10 turns and write "the greatest number plus one": every number
    once. Without the turn (the read and the write in one update request, which Oxigraph
    runs on a snapshot with no conflict detection) numbers come out twice."""
    graph = "<urn:test:numbers>"

    def writer() -> None:
        remote = SparqlServer(server.url)
        for _ in range(10):
            turn = Turn(remote)
            turn.take()
            rows = remote.select(f"SELECT (MAX(?n) AS ?m) WHERE {{ GRAPH {graph} "
                                 "{ ?x <urn:test:n> ?n } }")
            number = int(rows[0]["m"].value) + 1 if rows and "m" in rows[0] else 1
            remote.update(f"INSERT {{ GRAPH {graph} {{ <urn:test:x:{number}:{turn.token}> "
                          f"<urn:test:n> {number} }} }} WHERE {{ {turn.fence()} }}")
            turn.give_back()
        remote.close()

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    numbers = [int(r["n"]) for r in server.select(
        f"SELECT ?n WHERE {{ GRAPH {graph} {{ ?x <urn:test:n> ?n }} }}")]
    assert sorted(numbers) == list(range(1, 41))


def test_a_server_killed_under_a_feeder_is_74_and_a_rerun_doubles_nothing(
        tmp_path: Path, server: Server) -> None:
    feed([SMOKE], server.url, tmp_path, PLAIN, "--manifests", MANIFESTS)
    flag = tmp_path / "hold"
    proc = subprocess.Popen(
        [IOA_CHECK, "trace", *map(str, INPUTS), "--store", server.url, "--no-shapes",
         "--format", "json", "--at", AT, "--manifests", str(MANIFESTS), PLAIN],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, HOLD_ENV: str(flag)})
    deadline = time.monotonic() + 120
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    server.kill()
    flag.unlink()
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 74, stderr.decode()
    assert b"Traceback" not in stderr
    assert f"the trace store {server.url} cannot be reached".encode() in stderr
    server.start()  # the same data folder: what was acknowledged is there
    assert len(server.runs()) == 1
    rerun = feed(INPUTS, server.url, tmp_path, PLAIN, "--manifests", MANIFESTS)
    assert rerun.returncode in (0, 1, 3), rerun.stderr.decode()
    _exact(server, _count(tmp_path))


def test_a_private_store_on_a_server_needs_its_key_and_refuses_another(
        tmp_path: Path, server: Server) -> None:
    key = tmp_path / "keys" / "store.key"
    key.parent.mkdir()
    without = feed([SMOKE], server.url, tmp_path)
    assert without.returncode == 2 and b"--store-key" in without.stderr
    assert not server.runs()  # refused before anything was written
    made = feed([SMOKE], server.url, tmp_path, "--store-key", key)
    assert made.returncode in (0, 1, 3), made.stderr.decode()
    assert key.stat().st_mode & 0o777 == 0o600
    assert len(server.runs()) == 1
    # No identity as the trace has it reaches the server: the run id is keyed.
    assert rows(subprocess.run([IOA_CHECK, "trace", "query", server.url, "runs",
                                "--store-key", str(key)], cwd=tmp_path, capture_output=True,
                               timeout=300))[0]["runId"].startswith("run-")
    other = tmp_path / "other.key"
    other.write_bytes(bytes(range(32)))
    other.chmod(0o600)
    refused = feed([SMOKE], server.url, tmp_path, "--store-key", other)
    assert refused.returncode == 2 and b"is not the key" in refused.stderr
    opened = open_store(server.url, key_file=str(other))
    with pytest.raises(StoreKeyError):
        opened.key()
    opened.store.close()


def test_a_url_is_named_without_its_credentials_and_answers_are_bounded(
        tmp_path: Path, server: Server) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    proc = subprocess.run([IOA_CHECK, "trace", "query", f"http://alice:s3cret@127.0.0.1:{closed}/",
                           "runs"], cwd=tmp_path, capture_output=True, timeout=300)
    assert proc.returncode == 74
    assert b"s3cret" not in proc.stderr and b"alice" not in proc.stderr
    assert f"http://127.0.0.1:{closed}".encode() in proc.stderr
    small = SparqlServer(server.url, max_bytes=64)
    with pytest.raises(StoreUnavailable, match="more than 64 bytes"):
        small.select("SELECT ?n WHERE { VALUES ?n { 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 } }")
    small.close()


def test_a_server_that_never_answers_is_unavailable_within_the_timeout(tmp_path: Path) -> None:
    """A server that takes the connection and says nothing: the read timeout ends the wait
    with the store unavailable, naming the server (a deadline, not a measured duration)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        remote = SparqlServer(url, read_timeout=0.5)
        with pytest.raises(StoreUnavailable, match=f"the trace store {url} cannot be reached"):
            remote.select("SELECT * WHERE { ?s ?p ?o }")
        remote.close()


def test_a_url_with_a_query_string_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run([IOA_CHECK, "trace", str(SMOKE), "--store",
                           "http://127.0.0.1:1/ds?token=x", "--no-shapes"], cwd=tmp_path,
                          capture_output=True, timeout=300)
    assert proc.returncode == 2 and b"no query string" in proc.stderr
    assert b"token=x" not in proc.stderr


def test_trace_serve_judges_into_a_store_on_a_server(tmp_path: Path, server: Server) -> None:
    """The live service with ``--store URL --store-key FILE``: its judge is given both, and
    the run the SDK exported is on the server, judged once, its key never there."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http",
                        reason="the OTLP/HTTP exporter is not installed")
    pytest.importorskip("uvicorn", reason="the serve extra is not installed")
    from test_trace_formats import write_manifests
    from test_trace_serve import Service, export

    key = tmp_path / "store.key"
    service = Service(tmp_path / "spool", f"http://judge:pw@127.0.0.1:{server.port}",
                      write_manifests(tmp_path, every_tool=False), "--store-key", str(key))
    try:
        export(service.url)
        health = service.judged()
        assert health["lastJudgeStatus"] == 1, health
        assert "pw@" not in service.stop()
    finally:
        if service.process.poll() is None:
            service.kill()
    (run,) = rows(subprocess.run([IOA_CHECK, "trace", "query", server.url, "runs",
                                  "--store-key", str(key)], cwd=tmp_path, capture_output=True,
                                 timeout=300))
    assert run["result"] == "incompatible" and run["verdicts"] == 1, run
    assert key.read_bytes().hex().encode() not in export_bytes(server)


def export_bytes(server: Server) -> bytes:
    answer = httpx.get(f"{server.url}/store", timeout=60, headers={"accept": "application/n-quads"})
    answer.raise_for_status()
    return answer.content


def test_a_feeder_killed_holding_its_turn_delays_a_rerun_by_the_lease_only(
        tmp_path: Path, server: Server) -> None:
    """A feeder that dies (SIGKILL, the test hook) right after writing a run, inside its turn,
    leaves the turn claimed: the rerun takes it once the lease is over and records what is
    missing, once (the lease is two seconds here, through the tests' hook)."""
    env = {LEASE_ENV: "2"}
    inputs = [SMOKE, GOLDEN]  # a run each
    # The store's version and mode, a checkpoint an input, then the first run: killed there.
    killed = feed(inputs, server.url, tmp_path, PLAIN, "--manifests", MANIFESTS,
                  env={**env, KILL_AFTER_ENV: "4"})
    assert killed.returncode == -signal.SIGKILL
    assert server.select(f"SELECT ?c WHERE {{ GRAPH <{LOCK_GRAPH}> {{ ?t <{IOAT}claim> ?c "
                         f"FILTER NOT EXISTS {{ ?c <{IOAT}done> ?d }} }} }}")
    assert len(server.runs()) == 1
    rerun = feed(inputs, server.url, tmp_path, PLAIN, "--manifests", MANIFESTS, env=env)
    assert rerun.returncode in (0, 1, 3), rerun.stderr.decode()
    _exact(server, _count(tmp_path, inputs))


class _Trickle:
    """A server that answers 200 at once, then its body one byte at a time, each well within
    any read timeout, for ever (until ``stop``, or a minute, so that a test fails, not hangs)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stop = threading.Event()
        self.sent = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:  # closed before any request came
            return
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/sparql-results+json"
                         b"\r\ntransfer-encoding: chunked\r\n\r\n")
            deadline = time.monotonic() + 60
            while not self.stop.is_set() and time.monotonic() < deadline:
                try:
                    conn.sendall(b"1\r\n \r\n")
                except OSError:
                    return
                self.sent += 1
                self.stop.wait(0.02)

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def test_a_server_that_trickles_an_endless_answer_is_given_up_at_the_answer_deadline(
        ) -> None:
    """Each byte comes well within the read timeout (which httpx counts per read), so only a
    deadline for the whole answer ends the wait: StoreUnavailable naming the server, the
    answer left unread (a deadline, not a measured duration)."""
    trickle = _Trickle()
    try:
        remote = SparqlServer(trickle.url, read_timeout=30, answer_timeout=0.5)
        with pytest.raises(StoreUnavailable, match=f"the trace store {trickle.url} did not "
                                                   "finish its answer within 0.5 s"):
            remote.select("SELECT * WHERE { ?s ?p ?o }")
        assert not trickle.stop.is_set()  # given up on while the server still sent
        remote.close()
    finally:
        trickle.close()


def test_turns_given_back_leave_the_lock_graph_small(server: Server) -> None:
    """Each turn given back forgets the turns before it: the lock graph stays a few triples
    however many runs were recorded (its greatest turn number, all the fence needs, is
    kept), so taking a turn does not slow down as the store grows."""
    remote = SparqlServer(server.url)
    for _ in range(30):
        turn = Turn(remote)
        turn.take()
        turn.give_back()
    (row,) = server.select(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{LOCK_GRAPH}> "
                           "{ ?s ?p ?o } }")
    (last,) = server.select(f"SELECT (MAX(?t) AS ?last) WHERE {{ GRAPH <{LOCK_GRAPH}> "
                            f"{{ ?s <{IOAT}turn> ?t }} }}")
    assert last["last"] == "30" and int(row["n"]) <= 10, (row, last)
    remote.close()


def test_a_stale_claim_of_an_old_turn_is_not_held(server: Server) -> None:
    """A feeder that read the greatest turn long ago and claims a turn others have since
    passed does not hold it (its writes would be fenced off): it claims again."""
    remote = SparqlServer(server.url)
    for _ in range(3):
        turn = Turn(remote)
        turn.take()
        turn.give_back()
    stale = Turn(remote)
    assert not stale._claim(2)
    stale.take()
    assert stale.number == 4
    stale.give_back()
    remote.close()


def test_a_damaged_turn_number_is_a_clear_error(server: Server) -> None:
    """Someone with write access put a turn number that is no integer: an error naming the
    store, not a traceback."""
    remote = SparqlServer(server.url)
    remote.update(f"INSERT DATA {{ GRAPH <{LOCK_GRAPH}> {{ <urn:x> <{IOAT}turn> \"many\" }} }}")
    with pytest.raises(StoreUnavailable, match="turn number"):
        Turn(remote).take()
    remote.close()


class _Answers:
    """A server that answers every request with one status, media type and body."""

    def __init__(self, status: int, media: str, body: bytes) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                self.send_response(status)
                self.send_header("content-type", media)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def test_a_server_that_refuses_the_feeders_own_queries_is_74_not_a_traceback(
        tmp_path: Path) -> None:
    """A 400 to a query the feeder itself made (not a SPARQL server at that path, or one that
    lacks a feature the turns use) is the store's failing, exit 74 naming the server, with the
    first line of what it said."""
    from test_trace_store import ioa

    refusing = _Answers(400, "text/plain", b"Parse error: no such thing\nsecond line")
    try:
        proc = feed([SMOKE], refusing.url, tmp_path, PLAIN)
        assert proc.returncode == 74, proc.stderr
        assert f"the trace store {refusing.url} refused a query".encode() in proc.stderr
        assert b"Parse error: no such thing" in proc.stderr and b"second line" not in proc.stderr
        proc = ioa(["trace", "query", refusing.url, "runs"], tmp_path)
        assert proc.returncode == 74 and b"refused a query" in proc.stderr, proc.stderr
    finally:
        refusing.close()


def test_an_answer_in_sparql_results_xml_is_read(tmp_path: Path) -> None:
    """A server that answers in the XML results format whatever the Accept asked for."""
    xml = (b'<?xml version="1.0"?><sparql xmlns="http://www.w3.org/2005/sparql-results#">'
           b'<head><variable name="n"/></head><results><result><binding name="n">'
           b'<literal>7</literal></binding></result></results></sparql>')
    answering = _Answers(200, "application/sparql-results+xml; charset=utf-8", xml)
    try:
        remote = SparqlServer(answering.url)
        assert [row["n"].value for row in remote.select("SELECT ?n {}")] == ["7"]
        remote.close()
    finally:
        answering.close()


def test_the_stored_runs_are_read_one_record_an_answer(tmp_path: Path, server: Server) -> None:
    """A reaudit reads every stored run's record: one answer a record, so a store whose
    records together pass the answer cap (256 MiB) is still read, as a folder is."""
    assert feed(INPUTS, server.url, tmp_path, PLAIN).returncode in (0, 1, 3)
    store = open_store(server.url)
    held = list(store.stored_runs())
    assert len(held) >= 3 and held == sorted(held)
    largest = max(len(text.encode()) for _, text in held)
    assert sum(len(text.encode()) for _, text in held) > largest + 4096
    store.store.max_bytes = largest + 4096  # each record fits, all of them do not
    assert list(store.stored_runs()) == held
    store.store.close()


def test_a_replacement_cut_short_keeps_what_the_replaced_graph_promised_on_a_server(
        tmp_path: Path, server: Server) -> None:
    from test_trace_store_scale import replacement_cut_short

    # The feeder killed inside its turn leaves it claimed: the next feed would wait out the
    # whole lease (60 s) before it writes. Two seconds, through the tests' hook, as in
    # test_a_feeder_killed_holding_its_turn_delays_a_rerun_by_the_lease_only.
    replacement_cut_short(tmp_path, server.url, server.graphs, PLAIN, env={LEASE_ENV: "2"})


def test_a_record_on_a_server_is_in_few_large_parts(tmp_path: Path, server: Server) -> None:
    """The embedded store cuts a long run's record into parts of 64 Ki characters (its
    merging holds a block of each file it reads); on a server, where reading a record back is
    a request a part, the parts are of 4 Mi characters: a record of some hundreds of KB is one
    literal there, and many parts in a folder. Read back, the two are the same record."""
    from test_trace_store_scale import _record_of, large_run

    run = large_run(tmp_path / "runs", 300)
    local = tmp_path / "local"
    for store in (server.url, local):
        assert feed([run], store, tmp_path, PLAIN, "--batch-size", "100000").returncode in (
            0, 1, 3)
    (name,) = server.runs()  # the whole record, one literal
    folder = {p: o for _, p, o in graphs(local)[f"<{name}>"]}
    assert f"<{IOAT}runRecordParts>" in folder and f"<{IOAT}runRecord>" not in folder
    assert int(folder[f"<{IOAT}runRecordParts>"].split('"')[1]) > 5
    served = open_store(server.url)
    try:
        assert served.record_text(name) == _record_of(local)[0]
    finally:
        served.store.close()
