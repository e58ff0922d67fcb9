"""A hostile review of the OpenTelemetry trace reading (issue 36): each test is a trace as a
framework or a user may well write it, which the reading got wrong, and the sentence of
docs/trace.md (or the issue's item) it holds.

The traces are OTLP JSON requests written here span by span, so that a test can give a span
exactly the times, parents and attribute types it needs (malformed ones included); the
formats' tests write the shapes (console exporter, Jaeger, Collector protobuf) as those tools
do.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import test_trace_otel_layouts as layouts
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ioa_semantic.trace.audit import RunAudit
from ioa_semantic.trace.declarations import Declarations, read_manifests
from ioa_semantic.trace.events import Fold, resolve, runs
from ioa_semantic.trace.privacy import Disclosure
from ioa_semantic.trace.state import consume

from support import IOA_CHECK

TRACE = "0af7651916cd43dd8448eb211c80319c"
EPOCH_NS = 1_796_200_200 * 10**9


def span_id(number: int) -> str:
    return f"{number:016x}"


def span(number: int, parent: int | None, start: int | None, end: int | None,
         name: str = "step", **attributes: Any) -> dict[str, Any]:
    """One OTLP span; times in milliseconds; a plain string attribute is a stringValue."""
    out: dict[str, Any] = {
        "traceId": TRACE, "spanId": span_id(number), "name": name, "kind": 1,
        "attributes": [{"key": k, "value": v if isinstance(v, dict) else {"stringValue": v}}
                       for k, v in attributes.items()]}
    if parent is not None:
        out["parentSpanId"] = span_id(parent)
    if start is not None:
        out["startTimeUnixNano"] = str(EPOCH_NS + start * 10**6)
    if end is not None:
        out["endTimeUnixNano"] = str(EPOCH_NS + end * 10**6)
    return out


def agent_span(number: int, name: str, parent: int | None, start: int, end: int,
               **more: Any) -> dict[str, Any]:
    return span(number, parent, start, end, f"invoke_agent {name}", **{
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **more})


def chat_span(number: int, model: str, parent: int | None, start: int, end: int) -> dict[str, Any]:
    return span(number, parent, start, end, "chat", **{
        "gen_ai.operation.name": "chat", "gen_ai.request.model": model})


def tool_span(number: int, tool: str, parent: int | None, start: int, end: int,
              **more: Any) -> dict[str, Any]:
    return span(number, parent, start, end, f"execute_tool {tool}", **{
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, **more})


def request(spans: Sequence[dict[str, Any]]) -> str:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []},
                                          "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]})


def write_manifests(folder: Path, tools: dict[str, list[str]], models: dict[str, str],
                    delegates: dict[str, list[str]], entries: Sequence[str],
                    entries_extra: dict[str, dict[str, Any]] | None = None) -> Path:
    """mas-lab manifests declaring the agents by name; ``entries_extra`` adds members to (or,
    with ``ref: None``, takes the manifest from) an agent's mas.yaml entry."""
    root = folder / "manifests"
    (root / "agents").mkdir(parents=True, exist_ok=True)
    (root / "tools").mkdir(exist_ok=True)
    listed = []
    for name in tools:
        entry: dict[str, Any] = {"id": name, "ref": f"agents/{name}.yaml",
                                 **(entries_extra or {}).get(name, {})}
        listed.append({k: v for k, v in entry.items() if v is not None})
    workflow: dict[str, Any] = {"type": "dynamic", "entries": list(entries), "nodes": [
        {"id": name, "delegates_to": list(delegates.get(name, ()))} for name in tools]}
    (root / "mas.yaml").write_text(yaml.safe_dump({
        "apiVersion": "mas/v1", "kind": "MAS", "metadata": {"name": "review"},
        "spec": {"agency": {"agents": listed}, "workflow": workflow}}))
    for name, declared in tools.items():
        (root / "agents" / f"{name}.yaml").write_text(yaml.safe_dump({
            "apiVersion": "mas/v1", "kind": "Agent", "metadata": {"name": name},
            "spec": {"models": [{"model": models[name]}] if name in models else [],
                     "tools": [{"ref": f"../tools/{t}.tool.yaml"} for t in declared]}}))
        for each in declared:
            (root / "tools" / f"{each}.tool.yaml").write_text(yaml.safe_dump(
                {"apiVersion": "mas/v1", "kind": "Tool", "metadata": {"name": each}}))
    return root


def audited(path: Path, declared: Path | None = None) -> list[RunAudit]:
    return layouts.audited(path, declared)


def audit_spans(folder: Path, spans: Sequence[dict[str, Any]],
                declared: Path | None = None) -> RunAudit:
    path = folder / "trace.jsonl"
    path.write_text(request(spans) + "\n")
    (run,) = audited(path, declared)
    return run


def codes(run: RunAudit) -> set[str]:
    return {r.code for r in run.reasons} | {r.code for a in run.agents for r in a.reasons}


def uses(run: RunAudit) -> dict[str, set[tuple[str, str | None, int]]]:
    return {a.agent: {(u.aspect, u.name, len(u.calls)) for u in a.uses} for a in run.agents}


