"""Agent, model and tool spans of the conventions beside GenAI's are audited (issue 36, item 5).

One two-agent system (``supervisor`` delegates to ``weather_agent``; each calls a model
through the OpenAI client and one tool) is traced with the real OpenTelemetry SDK against a
fake OpenAI-compatible server this test starts on loopback, and exported with the SDK's own
OTLP encoder:

* **OpenInference**: the real instrumentation (``openinference-instrumentation-openai`` for
  the model calls, ``OITracer``'s ``agent`` and ``tool`` decorators for the agent and tool
  spans), when installed;
* **OpenLLMetry**: the real ``opentelemetry-instrumentation-openai`` for the model calls,
  when installed; its agent and tool spans as traceloop-sdk's ``@agent``/``@tool``
  decorators write them, from OpenLLMetry's published attributes (``traceloop.span.kind``,
  ``traceloop.entity.name``, ``traceloop.entity.input``/``output``);
* **AGNTCY observe** and **the older GenAI form** (``gen_ai.system`` and a model, no
  ``gen_ai.operation.name``) and **A2A SDK spans**: written through the SDK from their
  published attribute specifications (AGNTCY observe's ``ioa_observe.span.kind``/
  ``ioa_observe.entity.name``; the A2A SDK's client transport span names), since their
  instrumentation does not run here without their frameworks.

Done-when: with manifests declaring what the trace shows every agent is compatible; with
``get_forecast`` left out of ``weather_agent``'s manifest exactly ``weather_agent`` is
incompatible, naming the tool and its span.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")
pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is not installed")

from genai_spans import write_manifests
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Tracer

from support import IOA_CHECK

# The instrumentations' own imports (openai's pydantic models) warn of deprecations.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODEL = "gpt-4o"
AGENTS = {"supervisor": ([MODEL], ["route"]), "weather_agent": ([MODEL], ["get_forecast"])}
WORKFLOW = {"entry": "supervisor", "nodes": [{"id": "supervisor",
                                               "delegates_to": ["weather_agent"]}]}


class FakeOpenAI(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions``: one assistant answer naming the model asked for."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        data = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1796200200,
            "model": body["model"], "choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant",
                                                             "content": "sunny"}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/v1"
    httpd.shutdown()
    httpd.server_close()


Span = Callable[[str, str], AbstractContextManager[Any]]  # (kind, name) -> a current span


def system(agent_span: Span, tool_span: Span, chat: Callable[[], None]) -> None:
    """supervisor: a model call, the tool ``route``, then weather_agent, which makes a model
    call and calls ``get_forecast``."""
    with agent_span("agent", "supervisor"):
        chat()
        with tool_span("tool", "route"):
            pass
        with agent_span("agent", "weather_agent"):
            chat()
            with tool_span("tool", "get_forecast"):
                pass


def export(exporter: InMemorySpanExporter) -> str:
    spans = exporter.get_finished_spans()
    text: str = json_format.MessageToJson(encode_spans(spans), indent=None)
    return text + "\n"


def openai_chat(server: str) -> Callable[[], None]:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server, api_key="test", max_retries=0)

    def chat() -> None:
        client.chat.completions.create(model=MODEL,
                                       messages=[{"role": "user", "content": "weather?"}])
    return chat


def attribute_spans(tracer: Tracer, attributes: Callable[[str, str], dict[str, Any]],
                    suffix: str = "") -> Span:
    @contextmanager
    def span(kind: str, name: str) -> Iterator[Any]:
        with tracer.start_as_current_span(f"{name}{suffix}", attributes=attributes(
                kind, name)) as current:
            yield current
    return span


def openinference_trace(server: str) -> str:
    instrumentation = pytest.importorskip("openinference.instrumentation.openai")
    from openinference.instrumentation import OITracer, TraceConfig

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = instrumentation.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        tracer = OITracer(provider.get_tracer("demo"), config=TraceConfig())

        @contextmanager
        def span(kind: str, name: str) -> Iterator[Any]:
            # OITracer's own span kinds, as its @tracer.agent / @tracer.tool decorators set.
            with tracer.start_as_current_span(
                    name, openinference_span_kind=kind) as current:  # type: ignore[arg-type]
                yield current
        system(span, span, openai_chat(server))
    finally:
        instrumentor.uninstrument()
    return export(exporter)


def openllmetry_trace(server: str, prefix: str = "traceloop") -> str:
    instrumentation = pytest.importorskip("opentelemetry.instrumentation.openai")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = instrumentation.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        tracer = provider.get_tracer("demo")
        span = attribute_spans(tracer, lambda kind, name: {
            f"{prefix}.span.kind": kind, f"{prefix}.entity.name": name,
            f"{prefix}.entity.input": "{}", f"{prefix}.workflow.name": "weather"},
            suffix=".agent")
        system(span, span, openai_chat(server))
    finally:
        instrumentor.uninstrument()
    return export(exporter)


def older_genai_trace() -> str:
    """GenAI agent and tool spans, model spans in the older form: ``gen_ai.system`` and the
    model, no ``gen_ai.operation.name`` (as instrumentations wrote them before it existed)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("demo")
    span = attribute_spans(tracer, lambda kind, name: {
        "gen_ai.operation.name": {"agent": "invoke_agent", "tool": "execute_tool"}[kind],
        "gen_ai.agent.name" if kind == "agent" else "gen_ai.tool.name": name})

    def chat() -> None:
        with tracer.start_as_current_span("chat", kind=SpanKind.CLIENT, attributes={
                "gen_ai.system": "openai", "gen_ai.request.model": MODEL}):
            pass
    system(span, span, chat)
    return export(exporter)


