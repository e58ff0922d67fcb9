"""``ioa-check trace serve`` against a hostile review (h71): what it found, each held.

A JSON request that names a member twice is refused, never half kept; a gzip body of many
members costs work linear in its bytes; what decompressing and parsing a request may hold is
held against ``--max-buffered-bytes`` before either runs, so that requests of empty spans or
objects, many at once, leave a service under a memory limit answering; a trace too large for
the judge's ``--max-memory`` is set aside, and the traces after it are judged; the pages
refuse unknown and repeated query parameters, and the service's own errors are JSON.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http",
                    reason="the OTLP/HTTP exporter is not installed")
pytest.importorskip("uvicorn", reason="the serve extra is not installed")

import httpx
from test_trace_formats import SCENARIO, write_manifests
from test_trace_serve import JUDGED_WITHIN, START_WITHIN, Service, export, stored_runs

from ioa_semantic.service import traces

import otel_agents
from support import IOA_CHECK


def _document(trace_id: str | None = None) -> dict[str, Any]:
    """The scenario as OTLP/JSON (hex ids), its trace id ``trace_id`` when given."""
    document: dict[str, Any] = otel_agents.collector_document(otel_agents.record(SCENARIO))
    if trace_id is not None:
        for resource in document["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    span["traceId"] = trace_id
    return document


def _varint(value: int) -> bytes:
    return traces._varint(value)


def _empty_spans(size: int) -> bytes:
    """An ExportTraceServiceRequest of ``size`` bytes or so, all of it empty spans (h71's
    g10: one ResourceSpans, one ScopeSpans, then b"\\x12\\x00" again and again)."""
    spans = b"\x12\x00" * ((size - 16) // 2)
    scope = b"\x12" + _varint(len(spans)) + spans
    return b"\x0a" + _varint(len(scope)) + scope


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    folder = tmp_path_factory.mktemp("hostile")
    running = Service(folder / "spool", folder / "store",
                      write_manifests(folder, every_tool=False))
    yield running
    if running.process.poll() is None:
        running.stop()


# --- A: a member named twice ---------------------------------------------------------------


def test_a_json_member_named_twice_is_refused_and_nothing_kept(service: Service) -> None:
    """``{"resourceSpans": [spans], "resourceSpans": []}`` was 200 with nothing kept (the
    last member won): it is 400, a google.rpc.Status saying the member is repeated."""
    spans = json.dumps(_document()["resourceSpans"])
    body = ('{"resourceSpans": ' + spans + ', "resourceSpans": []}').encode()
    before = service.health()["spooledBytes"]
    answer = httpx.post(service.url + "/v1/traces", content=body, timeout=60,
                        headers={"content-type": "application/json"})
    assert answer.status_code == 400, answer.text
    status = answer.json()
    assert status["code"] == 3 and "resourceSpans" in status["message"], status
    assert "repeats" in status["message"], status
    assert service.health()["spooledBytes"] == before
    # The same spans named once are kept.
    answer = httpx.post(service.url + "/v1/traces", content=('{"resourceSpans": ' + spans
                                                             + '}').encode(), timeout=60,
                        headers={"content-type": "application/json"})
    assert answer.status_code == 200 and service.health()["spooledBytes"] > before


# --- B: gzip members -----------------------------------------------------------------------


class _Counting:
    """A decompressor that counts the compressed bytes it is given."""

    given = 0

    def __init__(self, wbits: int) -> None:
        self._inner = zlib.decompressobj(wbits)

    def decompress(self, data: Any, max_length: int = 0) -> bytes:
        _Counting.given += len(data)
        return self._inner.decompress(data, max_length)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_gzip_members_cost_work_linear_in_the_body(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each member used to be given the whole rest of the body (its unused_data copied on):
    1,000 members of 3 KiB were given 1.5 GB. Now each compressed byte is given once, and
    at most a chunk again where a member ends within it."""
    members = [gzip.compress(os.urandom(3000)) for _ in range(1000)]
    body = b"".join(members)

    class Zlib:
        MAX_WBITS = zlib.MAX_WBITS
        error = zlib.error
        decompressobj = _Counting

    monkeypatch.setattr(traces, "zlib", Zlib)
    _Counting.given = 0
    inflated = traces._gunzip(body, 16 << 20)
    assert inflated is not None and len(inflated) == 3_000_000
    assert _Counting.given <= len(body) + len(members) * traces._GZIP_CHUNK, _Counting.given


