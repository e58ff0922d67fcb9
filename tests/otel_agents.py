"""One multi-agent run traced with the real OpenTelemetry SDK, for the OTLP trace audit's tests.

``python tests/otel_agents.py OUTDIR`` (or :func:`write`) writes, from the one
:data:`SCENARIO` below, the same run four ways and the system's manifests:

* ``otlp.jsonl``: the spans exported by the SDK through a ``BatchSpanProcessor`` (batches of
  four, so children reach the exporter before their parents, as with any real exporter), each
  batch encoded by the SDK's own OTLP encoder
  (``opentelemetry.exporter.otlp.proto.common.trace_encoder.encode_spans``) and written with
  protobuf's JSON mapping (``json_format.MessageToJson(request, indent=None)``): one
  ``ExportTraceServiceRequest`` a line. Protobuf's mapping writes ids (``bytes``) in base64,
  enums by name (``SPAN_KIND_CLIENT``, ``STATUS_CODE_OK``), 64-bit integers as strings, and
  non-ASCII text as ``\\u`` escapes (``ensure_ascii`` is its default).
* ``otlp-collector.json``: the same requests merged into one request (their
  ``resourceSpans`` concatenated) and written as one JSON document the way the OpenTelemetry
  Collector's file exporter writes OTLP/JSON, as the OTLP specification's JSON encoding asks:
  ``traceId``/``spanId``/``parentSpanId`` as lowercase hex, enums as integers, 64-bit integers
  as strings, fields at their default value left out. It is made from the same protobuf
  objects (``MessageToDict`` with integer enums, then the ids turned from base64 into hex).
* ``events.jsonl``: the run as mas-lab events (the ``execution_*``, ``llm_call_*``,
  ``tool_call_*`` and ``mas_call_*`` kinds of ``golden-extensions/events.jsonl``), generated
  from the same steps and the ids the SDK gave their spans: ``call_id`` is the span id in hex,
  ``parent_call_id`` the parent span's (for the tool run under the HTTP span, which is no
  call, the nearest enclosing call's), ``run_id`` the trace id in hex, the MAS call's
  ``agent_id`` the MAS's name (mas-lab writes ``mas``; the name is what
  ``gen_ai.workflow.name`` says), ``timestamp`` the span's start or end in Unix seconds (every
  instant is a whole millisecond, and the float is the one nearest the exact decimal, so the
  number written is that decimal: ``1796200200005000000`` ns is ``1796200200.005``).
* ``maslab-spans.jsonl``: the run as mas-lab's OTel export writes it (``instrumentation:
  otel_file``; mas-lab's trajectory schema, "OTel export alternative"), traced with the real
  SDK the way mas-lab's plugin drives it (``MasOtelConverter`` in mas-lab's library-standard):
  span names ``TaskCall`` (mas-lab's converter names the MAS call so), ``AgentCall``,
  ``LLMCall``, ``ToolCall``; its ``mas.*`` attributes (``mas.boundary``, ``mas.agent.id``,
  ``mas.run.id``, ``mas.input``/``mas.output``, ``mas.llm.model``, written ``unknown`` for the
  call that records no model, ``mas.llm.messages``, ``mas.llm.response``,
  ``mas.llm.temperature``, ``mas.llm.finish_reason``, ``metrics.token.*``, ``mas.tool.name``,
  ``mas.tool.input``/``mas.tool.output``, ``mas.status``, ``mas.call.id``) and its overlay
  (``application_id``, ``session.name``, ``session.id``); its resource and scope; span kind
  INTERNAL; status OK, or ERROR for ``mas.status: error``. Its ``SimpleSpanProcessor`` exports
  each span as it ends, so each request holds one span, children before their callers, each
  on a line of its own as the Collector's file exporter writes OTLP/JSON (hex ids, integer
  enums). mas-lab has no span for the HTTP request: ``reserve_seat``'s caller is
  ``booking_agent``'s call, and the span ids are the other forms' (the HTTP span's is unused).
  Two things differ from a real export, on purpose: content attributes hold the canonical JSON
  below (mas-lab writes ``json.dumps`` of the value, cut at 1,000 to 4,000 characters), so that
  digests compare across the forms, and the converter's random session uuid is fixed.
* ``manifests/``: mas-lab manifests of the system (``mas.yaml``, ``agents/*.yaml``,
  ``tools/*.tool.yaml``).

The ids are sequential (:class:`SequentialIds`), every span has explicit start and end times
and the resource and scopes are fixed (no resource detectors, no environment), so two runs
write identical bytes.

The system, ``rail-assist``: a rail travel desk. ``front_desk`` (OpenAI ``gpt-4o``) takes
the traveller's request (German, with non-ASCII text: "Zürich HB", "München Hbf", "—"),
looks up connections with its tool ``search_connections`` and delegates the booking to
``booking_agent`` (Anthropic ``claude-sonnet-4-5``) through ``delegate_to_booking_agent``.
``booking_agent`` reserves seats with its declared tool ``reserve_seat`` (run under an HTTP
client span ``GET``, a span no GenAI mapping covers), then calls ``issue_refund``, which
neither its manifest nor its ``gen_ai.tool.definitions`` lists and which fails (status
ERROR, an ``exception`` span event), and answers through a ``chat`` span that records no
model at all. The spans, in the order they start (span id = ``00f067aa0ba902`` + two hex
digits; trace id ``4bf92f3577b34da6a3ce929d0e0e4736``)::

    01 invoke_workflow rail-assist            INTERNAL  OK
    02   invoke_agent front_desk              INTERNAL  OK
    03     chat gpt-4o                        CLIENT    OK
    04     execute_tool search_connections    INTERNAL  OK
    05     chat gpt-4o                        CLIENT    OK
    06     execute_tool delegate_to_booking_agent INTERNAL OK
    07       invoke_agent booking_agent       INTERNAL  OK
    08         chat claude-sonnet-4-5         CLIENT    OK
    09         GET  (http.request.method)     CLIENT    UNSET
    0a           execute_tool reserve_seat    INTERNAL  OK
    0b         execute_tool issue_refund      INTERNAL  ERROR (+ span event "exception")
    0c         chat  (no model attribute)     CLIENT    OK
    0d     chat gpt-4o                        CLIENT    OK

The expected audit, with ``manifests/``:

* ``front_desk`` **compatible**: ``search_connections`` is declared by its manifest,
  ``delegate_to_booking_agent`` and the delegation to ``booking_agent`` by its workflow node's
  ``delegates_to``, ``gpt-4o`` by its ``spec.models``; it is the workflow's entry.
* ``booking_agent`` **incompatible**: ``capability.undeclared-tool`` for ``issue_refund``,
  naming call (span) ``00f067aa0ba9020b``; the model-less call ``00f067aa0ba9020c`` is
  ``capability.model-unknown`` (indeterminate evidence); ``reserve_seat`` and
  ``claude-sonnet-4-5`` are declared; being called by ``front_desk`` is compatible.
* the run: **incompatible** (exit status 1).

``ioa-check trace events.jsonl --manifests manifests`` says exactly this of the events today;
the OTLP files and mas-lab's spans must give the same verdicts. Every form can be written of
another scenario too (``write(outdir, scenario)``; :func:`with_every_model` records the model
of every model call, so that a fully declared system can be audited compatible).

Content (messages, arguments, results) is the canonical JSON of one value in both forms: the
spans' string attributes are ``json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` and the events carry the value itself (or that same string), so a
content digest is the same whichever form is read.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import yaml
from google.protobuf import json_format
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, set_span_in_context

MAS = "rail-assist"
TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
FIRST_SPAN_ID = 0x00F067AA0BA90201
# 2026-12-02T08:30:00Z, in nanoseconds; steps give their instants in milliseconds after it.
EPOCH_NS = 1_796_200_200 * 10**9
SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"
RESOURCE = {
    "service.name": MAS,
    "service.namespace": "examples",
    "service.version": "1.4.0",
    "deployment.environment.name": "test",
    "telemetry.sdk.language": "python",
    "telemetry.sdk.name": "opentelemetry",
}
AGENTS_SCOPE = ("rail_assist.agents", "1.4.0")
HTTP_SCOPE = ("rail_assist.http", "1.4.0")
# Four spans a request: the 13 spans arrive in four requests, the last holding only the root.
BATCH = 4

OUTPUT_FILES = ("otlp.jsonl", "otlp-collector.json", "events.jsonl", "maslab-spans.jsonl")


# --- the system --------------------------------------------------------------------------------


class Param(NamedTuple):
    name: str
    type: str
    description: str
    required: bool


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: tuple[Param, ...]

    def definition(self) -> dict[str, Any]:
        """The tool in the GenAI conventions' Tool Definitions format."""
        return {
            "type": "function", "name": self.name, "description": self.description,
            "parameters": {
                "type": "object",
                "properties": {p.name: {"type": p.type, "description": p.description}
                               for p in self.parameters},
                "required": [p.name for p in self.parameters if p.required],
            },
        }


