"""``ioa-check trace serve`` over days: the spool in segments (trace/spool.py), a round reading
what came since the last (service/traces.py ``Judge``), judged segments leaving the spool.

Before, each round read the whole spool (history included) and the spool never shrank: a
feed stopped being judged once its spool passed --max-memory, and stopped being acknowledged
once it passed --max-spool-bytes. Here, with the real service as a process: a second trace is
judged by a round that reads only its own segment; a spool of room for three requests takes
ten traces one after another; a trace waiting for its root span keeps its segment until it
completes, then is judged whole; a late span joins its run while the run's segment is
retained, and is told as late (not lost in silence, not an error) once it is not.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http",
                    reason="the OTLP/HTTP exporter is not installed")
pytest.importorskip("uvicorn", reason="the serve extra is not installed")

import httpx
from test_trace_formats import SCENARIO, write_manifests
from test_trace_serve import JUDGED_WITHIN, Service, stored_runs

from ioa_semantic.trace.spool import SPANS, Segment, Spool

import otel_agents
from support import IOA_CHECK

DOCUMENT = otel_agents.collector_document(otel_agents.record(SCENARIO))
ROOT = "00f067aa0ba90201"


def _whole() -> int:
    """The calls of the scenario's run, as the file audit builds it."""
    from ioa_semantic.trace.events import Fold, Source, otlp_runs
    from ioa_semantic.trace.privacy import Disclosure

    fold = Fold()
    fold.value(1, copy.deepcopy(DOCUMENT))
    (run,) = otlp_runs([(Source("a.json", "a.json", None, None), fold)], Disclosure())
    return len(run.calls)


WHOLE = _whole()