def test_more_gzip_members_than_the_cap_are_refused(service: Service) -> None:
    """16 MiB of empty gzip members took minutes of CPU; more than 1,024 members is 400."""
    body = gzip.compress(b"") * (traces.MAX_GZIP_MEMBERS + 1)
    answer = httpx.post(service.url + "/v1/traces", content=body, timeout=60,
                        headers={"content-type": "application/x-protobuf",
                                 "content-encoding": "gzip"})
    assert answer.status_code == 400 and b"members" in answer.content, answer.content
    several = b"".join(gzip.compress(json.dumps(_document()).encode()[i:i + 500])
                       for i in range(0, len(json.dumps(_document())), 500))
    answer = httpx.post(service.url + "/v1/traces", content=several, timeout=60,
                        headers={"content-type": "application/json",
                                 "content-encoding": "gzip"})
    assert answer.status_code == 200, answer.text


# --- C: what decoding and parsing hold -----------------------------------------------------


def test_a_request_of_more_spans_than_the_bound_is_413_before_any_is_made(
        service: Service) -> None:
    """8 million empty spans held 1.85 GB parsed; the spans are counted in the wire format
    first, and past the bound the request is 413."""
    answer = httpx.post(service.url + "/v1/traces", content=_empty_spans(4 << 20),
                        timeout=60, headers={"content-type": "application/x-protobuf"})
    assert answer.status_code == 413, answer.content
    assert f"more than {traces.DEFAULT_MAX_SPANS} spans".encode() in answer.content