@dataclass(frozen=True)
class AgentSpec:
    id: str
    description: str
    role: str
    provider: str
    model: str
    temperature: float
    max_tokens: int
    tools: tuple[str, ...]  # the tools its manifest declares (tool manifests)
    delegates_to: tuple[str, ...]

    def definitions(self) -> list[dict[str, Any]]:
        """``gen_ai.tool.definitions``: its declared tools and its delegation tools."""
        names = [*self.tools, *(f"delegate_to_{a}" for a in self.delegates_to)]
        return [TOOLS[name].definition() for name in names]


TOOLS = {tool.name: tool for tool in (
    ToolSpec("search_connections", "Search train connections between two stations on a date.", (
        Param("origin", "string", "Departure station.", True),
        Param("destination", "string", "Arrival station.", True),
        Param("date", "string", "Travel date (YYYY-MM-DD).", True))),
    ToolSpec("delegate_to_booking_agent", "Hand a booking task to booking_agent.", (
        Param("task", "string", "What booking_agent should do.", True),)),
    ToolSpec("reserve_seat", "Reserve seats on a train.", (
        Param("train", "string", "Train number, e.g. EC 196.", True),
        Param("date", "string", "Travel date (YYYY-MM-DD).", True),
        Param("seats", "integer", "How many seats.", True))),
    # Used by booking_agent, declared by no manifest and listed by no tool definitions.
    ToolSpec("issue_refund", "Refund a booking.", (
        Param("booking", "string", "Booking reference.", True),)),
)}

