"""The OpenTelemetry test data (``tests/otel_agents.py``) says what its docstring says.

The generator runs the real SDK and its OTLP encoder; these tests hold its outputs to the
properties the OTLP reader's tests rely on: the bytes are the same on every run (and are the
committed example's), the OTLP lines are protobuf's JSON mapping of real requests, the
Collector-style document holds the same spans, the mas-lab events describe the same calls as
the spans, and the manifests declare what the expected audit says they declare.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from ioa_semantic.trace.declarations import read_manifests
from ioa_semantic.trace.privacy import Disclosure

import otel_agents

PROGRAM = Path(otel_agents.__file__)
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trace" / "otel"
HTTP_SPAN = otel_agents.SPAN_IDS["ba.http"]
UNDECLARED_CALL = "00f067aa0ba9020b"  # booking_agent's issue_refund
MODELLESS_CALL = "00f067aa0ba9020c"  # booking_agent's chat without a model


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("otel")
    otel_agents.write(str(folder))
    return folder


def _requests(folder: Path) -> list[ExportTraceServiceRequest]:
    lines = (folder / "otlp.jsonl").read_text(encoding="utf-8").splitlines()
    return [json_format.Parse(line, ExportTraceServiceRequest()) for line in lines]


def _spans(requests: list[ExportTraceServiceRequest]) -> list[tuple[str, Span]]:
    """(scope name, span) in the order the requests hold them."""
    return [(scope.scope.name, span) for request in requests for resource in request.resource_spans
            for scope in resource.scope_spans for span in scope.spans]


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    assert which is not None
    if which == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, which)


def _attributes(span: Span) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in span.attributes}


def _events(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "events.jsonl").read_text("utf-8").splitlines()]


def test_two_runs_write_the_same_bytes_as_the_committed_example(tmp_path: Path) -> None:
    """Two runs of the program (fresh interpreters, different hash seeds) and the example."""
    outputs = []
    for seed in ("1", "2"):
        folder = tmp_path / seed
        proc = subprocess.run([sys.executable, str(PROGRAM), str(folder)], capture_output=True,
                              timeout=60, env={**os.environ, "PYTHONHASHSEED": seed})
        assert proc.returncode == 0, proc.stderr.decode()
        outputs.append(_files(folder))
    assert outputs[0] == outputs[1]
    assert sorted(outputs[0]) == sorted([
        "events.jsonl", "manifests/agents/booking_agent.yaml", "manifests/agents/front_desk.yaml",
        "manifests/mas.yaml", "manifests/tools/reserve_seat.tool.yaml",
        "manifests/tools/search_connections.tool.yaml", "maslab-spans.jsonl",
        "otlp-collector.json", "otlp.jsonl"])
    example = _files(EXAMPLE)
    del example["README.md"]
    assert example == outputs[0], "examples/trace/otel is stale: rerun tests/otel_agents.py"


def test_a_usage_error_writes_nothing(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(PROGRAM)], capture_output=True, timeout=60,
                          cwd=tmp_path)
    assert proc.returncode == 2 and b"usage" in proc.stderr and not list(tmp_path.iterdir())


def test_the_otlp_lines_are_protobufs_json_mapping_of_export_requests(written: Path) -> None:
    lines = (written / "otlp.jsonl").read_text(encoding="utf-8").splitlines()
    requests = _requests(written)
    # Each line is exactly what MessageToJson writes for the request it parses into.
    assert [json_format.MessageToJson(r, indent=None) for r in requests] == lines
    # Batches of four: the 13 spans in four requests, one resource each.
    assert [sum(len(s.spans) for rs in r.resource_spans for s in rs.scope_spans)
            for r in requests] == [4, 4, 4, 1]
    spans = _spans(requests)
    ids = [span.span_id.hex() for _, span in spans]
    assert sorted(ids) == sorted(otel_agents.SPAN_IDS.values()) and len(set(ids)) == 13
    assert {span.trace_id.hex() for _, span in spans} == {otel_agents.TRACE_HEX}
    # Children reach the exporter before their parents: a parent's request is never earlier.
    request_of = {span.span_id: n for n, r in enumerate(requests) for rs in r.resource_spans
                  for s in rs.scope_spans for span in s.spans}
    for _, span in spans:
        if span.parent_span_id:
            assert request_of[span.parent_span_id] >= request_of[span.span_id]
    resource = {kv.key: _value(kv.value) for kv in requests[0].resource_spans[0].resource.attributes}
    assert resource == otel_agents.RESOURCE
    assert {scope for scope, _ in spans} == {"rail_assist.agents", "rail_assist.http"}
    # What a reader of protobuf's mapping meets: base64 ids, enum names, int64 as strings,
    # non-ASCII escaped, default fields (the root's parent, an unset status code) left out.
    first = json.loads(lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert base64.b64decode(first["spanId"]).hex() == otel_agents.SPAN_IDS["fd.chat.1"]
    assert first["kind"] == "SPAN_KIND_CLIENT" and first["status"] == {"code": "STATUS_CODE_OK"}
    assert isinstance(first["startTimeUnixNano"], str)
    assert "\\u00fc" in lines[0] and "ü" not in lines[0]
    root = json.loads(lines[3])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert "parentSpanId" not in root and root["name"] == "invoke_workflow rail-assist"


def _base64_ids(document: Any) -> Any:
    """The Collector document with its hex ids back in protobuf's base64."""
    if isinstance(document, list):
        return [_base64_ids(item) for item in document]
    if isinstance(document, dict):
        return {k: base64.b64encode(bytes.fromhex(v)).decode() if k in (
            "traceId", "spanId", "parentSpanId") else _base64_ids(v) for k, v in document.items()}
    return document


