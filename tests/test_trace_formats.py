"""Spans saved as Jaeger's JSON, by the SDK's console exporter or by the Collector's file
exporter in protobuf are audited as the OTLP JSON of the same spans is.

The run is tests/otel_agents.py's rail-assist system traced by the real OpenTelemetry SDK.
The console output is written by the SDK's own ``ConsoleSpanExporter``; the protobuf file is
the SDK's own OTLP encoding of each batch, framed as the Collector's file exporter frames
``format: proto`` (each ``TracesData`` after its length, 4 bytes big-endian). No Jaeger is
installable here, so its JSON is built from the same SDK spans by Jaeger's published JSON
model (the query API's ``{"data": [{"traceID", "spans", "processes"}]}``: ``references``
with ``CHILD_OF``, ``startTime``/``duration`` in microseconds, typed ``tags`` with
``span.kind`` and ``otel.status_code`` as tags, a ``processes`` table with ``serviceName``).

Done-when of issue 36 (item 6): with manifests declaring every tool used, every agent is
compatible; with ``issue_refund`` left out of ``booking_agent``'s manifest, exactly
``booking_agent`` is incompatible, naming the tool and its span.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")
pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is not installed")

from google.protobuf import json_format
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter, SpanExportResult

import otel_agents
from support import IOA_CHECK

UNDECLARED_SPAN = otel_agents.SPAN_IDS["ba.refund"]
SCENARIO = otel_agents.with_every_model()


class Keep(SpanExporter):
    """The SDK's finished spans, as its processors hand them over."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def run(exporter: SpanExporter) -> None:
    """The scenario through the SDK, each span exported as it ends."""
    provider, _ = otel_agents._provider(exporter, otel_agents.SequentialIds(),
                                        otel_agents.RESOURCE, batch=False)
    tracers = {"agents": provider.get_tracer(*otel_agents.AGENTS_SCOPE),
               "http": provider.get_tracer(*otel_agents.HTTP_SCOPE)}
    children: dict[str | None, list[otel_agents.Step]] = {}
    for step in SCENARIO:
        children.setdefault(step.parent, []).append(step)
    try:
        for root in children[None]:
            otel_agents._emit(tracers, root, None, children)
    finally:
        provider.shutdown()


def console_output() -> str:
    out = io.StringIO()
    run(ConsoleSpanExporter(out=out))
    return out.getvalue()


def _tag(key: str, value: Any) -> dict[str, Any]:
    kind = ("bool" if isinstance(value, bool) else "int64" if isinstance(value, int)
            else "float64" if isinstance(value, float) else "string")
    if isinstance(value, list | tuple):  # Jaeger has no arrays: its translator writes JSON
        value, kind = json.dumps(list(value)), "string"
    return {"key": key, "type": kind, "value": value}