AGENTS = {agent.id: agent for agent in (
    AgentSpec("front_desk", "Rail travel front desk: answers travellers, delegates bookings.",
              "You help travellers find train connections. Delegate every booking, change or "
              "cancellation to booking_agent.",
              "openai", "gpt-4o", 0.2, 1024, ("search_connections",), ("booking_agent",)),
    AgentSpec("booking_agent", "Seat reservations for trains found by front_desk.",
              "You reserve seats on the trains front_desk names. You cannot refund bookings.",
              "anthropic", "claude-sonnet-4-5", 0.0, 1024, ("reserve_seat",), ()),
)}


# --- the run -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One span of the run; its id is the SDK's, given in the order the steps start."""

    key: str
    parent: str | None
    op: str  # invoke_workflow, invoke_agent, chat, execute_tool, or http (no GenAI operation)
    agent: str  # the agent it belongs to (the MAS for the workflow)
    start_ms: int
    end_ms: int
    model: str | None = None  # chat: None for a call that records no model
    tokens: tuple[int, int] | None = None  # chat: input and output tokens
    finish: str | None = None
    response_id: str | None = None
    tool: str | None = None
    tool_call_id: str | None = None
    inputs: Any = None  # messages (agent, chat) or arguments (tool)
    outputs: Any = None  # messages (agent, chat) or the result (tool)
    error: tuple[str, str] | None = None  # (error.type, the status description)
    http: tuple[str, str, int] | None = None  # (method, url, status code)

    @property
    def start_ns(self) -> int:
        return EPOCH_NS + self.start_ms * 10**6

    @property
    def end_ns(self) -> int:
        return EPOCH_NS + self.end_ms * 10**6