def audit(path: Path, manifests: Path) -> tuple[int, dict[str, dict[str, Any]], str]:
    proc = subprocess.run([IOA_CHECK, "trace", str(path), "--manifests",
                           str(manifests / "mas.yaml"), "--format", "json", "--no-shapes"],
                          capture_output=True, timeout=120)
    assert proc.returncode in (0, 1, 3), proc.stderr
    text = proc.stdout.decode()
    lines = [json.loads(line) for line in text.splitlines()]
    return proc.returncode, {r["agent"]: r for r in lines if "agent" in r}, text


def forecast_span(trace: str) -> str:
    """The hex id of the ``get_forecast`` tool span."""
    for line in trace.splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    if span["name"].startswith("get_forecast"):
                        import base64
                        return base64.b64decode(span["spanId"]).hex()
    raise AssertionError("no get_forecast span")


def assert_done_when(trace: str, tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text(trace, encoding="utf-8")
    status, agents, text = audit(path, write_manifests(tmp_path / "all", "weather", AGENTS,
                                                       WORKFLOW))
    assert set(agents) == set(AGENTS), text
    assert {n: a["verdict"] for n, a in agents.items()} == dict.fromkeys(AGENTS,
                                                                         "compatible"), text
    assert status == 0
    declared = dict(AGENTS, weather_agent=([MODEL], []))
    status, agents, text = audit(path, write_manifests(tmp_path / "less", "weather", declared,
                                                       WORKFLOW))
    assert status == 1
    assert {n for n, a in agents.items() if a["verdict"] != "compatible"} == {"weather_agent"}
    undeclared = [r for r in agents["weather_agent"]["reasons"]
                  if r["code"] == "capability.undeclared-tool"]
    assert len(undeclared) == 1 and "get_forecast" in undeclared[0]["message"]
    assert forecast_span(trace) in undeclared[0]["message"]


def test_openinference(server: str, tmp_path: Path) -> None:
    trace = openinference_trace(server)
    assert "openinference.span.kind" in trace and "gen_ai.operation.name" not in trace
    assert_done_when(trace, tmp_path)


def test_openllmetry(server: str, tmp_path: Path) -> None:
    trace = openllmetry_trace(server)
    assert "traceloop.span.kind" in trace
    assert_done_when(trace, tmp_path)


def test_agntcy_observe(server: str, tmp_path: Path) -> None:
    trace = openllmetry_trace(server, prefix="ioa_observe")
    assert "ioa_observe.span.kind" in trace
    assert_done_when(trace, tmp_path)


def test_the_older_genai_form(tmp_path: Path) -> None:
    assert_done_when(older_genai_trace(), tmp_path)


def test_an_a2a_sdk_client_span_is_a_call_into_another_agent(tmp_path: Path) -> None:
    """The A2A SDK's client transport span (its name, span kind CLIENT, no
    ``a2a.method.name``) with nothing of the served agent beneath it: the supervisor's
    delegation is unknown (``capability.callee-unknown``), not a span passed over."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("demo")
    with tracer.start_as_current_span("invoke_agent supervisor", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "supervisor"}), (
            tracer.start_as_current_span(
                "a2a.client.transports.jsonrpc.JsonRpcTransport.send_message",
                kind=SpanKind.CLIENT)):
        pass
    path = tmp_path / "a2a.jsonl"
    path.write_text(export(exporter), encoding="utf-8")
    status, agents, text = audit(path, write_manifests(tmp_path / "m", "weather", AGENTS,
                                                       WORKFLOW))
    assert "capability.callee-unknown" in text
    assert agents["supervisor"]["verdict"] == "indeterminate" and status == 3
