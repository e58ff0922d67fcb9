"""Fresh-eyes review of ``trace serve``, the spool and ``--format html`` (issue 37, items 3
and 5): each test names a finding of the review and holds its fix."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2",
                    reason="the otlp extra is not installed")
pytest.importorskip("jinja2", reason="the trace extra is not installed")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from test_trace_otel_layouts import WEATHER, agent, chat, manifests, otlp, tool

from ioa_semantic.trace.spool import MARK, SPANS, Spool, SpoolError, SpoolFull

from support import IOA_CHECK

# How long opening a spool may take before it counts as hung: generous, never a measurement.
OPEN_WITHIN = 120.0


def _request(name: str) -> bytes:
    message = ExportTraceServiceRequest()
    span = message.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, name
    return bytes(message.SerializeToString())


def _frames(path: Path) -> list[bytes]:
    """The messages of a spool file, read by its framing; AssertionError on a torn frame."""
    data, out, at = path.read_bytes(), [], 0
    while at < len(data):
        size = int.from_bytes(data[at:at + 4], "big")
        assert at + 4 + size <= len(data), f"a torn frame at byte {at}"
        out.append(data[at + 4:at + 4 + size])
        at += 4 + size
    return out


def _open_within(folder: Path) -> BaseException | Spool:
    """``Spool(folder)``, or the exception it raised; fails if it does not return at all."""
    result: list[BaseException | Spool] = []

    def target() -> None:
        try:
            result.append(Spool(str(folder)))
        except BaseException as exc:  # handed to the test
            result.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(OPEN_WITHIN)
    assert result, "opening the spool hung"
    return result[0]


@pytest.mark.parametrize("name", [MARK, SPANS])
def test_a_fifo_in_the_spool_is_refused_not_waited_on(tmp_path: Path, name: str) -> None:
    """A mark or spans file that is a FIFO would block the open forever (no writer, no
    reader at the other end): it is refused as no regular file."""
    folder = tmp_path / "spool"
    Spool(str(folder)).close()
    if name == SPANS:
        (folder / SPANS).unlink()
    else:
        (folder / MARK).unlink()
    os.mkfifo(folder / name)
    opened = _open_within(folder)
    if isinstance(opened, Spool):
        opened.close()
    assert isinstance(opened, SpoolError), opened


def test_a_mark_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    """A mark that is a symbolic link (to someone's file that reads as a mark) does not make
    a folder a spool."""
    folder = tmp_path / "spool"
    Spool(str(folder)).close()
    real = tmp_path / "elsewhere.json"
    real.write_bytes((folder / MARK).read_bytes())
    (folder / MARK).unlink()
    (folder / MARK).symlink_to(real)
    opened = _open_within(folder)
    assert isinstance(opened, SpoolError), opened


def test_a_message_torn_by_a_crash_is_cut_off_at_the_next_start(tmp_path: Path) -> None:
    """A writer killed half way through an append leaves a torn frame at the end of
    spans.binpb (never acknowledged). The next start cuts it off, so the messages appended
    after it are framed right and every acknowledged message is read back."""
    folder = tmp_path / "spool"
    spool = Spool(str(folder))
    first = _request("acknowledged")
    spool.append(first)
    spool.close()
    torn = _request("never acknowledged")
    with open(folder / SPANS, "ab") as out:  # what a SIGKILL in os.write leaves
        out.write(len(torn).to_bytes(4, "big") + torn[:len(torn) // 2])
    spool = Spool(str(folder))
    second = _request("after the restart")
    spool.append(second)
    spool.close()
    assert _frames(folder / SPANS) == [first, second]


def test_a_torn_length_prefix_is_cut_off_too(tmp_path: Path) -> None:
    """Killed within the 4 bytes of the length: those bytes are cut off."""
    folder = tmp_path / "spool"
    spool = Spool(str(folder))
    first = _request("acknowledged")
    spool.append(first)
    spool.close()
    with open(folder / SPANS, "ab") as out:
        out.write(b"\x00\x00")
    spool = Spool(str(folder))
    spool.append(first)
    spool.close()
    assert _frames(folder / SPANS) == [first, first]


_FILL_PAST_LIMIT = """
import os, resource, signal, sys
from ioa_semantic.trace.spool import Spool, SpoolFull
spool = Spool(sys.argv[1])
spool.append(b"x" * 10)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    spool.append(b"y" * 10000)
except SpoolFull as exc:
    print("refused:", exc)
spool.append(b"z" * 10)
"""


def test_a_write_the_disk_refuses_leaves_no_torn_frame(tmp_path: Path) -> None:
    """A write that fails half way (a full disk; here the file size limit) is not
    acknowledged (SpoolFull: 503 and Retry-After) and leaves nothing of itself: the next
    append is framed right."""
    folder = tmp_path / "spool"
    proc = subprocess.run([sys.executable, "-c", _FILL_PAST_LIMIT, str(folder)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused:")
    assert _frames(folder / SPANS) == [b"x" * 10, b"z" * 10]


def test_spool_full_is_still_refused(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path / "spool"), max_bytes=20)
    spool.append(b"a" * 10)
    with pytest.raises(SpoolFull):
        spool.append(b"b" * 10)
    spool.close()


# --- --format html ---------------------------------------------------------------------------

def _page(tmp_path: Path, name: str, *extra: str) -> str:
    root = agent(WEATHER, 0, 50, chat("gpt-4o-mini", 1, 10), tool(name, 11, 20))
    path = tmp_path / "run.jsonl"
    path.write_text(otlp(root))
    declared = manifests(tmp_path, {WEATHER: []}, {WEATHER: "gpt-4o-mini"}, {}, entry=WEATHER)
    proc = subprocess.run([IOA_CHECK, "trace", str(path), "--manifests", str(declared),
                           "--no-shapes", "--format", "html", *extra],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    return proc.stdout


def test_bidi_and_control_characters_in_names_are_shown_as_code_points(
        tmp_path: Path) -> None:
    """A tool name with a right-to-left override, an escape and a zero-width space would
    reorder or hide what the page shows; each is written as its code point."""
    page = _page(tmp_path, "get\u202eexe.fdp\u001b[2J\u200bx")
    assert not re.search("[\u202e\u001b\u200b]", page)
    assert "&lt;U+202E&gt;" in page and "&lt;U+001B&gt;" in page


def test_opaque_ids_leak_no_raw_id_into_the_page(tmp_path: Path) -> None:
    """Under --opaque-ids, neither the run's trace id nor a span id appears in the page."""
    page = _page(tmp_path, "secret_tool", "--opaque-ids")
    trace = (tmp_path / "run.jsonl").read_text()
    written = set(re.findall(r'"(?:traceId|spanId)": "([^"]+)"', trace))
    ids = {base64.b64decode(i).hex() for i in written} | written
    assert len(ids) >= 6
    assert not [i for i in ids if i in page or i.upper() in page]


# --- the service ------------------------------------------------------------------------------

def test_spans_without_valid_ids_are_rejected_as_partial_success(tmp_path: Path) -> None:
    """A span whose trace or span id is no id (not 16 or 8 bytes, all zero, neither hex nor
    base64 in JSON) is rejected and the request's other spans kept: 200 with
    partial_success.rejected_spans, as OTLP/HTTP has it, in JSON and in protobuf."""
    import httpx
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )
    from test_trace_formats import write_manifests
    from test_trace_serve import Service

    running = Service(tmp_path / "spool", tmp_path / "store",
                      write_manifests(tmp_path, every_tool=False))
    try:
        url = running.url + "/v1/traces"
        good = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "kept"}
        for bad in ("a", "00" * 16, "zz" * 16, "ab" * 8):
            document = {"resourceSpans": [{"scopeSpans": [{"spans": [
                good, {**good, "traceId": bad, "name": "rejected"}]}]}]}
            answer = httpx.post(url, json=document, timeout=30)
            assert answer.status_code == 200, (bad, answer.text)
            partial = answer.json()["partialSuccess"]
            assert partial["rejectedSpans"] == "1" and partial["errorMessage"], bad
        message = ExportTraceServiceRequest()
        spans = message.resource_spans.add().scope_spans.add().spans
        spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="kept")
        spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 3, name="rejected")
        answer = httpx.post(url, content=message.SerializeToString(), timeout=30,
                            headers={"content-type": "application/x-protobuf"})
        assert answer.status_code == 200
        response = ExportTraceServiceResponse()
        response.ParseFromString(answer.content)
        assert response.partial_success.rejected_spans == 1
        # Every request kept its good span, and only it.
        kept = _frames(tmp_path / "spool" / SPANS)
        assert len(kept) == 5
        for frame in kept:
            request = ExportTraceServiceRequest()
            request.ParseFromString(frame)
            names = [s.name for r in request.resource_spans for sc in r.scope_spans
                     for s in sc.spans]
            assert names == ["kept"]
    finally:
        running.stop()