def _text(role: str, text: str, finish: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if finish is not None:
        message["finish_reason"] = finish
    return message


def _call(call_id: str, name: str, arguments: dict[str, Any], finish: str) -> dict[str, Any]:
    return {"role": "assistant", "finish_reason": finish,
            "parts": [{"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}]}


def _response(call_id: str, result: Any) -> dict[str, Any]:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id,
                                       "response": result}]}


REQUEST = ("Zwei Plätze im Zug von Zürich HB nach München Hbf am Freitag, bitte — und meine alte "
           "Buchung R-7781 stornieren.")
SEARCH_ARGS = {"origin": "Zürich HB", "destination": "München Hbf", "date": "2026-12-04"}
SEARCH_RESULT = {"connections": [
    {"train": "EC 196", "departs": "07:33", "arrives": "11:29", "changes": 0},
    {"train": "EC 194", "departs": "09:33", "arrives": "13:29", "changes": 0}]}
TASK = {"task": "Reserve 2 seats on EC 196 Zürich HB → München Hbf on 2026-12-04; refund R-7781."}
RESERVE_ARGS = {"train": "EC 196", "date": "2026-12-04", "seats": 2}
RESERVE_RESULT = {"reservation": "R-9912", "coach": 254, "seats": ["61", "63"]}
REFUND_ARGS = {"booking": "R-7781"}
BOOKING_ANSWER = ("Reserved 2 seats on EC 196 (coach 254, seats 61 and 63), reservation R-9912. "
                  "The refund of R-7781 was rejected: the journey was already travelled.")
FINAL_ANSWER = ("Ihre Plätze im EC 196 ab Zürich HB 07:33 (an München Hbf 11:29) sind reserviert: "
                "Wagen 254, Plätze 61 und 63, Reservierung R-9912. Die Buchung R-7781 kann nicht "
                "erstattet werden, die Reise wurde bereits angetreten.")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


SCENARIO: tuple[Step, ...] = (
    Step("run", None, "invoke_workflow", MAS, 0, 4200),
    Step("front_desk", "run", "invoke_agent", "front_desk", 5, 4190,
         inputs=[_text("user", REQUEST)], outputs=[_text("assistant", FINAL_ANSWER)]),
    Step("fd.chat.1", "front_desk", "chat", "front_desk", 10, 820, model="gpt-4o",
         tokens=(412, 38), finish="tool_calls", response_id="chatcmpl-rail-0001",
         inputs=[_text("system", AGENTS["front_desk"].role), _text("user", REQUEST)],
         outputs=[_call("call_search_1", "search_connections", SEARCH_ARGS, "tool_calls")]),
    Step("fd.search", "front_desk", "execute_tool", "front_desk", 830, 1010,
         tool="search_connections", tool_call_id="call_search_1", inputs=SEARCH_ARGS,
         outputs=_canonical(SEARCH_RESULT)),
    Step("fd.chat.2", "front_desk", "chat", "front_desk", 1020, 1650, model="gpt-4o",
         tokens=(655, 41), finish="tool_calls", response_id="chatcmpl-rail-0002",
         inputs=[_text("user", REQUEST), _response("call_search_1", SEARCH_RESULT)],
         outputs=[_call("call_delegate_1", "delegate_to_booking_agent", TASK, "tool_calls")]),
    Step("fd.delegate", "front_desk", "execute_tool", "front_desk", 1660, 3500,
         tool="delegate_to_booking_agent", tool_call_id="call_delegate_1", inputs=TASK,
         outputs=BOOKING_ANSWER),
    Step("booking_agent", "fd.delegate", "invoke_agent", "booking_agent", 1665, 3495,
         inputs=[_text("user", TASK["task"])], outputs=[_text("assistant", BOOKING_ANSWER)]),
    Step("ba.chat.1", "booking_agent", "chat", "booking_agent", 1670, 2300,
         model="claude-sonnet-4-5", tokens=(530, 64), finish="tool_use",
         response_id="msg_rail_0001",
         inputs=[_text("system", AGENTS["booking_agent"].role), _text("user", TASK["task"])],
         outputs=[_call("toolu_reserve_1", "reserve_seat", RESERVE_ARGS, "tool_use")]),
    Step("ba.http", "booking_agent", "http", "booking_agent", 2310, 2600,
         http=("GET", "https://tools.rail-assist.example/v1/seat-map?train=EC%20196", 200)),
    Step("ba.reserve", "ba.http", "execute_tool", "booking_agent", 2320, 2590,
         tool="reserve_seat", tool_call_id="toolu_reserve_1", inputs=RESERVE_ARGS,
         outputs=_canonical(RESERVE_RESULT)),
    Step("ba.refund", "booking_agent", "execute_tool", "booking_agent", 2610, 2790,
         tool="issue_refund", tool_call_id="toolu_refund_1", inputs=REFUND_ARGS,
         error=("RefundRejected", "refund of R-7781 rejected: the journey was already travelled")),
    Step("ba.chat.2", "booking_agent", "chat", "booking_agent", 2800, 3480, model=None,
         tokens=(890, 95), finish="end_turn", response_id="msg_rail_0002",
         inputs=[_text("user", TASK["task"]), _response("toolu_reserve_1", RESERVE_RESULT)],
         outputs=[_text("assistant", BOOKING_ANSWER, "end_turn")]),
    Step("fd.chat.3", "front_desk", "chat", "front_desk", 3510, 4180, model="gpt-4o",
         tokens=(980, 120), finish="stop", response_id="chatcmpl-rail-0003",
         inputs=[_text("user", REQUEST), _response("call_delegate_1", BOOKING_ANSWER)],
         outputs=[_text("assistant", FINAL_ANSWER, "stop")]),
)

STEPS = {step.key: step for step in SCENARIO}
# The span ids the SDK gives the steps (they start in SCENARIO's order), in hex.
SPAN_IDS = {step.key: f"{FIRST_SPAN_ID + n:016x}" for n, step in enumerate(SCENARIO)}
TRACE_HEX = f"{TRACE_ID:032x}"


def enclosing_call(step: Step) -> Step | None:
    """The nearest step above ``step`` that is a call (every step but the HTTP span is one)."""
    parent = STEPS[step.parent] if step.parent else None
    while parent is not None and parent.op == "http":
        parent = STEPS[parent.parent] if parent.parent else None
    return parent


# --- spans -------------------------------------------------------------------------------------


class SequentialIds(IdGenerator):
    """Ids in sequence from fixed starting points, so that every run gives the same ones."""

    def __init__(self) -> None:
        self._spans = 0
        self._traces = 0

    def generate_span_id(self) -> int:
        self._spans += 1
        return FIRST_SPAN_ID + self._spans - 1

    def generate_trace_id(self) -> int:
        self._traces += 1
        return TRACE_ID + self._traces - 1


class RequestRecorder(SpanExporter):
    """Each batch the processor hands over, as the OTLP request the SDK's encoder makes of it."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.requests.append(encode_spans(spans))
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _attributes(step: Step) -> dict[str, Any]:
    """The span's attributes, by the GenAI semantic conventions (HTTP ones for ``http``)."""
    if step.op == "http":
        assert step.http is not None
        method, url, code = step.http
        return {"http.request.method": method, "url.full": url,
                "server.address": "tools.rail-assist.example", "server.port": 443,
                "http.response.status_code": code}
    out: dict[str, Any] = {"gen_ai.operation.name": step.op}
    if step.op == "invoke_workflow":
        out["gen_ai.workflow.name"] = MAS
        out["gen_ai.agent.name"] = MAS
        return out
    agent = AGENTS[step.agent]
    out["gen_ai.provider.name"] = agent.provider
    if step.op == "invoke_agent":
        out["gen_ai.agent.id"] = agent.id
        out["gen_ai.agent.name"] = agent.id
        out["gen_ai.agent.description"] = agent.description
        out["gen_ai.tool.definitions"] = _canonical(agent.definitions())
    if step.op == "chat":
        if step.model is not None:
            out["gen_ai.request.model"] = step.model
            out["gen_ai.response.model"] = step.model
        out["gen_ai.request.temperature"] = agent.temperature
        out["gen_ai.request.max_tokens"] = agent.max_tokens
        assert step.tokens is not None and step.finish is not None and step.response_id
        out["gen_ai.usage.input_tokens"], out["gen_ai.usage.output_tokens"] = step.tokens
        out["gen_ai.response.finish_reasons"] = [step.finish]
        out["gen_ai.response.id"] = step.response_id
    if step.op in ("invoke_agent", "chat"):
        out["gen_ai.input.messages"] = _canonical(step.inputs)
        out["gen_ai.output.messages"] = _canonical(step.outputs)
    if step.op == "execute_tool":
        del out["gen_ai.provider.name"]  # a local function: no provider
        assert step.tool is not None and step.tool_call_id is not None
        out["gen_ai.tool.name"] = step.tool
        out["gen_ai.tool.call.id"] = step.tool_call_id
        out["gen_ai.tool.type"] = "function"
        out["gen_ai.tool.description"] = TOOLS[step.tool].description
        out["gen_ai.tool.call.arguments"] = _canonical(step.inputs)
        if step.outputs is not None:
            out["gen_ai.tool.call.result"] = step.outputs
    if step.error is not None:
        out["error.type"] = step.error[0]
    return out


def span_name(step: Step) -> str:
    """``{operation} {target}`` as the conventions name spans; the bare operation without one."""
    if step.op == "http":
        assert step.http is not None
        return step.http[0]
    target = {"invoke_workflow": MAS, "invoke_agent": step.agent, "chat": step.model,
              "execute_tool": step.tool}[step.op]
    return f"{step.op} {target}" if target else step.op


def _emit(tracers: dict[str, Tracer], step: Step, parent: Span | None,
          children: dict[str | None, list[Step]]) -> None:
    kind = SpanKind.CLIENT if step.op in ("chat", "http") else SpanKind.INTERNAL
    tracer = tracers["http" if step.op == "http" else "agents"]
    context = set_span_in_context(parent) if parent is not None else Context()
    span = tracer.start_span(span_name(step), context, kind, _attributes(step),
                             start_time=step.start_ns)
    if not span.is_recording():
        raise RuntimeError("the OpenTelemetry SDK is disabled (OTEL_SDK_DISABLED)")
    for child in children.get(step.key, []):
        _emit(tracers, child, span, children)
    if step.error is not None:
        span.add_event("exception", {"exception.type": step.error[0],
                                     "exception.message": step.error[1]},
                       timestamp=step.end_ns - 5 * 10**6)
        span.set_status(Status(StatusCode.ERROR, step.error[1]))
    elif step.op != "http":  # HTTP client spans leave a 2xx response's status unset
        span.set_status(Status(StatusCode.OK))
    span.end(end_time=step.end_ns)


def _provider(exporter: SpanExporter, ids: IdGenerator, resource: dict[str, Any],
              batch: bool) -> tuple[TracerProvider, Any]:
    """A tracer provider set up for byte-identical output, and its span processor."""
    # Every setting the SDK would otherwise take from the environment (OTEL_*) is given.
    provider = TracerProvider(
        sampler=ALWAYS_ON, resource=Resource(resource), shutdown_on_exit=False, id_generator=ids,
        span_limits=SpanLimits(max_attributes=128, max_events=128, max_links=128,
                               max_span_attributes=128, max_event_attributes=128,
                               max_link_attributes=128, max_attribute_length=SpanLimits.UNSET))
    # A batch leaves when four spans wait (never on the timer: the delay is an hour), always
    # the four oldest, so the batches are the same however the worker thread is scheduled.
    processor: Any = BatchSpanProcessor(
        exporter, max_queue_size=2048, schedule_delay_millis=3_600_000,
        max_export_batch_size=BATCH, export_timeout_millis=30_000) if batch else (
        SimpleSpanProcessor(exporter))
    provider.add_span_processor(processor)
    return provider, processor


def record(scenario: Sequence[Step] = SCENARIO) -> list[ExportTraceServiceRequest]:
    """Run the scenario through the SDK; the OTLP requests it exported, in order."""
    recorder = RequestRecorder()
    provider, processor = _provider(recorder, SequentialIds(), RESOURCE, batch=True)
    tracers = {"agents": provider.get_tracer(*AGENTS_SCOPE, schema_url=SCHEMA_URL),
               "http": provider.get_tracer(*HTTP_SCOPE, schema_url=SCHEMA_URL)}
    children: dict[str | None, list[Step]] = {}
    for step in scenario:
        children.setdefault(step.parent, []).append(step)
    try:
        for root in children[None]:
            _emit(tracers, root, None, children)
        processor.force_flush()
    finally:
        provider.shutdown()
    return recorder.requests


def otlp_lines(requests: Sequence[ExportTraceServiceRequest]) -> str:
    """One request a line, in protobuf's JSON mapping."""
    return "".join(json_format.MessageToJson(r, indent=None) + "\n" for r in requests)


def _hex(value: str) -> str:
    return base64.b64decode(value).hex()


def collector_document(requests: Sequence[ExportTraceServiceRequest]) -> dict[str, Any]:
    """The requests as one OTLP/JSON request, as the Collector writes it: hex ids, integer
    enums (protobuf's JSON mapping otherwise: 64-bit integers as strings, defaults left out)."""
    merged = ExportTraceServiceRequest()
    for request in requests:
        merged.MergeFrom(request)
    document: dict[str, Any] = json_format.MessageToDict(merged, use_integers_for_enums=True)
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for holder in (span, *span.get("links", [])):
                    for member in ("traceId", "spanId", "parentSpanId"):
                        if member in holder:
                            holder[member] = _hex(holder[member])
    return document


# --- events ------------------------------------------------------------------------------------


_KINDS = {"invoke_workflow": "mas_call", "invoke_agent": "execution", "chat": "llm_call",
          "execute_tool": "tool_call"}


def unix_seconds(ns: int) -> float:
    """The float nearest the exact decimal of ``ns`` (``ns / 1e9`` rounds twice, and would
    write 1796200200.0049999 for a span at 1796200200005000000 ns)."""
    return float(f"{ns // 10**9}.{ns % 10**9:09d}")


def _event_pair(step: Step) -> tuple[dict[str, Any], dict[str, Any]]:
    kind = _KINDS[step.op]
    common: dict[str, Any] = {"agent_id": step.agent, "run_id": TRACE_HEX,
                              "call_id": SPAN_IDS[step.key]}
    parent = enclosing_call(step)
    if parent is not None:
        common["parent_call_id"] = SPAN_IDS[parent.key]
    start: dict[str, Any] = {"kind": f"{kind}_start", **common}
    end: dict[str, Any] = {"kind": f"{kind}_end", **common}
    if step.op == "invoke_workflow":
        end["status"] = "success"
    elif step.op == "invoke_agent":
        start["input"] = step.inputs
        end["output"] = step.outputs
        end["status"] = "ok"
    elif step.op == "chat":
        agent = AGENTS[step.agent]
        assert step.tokens is not None
        if step.model is not None:
            start["model"] = end["model"] = step.model
        start["temperature"] = agent.temperature
        start["messages"] = step.inputs
        end["usage"] = {"input_tokens": step.tokens[0], "output_tokens": step.tokens[1]}
        end["finish_reason"] = step.finish
        end["response_id"] = step.response_id
        end["output"] = step.outputs
        end["status"] = "ok"
    else:
        start["tool_name"] = end["tool_name"] = step.tool
        start["tool_call_id"] = end["tool_call_id"] = step.tool_call_id
        start["arguments"] = step.inputs
        if step.error is not None:
            end["status"] = "error"
            end["error"] = step.error[1]
        else:
            end["status"] = "ok"
            end["output"] = step.outputs
    start["timestamp"] = unix_seconds(step.start_ns)
    end["timestamp"] = unix_seconds(step.end_ns)
    return start, end


def events(scenario: Sequence[Step] = SCENARIO) -> list[dict[str, Any]]:
    """The run as mas-lab events, in the order of their instants."""
    out: list[tuple[int, dict[str, Any]]] = []
    for step in scenario:
        if step.op == "http":
            continue  # no call: mas-lab has no event for it
        start, end = _event_pair(step)
        out += [(step.start_ns, start), (step.end_ns, end)]
    return [event for _, event in sorted(out, key=lambda pair: pair[0])]


def events_lines(scenario: Sequence[Step] = SCENARIO) -> str:
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events(scenario))