def test_the_protobuf_walk_counts_what_the_parse_makes() -> None:
    """The walk weighs each message by the schema: a span, its attributes, their values."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    message = ExportTraceServiceRequest()
    scope = message.resource_spans.add().scope_spans.add()
    for number in range(3):
        span = scope.spans.add(trace_id=b"\x01" * 16, span_id=bytes([number + 1]) * 8)
        span.attributes.add(key="k").value.string_value = "v"
    weight = traces._weigh(message.SerializeToString(), 10, 1 << 30)
    # 3 spans; a ResourceSpans, a ScopeSpans, and 3 attributes with their values.
    assert weight == 3 * traces._SPAN_COST + 8 * traces._MESSAGE_COST
    with pytest.raises(traces._TooLarge):
        traces._weigh(message.SerializeToString(), 2, 1 << 30)
    for broken in (b"\xff", b"\x0a\x05ab", b"\x0b\x00"):  # a cut varint, length, a group
        with pytest.raises(ValueError):
            traces._weigh(broken, 10, 1 << 30)


def _raw(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=JUDGED_WITHIN)


def test_what_a_parse_may_hold_waits_for_the_others_or_is_413(tmp_path: Path) -> None:
    """A request whose body fits what the others leave, but whose parse would not, was read
    and parsed anyway (the body's bytes were let go once read): it is 503 with Retry-After
    while another holds the rest, and 413 when its parse would pass the whole bound."""
    document = json.dumps(_document()).encode()
    bound = 40 * len(document)
    running = Service(tmp_path / "spool", tmp_path / "store",
                      write_manifests(tmp_path, every_tool=False), "--body-timeout", "600",
                      "--max-buffered-bytes", str(bound))
    stalled = _raw(running.url)
    try:
        url = running.url + "/v1/traces"
        headers = {"content-type": "application/json"}
        assert httpx.post(url, content=document, headers=headers, timeout=60).status_code == 200
        # A slow body holds 3/4 of the bound: the request's parse no longer fits beside it.
        held = bound * 3 // 4
        stalled.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: "
                        b"application/json\r\nContent-Length: " + str(held + 10).encode()
                        + b"\r\n\r\n" + b" " * held)
        deadline = time.monotonic() + JUDGED_WITHIN
        while running.health()["bufferedBytes"] < held:
            assert time.monotonic() < deadline, "the slow body was never held"
            time.sleep(0.05)
        answer = httpx.post(url, content=document, headers=headers, timeout=60)
        assert answer.status_code == 503 and answer.headers["retry-after"].isdigit(), \
            answer.text
        assert running.health()["bufferedBytes"] == held  # what it held, let go
        # A body of small objects whose parse would pass the whole bound: never read.
        objects = b'{"resourceSpans": [' + b"{}," * (len(document) // 3) + b"{}]}"
        answer = httpx.post(url, content=objects, headers=headers, timeout=60)
        assert answer.status_code == 413 and "max-buffered-bytes" in answer.json()["message"]
    finally:
        stalled.close()
        running.stop()


def _memory_limited(spool: Path, store: Path, limit: int) -> tuple[subprocess.Popen[str], str]:
    """The service under ``prlimit --as=limit`` (its address space: what it may hold)."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        pytest.skip("prlimit is not installed")
    process = subprocess.Popen(
        [prlimit, f"--as={limit}", IOA_CHECK, "trace", "serve", "--spool", str(spool),
         "--store", str(store), "--profile", "cs-translation", "--port", "0",
         "--judge-every", "0.2"], stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    deadline = time.monotonic() + START_WITHIN
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        found = re.search(r"listening on (http://\S+)/v1/traces", line)
        if found:
            return process, found.group(1)
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError("the service did not start under its memory limit")


def test_requests_of_empty_spans_or_objects_at_once_leave_the_memory_bounded(
        tmp_path: Path) -> None:
    """Four 16 MiB requests of empty spans at once gave 500s with MemoryError and a 400 for
    a valid request; four of JSON ``{}`` killed the service. Under a 2 GB limit, each is
    refused (413), the service answers, and a valid request is then kept."""
    process, url = _memory_limited(tmp_path / "spool", tmp_path / "store", 2_000_000_000)
    try:
        bodies = [(_empty_spans(16 << 20) if n % 2 else
                   b'{"resourceSpans":[{"scopeSpans":[{"spans":['
                   + b"{}," * ((16 << 20) // 3 - 30) + b"{}]}]}]}",
                   "application/x-protobuf" if n % 2 else "application/json")
                  for n in range(4)]
        answers: list[int] = []

        def send(body: bytes, media: str) -> None:
            try:
                answers.append(httpx.post(url + "/v1/traces", content=body, timeout=300,
                                          headers={"content-type": media}).status_code)
            except httpx.HTTPError as exc:
                answers.append(-1)
                raise AssertionError(f"no answer: {exc}") from None

        threads = [threading.Thread(target=send, args=pair) for pair in bodies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(600)
        assert sorted(answers) == [413] * 4, answers
        assert process.poll() is None, "the service died"
        answer = httpx.post(url + "/v1/traces", content=json.dumps(_document()).encode(),
                            headers={"content-type": "application/json"}, timeout=60)
        assert answer.status_code == 200, answer.text
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            _, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise AssertionError("the service did not stop within 60 s of SIGTERM") from None
    assert "Traceback" not in err, err


def test_memory_refused_to_a_request_is_503_not_500(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A MemoryError anywhere in a request (the process under a limit lower than what the
    service may hold) is 503 with Retry-After and a google.rpc.Status, never a 500; upb's
    arena refused memory is one too, not the body's fault (it was a 400)."""
    from starlette.testclient import TestClient

    from ioa_semantic.trace.spool import Spool

    def short(*_: Any) -> Any:
        raise MemoryError

    app = traces.create_app(Spool(str(tmp_path / "spool")), None)
    body = json.dumps(_document()).encode()
    with TestClient(app, raise_server_exceptions=False) as client:
        monkeypatch.setattr(traces, "_parse", short)
        answer = client.post("/v1/traces", content=body,
                             headers={"content-type": "application/json"})
        assert answer.status_code == 503 and answer.headers["retry-after"].isdigit()
        assert answer.json()["message"].startswith("the service is short of memory")
        monkeypatch.undo()
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        def arena(self: Any, data: bytes) -> None:
            raise DecodeError("Error parsing message: Arena alloc failed")

        monkeypatch.setattr(trace_service_pb2.ExportTraceServiceRequest, "ParseFromString",
                            arena)
        answer = client.post("/v1/traces", content=b"\x0a\x00",
                             headers={"content-type": "application/x-protobuf"})
        assert answer.status_code == 503, answer.content
        assert client.get("/healthz").json()["bufferedBytes"] == 0


# --- D: a trace too large to judge ---------------------------------------------------------


def _large_trace(spans: int) -> bytes:
    """One trace of ``spans`` tool calls under a root, in protobuf (h71's g7)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    message = ExportTraceServiceRequest()
    scope = message.resource_spans.add().scope_spans.add()
    trace, root = os.urandom(16), os.urandom(8)
    for number in range(spans):
        span = scope.spans.add(trace_id=trace, span_id=os.urandom(8) if number else root,
                               name="execute_tool x",
                               start_time_unix_nano=1_700_000_000_000_000_000 + number,
                               end_time_unix_nano=1_700_000_000_000_000_001 + number)
        if number:
            span.parent_span_id = root
        for key, value in (("gen_ai.operation.name", "execute_tool"),
                           ("gen_ai.tool.name", f"tool{number % 50}"),
                           ("gen_ai.agent.name", f"agent{number % 7}")):
            span.attributes.add(key=key).value.string_value = value
    return bytes(message.SerializeToString())


def test_a_trace_too_large_to_judge_is_set_aside_and_later_ones_judged(
        tmp_path: Path) -> None:
    """A trace the judge cannot judge within --max-memory was refused round after round,
    its segment never closed, and every later trace went into it, never judged. It is set
    aside (kept, listed in /healthz with its reason, said in the log), and the scenario
    exported after it is judged into the store."""
    running = Service(tmp_path / "spool", tmp_path / "store",
                      write_manifests(tmp_path, every_tool=False), "--max-memory", "200MiB")
    try:
        answer = httpx.post(running.url + "/v1/traces", content=_large_trace(40_000),
                            headers={"content-type": "application/x-protobuf"}, timeout=120)
        assert answer.status_code == 200, answer.content
        deadline = time.monotonic() + JUDGED_WITHIN
        while not running.health()["setAside"]:
            assert time.monotonic() < deadline, f"never set aside: {running.health()}"
            time.sleep(0.2)
        (aside,) = running.health()["setAside"]
        assert aside["segment"] == "spans.binpb" and aside["bytes"] > 0
        assert "--max-memory 200 MiB" in aside["reason"], aside
        export(running.url)
        deadline = time.monotonic() + JUDGED_WITHIN
        while True:
            health = running.health()
            if health["judgedBytes"] + aside["bytes"] == health["spooledBytes"] and \
                    health["judged"] >= 2:
                break
            assert time.monotonic() < deadline, f"the later trace was not judged: {health}"
            time.sleep(0.2)
        assert (tmp_path / "spool" / "spans.binpb").stat().st_size == aside["bytes"]
    finally:
        log = running.stop()
    assert "spans.binpb (" in log and "set aside, unjudged" in log, log
    assert len(stored_runs(tmp_path / "store")) == 1


# --- E: the pages' queries, the service's errors --------------------------------------------


def test_unknown_or_repeated_query_parameters_are_400_and_errors_are_json(
        service: Service) -> None:
    """``/runs?page=1&page=2`` and ``?x=1`` were 200, and 404/405/400/414 were text: they
    are refused (400) as ``ioa-check serve`` refuses them, and every error is JSON."""
    for path, status in (("/runs?page=1&page=2", 400), ("/runs?format=json&format=html", 400),
                         ("/runs?x=1", 400), ("/runs/run-00?page=1", 400),
                         ("/runs?page=0", 400), ("/runs?page=" + "9" * 3000, 414),
                         ("/runs/run-" + "0" * 20, 404), ("/nowhere", 404)):
        answer = httpx.get(service.url + path, timeout=60)
        assert answer.status_code == status, (path, answer.text)
        assert answer.headers["content-type"] == "application/problem+json", path
        assert answer.json()["error"], path
    answer = httpx.get(service.url + "/v1/traces", timeout=60)
    assert answer.status_code == 405 and answer.json()["error"] == "GET is not allowed here"
    assert httpx.get(service.url + "/runs?page=1&format=json", timeout=60).status_code == 200


def test_a_gzip_export_holds_what_it_decompresses_not_the_whole_body_bound(
        tmp_path: Path) -> None:
    """Each gzip request reserved --max-body-bytes (16 MiB) while it was decompressed: with a
    bound of 16 MiB every gzip export, even of 1 KB, was 413 (which an exporter never sends
    again), and 64 at once on a default server were mostly 503. What decompressing holds is
    now taken as it grows."""
    running = Service(tmp_path / "spool", tmp_path / "store",
                      write_manifests(tmp_path, every_tool=False),
                      "--max-buffered-bytes", str(16 << 20))
    try:
        document = gzip.compress(json.dumps(_document()).encode())
        answer = httpx.post(running.url + "/v1/traces", content=document, timeout=60,
                            headers={"content-type": "application/json",
                                     "content-encoding": "gzip"})
        assert answer.status_code == 200, answer.text
        assert running.health()["bufferedBytes"] == 0
    finally:
        running.stop()


def test_a_client_gone_with_its_body_half_sent_leaves_no_traceback(tmp_path: Path) -> None:
    """An exporter whose timeout fires while it uploads drops the connection mid-body: the
    server printed a traceback (starlette's ClientDisconnect) each time."""
    running = Service(tmp_path / "spool", tmp_path / "store",
                      write_manifests(tmp_path, every_tool=False))
    try:
        for _ in range(3):
            with _raw(running.url) as sock:
                sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: "
                             b"application/x-protobuf\r\nContent-Length: 100000\r\n\r\n"
                             + b"\x0a" * 1000)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00"
                                b"\x00\x00\x00")  # close with a reset
        deadline = time.monotonic() + JUDGED_WITHIN
        while running.health()["bufferedBytes"]:
            assert time.monotonic() < deadline, "the dropped bodies were never let go"
            time.sleep(0.05)
        assert httpx.post(running.url + "/v1/traces", content=json.dumps(_document()).encode(),
                          headers={"content-type": "application/json"},
                          timeout=60).status_code == 200
    finally:
        err = running.stop()
    assert "Traceback" not in err and "ClientDisconnect" not in err, err