def verdicts(run: RunAudit) -> dict[str, str]:
    return {a.agent: str(a.verdict) for a in run.agents}


def cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IOA_CHECK, "trace", *arguments, "--no-shapes", "--format", "json"],
                          capture_output=True, text=True, timeout=120)


# --- formats ----------------------------------------------------------------------------------


def console_span(**changes: Any) -> dict[str, Any]:
    """One span as the SDK's ConsoleSpanExporter prints it."""
    value: dict[str, Any] = {
        "name": "execute_tool get_weather",
        "context": {"trace_id": f"0x{TRACE}", "span_id": f"0x{span_id(2)}", "trace_state": "[]"},
        "kind": "SpanKind.INTERNAL", "parent_id": None,
        "start_time": "2026-12-01T00:00:00.000000Z", "end_time": "2026-12-01T00:00:01.000000Z",
        "status": {"status_code": "OK"},
        "attributes": {"gen_ai.operation.name": "execute_tool",
                       "gen_ai.tool.name": "get_weather", "gen_ai.agent.name": "weather_agent"},
        "events": [], "links": [], "resource": {"attributes": {"service.name": "w"},
                                                "schema_url": ""}}
    value.update(changes)
    return value


@pytest.mark.parametrize("kind", [["SpanKind.CLIENT"], {"name": "CLIENT"}])
def test_a_console_span_whose_kind_is_not_a_string_is_read_never_a_traceback(
        tmp_path: Path, kind: Any) -> None:
    """"Bad input gets a verdict or a clear error, never a traceback" (preamble): a console
    exporter span whose ``kind`` is a list or an object crashed the reading (unhashable)."""
    path = tmp_path / "console.txt"
    path.write_text(json.dumps(console_span(kind=kind), indent=4) + "\n")
    proc = cli(str(path))
    assert proc.returncode in (0, 1, 3), proc.stderr
    assert "Traceback" not in proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert any(r.get("agent") == "weather_agent" for r in records)


def jaeger_span(number: int, reference: tuple[str, int] | None, start: int, duration: int,
                **tags: str) -> dict[str, Any]:
    return {"traceID": TRACE[16:], "spanID": span_id(number), "operationName": "op",
            "startTime": EPOCH_NS // 1000 + start * 1000, "duration": duration * 1000,
            "processID": "p1", "tags": [{"key": k, "type": "string", "value": v}
                                        for k, v in tags.items()],
            "references": [{"refType": reference[0], "traceID": TRACE[16:],
                            "spanID": span_id(reference[1])}] if reference else []}


def test_a_jaeger_span_that_follows_from_another_is_its_callee_never_an_entry(
        tmp_path: Path) -> None:
    """docs/trace.md, Jaeger: "`references` of type `CHILD_OF` the parent" — a span whose only
    reference is FOLLOWS_FROM (OpenTracing's parent that does not wait; Jaeger's UI nests it
    under that span) was read as a root, so the worker a supervisor started without waiting
    was judged called by the MAS: a false `incompatible` against a manifest that declares
    the delegation."""
    document = {"data": [{"traceID": TRACE[16:], "processes": {
        "p1": {"serviceName": "crew", "tags": []}}, "spans": [
        jaeger_span(1, None, 0, 100, **{"gen_ai.operation.name": "invoke_agent",
                                         "gen_ai.agent.name": "supervisor"}),
        jaeger_span(2, ("FOLLOWS_FROM", 1), 50, 20, **{"gen_ai.operation.name": "invoke_agent",
                                                       "gen_ai.agent.name": "worker"}),
        jaeger_span(3, ("CHILD_OF", 2), 55, 5, **{"gen_ai.operation.name": "execute_tool",
                                                  "gen_ai.tool.name": "search"})]}]}
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(document))
    declared = write_manifests(tmp_path, {"supervisor": [], "worker": ["search"]}, {},
                               {"supervisor": ["worker"]}, ["supervisor"])
    proc = cli(str(path), "--manifests", str(declared))
    agents = {r["agent"]: r for r in map(json.loads, proc.stdout.splitlines()) if "agent" in r}
    assert {a: r["verdict"] for a, r in agents.items()} == {
        "supervisor": "compatible", "worker": "compatible"}, proc.stdout
    assert proc.returncode == 0


@pytest.mark.parametrize(("answer", "status"), [
    ({"data": [], "total": 0, "limit": 0, "offset": 0, "errors": None}, 0),
    ({"data": None, "total": 0, "limit": 0, "offset": 0,
      "errors": [{"code": 404, "msg": "trace not found"}]}, 4)], ids=["empty", "errors"])
def test_a_jaeger_answer_without_traces_is_said_so(tmp_path: Path, answer: dict[str, Any],
                                                    status: int) -> None:
    """Issue 36, item 6: Jaeger's JSON is "read (or refused with one reason naming the format
    ...)" — the query API's answer with no trace (none found, or "trace not found" errors)
    was a malformed event, and the input `indeterminate` (exit 3): an empty answer is now a
    trace file with no spans, one with errors is refused saying them."""
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(answer))
    proc = cli(str(path))
    assert proc.returncode == status, proc.stdout
    assert "trace.event-malformed" not in proc.stdout
    if status == 4:
        assert "trace not found" in proc.stdout and "Jaeger" in proc.stdout