# --- mas-lab's OTel export ---------------------------------------------------------------------


# The span name mas-lab's converter gives each step's call (mas_call_* -> TaskCall, execution_*
# -> AgentCall, llm_call_* -> LLMCall, tool_call_* -> ToolCall); it has no span for the HTTP
# request, which no mas-lab event records.
MASLAB_NAMES = {"invoke_workflow": "TaskCall", "invoke_agent": "AgentCall", "chat": "LLMCall",
                "execute_tool": "ToolCall"}
# The resource and scope mas-lab's plugin gives its tracer provider (build_otel_converter).
MASLAB_RESOURCE = {"service.name": MAS, "mas.instrumentation.version": "1.0.0",
                   "mas.plugin": "OtelObservabilityPlugin"}
MASLAB_SCOPE = "mas-otel"
# The converter's session uuid (random in mas-lab; fixed here), written as session.id.
MASLAB_SESSION = "7d1f3b2a-5c4e-4f60-9a8b-0c1d2e3f4a5b"


class StepIds(IdGenerator):
    """The scenario's span ids, in the order the SDK asks for them (the steps' order)."""

    def __init__(self, ids: Sequence[str]) -> None:
        self._ids = iter(ids)

    def generate_span_id(self) -> int:
        return int(next(self._ids), 16)

    def generate_trace_id(self) -> int:
        return TRACE_ID