def _judge(spool_file: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IOA_CHECK, "trace", str(spool_file), "--no-shapes", "--format",
                           "json", *extra], capture_output=True, text=True, timeout=300)


def test_a_request_with_unknown_fields_first_does_not_stop_the_judging(
        tmp_path: Path) -> None:
    """A protobuf request that begins with an unknown field parses, so it is acknowledged;
    spooled as it came, the spool's reader (which takes a message not beginning with its
    spans for garbage) refused the whole spool at every round. It is spooled serialized
    again, its unknown fields dropped."""
    from ioa_semantic.service.traces import PROTOBUF, _parse

    body = b"\x78\x01" + _request("after an unknown field")  # field 15, varint 1
    kept, rejected, _ = _parse(body, PROTOBUF)
    assert rejected == 0
    spool = Spool(str(tmp_path / "spool"))
    spool.append(kept)
    spool.close()
    proc = _judge(tmp_path / "spool" / SPANS)
    assert proc.returncode in (0, 1, 3), proc.stderr


def test_the_judge_reads_every_body_the_service_may_keep(tmp_path: Path) -> None:
    """With --max-body-bytes past the judge's --max-line-bytes (16 MiB), an acknowledged
    request of 17 MiB was unreadable to the judge at every round: the judge is given the
    service's bound."""
    from ioa_semantic.service.traces import judge_command

    message = ExportTraceServiceRequest()
    span = message.resource_spans.add().scope_spans.add().spans.add(
        trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="big")
    span.attributes.add(key="big").value.string_value = "x" * (17 << 20)
    spool = Spool(str(tmp_path / "spool"))
    spool.append(message.SerializeToString())
    command = [*judge_command(str(tmp_path / "store"), 1.0, [], 32 << 20), spool.path]
    spool.close()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1, 3), proc.stderr