def test_console_spans_among_a_programs_log_lines_are_read(tmp_path: Path) -> None:
    """Issue 36, item 6 (the console exporter's output read, never one warning per line):
    spans printed by the console exporter among the program's own output, as `python app.py
    > out.txt` saves them — a first line of text made the file JSON Lines (one warning a
    line, no span read), and a log line between spans stopped the reading there. Each run of
    text lines is now one problem, and every span is read."""
    agent = console_span(name="invoke_agent weather_agent", context={
        "trace_id": f"0x{TRACE}", "span_id": f"0x{span_id(1)}", "trace_state": "[]"},
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"})
    tool = console_span(parent_id=f"0x{span_id(1)}")
    path = tmp_path / "out.txt"
    path.write_text("Starting the app\n[INFO] agent ready\n" + json.dumps(tool, indent=4)
                    + "\nweather: sunny\n" + json.dumps(agent, indent=4) + "\nbye")
    proc = cli(str(path))
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    (weather,) = [r for r in records if r.get("agent") == "weather_agent"]
    assert [t["tool"] for t in weather["consumed"]["tools"]] == ["get_weather"]
    problems = [r for r in records[-1]["summary"]["reasons"] if r["code"] == "json.syntax"]
    assert len(problems) == 3, problems
    assert any("to line 2" in r["message"] for r in problems)


class _Counted:
    """A file whose reads are counted: where each read starts is how much of the stream was
    decoded, and found not yet whole, before it."""

    def __init__(self, data: bytes) -> None:
        import io

        self.handle = io.BytesIO(data)
        self.decoded = 0

    def read(self, size: int = -1) -> bytes:
        held = self.handle.tell()
        chunk = self.handle.read(size)
        if chunk:  # the read at the end follows no attempt at a value
            self.decoded += held
        return chunk


def test_a_large_pretty_printed_document_is_decoded_in_linear_work() -> None:
    """docs/trace.md: Jaeger's JSON is "read whole": a document of several megabytes was
    decoded again from its start after each megabyte read, quadratic in its size (a 33 MB
    export took 14 s to split). Reading as much again as is held keeps the decoding attempts
    within a small multiple of the document. Counted (bytes decoded), not timed."""
    from ioa_semantic.trace import formats

    spans = [{"traceID": "a" * 16, "spanID": f"{i:016x}", "operationName": "op",
              "references": [], "startTime": 1, "duration": 1, "processID": "p1",
              "tags": [{"key": "k", "type": "string", "value": "v" * 50}]}
             for i in range(20_000)]
    document = json.dumps({"data": [{"traceID": "a" * 16, "spans": spans, "processes": {}}]},
                          indent=2).encode()
    assert len(document) > 6 << 20
    counted = _Counted(document)
    (value,) = list(formats.values(counted, 1 << 26))  # type: ignore[arg-type]
    assert value[1] is not None
    assert counted.decoded <= 2.5 * len(document), counted.decoded / len(document)


def _traces_data(spans: Sequence[dict[str, Any]]) -> bytes:
    from google.protobuf import json_format
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    message = TracesData()
    json_format.ParseDict(json.loads(request(spans)), message)
    body: bytes = message.SerializeToString()
    return len(body).to_bytes(4, "big") + body


@pytest.mark.parametrize("tail", [b"\x10\x05", b"\x1a\x00"], ids=["varint", "field3"])
def test_bytes_after_collector_messages_that_parse_as_nothing_are_refused(
        tmp_path: Path, tail: bytes) -> None:
    """docs/trace.md, the Collector's protobuf: a file is protobuf when "the next byte starts
    a `TracesData` message" — a later message that does not start so (garbage appended, a
    file joined with another) parsed as an empty message of unknown fields, and its spans
    were skipped without a word."""
    pytest.importorskip("opentelemetry.proto")
    path = tmp_path / "traces.pb"
    path.write_bytes(_traces_data([agent_span(1, "weather_agent", None, 0, 10)])
                     + len(tail).to_bytes(4, "big") + tail)
    proc = cli(str(path))
    assert proc.returncode == 4, proc.stdout
    assert "message 2 is not a TracesData message" in proc.stdout


@pytest.mark.parametrize("written", [3, 4, 7], ids=["in-length", "at-body", "in-body"])
def test_a_collector_message_being_written_under_state_waits_for_the_next_run(
        tmp_path: Path, written: int) -> None:
    """docs/trace.md: the Collector's protobuf "is checkpointed by `--state` as JSON Lines
    are, a message standing for a line" — a JSON Lines file's last line without its newline
    is left for the next run, but a message the Collector was still writing refused the
    whole file (exit 4, no report) on every run that caught it. Under --state the messages
    before it are read and consumed, it is one problem, and the next run reads it whole."""
    pytest.importorskip("opentelemetry.proto")
    first = _traces_data([agent_span(1, "weather_agent", None, 0, 100),
                          tool_span(2, "get_weather", 1, 1, 2)])
    second = _traces_data([tool_span(3, "get_forecast", 1, 3, 4)])
    path, state = tmp_path / "traces.pb", tmp_path / "state"
    path.write_bytes(first + second[:written])
    proc = cli(str(path), "--state", str(state))
    assert proc.returncode == 3, proc.stdout
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    (weather,) = [r for r in records if r.get("agent") == "weather_agent"]
    assert [t["tool"] for t in weather["consumed"]["tools"]] == ["get_weather"]
    assert any("message 2 is cut short" in r["message"]
               for r in records[-1]["summary"]["reasons"])
    path.write_bytes(first + second)
    proc = cli(str(path), "--state", str(state))
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    (weather,) = [r for r in records if r.get("agent") == "weather_agent"]
    assert sorted(t["tool"] for t in weather["consumed"]["tools"]) == [
        "get_forecast", "get_weather"]
    assert not any("cut short" in r["message"] for r in records[-1]["summary"]["reasons"])
    # Without a state the file is refused as before: read it again once written.
    path.write_bytes(first + second[:written])
    assert cli(str(path)).returncode == 4


# --- conventions ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [{"intValue": "3"}, {"stringValue": 7}, {"arrayValue": {}}])
def test_a_convention_kind_of_the_wrong_type_is_reported_never_passed_over(
        tmp_path: Path, kind: Any) -> None:
    """docs/trace.md, conventions: "a value is copied as written, so a malformed one is
    reported under the GenAI name it was mapped to" — an OpenInference TOOL span whose
    `openinference.span.kind` was not a string was silently a link: the tool call vanished
    and its agent could be `compatible` without it."""
    run = audit_spans(tmp_path, [
        agent_span(1, "weather_agent", None, 0, 100),
        span(2, 1, 10, 20, "get_weather", **{"openinference.span.kind": kind,
                                             "tool.name": "get_weather"})])
    assert "trace.event-malformed" in codes(run)
    assert "trace.incomplete" in codes(run)
    assert str(run.verdict) != "compatible"


def test_conventions_that_disagree_on_a_span_leave_it_out(tmp_path: Path) -> None:
    """docs/trace.md: "A span whose `gen_ai.operation.name` cannot be read (... given twice
    with different values) may be any call, so it is left out" — a span that OpenInference
    calls an AGENT and OpenLLMetry a tool was read as whichever convention the table lists
    first (here an agent `lookup`, delegated to by weather_agent)."""
    run = audit_spans(tmp_path, [
        agent_span(1, "weather_agent", None, 0, 100),
        span(2, 1, 10, 20, "lookup", **{"openinference.span.kind": "AGENT",
                                        "traceloop.span.kind": "tool",
                                        "traceloop.entity.name": "lookup"})])
    assert "trace.event-malformed" in codes(run)
    assert set(verdicts(run)) == {"weather_agent"}
    assert not any(aspect == "delegations" for aspect, _, _ in uses(run)["weather_agent"])


def test_a_convention_kind_padded_with_blanks_is_read(tmp_path: Path) -> None:
    """Kinds are matched in any case (conventions.py): a kind written with blanks around it
    (" TOOL ") is the same kind, not a span the audit has no call for."""
    run = audit_spans(tmp_path, [
        agent_span(1, "weather_agent", None, 0, 100),
        span(2, 1, 10, 20, "get_weather", **{"openinference.span.kind": " TOOL ",
                                             "tool.name": "get_weather"})])
    assert ("tools", "get_weather", 1) in uses(run)["weather_agent"]


PLACEHOLDERS = ["unknown", "None", "", " ", "UNKNOWN"]


@pytest.mark.parametrize("placeholder", PLACEHOLDERS)
def test_a_placeholder_agent_name_is_no_name(tmp_path: Path, placeholder: str) -> None:
    """Issue 36, item 4 (placeholders are never a name), and docs/trace.md: "only a span with
    no name is the agent its `gen_ai.agent.id` says" — an agent named " " or "unknown" was an
    agent of that name: an undeclared agent (incompatible), or, with an id, still that
    name, the id ignored."""
    declared = write_manifests(tmp_path, {"weather_agent": ["get_weather"]}, {}, {},
                               ["weather_agent"])
    run = audit_spans(tmp_path, [agent_span(1, placeholder, None, 0, 100),
                                 tool_span(2, "get_weather", 1, 10, 20)], declared)
    assert "capability.undeclared-agent" not in codes(run)
    assert "capability.caller-unknown" in codes(run)
    assert str(run.verdict) == "indeterminate"
    (tmp_path / "id").mkdir()
    run = audit_spans(tmp_path / "id", [
        agent_span(1, placeholder, None, 0, 100, **{"gen_ai.agent.id": "weather_agent"}),
        tool_span(2, "get_weather", 1, 10, 20)], declared)
    assert verdicts(run) == {"weather_agent": "compatible"}


@pytest.mark.parametrize("convention", ["genai", "openinference", "traceloop"])
@pytest.mark.parametrize("placeholder", PLACEHOLDERS)
def test_a_placeholder_tool_name_is_no_tool_in_every_convention(
        tmp_path: Path, placeholder: str, convention: str) -> None:
    """Issue 36, item 4: placeholders are never a name — a tool recorded as "unknown" or
    blank was a use of a tool of that name, `capability.undeclared-tool` (incompatible),
    rather than `capability.tool-unknown` (indeterminate)."""
    attributes = {
        "genai": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": placeholder},
        "openinference": {"openinference.span.kind": "TOOL", "tool.name": placeholder},
        "traceloop": {"traceloop.span.kind": "tool", "traceloop.entity.name": placeholder},
    }[convention]
    declared = write_manifests(tmp_path, {"weather_agent": ["get_weather"]}, {}, {},
                               ["weather_agent"])
    run = audit_spans(tmp_path, [agent_span(1, "weather_agent", None, 0, 100),
                                 span(2, 1, 10, 20, placeholder, **attributes)],
                      declared)
    assert "capability.undeclared-tool" not in codes(run)
    assert "capability.tool-unknown" in codes(run)
    assert verdicts(run) == {"weather_agent": "indeterminate"}


@pytest.mark.parametrize("convention", ["genai", "openinference", "older-genai", "traceloop"])
@pytest.mark.parametrize("placeholder", PLACEHOLDERS)
def test_a_placeholder_model_is_no_model_in_every_convention(
        tmp_path: Path, placeholder: str, convention: str) -> None:
    """docs/trace.md: "a placeholder (`unknown`, `none`, empty or blank, in any case) is no
    model", whichever convention wrote the model span."""
    attributes = {
        "genai": {"gen_ai.operation.name": "chat", "gen_ai.request.model": placeholder},
        "openinference": {"openinference.span.kind": "LLM", "llm.model_name": placeholder},
        "older-genai": {"gen_ai.system": "openai", "gen_ai.request.model": placeholder},
        "traceloop": {"llm.request.type": "chat", "gen_ai.request.model": placeholder},
    }[convention]
    declared = write_manifests(tmp_path, {"weather_agent": []}, {"weather_agent": "gpt-4o"},
                               {}, ["weather_agent"])
    run = audit_spans(tmp_path, [agent_span(1, "weather_agent", None, 0, 100),
                                 span(2, 1, 10, 20, "llm", **attributes)], declared)
    assert "capability.model-unknown" in codes(run)
    assert "capability.undeclared-model" not in codes(run)


@pytest.mark.parametrize(("name", "attributes"), [
    ("weather_agent", {"openinference.span.kind": "AGENT", "agent.name": " "}),
    ("invoke", {"ioa_observe.span.kind": "agent", "ioa_observe.entity.name": "unknown",
                "agent_id": "weather_agent"}),
], ids=["openinference", "agntcy"])
def test_a_placeholder_gives_way_to_the_conventions_next_source(
        tmp_path: Path, name: str, attributes: dict[str, str]) -> None:
    """docs/trace.md, conventions: OpenInference's agent is `agent.name`, "else the span's
    name"; AGNTCY's `ioa_observe.entity.name`, "else `agent_id`" — a placeholder in the first
    source (blank, "unknown") was copied and hid the second, leaving the agent unnamed."""
    declared = write_manifests(tmp_path, {"weather_agent": ["get_weather"]}, {}, {},
                               ["weather_agent"])
    run = audit_spans(tmp_path, [span(1, None, 0, 100, name, **attributes),
                                 tool_span(2, "get_weather", 1, 10, 20)], declared)
    assert verdicts(run) == {"weather_agent": "compatible"}


# --- identity ---------------------------------------------------------------------------------


def test_an_agent_id_names_an_agent_whose_manifest_is_missing(tmp_path: Path) -> None:
    """docs/trace.md: "a span carrying that `gen_ai.agent.id` is then that agent's, whatever
    its name" — a mas.yaml entry without a `ref` had its `agent_id` ignored, so the agent's
    spans were an undeclared agent of their display name (incompatible) rather than the
    declared agent whose declarations are unknown (indeterminate)."""
    declared = write_manifests(tmp_path, {"weather_agent": []}, {}, {}, ["weather_agent"],
                               {"weather_agent": {"agent_id": "asst_w42", "ref": None}})
    run = audit_spans(tmp_path, [
        agent_span(1, "Weather Bot", None, 0, 100, **{"gen_ai.agent.id": "asst_w42"})],
        declared)
    assert "capability.undeclared-agent" not in codes(run)
    assert set(verdicts(run)) == {"weather_agent"}


def test_definitions_of_a_display_name_only_some_of_whose_spans_an_id_names_stay_its_own(
        tmp_path: Path) -> None:
    """docs/trace.md: "definitions listed under an agent a manifest names by id are that
    agent's" — only when every span of that display name is that agent: one "Weather Bot"
    span carries the id the manifest gives weather_agent, another none (an undeclared agent
    of that name); the tools the second lists were weather_agent's."""
    from ioa_semantic.trace.attribution import identified

    declared = write_manifests(tmp_path, {"weather_agent": []}, {}, {}, ["weather_agent"],
                               {"weather_agent": {"agent_id": "asst_w42"}})
    path = tmp_path / "trace.jsonl"
    path.write_text(request([
        span(1, None, 0, 100),
        agent_span(2, "Weather Bot", 1, 1, 40, **{"gen_ai.agent.id": "asst_w42"}),
        agent_span(3, "Weather Bot", 1, 50, 99),
        span(4, 3, 60, 70, "chat", **{
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
            "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "rm_rf"}])})])
        + "\n")
    disclose = Disclosure()
    source = resolve(str(path))
    fold = Fold()
    consume(source, fold)
    (run,) = runs(source, fold, disclose)
    held = read_manifests(str(declared), disclose)
    renamed = identified(run, Declarations(held, None, None))
    assert "weather_agent" not in renamed.definitions
    assert set(renamed.definitions["Weather Bot"]) == {"rm_rf"}


def test_an_agent_id_two_entries_claim_is_said_so(tmp_path: Path) -> None:
    """docs/trace.md: "an id two entries claim names neither" — and the manifest's author is
    told why, rather than finding the agents undeclared without a word."""
    declared = write_manifests(
        tmp_path, {"weather_agent": [], "planner": []}, {}, {}, ["planner"],
        {"weather_agent": {"agent_id": ["asst_w42"]}, "planner": {"agent_id": "asst_w42"}})
    held = read_manifests(str(declared), Disclosure())
    assert held is not None
    (warned,) = [f for f in held.findings if "asst_w42" in f.message]
    assert warned.code == "capability.declaration-unavailable"
    assert "planner" in warned.message and "weather_agent" in warned.message


# --- attribution ------------------------------------------------------------------------------


def test_an_agent_span_beside_one_of_its_own_is_the_agent_itself(tmp_path: Path) -> None:
    """docs/trace.md: "An `invoke_agent` span nested in one of the same agent (a framework's
    graph inside the agent) is the agent itself" and "The same run laid out either way ...
    gets the same uses" — written as siblings (the framework's graph span beside the agent's),
    the inner span was a second call into the agent."""
    nested = [span(1, None, 0, 100),
              agent_span(2, "weather_agent", 1, 1, 99),
              agent_span(3, "weather_agent", 2, 2, 98),
              tool_span(4, "get_weather", 3, 10, 20)]
    beside = [span(1, None, 0, 100),
              agent_span(2, "weather_agent", 1, 1, 99),
              agent_span(3, "weather_agent", 1, 2, 98),
              tool_span(4, "get_weather", 1, 10, 20)]
    same_interval = [span(1, None, 0, 100),
                     agent_span(2, "weather_agent", 1, 1, 99),
                     agent_span(3, "weather_agent", 1, 1, 99),
                     tool_span(4, "get_weather", 1, 10, 20)]
    (tmp_path / "n").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "s").mkdir()
    runs_ = [audit_spans(tmp_path / "n", nested), audit_spans(tmp_path / "b", beside),
             audit_spans(tmp_path / "s", same_interval)]
    assert uses(runs_[0]) == uses(runs_[1]) == uses(runs_[2]) == {"weather_agent": {
        ("provided", "mas", 1), ("tools", "get_weather", 1)}}


def test_an_agent_span_beside_its_own_and_another_agent_is_not_folded(tmp_path: Path) -> None:
    """Never guess across agents: an inner span of weather_agent that a planner span beside
    it also encloses is not folded into weather_agent's outer span."""
    run = audit_spans(tmp_path, [span(1, None, 0, 100),
                                 agent_span(2, "weather_agent", 1, 1, 99),
                                 agent_span(3, "planner", 1, 1, 99),
                                 agent_span(4, "weather_agent", 1, 2, 98)])
    (provided,) = [u for u in uses(run)["weather_agent"] if u[0] == "provided"]
    assert provided[2] == 2


def test_a_call_that_ends_before_it_starts_is_nobodys_beside_an_agent(tmp_path: Path) -> None:
    """docs/trace.md, attribution: an agent span beside a call "whose time interval encloses
    the call's" — a call whose end precedes its start (20 ms to 10 ms) was "enclosed" by an
    agent span from 15 to 18 ms, which holds neither of its times. Times that cannot both be
    right are not used (`trace.attribute-malformed`), so the call is nobody's."""
    run = audit_spans(tmp_path, [span(1, None, 0, 100),
                                 agent_span(2, "weather_agent", 1, 15, 18),
                                 chat_span(3, "gpt-4o", 1, 20, 10)])
    assert "trace.attribute-malformed" in codes(run)
    assert "capability.caller-unknown" in codes(run)
    assert ("models", "gpt-4o", 1) not in uses(run)["weather_agent"]


def test_agents_of_two_agents_far_back_beside_a_call_stay_ambiguous(tmp_path: Path) -> None:
    """docs/trace.md, attribution: "the nearest level that has one decides ... of several
    agents, the call is `capability.caller-ambiguous`" — when the two enclosing spans started
    before more than a thousand other agent spans beside the call (short ones, ended before
    it), the scan that names them found none, the ambiguity read as "nobody here", and the
    search went on up to an agent span beside the caller: a guess across agents."""
    spans = [span(1, None, 0, 10**6),
             agent_span(2, "supervisor", 1, 0, 10**6),
             tool_span(3, "run_team", 1, 1, 10**6 - 1),
             agent_span(4, "planner", 3, 2, 10**6 - 2),
             agent_span(5, "weather_agent", 3, 2, 10**6 - 2)]
    spans += [agent_span(10 + i, "probe", 3, 10 + i, 11 + i) for i in range(1100)]
    spans.append(chat_span(5000, "gpt-4o", 3, 500_000, 500_001))
    run = audit_spans(tmp_path, spans)
    (reason,) = [r for r in run.reasons if r.code == "capability.caller-ambiguous"]
    assert "planner" in reason.message and "weather_agent" in reason.message
    assert "supervisor" not in reason.message
    assert ("tools", "run_team", 1) in uses(run)["supervisor"]
    assert not any(u[0] == "models" for u in uses(run)["supervisor"])


# --- the same run in two layouts, on random runs ----------------------------------------------


AGENTS = ("planner", "weather_agent", "booking_agent")


@dataclass
class AgentRun:
    """One agent's call: its model and tool calls and delegations, in order; ``inner`` when
    the framework writes its own graph span of the agent inside it."""

    name: str
    inner: bool
    items: list[tuple[str, Any]] = field(default_factory=list)
    start: int = 0
    end: int = 0


def _item(depth: int) -> st.SearchStrategy[tuple[str, Any]]:
    leaves = st.one_of(st.tuples(st.just("chat"), st.sampled_from(("gpt-4o", "gpt-4o-mini"))),
                       st.tuples(st.just("tool"), st.sampled_from(("get_weather", "book"))))
    if depth == 0:
        return leaves
    return st.one_of(leaves, st.tuples(st.just("delegate"), _agent_run(depth - 1)))


def _agent_run(depth: int) -> st.SearchStrategy[AgentRun]:
    return st.builds(AgentRun, st.sampled_from(AGENTS), st.booleans(),
                     st.lists(_item(depth), max_size=4))


def _timed(run: AgentRun, start: int) -> int:
    """Each call's interval: the agent's encloses its calls with a margin for the inner
    span; calls one after the other. The end of ``run``."""
    run.start, clock = start, start + 2
    for kind, value in run.items:
        if kind == "delegate":
            clock = _timed(value, clock + 1) + 1
        clock += 2
    run.end = clock + 2
    return run.end


class _Spans:
    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []

    def add(self, make: Any, *arguments: Any) -> int:
        number = len(self.spans) + 1
        self.spans.append(make(number, *arguments))
        return number

    def calls(self, run: AgentRun, parent: int, sibling: bool) -> None:
        clock = run.start + 2
        for kind, value in run.items:
            if kind == "chat":
                self.add(chat_span, value, parent, clock, clock + 1)
            elif kind == "tool":
                self.add(tool_span, value, parent, clock, clock + 1)
            else:
                tool = self.add(tool_span, f"delegate_to_{value.name}", parent, clock,
                                value.end + 1)
                (self.beside if sibling else self.beneath)(value, tool)
                clock = value.end + 1
            clock += 2

    def beneath(self, run: AgentRun, parent: int | None) -> None:
        """Every call under its agent's span (the SDK programs' layout)."""
        outer = self.add(agent_span, run.name, parent, run.start, run.end)
        if run.inner:
            outer = self.add(agent_span, run.name, outer, run.start + 1, run.end - 1)
        self.calls(run, outer, sibling=False)

    def flat(self, run: AgentRun, parent: int | None) -> None:
        """Every agent span and call under one step span: a delegated agent's span beside
        its caller's, inside it in time, so its calls are ambiguous."""
        step = self.add(span, parent, run.start, run.end) if parent is None else parent
        self.add(agent_span, run.name, step, run.start, run.end)
        clock = run.start + 2
        for kind, value in run.items:
            if kind == "delegate":
                self.add(tool_span, f"delegate_to_{value.name}", step, clock, value.end + 1)
                self.flat(value, step)
                clock = value.end + 1
            else:
                self.add(chat_span if kind == "chat" else tool_span, value, step, clock,
                         clock + 1)
            clock += 2

    def beside(self, run: AgentRun, parent: int | None) -> None:
        """The agent's span beside its calls, all under the framework's step span."""
        step = self.add(span, parent, run.start, run.end)
        self.add(agent_span, run.name, step, run.start, run.end)
        if run.inner:
            self.add(agent_span, run.name, step, run.start + 1, run.end - 1)
        self.calls(run, step, sibling=True)


def _declared_by(run: AgentRun, out: dict[str, set[tuple[str, str]]]) -> None:
    for kind, value in run.items:
        mine = out.setdefault(run.name, set())
        if kind == "delegate":
            mine.add(("tool", f"delegate_to_{value.name}"))
            mine.add(("delegate", value.name))
            _declared_by(value, out)
        else:
            mine.add((kind, value))


def _graph_tools(path: Path, declared: Path) -> set[tuple[str, str, int]]:
    import pyoxigraph

    from ioa_semantic import data as resources

    store = layouts._graph(path, declared)
    solutions = store.query(resources.query("trace_agent_tools"), use_default_graph_as_union=True)
    assert isinstance(solutions, pyoxigraph.QuerySolutions)
    return {(r["agentId"].value, r["toolName"].value, int(r["calls"].value)) for r in solutions}


def _layouts(run: AgentRun) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    _timed(run, 10)
    for layout in ("beneath", "beside", "flat"):
        spans = _Spans()
        getattr(spans, layout)(run, None)
        yield layout, spans.spans


@settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(_agent_run(2), st.randoms(use_true_random=False))
def test_random_runs_get_the_same_uses_and_verdicts_beneath_or_beside_their_agents(
        root: AgentRun, random: Any) -> None:
    """docs/trace.md: "The same run laid out either way (calls under their `invoke_agent`,
    or beside it) gets the same uses and verdicts, and the same `ioat:agent` links in the
    knowledge graph" — and the named query trace_agent_tools lists, per agent, exactly the
    tool uses the audit judged, in those layouts and in one where delegated agents' spans
    sit beside their callers' (calls the audit finds ambiguous the graph links to nobody).
    Each run's manifests declare a random part of what it uses."""
    used: dict[str, set[tuple[str, str]]] = {}
    _declared_by(root, used)
    kept = {agent: {u for u in uses_ if random.random() < 0.7} for agent, uses_ in used.items()}
    with tempfile.TemporaryDirectory() as folder:
        declared = write_manifests(
            Path(folder), {a: sorted(v for k, v in u if k == "tool") for a, u in kept.items()},
            {a: next((v for k, v in sorted(u) if k == "chat"), "gpt-4o") for a, u in kept.items()},
            {a: sorted(v for k, v in u if k == "delegate") for a, u in kept.items()},
            [root.name] if random.random() < 0.8 else [])
        results, graphs = {}, {}
        for layout, spans in _layouts(root):
            path = Path(folder) / f"{layout}.jsonl"
            path.write_text(request(spans) + "\n")
            (results[layout],) = audited(path, declared)
            graphs[layout] = _graph_tools(path, declared)
    beneath, beside = results["beneath"], results["beside"]
    assert uses(beside) == uses(beneath)
    assert verdicts(beside) == verdicts(beneath)
    assert "capability.caller-unknown" not in codes(beside) | codes(beneath)
    assert "capability.caller-ambiguous" not in codes(beside) | codes(beneath)
    for layout, run in results.items():
        judged = {(agent, name, count) for agent, listed in uses(run).items()
                  for aspect, name, count in listed if aspect == "tools" and name}
        assert graphs[layout] == judged, layout


# --- workflows --------------------------------------------------------------------------------


def _aliased_workflow(folder: Path, depth: int) -> Path:
    """A mas.yaml of a kilobyte whose steps, through YAML anchors, name 2**depth places."""
    lines = ["apiVersion: mas/v1", "kind: MAS", "metadata: {name: laughs}",
             "l0: &l0 [weather_agent, weather_agent]"]
    lines += [f"l{i}: &l{i} [{{sequential: *l{i - 1}}}, {{parallel: *l{i - 1}}}]"
              for i in range(1, depth)]
    lines += ["spec:", "  agency:", "    agents: [{id: planner, ref: agents/planner.yaml},",
              "                 {id: weather_agent, ref: agents/planner.yaml}]",
              "  workflow:", "    type: sequential",
              f"    steps: [{{id: planner, sequential: *l{depth - 1}}}]"]
    root = folder / f"laughs{depth}"
    (root / "agents").mkdir(parents=True)
    (root / "mas.yaml").write_text("\n".join(lines) + "\n")
    (root / "agents" / "planner.yaml").write_text(yaml.safe_dump({
        "apiVersion": "mas/v1", "kind": "Agent", "metadata": {"name": "planner"},
        "spec": {"tools": []}}))
    return root


def test_a_workflow_of_aliased_steps_is_read_in_time_linear_in_its_text(tmp_path: Path) -> None:
    """Hostile sizes (issue 36's review): YAML anchors let a kilobyte of steps name a million
    places; the steps, and the check for repeated keys, were walked place by place (24
    levels did not finish in a minute). Each shared group is read once: four more levels
    add four lines of work, never sixteen times the work. Counted, not timed."""
    from operations import operations

    held: dict[int, Any] = {}
    counted: dict[int, int] = {}
    for depth in (8, 12):
        folder = str(_aliased_workflow(tmp_path, depth))

        def read(depth: int = depth, folder: str = folder) -> None:
            held[depth] = read_manifests(folder, Disclosure())

        counted[depth] = operations(read)
    assert counted[12] < 1.5 * counted[8], counted
    manifests = held[12]
    assert manifests is not None and manifests.entries == {"planner"}
    assert manifests.agents["planner"].delegates_to == {"weather_agent"}