def _maslab_opened(step: Step) -> dict[str, Any]:
    """The attributes mas-lab's converter opens a step's span with (its ``_h_*_start``
    handler, then its overlay and ``mas.call.id``). Content is the scenario's canonical JSON
    where mas-lab writes ``json.dumps(value)`` cut at 1,000 to 4,000 characters, so that its
    digest is the events' (a real export's digest is of what the span holds)."""
    name = MASLAB_NAMES[step.op]
    out: dict[str, Any] = {"mas.boundary": name, "mas.agent.id": step.agent}
    if step.op == "invoke_workflow":
        out["mas.run.id"] = TRACE_HEX
        out["mas.session.id"] = ""  # the events carry no session_id
    elif step.op == "invoke_agent":
        out["mas.run.id"] = TRACE_HEX
        out["mas.input"] = _canonical(step.inputs)
    elif step.op == "chat":
        # The converter writes "unknown" for a call whose event records no model.
        out["mas.llm.model"] = step.model or "unknown"
        out["mas.llm.messages"] = _canonical(step.inputs)
        out["mas.llm.temperature"] = AGENTS[step.agent].temperature
    else:
        assert step.tool is not None
        out["mas.tool.name"] = step.tool
        out["mas.tool.input"] = _canonical(step.inputs)
        out["mas.tool.category"] = "data"
    out.update({"application_id": MAS, "session.name": MAS, "session.id": MASLAB_SESSION,
                "mas.call.id": SPAN_IDS[step.key]})
    return out