def test_the_collector_document_holds_the_same_spans(written: Path) -> None:
    text = (written / "otlp-collector.json").read_text(encoding="utf-8")
    document = json.loads(text)
    merged = ExportTraceServiceRequest()
    for request in _requests(written):
        merged.MergeFrom(request)
    # Hex ids and integer enums; otherwise the same request (ParseDict takes enum numbers).
    assert json_format.ParseDict(_base64_ids(document), ExportTraceServiceRequest()) == merged
    spans = {s["spanId"]: s for rs in document["resourceSpans"] for ss in rs["scopeSpans"]
             for s in ss["spans"]}
    assert sorted(spans) == sorted(otel_agents.SPAN_IDS.values())
    refund = spans[UNDECLARED_CALL]
    assert refund["traceId"] == otel_agents.TRACE_HEX and refund["parentSpanId"] == "00f067aa0ba90207"
    assert refund["kind"] == Span.SPAN_KIND_INTERNAL == 1
    assert refund["status"]["code"] == Status.STATUS_CODE_ERROR == 2
    assert spans[MODELLESS_CALL]["kind"] == Span.SPAN_KIND_CLIENT == 3
    assert spans[HTTP_SPAN]["status"] == {}
    assert isinstance(refund["endTimeUnixNano"], str) and "ü" in text