def test_a_judge_that_cannot_start_is_tried_again_not_given_up(tmp_path: Path) -> None:
    """A judging process that cannot be started (out of processes, a missing interpreter)
    ended the judge thread for good while /healthz said ok; it is said and tried again."""
    import io
    import time

    from ioa_semantic.service.traces import Judge

    spool = Spool(str(tmp_path / "spool"))
    spool.append(_request("waiting"))
    log = io.StringIO()
    judge = Judge([str(tmp_path / "no-such-judge")], spool, 0.05, log, shutdown_timeout=5)
    judge.start()
    deadline = time.monotonic() + OPEN_WITHIN
    while log.getvalue().count("cannot start") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    judge.stop()
    spool.close()
    assert log.getvalue().count("cannot start") >= 2, log.getvalue()


def test_ctrl_c_at_the_service_does_not_break_off_its_judge(tmp_path: Path) -> None:
    """Ctrl-C reaches the whole process group: the judging process of trace serve ignores
    it (the service decides when its judge ends, at its shutdown timeout) rather than
    breaking off mid-round with exit 130, logged as a failure."""
    import signal
    import time

    from ioa_semantic.cli.trace import PARENT_ENV
    from ioa_semantic.service.traces import judge_command
    from ioa_semantic.trace.store import HOLD_ENV

    spool = Spool(str(tmp_path / "spool"))
    spool.append(_request("judged"))
    command = [*judge_command(str(tmp_path / "store"), 1.0, []), spool.path]
    spool.close()
    flag = tmp_path / "held"
    judge = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, env={**os.environ, PARENT_ENV: str(os.getpid()),
                                             HOLD_ENV: str(flag)})
    deadline = time.monotonic() + 120
    while not flag.exists() and judge.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert flag.exists(), "the judge never reached its store"
    judge.send_signal(signal.SIGINT)
    time.sleep(0.2)  # the signal is delivered before the store is let go (not a measurement)
    flag.unlink()
    _, err = judge.communicate(timeout=120)
    assert judge.returncode in (0, 1, 3), err


