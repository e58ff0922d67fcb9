"""``ioa-check trace serve``: OTLP/HTTP ingestion, judged into a store (issue 37, item 3).

The real OpenTelemetry SDK exports the rail-assist scenario (tests/otel_agents.py) with its
own OTLP/HTTP exporter (protobuf) to the service run as a process; the store then holds the
run, judged once, with the verdict the file audit gives. A service killed (SIGKILL) right
after acknowledging loses nothing: started again on the same spool, it judges what it
acknowledged, once. Bad requests get the OTLP/HTTP status codes.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http",
                    reason="the OTLP/HTTP exporter is not installed")
pytest.importorskip("uvicorn", reason="the serve extra is not installed")

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from test_trace_formats import SCENARIO, UNDECLARED_SPAN, run, write_manifests

import otel_agents
from support import IOA_CHECK

# How long a started service may take to say where it listens, and a judging round to
# finish: generous bounds on a loaded machine, never a measurement.
START_WITHIN = 60.0
JUDGED_WITHIN = 120.0


class Service:
    """``ioa-check trace serve`` as a process."""

    def __init__(self, spool: Path, store: Path | str, manifests: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            [IOA_CHECK, "trace", "serve", "--spool", str(spool), "--store", str(store),
             "--manifests", str(manifests), "--port", "0", "--judge-every", "0.2", *extra],
            stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        deadline = time.monotonic() + START_WITHIN
        line = ""
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            found = re.search(r"listening on (http://\S+)/v1/traces", line)
            if found:
                self.url = found.group(1)
                return
            if not line and self.process.poll() is not None:
                break
        self.process.kill()
        raise AssertionError(f"the service did not start: {line}")

    def health(self) -> dict[str, Any]:
        answer: dict[str, Any] = httpx.get(self.url + "/healthz", timeout=30).json()
        return answer

    def judged(self) -> dict[str, Any]:
        """/healthz once a judging round has judged everything spooled."""
        deadline = time.monotonic() + JUDGED_WITHIN
        while time.monotonic() < deadline:
            health = self.health()
            if health["judgedBytes"] == health["spooledBytes"] and health["judged"]:
                return health
            time.sleep(0.1)
        raise AssertionError(f"not judged: {self.health()}")

    def stop(self) -> str:
        self.process.send_signal(signal.SIGTERM)
        _, err = self.process.communicate(timeout=60)
        return str(err)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)
        assert self.process.stderr is not None
        self.process.stderr.close()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    running = Service(tmp_path / "spool", tmp_path / "store",
                      write_manifests(tmp_path, every_tool=False))
    yield running
    if running.process.poll() is None:
        running.kill()


def export(url: str) -> None:
    """The scenario through the SDK, each span exported by its OTLP/HTTP exporter
    (protobuf) as it ends."""
    run(OTLPSpanExporter(endpoint=url + "/v1/traces", timeout=30))


def stored_runs(store: Path) -> list[dict[str, Any]]:
    proc = subprocess.run([IOA_CHECK, "trace", "query", str(store), "runs"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_the_sdks_otlp_http_exporter_feeds_the_store_judged_once(service: Service,
                                                                   tmp_path: Path) -> None:
    export(service.url)
    health = service.judged()
    assert health["accepted"] >= 1 and health["lastJudgeStatus"] == 1, health
    assert health["judgingRefused"] is None
    err = service.stop()
    assert "stopped" in err
    (run,) = stored_runs(tmp_path / "store")
    assert run["result"] == "incompatible" and run["verdicts"] == 1, run
    # The spool is a Collector protobuf file: the file audit gives the same verdict, naming
    # the undeclared tool's span.
    proc = subprocess.run([IOA_CHECK, "trace", str(tmp_path / "spool" / "spans.binpb"),
                           "--manifests", str(tmp_path / "manifests"), "--no-shapes",
                           "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and UNDECLARED_SPAN in proc.stdout


def test_a_spool_past_the_judges_memory_bound_is_said_on_healthz(tmp_path: Path) -> None:
    """What a round cannot judge within --max-memory is not judged, and /healthz says so
    (not only the log), with the bound; nothing is stored, and the spool keeps it (its
    segment is not settled, so it is never retired)."""
    running = Service(tmp_path / "spool", tmp_path / "store",
                      write_manifests(tmp_path, every_tool=False), "--max-memory", "1MiB",
                      "--retain", "0")
    try:
        export(running.url)
        deadline = time.monotonic() + JUDGED_WITHIN
        while running.health()["judgingRefused"] is None and time.monotonic() < deadline:
            time.sleep(0.1)
        health = running.health()
        assert health["lastJudgeStatus"] == 3, health
        assert "--max-memory 1 MiB" in health["judgingRefused"], health
        assert health["judgedBytes"] == 0 and health["spooledBytes"] > 0, health
        assert health["retiredSegments"] == 0, health
    finally:
        running.kill()
    assert not (tmp_path / "store").exists() or not stored_runs(tmp_path / "store")


def test_a_service_killed_after_acknowledging_loses_and_doubles_nothing(
        tmp_path: Path) -> None:
    manifests = write_manifests(tmp_path, every_tool=False)
    first = Service(tmp_path / "spool", tmp_path / "store", manifests)
    export(first.url)  # every request acknowledged: the exporter reports success
    first.kill()
    # A judging process the service had started ends with it.
    deadline = time.monotonic() + JUDGED_WITHIN
    while _judging(tmp_path / "spool") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _judging(tmp_path / "spool")
    second = Service(tmp_path / "spool", tmp_path / "store", manifests)
    try:
        second.judged()
        second.stop()
    finally:
        if second.process.poll() is None:
            second.kill()
    (run,) = stored_runs(tmp_path / "store")
    assert run["result"] == "incompatible" and run["verdicts"] == 1, run
    # Started again: nothing new to judge, nothing judged twice.
    third = Service(tmp_path / "spool", tmp_path / "store", manifests)
    try:
        third.judged()
        third.stop()
    finally:
        if third.process.poll() is None:
            third.kill()
    (run,) = stored_runs(tmp_path / "store")
    assert run["verdicts"] == 1, run


def _judging(spool: Path) -> bool:
    """Whether a process judging ``spool`` runs."""
    wanted = str(spool / "spans.binpb").encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if wanted in handle.read().split(b"\0"):
                        return True
            except OSError:
                continue
    return False


def test_requests_get_the_otlp_http_status_codes(tmp_path: Path) -> None:
    manifests = write_manifests(tmp_path, every_tool=False)
    running = Service(tmp_path / "spool", tmp_path / "store", manifests,
                      "--max-body-bytes", "200000", "--max-spool-bytes", "60000")
    try:
        url = running.url + "/v1/traces"
        document = otel_agents.collector_document(otel_agents.record(SCENARIO))
        body = json.dumps(document).encode()
        # OTLP/JSON (hex ids), gzip-compressed: kept, answered with an empty response.
        answer = httpx.post(url, content=gzip.compress(body), timeout=30, headers={
            "content-type": "application/json", "content-encoding": "gzip"})
        assert answer.status_code == 200 and answer.json() == {}
        spooled = running.health()["spooledBytes"]
        assert spooled > 0
        for headers, content, status in (
                ({"content-type": "application/x-protobuf"}, b"\xff\xff\xff", 400),
                ({"content-type": "application/json"}, b"[1, 2]", 400),
                ({"content-type": "application/json"}, b'{"resourceSpans": 7}', 400),
                ({"content-type": "text/plain"}, body, 415),
                ({"content-type": "application/json", "content-encoding": "br"}, body, 415),
                ({"content-type": "application/json", "content-encoding": "gzip"}, body, 400),
                ({"content-type": "application/json"}, b" " * 200_001, 413),
                ({"content-type": "application/json", "content-encoding": "gzip"},
                 gzip.compress(b" " * 300_000), 413)):
            answer = httpx.post(url, content=content, headers=headers, timeout=30)
            assert answer.status_code == status, (headers, answer.text)
        # A bad protobuf request is answered with a google.rpc.Status in protobuf.
        answer = httpx.post(url, content=b"\xff", timeout=30,
                            headers={"content-type": "application/x-protobuf"})
        assert answer.headers["content-type"] == "application/x-protobuf"
        assert b"ExportTraceServiceRequest" in answer.content
        assert running.health()["spooledBytes"] == spooled  # nothing refused was kept
        # A trailing slash names no route: 404, never a redirect built from the Host header.
        for path, method in (("/v1/traces/", "POST"), ("/healthz/", "GET")):
            answer = httpx.request(method, running.url + path, content=body, timeout=30,
                                   headers={"content-type": "application/json",
                                            "host": "attacker.example"},
                                   follow_redirects=False)
            assert answer.status_code == 404 and "location" not in answer.headers, path
        # The spool's bound: refused with 503 and when to retry, nothing kept.
        for _ in range(5):
            answer = httpx.post(url, content=body, timeout=30,
                                headers={"content-type": "application/json"})
            if answer.status_code == 503:
                break
            assert answer.status_code == 200
        assert answer.status_code == 503 and answer.headers["retry-after"].isdigit()
        assert running.health()["spooledBytes"] <= 60_000
    finally:
        running.stop()


def test_a_folder_that_is_no_spool_is_refused_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    proc = subprocess.run([IOA_CHECK, "trace", "serve", "--spool", str(folder), "--store",
                           str(tmp_path / "store"), "--port", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no spool" in proc.stderr
    assert sorted(os.listdir(folder)) == ["notes.txt"]


def test_complete_only_waits_for_a_root_span_or_the_quiet_period(tmp_path: Path) -> None:
    """A trace whose root span has not arrived is not judged until it has been quiet for
    --quiet-period (against --at); with its root span it is judged at once."""
    from google.protobuf import json_format

    requests = otel_agents.record(SCENARIO)
    spans = [json_format.MessageToDict(r) for r in requests]
    without_root = []
    for request in spans:
        for resource in request["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                scope["spans"] = [s for s in scope["spans"] if s.get("parentSpanId")]
        without_root.append(request)
    path = tmp_path / "open.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in without_root))
    manifests = write_manifests(tmp_path, every_tool=False)

    def judged(at: str) -> tuple[int, str, str]:
        proc = subprocess.run([IOA_CHECK, "trace", str(path), "--manifests", str(manifests),
                               "--no-shapes", "--format", "json", "--complete-only",
                               "--quiet-period", "60", "--at", at],
                              capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr

    end = otel_agents.EPOCH_NS / 10**9
    early = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end + 30))
    late = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end + 3600))
    status, out, err = judged(early)
    assert "1 run not complete yet" in err and '"agent"' not in out, (status, out, err)
    status, out, err = judged(late)
    assert "not complete" not in err and UNDECLARED_SPAN in out


def _raw(url: str) -> Any:
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=JUDGED_WITHIN)
    return sock


HEAD = (b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 90000\r\n\r\n")


def test_a_slow_body_is_cut_off(tmp_path: Path) -> None:
    """A client trickling its body gets 408 at --body-timeout, and the connection closed."""
    running = Service(tmp_path / "spool", tmp_path / "store",
                      write_manifests(tmp_path, every_tool=False), "--body-timeout", "1")
    try:
        slow = _raw(running.url)
        slow.sendall(HEAD + b"{")
        # The head and the body may come in separate reads: read until the service closes.
        slow.settimeout(60)
        answer = b""
        while chunk := slow.recv(65536):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408"), answer
        slow.close()
        assert running.health()["bufferedBytes"] == 0
    finally:
        running.stop()


def test_slow_bodies_cannot_hold_the_memory(tmp_path: Path) -> None:
    """Bodies held at once past --max-buffered-bytes are refused (503, Retry-After) before
    they are held, and the service still answers."""
    running = Service(tmp_path / "spool", tmp_path / "store",
                      write_manifests(tmp_path, every_tool=False), "--body-timeout", "600",
                      "--max-buffered-bytes", "100000")
    try:
        first = _raw(running.url)  # holds 85,000 bytes of its 90,000, and stalls
        first.sendall(HEAD + b" " * 85_000)
        deadline = time.monotonic() + JUDGED_WITHIN
        while running.health()["bufferedBytes"] < 85_000 and time.monotonic() < deadline:
            time.sleep(0.05)
        second = _raw(running.url)
        second.sendall(HEAD + b" " * 20_000)
        answer = second.recv(65536)
        assert answer.startswith(b"HTTP/1.1 503") and b"retry-after" in answer.lower(), answer
        assert running.health()["bufferedBytes"] == 85_000
        for sock in (first, second):
            sock.close()
    finally:
        running.stop()


def test_the_parsers_retain_default_is_the_services() -> None:
    from ioa_semantic.cli.trace_serve import DEFAULT_RETAIN as PARSED
    from ioa_semantic.service.traces import DEFAULT_RETAIN

    assert PARSED == DEFAULT_RETAIN


@pytest.mark.parametrize("spelled", ["0", "0.0", "00", "0e0", "-0", " 0 "])
def test_retain_zero_is_taken_however_it_is_spelled(spelled: str) -> None:
    from ioa_semantic.cli.parsing import _non_negative_seconds

    assert _non_negative_seconds(spelled) == 0.0


@pytest.mark.parametrize("spelled", ["-1", "nan", "inf", "x", ""])
def test_retain_refuses_what_is_no_duration(spelled: str) -> None:
    import argparse

    from ioa_semantic.cli.parsing import _non_negative_seconds

    with pytest.raises(argparse.ArgumentTypeError):
        _non_negative_seconds(spelled)


def test_a_trace_extra_that_cannot_be_imported_stops_the_service_before_it_listens(
        tmp_path: Path) -> None:
    """A broken install (the extra found, but failing to import) is said once, at the start,
    exit 2: no port is taken, no spool made, rather than a service whose every round's judge
    fails."""
    shadow = tmp_path / "shadow" / "oxp_ontology"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed in this test')\n")
    proc = subprocess.run(
        [IOA_CHECK, "trace", "serve", "--spool", str(tmp_path / "spool"), "--store",
         str(tmp_path / "store"), "--port", "0"],
        capture_output=True, timeout=60, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "shadow")})
    assert proc.returncode == 2, proc.stderr
    assert (b"(oxp_ontology is installed but cannot be imported: not installed in this test)"
            in proc.stderr) and b"Traceback" not in proc.stderr
    assert not (tmp_path / "spool").exists() and not (tmp_path / "store").exists()