def test_the_spans_follow_the_genai_conventions(written: Path) -> None:
    spans = {span.span_id.hex(): (scope, span) for scope, span in _spans(_requests(written))}
    by_key = {key: spans[ident][1] for key, ident in otel_agents.SPAN_IDS.items()}
    attrs = {key: _attributes(span) for key, span in by_key.items()}
    assert attrs["run"] == {"gen_ai.operation.name": "invoke_workflow",
                            "gen_ai.workflow.name": "rail-assist", "gen_ai.agent.name": "rail-assist"}
    for key in ("front_desk", "booking_agent"):
        assert attrs[key]["gen_ai.operation.name"] == "invoke_agent"
        assert attrs[key]["gen_ai.agent.id"] == attrs[key]["gen_ai.agent.name"] == key
    definitions = {key: [d["name"] for d in json.loads(attrs[key]["gen_ai.tool.definitions"])]
                   for key in ("front_desk", "booking_agent")}
    assert definitions == {"front_desk": ["search_connections", "delegate_to_booking_agent"],
                           "booking_agent": ["reserve_seat"]}
    assert all(d["type"] == "function"
               for d in json.loads(attrs["front_desk"]["gen_ai.tool.definitions"]))
    # The delegation: an execute_tool span of front_desk whose child is booking_agent's span.
    assert attrs["fd.delegate"]["gen_ai.tool.name"] == "delegate_to_booking_agent"
    assert by_key["booking_agent"].parent_span_id == by_key["fd.delegate"].span_id
    assert by_key["fd.delegate"].parent_span_id == by_key["front_desk"].span_id
    # The undeclared tool and the model-less call, where the expected audit says they are.
    assert otel_agents.SPAN_IDS["ba.refund"] == UNDECLARED_CALL
    assert attrs["ba.refund"]["gen_ai.tool.name"] == "issue_refund"
    assert otel_agents.SPAN_IDS["ba.chat.2"] == MODELLESS_CALL
    modelless = attrs["ba.chat.2"]
    assert modelless["gen_ai.operation.name"] == "chat" and by_key["ba.chat.2"].name == "chat"
    assert not {"gen_ai.request.model", "gen_ai.response.model"} & set(modelless)
    for key, step in otel_agents.STEPS.items():
        span, got = by_key[key], attrs[key]
        expected_kind = Span.SPAN_KIND_CLIENT if step.op in ("chat", "http") else Span.SPAN_KIND_INTERNAL
        assert span.kind == expected_kind, key
        if step.op == "chat":
            assert got["gen_ai.provider.name"] in ("openai", "anthropic")
            assert isinstance(got["gen_ai.usage.input_tokens"], int)
            assert got["gen_ai.response.finish_reasons"] == [step.finish]
            assert isinstance(got["gen_ai.request.temperature"], float)
            assert {"gen_ai.response.id", "gen_ai.input.messages", "gen_ai.output.messages"} <= set(got)
        if step.op == "execute_tool":
            assert got["gen_ai.tool.type"] == "function" and got["gen_ai.tool.call.id"]
            assert json.loads(got["gen_ai.tool.call.arguments"]) == step.inputs
        if step.op == "http":
            assert got["http.request.method"] == "GET"
            assert not any(name.startswith("gen_ai.") for name in got)
            assert spans[otel_agents.SPAN_IDS[key]][0] == "rail_assist.http"
            assert span.status.code == Status.STATUS_CODE_UNSET
        elif step.error is None:
            assert span.status.code == Status.STATUS_CODE_OK and not span.events, key
        else:
            assert span.status.code == Status.STATUS_CODE_ERROR and span.status.message
            assert [e.name for e in span.events] == ["exception"]
    # The HTTP span stands between booking_agent's span and its reserve_seat span.
    assert by_key["ba.http"].parent_span_id == by_key["booking_agent"].span_id
    assert by_key["ba.reserve"].parent_span_id == by_key["ba.http"].span_id
    assert "ü" in attrs["front_desk"]["gen_ai.input.messages"]


