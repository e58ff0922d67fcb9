"""Reading OpenTelemetry traces: the OTLP reader against the official decoder and a floor.

Usage: python bench/bench_trace_otlp.py [--traces 2000] [--rounds 3]
(with the interpreter of an environment where the project is installed with [test]).

The traffic is made by the real OpenTelemetry SDK from a fixed seed (20261202): traces of
12 services (senders), each with its own agents (two to five, delegating in chains), tools,
models and exporter layout (protobuf's JSON mapping as the SDK's encoder writes it, or the
Collector's OTLP/JSON with hex ids), HTTP spans the mapping passes through, and message
content in five scripts of varying length, exported through a BatchSpanProcessor in
batches of 64 (one request a line).

Rows, on the same lines in the same run, spans per second on one core:

* ``ioa-check`` reading: the trace stage's fold of every line (``Fold.value``), the runs per
  trace (``events.runs``) and the audit of each (``trace.audit.audit``, no declarations);
* naive: protobuf's ``json_format.Parse`` into ``ExportTraceServiceRequest`` and a walk of
  every span's attributes, what a consumer built on the official classes does before it maps
  anything (hex ids, which protobuf cannot read, are given to it in base64);
* floor: ``orjson.loads`` of each line and a walk of every span's attributes.

And the whole command, ``ioa-check trace FILE --no-shapes --format json`` as a process.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from google.protobuf import json_format
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

from ioa_semantic.trace.audit import audit
from ioa_semantic.trace.declarations import Declarations
from ioa_semantic.trace.events import Fold, Source, runs
from ioa_semantic.trace.privacy import Disclosure

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_check import machine

SEED = 20261202
SCRIPTS = ("Zürich Hauptbahnhof, Gleis 7", "東京駅から新大阪まで", "Москва — Санкт-Петербург",
           "القاهرة إلى الإسكندرية", "Athènes ⇄ Θεσσαλονίκη")
MODELS = ("gpt-4o", "claude-sonnet-4-5", "gemini-2.5-pro", "mistral-large", "llama-3.3-70b")


class _Lines(SpanExporter):
    def __init__(self, hex_ids: bool) -> None:
        self.hex_ids = hex_ids
        self.lines: list[bytes] = []

    def export(self, spans: Any) -> SpanExportResult:
        request = encode_spans(spans)
        if self.hex_ids:
            self.lines.append(json.dumps(_collector(request), ensure_ascii=False).encode())
        else:
            self.lines.append(json_format.MessageToJson(request, indent=None).encode())
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def _collector(request: ExportTraceServiceRequest) -> dict[str, Any]:
    out = json_format.MessageToDict(request, use_integers_for_enums=True)
    for resource in out.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for member in ("traceId", "spanId", "parentSpanId"):
                    if member in span:
                        span[member] = base64.b64decode(span[member]).hex()
    return out


def _content(rng: random.Random) -> str:
    parts = [rng.choice(SCRIPTS) for _ in range(rng.randint(1, 40))]
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": " ".join(parts)}]}],
                      ensure_ascii=False)


class _Service:
    """One sender: its agents, their tools, its tracer; traces one agent run at a time."""

    def __init__(self, rng: random.Random, tracer: Any, service: int) -> None:
        self.rng = rng
        self.tracer = tracer
        self.agents = [f"agent_{service}_{n}" for n in range(rng.randint(2, 5))]
        self.tools = {a: [f"{a}_tool_{t}" for t in range(rng.randint(1, 6))] for a in self.agents}

    def agent(self, depth: int, name: str, parent: Any, now: int) -> int:
        rng, tracer = self.rng, self.tracer
        context = set_span_in_context(parent) if parent is not None else Context()
        span = tracer.start_span(f"invoke_agent {name}", context, SpanKind.INTERNAL, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": name,
            "gen_ai.agent.name": name, "gen_ai.tool.definitions": json.dumps(
                [{"type": "function", "name": t} for t in self.tools[name]]),
            "gen_ai.input.messages": _content(rng)}, start_time=now)
        here = set_span_in_context(span)
        for _ in range(rng.randint(1, 6)):
            now += 1_000_000
            if rng.random() < 0.5:
                chat = tracer.start_span("chat", here, SpanKind.CLIENT, {
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": rng.choice(MODELS),
                    "gen_ai.usage.input_tokens": rng.randint(10, 5000),
                    "gen_ai.usage.output_tokens": rng.randint(1, 900),
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.input.messages": _content(rng),
                    "gen_ai.output.messages": _content(rng)}, start_time=now)
                chat.set_status(Status(StatusCode.OK))
                chat.end(end_time=now + 500_000)
                continue
            under = span
            if rng.random() < 0.3:
                under = tracer.start_span("GET", here, SpanKind.CLIENT,
                                          {"http.request.method": "GET"}, start_time=now)
            tool = tracer.start_span("execute_tool", set_span_in_context(under),
                                     SpanKind.INTERNAL, {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": rng.choice(self.tools[name]),
                "gen_ai.tool.call.arguments": _content(rng)}, start_time=now)
            if depth < 3 and rng.random() < 0.2:
                now = self.agent(depth + 1, rng.choice(self.agents), tool, now + 1000)
            tool.end(end_time=now + 400_000)
            if under is not span:
                under.end(end_time=now + 450_000)
        span.set_status(Status(StatusCode.OK))
        span.end(end_time=now + 900_000)
        return now + 1_000_000


def traffic(traces: int) -> list[bytes]:
    """OTLP lines of ``traces`` traces from 12 services, made by the SDK."""
    rng = random.Random(SEED)
    out: list[bytes] = []
    per_service = max(1, traces // 12)
    for number in range(12):
        exporter = _Lines(hex_ids=number % 3 == 0)
        provider = TracerProvider(resource=Resource({"service.name": f"service-{number}"}),
                                  shutdown_on_exit=False)
        processor = BatchSpanProcessor(exporter, max_export_batch_size=64,
                                       schedule_delay_millis=3_600_000, max_queue_size=1 << 16)
        provider.add_span_processor(processor)
        service = _Service(rng, provider.get_tracer("bench.agents"), number)
        clock = 1_796_200_200 * 10**9
        for _ in range(per_service):
            clock = service.agent(0, service.agents[0], None, clock)
        processor.force_flush()
        provider.shutdown()
        out += exporter.lines
    rng.shuffle(out)
    return out


def _walk(request: dict[str, Any]) -> int:
    spans = 0
    for resource in request.get("resourceSpans", ()):
        for scope in resource.get("scopeSpans", ()):
            for span in scope.get("spans", ()):
                spans += 1
                for attribute in span.get("attributes", ()):
                    attribute["value"].get("stringValue")
    return spans


def ours(lines: list[bytes]) -> int:
    fold = Fold()
    for seq, line in enumerate(lines, 1):
        fold.value(seq, orjson.loads(line))
    disclose = Disclosure()
    declarations = Declarations(None, None, None)
    spans = 0
    for run in runs(Source("bench", "bench", None, None), fold, disclose):
        audit(run, declarations, disclose)
        spans += run.events
    return spans


def naive(lines: list[bytes]) -> int:
    spans = 0
    for line in lines:
        value = orjson.loads(line)
        for resource in value.get("resourceSpans", ()):  # protobuf reads ids in base64 only
            for scope in resource.get("scopeSpans", ()):
                for span in scope.get("spans", ()):
                    for member in ("traceId", "spanId", "parentSpanId"):
                        if len(span.get(member, "")) in (16, 32):
                            span[member] = base64.b64encode(bytes.fromhex(span[member])).decode()
        request = json_format.ParseDict(value, ExportTraceServiceRequest())
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans += 1
                    for attribute in span.attributes:
                        attribute.value.string_value  # noqa: B018 (the access is the work)
    return spans


def floor(lines: list[bytes]) -> int:
    return sum(_walk(orjson.loads(line)) for line in lines)


def best(function: Any, lines: list[bytes], rounds: int) -> tuple[float, int]:
    times, spans = [], 0
    for _ in range(rounds):
        start = time.perf_counter()
        spans = function(lines)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2], spans


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    lines = traffic(opts.traces)
    print(f"{machine()}; {len(lines)} requests, {sum(map(len, lines)) / 1e6:.1f} MB")
    rows = []
    for name, function in (("ioa-check reading", ours), ("naive (protobuf)", naive),
                           ("floor (orjson + walk)", floor)):
        seconds, spans = best(function, lines, opts.rounds)
        rows.append((name, spans, seconds))
        print(f"{name:24} {spans:>8} spans  {seconds:7.3f} s  {spans / seconds:>10,.0f} spans/s")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "traces.jsonl")
        with open(path, "wb") as handle:
            handle.write(b"\n".join(lines) + b"\n")
        command = [str(Path(sys.executable).with_name("ioa-check")), "trace", path,
                   "--no-shapes", "--format", "json"]
        times = []
        for _ in range(opts.rounds):
            start = time.perf_counter()
            proc = subprocess.run(command, capture_output=True, check=False)
            times.append(time.perf_counter() - start)
        assert proc.returncode in (0, 1, 3), proc.stderr
        seconds = sorted(times)[len(times) // 2]
        spans = rows[0][1]
        print(f"{'ioa-check trace (process)':24} {spans:>8} spans  {seconds:7.3f} s  "
              f"{spans / seconds:>10,.0f} spans/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