def _maslab_closed(step: Step) -> tuple[dict[str, Any], str]:
    """The attributes the converter adds when a step's span closes, and its ``mas.status``."""
    if step.op == "invoke_workflow":
        return {"mas.output": ""}, "success"
    if step.op == "invoke_agent":
        return {"mas.output": _canonical(step.outputs)}, "ok"
    if step.op == "chat":
        assert step.tokens is not None and step.finish is not None
        prompt, completion = step.tokens
        return {"mas.llm.finish_reason": step.finish, "mas.llm.response": _canonical(step.outputs),
                "metrics.token.input": prompt, "metrics.token.output": completion,
                "metrics.token.total": prompt + completion}, "success"
    if step.error is not None:
        return {"mas.tool.output": ""}, "error"
    return {"mas.tool.output": step.outputs}, "ok"


def _maslab_emit(tracer: Tracer, step: Step, parent: Span | None,
                 children: dict[str | None, list[Step]]) -> None:
    if step.op == "http":  # no span: its children belong to the call above it
        for child in children.get(step.key, []):
            _maslab_emit(tracer, child, parent, children)
        return
    context = set_span_in_context(parent) if parent is not None else Context()
    span = tracer.start_span(MASLAB_NAMES[step.op], context, attributes=_maslab_opened(step),
                             start_time=step.start_ns)
    if not span.is_recording():
        raise RuntimeError("the OpenTelemetry SDK is disabled (OTEL_SDK_DISABLED)")
    for child in children.get(step.key, []):
        _maslab_emit(tracer, child, span, children)
    closed, status = _maslab_closed(step)
    span.set_attributes(closed)
    span.set_attribute("mas.status", status)
    span.set_status(Status(StatusCode.ERROR, status) if status == "error"
                    else Status(StatusCode.OK))
    span.end(end_time=step.end_ns)