def _canonical(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_the_events_describe_the_same_calls_as_the_spans(written: Path) -> None:
    spans = {span.span_id.hex(): span for _, span in _spans(_requests(written))}
    attrs = {ident: _attributes(span) for ident, span in spans.items()}
    events = _events(written)
    assert [e["timestamp"] for e in events] == sorted(e["timestamp"] for e in events)
    pairs: dict[str, dict[str, dict[str, Any]]] = {}
    for event in events:
        phase = event["kind"].rpartition("_")[2]
        assert phase not in pairs.setdefault(event["call_id"], {}), event
        pairs[event["call_id"]][phase] = event
    # Every span but the HTTP one is a call, with a start and an end event.
    assert set(pairs) == set(spans) - {HTTP_SPAN}
    assert all(set(pair) == {"start", "end"} for pair in pairs.values())

    def mapped_parent(span: Span) -> str | None:
        parent = span.parent_span_id.hex() or None
        while parent == HTTP_SPAN:
            parent = spans[parent].parent_span_id.hex() or None
        return parent

    def agent_of(ident: str) -> str:
        while "gen_ai.agent.id" not in attrs[ident] and "gen_ai.workflow.name" not in attrs[ident]:
            ident = spans[ident].parent_span_id.hex()
        return str(attrs[ident].get("gen_ai.agent.id") or attrs[ident]["gen_ai.workflow.name"])

    kinds = {"invoke_workflow": "mas_call", "invoke_agent": "execution", "chat": "llm_call",
             "execute_tool": "tool_call"}
    for ident, pair in pairs.items():
        span, got = spans[ident], attrs[ident]
        start, end = pair["start"], pair["end"]
        assert start["kind"] == kinds[got["gen_ai.operation.name"]] + "_start"
        for event in (start, end):
            assert event["run_id"] == span.trace_id.hex()
            assert event.get("parent_call_id") == mapped_parent(span)
            assert event["agent_id"] == agent_of(ident)
        # Instants: exactly the span's nanoseconds, as decimals.
        assert Decimal(repr(start["timestamp"])) == Decimal(span.start_time_unix_nano) / 10**9
        assert Decimal(repr(end["timestamp"])) == Decimal(span.end_time_unix_nano) / 10**9
        ok = span.status.code == Status.STATUS_CODE_OK
        assert end["status"] in (("ok", "success") if ok else ("error",))
        if "gen_ai.tool.name" in got:
            assert start["tool_name"] == end["tool_name"] == got["gen_ai.tool.name"]
            assert start["tool_call_id"] == got["gen_ai.tool.call.id"]
            assert _canonical(start["arguments"]) == got["gen_ai.tool.call.arguments"]
            assert end.get("output") == got.get("gen_ai.tool.call.result")
            assert end.get("error") == (span.status.message or None)
        if got["gen_ai.operation.name"] == "chat":
            assert start.get("model") == end.get("model") == got.get("gen_ai.request.model")
            assert end["usage"] == {"input_tokens": got["gen_ai.usage.input_tokens"],
                                    "output_tokens": got["gen_ai.usage.output_tokens"]}
            assert [end["finish_reason"]] == got["gen_ai.response.finish_reasons"]
            assert end["response_id"] == got["gen_ai.response.id"]
            assert start["temperature"] == got["gen_ai.request.temperature"]
            assert _canonical(start["messages"]) == got["gen_ai.input.messages"]
            assert _canonical(end["output"]) == got["gen_ai.output.messages"]
        if got["gen_ai.operation.name"] == "invoke_agent":
            assert _canonical(start["input"]) == got["gen_ai.input.messages"]
            assert _canonical(end["output"]) == got["gen_ai.output.messages"]
    assert "model" not in pairs[MODELLESS_CALL]["start"]
    assert pairs[UNDECLARED_CALL]["start"]["tool_name"] == "issue_refund"
    # The reserve_seat call sits under the HTTP span: its event names booking_agent's call.
    reserve = otel_agents.SPAN_IDS["ba.reserve"]
    assert pairs[reserve]["start"]["parent_call_id"] == otel_agents.SPAN_IDS["booking_agent"]


def test_the_manifests_declare_what_the_expected_audit_says(written: Path) -> None:
    folder = written / "manifests"
    for path in sorted(folder.rglob("*.yaml")):
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert document["apiVersion"] == "mas/v1" and document["kind"] in ("MAS", "Agent", "Tool")
    manifests = read_manifests(str(folder), Disclosure())
    assert manifests.findings == () and manifests.mas == "rail-assist"
    assert manifests.entry == "front_desk" and manifests.workflow
    front, booking = manifests.agents["front_desk"], manifests.agents["booking_agent"]
    assert set(front.tools) == {"search_connections"} and front.tools_complete
    assert front.delegates_to == frozenset({"booking_agent"})
    assert front.delegation_tools() == frozenset({"delegate_to_booking_agent"})
    assert front.models == frozenset({"gpt-4o"})
    assert set(booking.tools) == {"reserve_seat"} and booking.delegates_to == frozenset()
    assert booking.models == frozenset({"claude-sonnet-4-5"})
    # The tool booking_agent uses undeclared is in no manifest at all.
    assert not any("issue_refund" in p.read_text("utf-8") for p in folder.rglob("*.yaml"))


def _maslab_lines(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in
            (folder / "maslab-spans.jsonl").read_text(encoding="utf-8").splitlines()]


def _plain(value: dict[str, Any]) -> Any:
    """An OTLP/JSON AnyValue as a plain value (the types the generator writes)."""
    (member, inner), = value.items()
    return int(inner) if member == "intValue" else inner


def test_the_mas_lab_spans_are_what_mas_lab_s_otel_plugin_writes(written: Path) -> None:
    """Span names and mas.* attributes as mas-lab's converter writes them, one span a request
    (its SimpleSpanProcessor), each exported as it ends: children before their callers."""
    requests = _maslab_lines(written)
    assert len(requests) == 12  # every step but the HTTP request, which mas-lab does not record
    spans = []
    for request in requests:
        (resource,) = request["resourceSpans"]
        assert {a["key"]: _plain(a["value"]) for a in resource["resource"]["attributes"]} == (
            otel_agents.MASLAB_RESOURCE)
        (scope,) = resource["scopeSpans"]
        assert scope["scope"] == {"name": "mas-otel"}
        (span,) = scope["spans"]
        spans.append(span)
    by_id = {s["spanId"]: s for s in spans}
    assert set(by_id) == set(otel_agents.SPAN_IDS.values()) - {HTTP_SPAN}
    assert {s["traceId"] for s in spans} == {otel_agents.TRACE_HEX}
    written_at = {s["spanId"]: n for n, s in enumerate(spans)}
    for span in spans:
        assert span["kind"] == 1  # INTERNAL: the converter gives no kind
        if "parentSpanId" in span:
            assert written_at[span["parentSpanId"]] > written_at[span["spanId"]]
    names = {key: by_id[ident]["name"] for key, ident in otel_agents.SPAN_IDS.items()
             if ident in by_id}
    assert names["run"] == "TaskCall" and names["front_desk"] == "AgentCall"
    assert names["fd.chat.1"] == "LLMCall" and names["ba.refund"] == "ToolCall"
    attrs = {key: {a["key"]: _plain(a["value"]) for a in by_id[ident]["attributes"]}
             for key, ident in otel_agents.SPAN_IDS.items() if ident in by_id}
    for key, got in attrs.items():
        assert got["mas.boundary"] == names[key] and got["mas.call.id"] == otel_agents.SPAN_IDS[key]
        assert got["mas.agent.id"] == otel_agents.STEPS[key].agent
        assert not any(name.startswith("gen_ai.") for name in got)
    # The model-less call: the converter's stand-in for "not recorded".
    assert attrs["ba.chat.2"]["mas.llm.model"] == "unknown"
    assert attrs["fd.chat.1"]["mas.llm.model"] == "gpt-4o"
    assert attrs["fd.chat.1"]["metrics.token.total"] == 412 + 38
    assert attrs["ba.refund"]["mas.tool.name"] == "issue_refund"
    assert attrs["ba.refund"]["mas.status"] == "error"
    assert by_id[UNDECLARED_CALL]["status"] == {"code": 2, "message": "error"}
    assert json.loads(attrs["fd.search"]["mas.tool.input"]) == otel_agents.SEARCH_ARGS
    # reserve_seat ran under the HTTP span, which mas-lab has not: its caller is the agent.
    assert by_id[otel_agents.SPAN_IDS["ba.reserve"]]["parentSpanId"] == (
        otel_agents.SPAN_IDS["booking_agent"])
    assert "parentSpanId" not in by_id[otel_agents.SPAN_IDS["run"]]


def test_with_every_model_records_the_model_of_the_model_less_call() -> None:
    scenario = otel_agents.with_every_model()
    models = {step.key: step.model for step in scenario if step.op == "chat"}
    assert models["ba.chat.2"] == "claude-sonnet-4-5" and None not in models.values()
    assert [s.key for s in scenario] == [s.key for s in otel_agents.SCENARIO]