def test_a_gzip_body_of_several_members_is_read_whole() -> None:
    """gzip allows several members one after another (``cat a.gz b.gz``); the first alone
    was read and the rest dropped, acknowledged: two protobuf requests so concatenated (one
    message, merged) lost the second's spans."""
    import gzip

    from ioa_semantic.service.traces import PROTOBUF, _gunzip, _parse

    first, second = _request("first"), _request("second")
    body = _gunzip(gzip.compress(first) + gzip.compress(second), 1 << 20)
    assert body is not None and bytes(body) == first + second
    kept, _, _ = _parse(body, PROTOBUF)
    request = ExportTraceServiceRequest()
    request.ParseFromString(kept)
    assert [s.name for r in request.resource_spans for sc in r.scope_spans
            for s in sc.spans] == ["first", "second"]
    # The bound holds across members, and trailing garbage is no gzip.
    assert _gunzip(gzip.compress(b"x" * 600) + gzip.compress(b"y" * 600), 1000) is None
    with pytest.raises(ValueError):
        _gunzip(gzip.compress(first) + b"garbage", 1 << 20)


@pytest.mark.parametrize("what", ["folder", SPANS])
def test_a_spool_or_spans_file_that_is_a_symlink_is_refused(tmp_path: Path, what: str) -> None:
    """A spool folder, or a spans.binpb replaced between runs, that is a symbolic link is
    refused: nothing is appended through it."""
    real = tmp_path / "real"
    Spool(str(real)).close()
    if what == "folder":
        link = tmp_path / "link"
        link.symlink_to(real)
    else:
        link = real
        target = tmp_path / "elsewhere.binpb"
        target.write_bytes(b"")
        (real / SPANS).unlink()
        (real / SPANS).symlink_to(target)
    with pytest.raises(SpoolError):
        Spool(str(link))