def jaeger_document() -> dict[str, Any]:
    keep = Keep()
    run(keep)
    spans = []
    for span in keep.spans:
        context = span.get_span_context()
        assert context is not None and span.start_time and span.end_time
        tags = [_tag(k, v) for k, v in (span.attributes or {}).items()]
        tags.append(_tag("span.kind", span.kind.name.lower()))
        if span.status.status_code.name != "UNSET":
            tags.append(_tag("otel.status_code", span.status.status_code.name))
        spans.append({
            "traceID": f"{context.trace_id:032x}", "spanID": f"{context.span_id:016x}",
            "flags": 1, "operationName": span.name,
            "references": [{"refType": "CHILD_OF", "traceID": f"{context.trace_id:032x}",
                            "spanID": f"{span.parent.span_id:016x}"}] if span.parent else [],
            "startTime": span.start_time // 1000, "duration": (span.end_time - span.start_time)
            // 1000, "tags": tags, "logs": [], "processID": "p1", "warnings": None})
    resource = dict(otel_agents.RESOURCE)
    service = resource.pop("service.name")
    return {"data": [{"traceID": otel_agents.TRACE_HEX, "spans": spans, "processes": {
        "p1": {"serviceName": service, "tags": [_tag(k, v) for k, v in resource.items()]}},
        "warnings": None}], "total": 0, "limit": 0, "offset": 0, "errors": None}


def collector_protobuf() -> bytes:
    out = b""
    for request in otel_agents.record(SCENARIO):
        body = TracesData(resource_spans=request.resource_spans).SerializeToString()
        out += len(body).to_bytes(4, "big") + body
    return out


def write_manifests(folder: Path, every_tool: bool) -> Path:
    """The system's manifests; ``every_tool`` declares ``issue_refund`` for booking_agent too."""
    files = otel_agents.manifests()
    if every_tool:
        files["agents/booking_agent.yaml"]["spec"]["tools"].append(
            {"ref": "../tools/issue_refund.tool.yaml"})
        tool = json.loads(json.dumps(files["tools/reserve_seat.tool.yaml"]))
        tool["metadata"]["name"] = "issue_refund"
        files["tools/issue_refund.tool.yaml"] = tool
    root = folder / ("manifests-all" if every_tool else "manifests")
    for relative, document in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(otel_agents._yaml(document), encoding="utf-8")
    return root


def audit(path: Path, manifests: Path, *extra: str,
          env: dict[str, str] | None = None) -> tuple[int, dict[str, dict[str, Any]],
                                                      list[dict[str, Any]]]:
    """The exit status, each agent's record, and every record of ``ioa-check trace``."""
    proc = subprocess.run([IOA_CHECK, "trace", str(path), "--manifests", str(manifests),
                           "--format", "json", "--no-shapes", *extra], capture_output=True,
                          timeout=120, env=env)
    assert proc.returncode in (0, 1, 3, 4), proc.stderr
    lines = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    return proc.returncode, {r["agent"]: r for r in lines if "agent" in r}, lines


def assert_done_when(path: Path, folder: Path, tool: str = "issue_refund",
                     span: str = UNDECLARED_SPAN, agent: str = "booking_agent") -> None:
    """Compatible for every agent when every tool is declared; with ``tool`` left out, exactly
    ``agent`` is incompatible, naming the tool and the span."""
    status, agents, _ = audit(path, write_manifests(folder, every_tool=True))
    assert status == 0 and agents and {a["verdict"] for a in agents.values()} == {
        "compatible"}, agents
    status, agents, _ = audit(path, write_manifests(folder, every_tool=False))
    assert status == 1
    assert {n for n, a in agents.items() if a["verdict"] != "compatible"} == {agent}
    undeclared = [r for r in agents[agent]["reasons"] if r["code"] == "capability.undeclared-tool"]
    assert len(undeclared) == 1 and tool in undeclared[0]["message"]
    assert span in undeclared[0]["message"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("formats")


def test_the_otlp_reference_meets_the_done_when(folder: Path) -> None:
    path = folder / "otlp.jsonl"
    path.write_text(otel_agents.otlp_lines(otel_agents.record(SCENARIO)), encoding="utf-8")
    assert_done_when(path, folder)


@pytest.mark.parametrize("name", ["console.txt", "console.json", "console.jsonl"])
def test_the_console_exporter_output_is_read(folder: Path, name: str) -> None:
    text = console_output()
    assert text.startswith("{\n") and text.count('"trace_id"') == len(SCENARIO)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    assert_done_when(path, folder)


@pytest.mark.parametrize("indent", [None, 2])
def test_jaeger_json_is_read_on_one_line_or_pretty_printed(folder: Path,
                                                           indent: int | None) -> None:
    path = folder / f"jaeger-{indent}.json"
    path.write_text(json.dumps(jaeger_document(), indent=indent), encoding="utf-8")
    assert_done_when(path, folder)


def test_the_jaeger_export_gives_the_verdicts_and_uses_of_the_otlp_export(folder: Path) -> None:
    otlp, jaeger = folder / "same-otlp.jsonl", folder / "same-jaeger.json"
    otlp.write_text(otel_agents.otlp_lines(otel_agents.record(SCENARIO)), encoding="utf-8")
    jaeger.write_text(json.dumps(jaeger_document(), indent=2), encoding="utf-8")
    manifests = write_manifests(folder, every_tool=False)

    def strip(value: Any) -> Any:  # what names the input: its path, the lines read
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("source", "line")}
        return [strip(v) for v in value] if isinstance(value, list) else value

    def uses(path: Path) -> dict[str, Any]:
        _, agents, _ = audit(path, manifests)
        return {name: strip(a) for name, a in agents.items()}

    assert uses(jaeger) == uses(otlp)


def test_the_collector_protobuf_file_is_read(folder: Path) -> None:
    path = folder / "collector.binpb"
    path.write_bytes(collector_protobuf())
    assert_done_when(path, folder)


def test_a_pretty_printed_file_is_never_one_problem_a_line(folder: Path) -> None:
    """The issue's 14,338 warnings: a pretty-printed stream of unknown objects gives one
    problem an object, not one a line."""
    path = folder / "unknown.jsonl"
    path.write_text("".join(json.dumps({"what": n, "more": list(range(20))}, indent=4) + "\n"
                            for n in range(3)), encoding="utf-8")
    status, _, lines = audit(path, write_manifests(folder, every_tool=False))
    run = next(r for r in lines if "agent" not in r)
    text = json.dumps(run)
    assert text.count("trace.event-malformed") <= 3 + 1, text
    assert status == 3


def test_a_compressed_collector_file_is_refused_with_one_reason(folder: Path) -> None:
    path = folder / "collector.json.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(64))
    status, _, lines = audit(path, write_manifests(folder, every_tool=False))
    assert status == 4
    text = json.dumps(lines)
    assert text.count('"code": "json.unreadable"') == 1 and "zstd -d" in text


def test_protobuf_without_opentelemetry_proto_is_refused_naming_the_format(
        folder: Path, tmp_path: Path) -> None:
    """A regular package named ``opentelemetry`` first on the path hides the installed
    namespace package, as an environment without ``opentelemetry-proto`` would."""
    (tmp_path / "opentelemetry").mkdir()
    (tmp_path / "opentelemetry" / "__init__.py").write_text("", encoding="utf-8")
    path = folder / "collector-2.binpb"
    path.write_bytes(collector_protobuf())
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    status, _, lines = audit(path, write_manifests(folder, every_tool=False), env=env)
    assert status == 4
    text = json.dumps(lines)
    assert "opentelemetry-proto" in text and "format: json" in text


def test_a_collector_file_compressed_message_by_message_is_refused(folder: Path) -> None:
    """The Collector's legacy compression writes each message compressed after its length."""
    body = b"\x28\xb5\x2f\xfd" + os.urandom(40)
    path = folder / "collector-legacy.binpb"
    path.write_bytes(len(body).to_bytes(4, "big") + body)
    status, _, lines = audit(path, write_manifests(folder, every_tool=False))
    assert status == 4
    text = json.dumps(lines)
    assert text.count('"code": "json.unreadable"') == 1 and "zstd -d" in text


def test_a_json_lines_file_whose_first_line_is_four_characters_is_no_protobuf(
        folder: Path) -> None:
    """``null`` then a newline: the first four bytes as a length would exceed the file."""
    path = folder / "null-first.jsonl"
    path.write_text("null\n" + "".join(
        json.dumps(json_format.MessageToDict(r)) + "\n" for r in otel_agents.record(SCENARIO)))
    _, agents, lines = audit(path, write_manifests(folder, every_tool=True))
    assert "protobuf" not in json.dumps(lines)
    assert agents and {a["verdict"] for a in agents.values()} == {"compatible"}, lines


def test_the_collector_protobuf_file_is_checkpointed_by_state(folder: Path,
                                                              tmp_path: Path) -> None:
    """A Collector appends messages: --state resumes after the last message consumed, reads
    only what was appended, and the verdicts are those of the whole file; a file rewritten
    under the state is refused."""
    messages = []
    for request in otel_agents.record(SCENARIO):
        body = TracesData(resource_spans=request.resource_spans).SerializeToString()
        messages.append(len(body).to_bytes(4, "big") + body)
    assert len(messages) >= 2
    path = tmp_path / "collector.binpb"
    state = tmp_path / "state.jsonl"
    manifests = write_manifests(folder, every_tool=False)
    path.write_bytes(b"".join(messages[:1]))
    audit(path, manifests, "--state", str(state), "--batch-size", "1")
    entries = [json.loads(line) for line in state.read_text().splitlines()[1:]]
    assert entries and entries[-1]["offset"] == len(messages[0]) and entries[-1]["seq"] == 1
    with path.open("ab") as handle:
        handle.write(b"".join(messages[1:]))
    status, resumed, _ = audit(path, manifests, "--state", str(state), "--batch-size", "1")
    entries = [json.loads(line) for line in state.read_text().splitlines()[1:]]
    assert entries[-1]["offset"] == path.stat().st_size
    assert entries[-1]["seq"] == len(messages)
    whole_status, whole, _ = audit(path, manifests)
    assert (status, {n: a["verdict"] for n, a in resumed.items()}) == (
        whole_status, {n: a["verdict"] for n, a in whole.items()})
    assert status == 1
    path.write_bytes(b"".join(reversed(messages)))
    proc = subprocess.run([IOA_CHECK, "trace", str(path), "--manifests", str(manifests),
                           "--state", str(state), "--no-shapes"], capture_output=True,
                          timeout=120)
    assert proc.returncode == 2 and b"rewritten" in proc.stderr, proc.stderr