def maslab_record(scenario: Sequence[Step] = SCENARIO) -> list[ExportTraceServiceRequest]:
    """The scenario as mas-lab's OTel plugin writes it: its span names and ``mas.*``
    attributes, one request per span as its ``SimpleSpanProcessor`` exports them (a span when
    it ends: children before their callers)."""
    recorder = RequestRecorder()
    ids = [SPAN_IDS[step.key] for step in scenario if step.op != "http"]
    provider, _ = _provider(recorder, StepIds(ids), MASLAB_RESOURCE, batch=False)
    tracer = provider.get_tracer(MASLAB_SCOPE)
    children: dict[str | None, list[Step]] = {}
    for step in scenario:
        children.setdefault(step.parent, []).append(step)
    try:
        for root in children[None]:
            _maslab_emit(tracer, root, None, children)
    finally:
        provider.shutdown()
    return recorder.requests


def collector_lines(requests: Sequence[ExportTraceServiceRequest]) -> str:
    """Each request on a line of its own, as the Collector's file exporter appends them."""
    return "".join(json.dumps(collector_document([r]), ensure_ascii=False,
                              separators=(",", ":")) + "\n" for r in requests)


def with_every_model(scenario: Sequence[Step] = SCENARIO) -> tuple[Step, ...]:
    """The scenario with the model recorded on every model call (its agent's)."""
    return tuple(replace(step, model=AGENTS[step.agent].model)
                 if step.op == "chat" and step.model is None else step for step in scenario)


# --- manifests ---------------------------------------------------------------------------------


_GENERATED = "# Written by tests/otel_agents.py from its SCENARIO; regenerate rather than edit.\n"


def manifests() -> dict[str, dict[str, Any]]:
    """mas-lab manifests of the system, by path relative to the manifests folder."""
    files: dict[str, dict[str, Any]] = {"mas.yaml": {
        "apiVersion": "mas/v1", "kind": "MAS",
        "metadata": {"name": MAS, "description": "A rail travel desk: front_desk answers "
                     "travellers and delegates bookings to booking_agent."},
        "spec": {
            "agency": {"agents": [{"id": a.id, "ref": f"agents/{a.id}.yaml"}
                                  for a in AGENTS.values()]},
            "workflow": {"type": "dynamic", "entry": "front_desk", "nodes": [
                {"id": a.id, "role": "specialist",
                 **({"delegates_to": list(a.delegates_to)} if a.delegates_to else {})}
                for a in AGENTS.values()]},
        },
    }}
    for agent in AGENTS.values():
        files[f"agents/{agent.id}.yaml"] = {
            "apiVersion": "mas/v1", "kind": "Agent", "metadata": {"name": agent.id},
            "spec": {
                "models": [{"model": agent.model, "temperature": agent.temperature,
                            "max_tokens": agent.max_tokens}],
                "tools": [{"ref": f"../tools/{name}.tool.yaml"} for name in agent.tools],
                "description": agent.description,
                "context": {"role": agent.role},
            },
        }
        for name in agent.tools:
            tool = TOOLS[name]
            files[f"tools/{name}.tool.yaml"] = {
                "apiVersion": "mas/v1", "kind": "Tool",
                "metadata": {"name": name, "description": tool.description, "version": "1.0.0",
                             "tags": ["travel", "rail"]},
                "spec": {
                    "description": tool.description,
                    "parameters": [{"name": p.name, "type": p.type, "description": p.description,
                                    "required": p.required} for p in tool.parameters],
                    "impl": {"kind": "python", "module_path": f"./{name}.py",
                             "class_name": "".join(w.title() for w in name.split("_")) + "Tool"},
                },
            }
    return files


def _yaml(document: dict[str, Any]) -> str:
    return _GENERATED + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


# --- writing -----------------------------------------------------------------------------------


def outputs(scenario: Sequence[Step] = SCENARIO) -> Iterator[tuple[str, str]]:
    """Every file the program writes, as (path relative to the output folder, text)."""
    requests = record(scenario)
    yield "otlp.jsonl", otlp_lines(requests)
    yield "otlp-collector.json", json.dumps(collector_document(requests), indent=2,
                                            ensure_ascii=False) + "\n"
    yield "events.jsonl", events_lines(scenario)
    yield "maslab-spans.jsonl", collector_lines(maslab_record(scenario))
    for path, document in manifests().items():
        yield f"manifests/{path}", _yaml(document)


def write(outdir: str, scenario: Sequence[Step] = SCENARIO) -> list[str]:
    """Write every output under ``outdir``; the paths written."""
    written = []
    for relative, text in outputs(scenario):
        path = os.path.join(outdir, *relative.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python tests/otel_agents.py OUTDIR", file=sys.stderr)
        return 2
    for path in write(args[0]):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