def test_a_store_held_by_another_process_is_judged_once_it_is_let_go(tmp_path: Path) -> None:
    """While another process holds the store, each round fails with 74 (said on stderr,
    /healthz's lastJudgeStatus) and the spool stays unjudged; once the store is let go, the
    next round judges it, without a request to wake it."""
    import time

    import httpx
    import pyoxigraph
    from test_trace_formats import SCENARIO, write_manifests
    from test_trace_serve import JUDGED_WITHIN, Service

    import otel_agents

    store = tmp_path / "store"
    running = Service(tmp_path / "spool", store, write_manifests(tmp_path, every_tool=False))
    try:
        document = otel_agents.collector_document(otel_agents.record(SCENARIO))
        answer = httpx.post(running.url + "/v1/traces", json=document, timeout=30)
        assert answer.status_code == 200
        running.judged()
        held = pyoxigraph.Store(str(store))
        # The same spans again under another trace id: a second run for the next round.
        for resource in document["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    span["traceId"] = "ee" * 16
        assert httpx.post(running.url + "/v1/traces", json=document,
                          timeout=30).status_code == 200
        deadline = time.monotonic() + JUDGED_WITHIN
        while running.health()["lastJudgeStatus"] != 74 and time.monotonic() < deadline:
            time.sleep(0.1)
        health = running.health()
        assert health["lastJudgeStatus"] == 74
        assert health["judgedBytes"] < health["spooledBytes"]
        del held
        health = running.judged()
        assert health["lastJudgeStatus"] in (0, 1, 3)
    finally:
        running.stop()


def test_an_append_after_the_spool_is_closed_writes_nowhere(tmp_path: Path) -> None:
    """At shutdown a request cut off by the graceful timeout may still be appending in its
    thread when the spool is closed: its descriptor, reused by the next file opened, would
    take the message. An append after close (or during it) is refused, not acknowledged."""
    spool = Spool(str(tmp_path / "spool"))
    spool.close()
    other = tmp_path / "other"
    fd = os.open(other, os.O_WRONLY | os.O_CREAT, 0o600)  # most likely the spool's old number
    try:
        with pytest.raises(SpoolFull):
            spool.append(b"late")
    finally:
        os.close(fd)
    assert other.read_bytes() == b""
    spool.close()  # twice is harmless


def test_a_hanging_judge_shows_in_healthz_and_is_killed_at_stop(tmp_path: Path) -> None:
    """A judging round that never ends held judging with nothing to show for it: /healthz
    says how long the round in flight has run (judgingFor, null when idle), and stopping
    the service kills it after the shutdown timeout."""
    import io
    import time

    from starlette.testclient import TestClient

    from ioa_semantic.service.traces import Judge, create_app

    spool = Spool(str(tmp_path / "spool"))
    spool.append(_request("waiting"))
    judge = Judge([sys.executable, "-c", "import time; time.sleep(600)"], spool, 0.05,
                  io.StringIO(), shutdown_timeout=1)
    client = TestClient(create_app(spool, judge))
    assert client.get("/healthz").json()["judgingFor"] is None
    judge.start()
    deadline = time.monotonic() + OPEN_WITHIN
    # The round is in flight once its process is (judgingFor counts from just before).
    while (judge._process is None or client.get("/healthz").json()["judgingFor"] is None) and (
            time.monotonic() < deadline):
        time.sleep(0.05)
    assert client.get("/healthz").json()["judgingFor"] >= 0
    process = judge._process
    assert process is not None
    judge.stop()
    assert process.poll() is not None
    spool.close()


def test_a_request_larger_than_the_whole_spool_is_413_not_retried_for_ever(
        tmp_path: Path) -> None:
    """A request larger than --max-spool-bytes could never be kept: 413 (do not retry), not
    503 with Retry-After, which an exporter would follow for ever."""
    from starlette.testclient import TestClient

    from ioa_semantic.service.traces import PROTOBUF, create_app

    spool = Spool(str(tmp_path / "spool"), max_bytes=64)
    client = TestClient(create_app(spool, None))
    answer = client.post("/v1/traces", content=_request("x" * 100),
                         headers={"content-type": PROTOBUF})
    assert answer.status_code == 413 and "retry-after" not in answer.headers
    assert client.post("/v1/traces", content=_request("fits"),
                       headers={"content-type": PROTOBUF}).status_code == 200
    spool.close()


def test_concurrent_appends_from_threads_stay_whole(tmp_path: Path) -> None:
    """Requests appended from many threads at once (the service's thread pool) are each one
    whole frame."""
    spool = Spool(str(tmp_path / "spool"))
    messages = [_request(f"t{t}-{n}") for t in range(8) for n in range(40)]

    def write(part: list[bytes]) -> None:
        for message in part:
            spool.append(message)

    threads = [threading.Thread(target=write, args=(messages[t::8],)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    spool.close()
    assert sorted(_frames(tmp_path / "spool" / SPANS)) == sorted(messages)


def test_a_huge_run_draws_at_most_5000_calls_and_says_how_many_more(tmp_path: Path) -> None:
    """The page of a run of 5,050 calls draws 5,000 of them and says the other 50 are not
    drawn (the bound was untested)."""
    import json

    from ioa_semantic.reporters.trace_html import MAX_CALLS

    def span(n: int, parent: int | None, operation: str, name: str) -> dict[str, object]:
        key = "gen_ai.tool.name" if operation == "execute_tool" else "gen_ai.agent.name"
        return {"traceId": "cd" * 16, "spanId": f"{n + 1:016x}",
                **({"parentSpanId": f"{parent + 1:016x}"} if parent is not None else {}),
                "name": f"{operation} {name}", "kind": 1,
                "startTimeUnixNano": str(1_796_200_200 * 10**9 + n),
                "endTimeUnixNano": str(1_796_200_300 * 10**9), "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": operation}},
                    {"key": key, "value": {"stringValue": name}}]}

    more = 50
    spans = [span(0, None, "invoke_agent", WEATHER)]
    spans += [span(n, 0, "execute_tool", f"t{n}") for n in range(1, MAX_CALLS + more)]
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"resourceSpans": [{"resource": {"attributes": []},
                                                   "scopeSpans": [{"spans": spans}]}]}))
    proc = subprocess.run([IOA_CHECK, "trace", str(path), "--no-shapes", "--format", "html"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (1, 3), proc.stderr
    assert proc.stdout.count('<tr class="call ') == MAX_CALLS
    assert f"{more} more calls are not drawn" in proc.stdout