def spans_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for r in document["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]


def trace(number: int, keep: set[str] | None = None, drop: set[str] | None = None,
          renamed: dict[str, str] | None = None) -> dict[str, Any]:
    """The scenario's spans under trace id ``number``, some kept or dropped, some span ids
    renamed (a new span)."""
    document = copy.deepcopy(DOCUMENT)
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            scope["spans"] = [s for s in scope["spans"]
                              if (keep is None or s["spanId"] in keep)
                              and (drop is None or s["spanId"] not in drop)]
            for span in scope["spans"]:
                span["traceId"] = f"{number:032x}"
                span["spanId"] = (renamed or {}).get(span["spanId"], span["spanId"])
    return document


def post(service: Service, document: dict[str, Any]) -> None:
    answer = httpx.post(service.url + "/v1/traces", json=document, timeout=30)
    assert answer.status_code == 200, answer.text


def settled(service: Service, **wanted: Any) -> dict[str, Any]:
    """/healthz once everything spooled was judged and it says ``wanted``."""
    deadline = time.monotonic() + JUDGED_WITHIN
    health: dict[str, Any] = {}
    while time.monotonic() < deadline:
        health = service.health()
        if health["judgedBytes"] == health["spooledBytes"] and health["judged"] and all(
                health[k] == v for k, v in wanted.items()):
            return health
        time.sleep(0.1)
    raise AssertionError(f"not settled with {wanted}: {health}")


def rounds(log: str) -> list[tuple[int, int]]:
    """The segments and bytes each judging round read, from the service's log."""
    return [(int(n), int(b)) for n, b in re.findall(
        r"judged (\d+) segments? of the spool \((\d+) bytes\)", log)]


CALLS = """PREFIX mas: <https://outshift-open.github.io/oxp-ontology/mas#>
SELECT ?session (COUNT(DISTINCT ?call) AS ?calls)
WHERE { GRAPH ?run { ?call mas:spanId ?span ; mas:sessionId ?session } }
GROUP BY ?session
"""


def calls_by_run(store: Path, tmp_path: Path) -> dict[str, int]:
    """Each stored run's calls, by the run's reference (the store is private)."""
    query = tmp_path / "calls.rq"
    query.write_text(CALLS)
    proc = subprocess.run([IOA_CHECK, "trace", "query", str(store), "--sparql", str(query)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {r["runId"] for r in stored_runs(store)} == {r["session"] for r in rows}
    return {r["session"]: int(r["calls"]) for r in rows}


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    return Path(write_manifests(tmp_path, every_tool=False))


def test_a_round_reads_what_came_since_and_judged_segments_leave(tmp_path: Path,
                                                                  manifests: Path) -> None:
    service = Service(tmp_path / "spool", tmp_path / "store", manifests, "--retain", "0")
    try:
        post(service, trace(1))
        settled(service, retiredSegments=1)
        first_size = len(json.dumps(trace(1)))  # of the order of the message, for a bound
        post(service, trace(2))
        health = settled(service, retiredSegments=2)
        assert health["segments"] == 1 and health["spooledBytes"] == 0, health
    finally:
        log = service.stop()
    read = rounds(log)
    assert len(read) >= 2, log
    # Each round read one segment, of one request: never the first trace's spans again.
    assert all(segments == 1 and 0 < size < first_size for segments, size in read), read
    assert sorted(calls_by_run(tmp_path / "store", tmp_path).values()) == [
        WHOLE] * 2
    # The first segment left; the active one (the next name, never a removed one's) is empty.
    files = sorted(p.name for p in (tmp_path / "spool").glob("spans*"))
    assert files == ["spans.2.binpb"], files


def test_a_small_spool_takes_any_number_of_traces(tmp_path: Path, manifests: Path) -> None:
    from ioa_semantic.service.traces import JSON, _parse

    framed = 4 + len(_parse(json.dumps(trace(1)).encode(), JSON)[0])
    service = Service(tmp_path / "spool", tmp_path / "store", manifests, "--retain", "0",
                      "--max-spool-bytes", str(3 * framed))
    # Twice the traces the spool has room for: from the fourth on, each is taken only because
    # the judged ones left (each trace costs a judging round, so no more than that).
    try:
        for number in range(1, 7):
            post(service, trace(number))
            settled(service, retiredSegments=number)
    finally:
        service.stop()
    assert len(calls_by_run(tmp_path / "store", tmp_path)) == 6


def test_a_waiting_trace_keeps_its_spans_until_it_completes(tmp_path: Path,
                                                            manifests: Path) -> None:
    """Its root span open (and the quiet period long), the trace waits: its segment is not
    retired, though --retain is 0; once the root span comes, the run is judged with every
    span, the first segment's included."""
    # The service measures the quiet period from the trace's last span to now, and the
    # scenario's spans stand at a fixed instant (2026-12-02T08:30Z): a period of 100,000 s ran
    # out the next day, and the trace was judged at once (the test failed from then on). A
    # period of some thirty years outlasts any day the suite runs.
    service = Service(tmp_path / "spool", tmp_path / "store", manifests, "--retain", "0",
                      "--quiet-period", "1000000000")
    try:
        post(service, trace(7, drop={ROOT}))
        deadline = time.monotonic() + JUDGED_WITHIN
        while not service.health()["judged"] and time.monotonic() < deadline:
            time.sleep(0.1)
        post(service, trace(8))  # another trace, complete: judged, its segment retired
        settled(service, retiredSegments=1, segments=2)
        # Rounds go on reading the waiting trace's segment: it stays, unsettled.
        before = service.health()["judged"]
        deadline = time.monotonic() + JUDGED_WITHIN
        while service.health()["judged"] < before + 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        health = service.health()
        assert health["retiredSegments"] == 1 and health["segments"] == 2, health
        post(service, trace(7, keep={ROOT}))
        settled(service)
    finally:
        service.stop()
    calls = calls_by_run(tmp_path / "store", tmp_path)
    assert sorted(calls.values()) == [WHOLE] * 2, calls


def test_a_late_span_joins_its_run_while_retained_and_is_told_after(tmp_path: Path,
                                                                    manifests: Path) -> None:
    late = {"00f067aa0ba9020d": "00f067aa0ba902ff"}  # another model call of the front desk
    retained = Service(tmp_path / "spool", tmp_path / "store", manifests, "--retain", "100000")
    try:
        post(retained, trace(3))
        settled(retained)
        post(retained, trace(3, keep={"00f067aa0ba9020d"}, renamed=late))
        settled(retained)
    finally:
        log = retained.stop()
    # The second round read the late span's segment and the run's first one, together.
    assert rounds(log)[-1][0] == 2, log
    (grown,) = calls_by_run(tmp_path / "store", tmp_path).values()
    assert grown == WHOLE + 1

    strict = Service(tmp_path / "spool", tmp_path / "store", manifests, "--retain", "0")
    try:
        settled(strict, retiredSegments=2)  # what the first service kept leaves now
        post(strict, trace(3, keep={"00f067aa0ba9020d"},
                           renamed={"00f067aa0ba9020d": "00f067aa0ba902fe"}))
        health = settled(strict, lateRuns=1)
        assert health["lastJudgeStatus"] in (0, 1, 3), health
    finally:
        log = strict.stop()
    assert f"late spans of run {3:032x}" in log, log
    # The stored run is as it was judged, whole.
    assert list(calls_by_run(tmp_path / "store", tmp_path).values()) == [grown]


def test_segments_are_named_once_and_the_highest_is_active(tmp_path: Path) -> None:
    folder = tmp_path / "spool"
    spool = Spool(str(folder))
    assert spool.rotate() is None  # an empty active segment stays
    spool.append(b"a" * 10)
    first = spool.rotate()
    assert first == Segment(0, str(folder / SPANS))
    spool.append(b"b" * 20)
    assert spool.size() == 14 + 24 and spool.segment_size(first) == 14
    assert not spool.retire(spool.active)  # the active one is never removed
    assert spool.retire(first)
    assert spool.size() == 24 and [s.number for s in spool.segments()] == [1]
    second = spool.rotate()
    spool.retire(second)  # type: ignore[arg-type]
    spool.close()
    again = Spool(str(folder))  # a restart: the highest name is the active one, kept
    assert again.active.number == 2 and again.size() == 0
    again.append(b"c")
    again.close()
    assert sorted(p.name for p in folder.glob("spans*")) == ["spans.2.binpb"]


def test_a_file_whose_every_run_waits_is_no_error(tmp_path: Path, manifests: Path) -> None:
    """``--complete-only`` with every run still waiting judged nothing: exit 0 and the
    waiting list names the run (it was an internal error, exit 70, at every such round)."""
    path = tmp_path / "open.json"
    path.write_text(json.dumps(trace(5, drop={ROOT})))
    waiting = tmp_path / "waiting.json"
    proc = subprocess.run(
        [IOA_CHECK, "trace", str(path), "--manifests", str(manifests), "--complete-only",
         "--quiet-period", "100000", "--at", "2026-12-02T00:00:00Z", "--no-shapes",
         "--waiting-list", str(waiting), "--format", "json"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "1 run not complete yet" in proc.stderr
    assert json.loads(waiting.read_text())["runs"] == [f"{5:032x}"]
    # A file that is not a waiting list is never written over.
    other = tmp_path / "notes.txt"
    other.write_text("mine\n")
    proc = subprocess.run(
        [IOA_CHECK, "trace", str(path), "--complete-only", "--quiet-period", "100000",
         "--at", "2026-12-02T00:00:00Z", "--no-shapes", "--waiting-list", str(other)],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and other.read_text() == "mine\n", proc.stderr
