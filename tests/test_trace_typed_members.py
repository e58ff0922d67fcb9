"""Members of a trace read only as the type their source gives them, and nothing a run holds
read as nothing.

A tool, model or agent named by OTLP bytes is no name (its base64 text would be an undeclared
tool that does not exist); a GenAI attribute of the wrong type is reported where it stands,
as mas-lab's span attributes are; the OTLP 0.x member for a resource's scopes still holds
spans; a file beside ``traces/events.jsonl`` is said to be unread; and the trajectory
schema's types hold for ``run_id`` (a string), ``timestamp`` (a number) and ``usage`` (token
counts, whose total the ontology defines as prompt plus completion). In the graph,
``mas:spanId`` is the "ID of the corresponding span in OTel traces, where one exists": a
span's own id, never a mas-lab event's call id nor a line's name.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic.trace import otlp
from ioa_semantic.trace.events import Fold

from otlp_requests import TRACE, agent, attribute, chat, lines, request, tool
from support import IOA_CHECK, ROOT

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

OTEL_MANIFESTS = ROOT / "examples" / "trace" / "otel" / "manifests"
MAS_LAB = ROOT / "examples" / "trace" / "mas-lab"


def _bytes(value: str) -> dict[str, Any]:
    return {"bytesValue": base64.b64encode(value.encode()).decode()}


def _with(item: dict[str, Any], key: str, value: dict[str, Any]) -> dict[str, Any]:
    """``item`` with its attribute ``key`` given the AnyValue ``value``."""
    item["attributes"] = [a if a["key"] != key else {"key": key, "value": value}
                          for a in item["attributes"]]
    return item


def _trace(tmp_path: Path, path: Path, manifests: Path) -> tuple[int, str]:
    proc = subprocess.run([IOA_CHECK, "trace", str(path), "--manifests", str(manifests),
                           "--no-shapes", "--format", "json"], capture_output=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode in (0, 1, 3), proc.stderr
    return proc.returncode, proc.stdout.decode()


def _problems(*values: dict[str, Any]) -> list[tuple[str, str]]:
    """(code, detail) of every problem a fold of ``values`` met."""
    fold = Fold()
    for seq, value in enumerate(values, 1):
        fold.value(seq, value)
    return [(problem[0], problem[2]) for problem in fold.problems]


@pytest.mark.parametrize("key", ["gen_ai.tool.name", "gen_ai.request.model",
                                 "gen_ai.agent.name"])
def test_a_name_given_as_bytes_names_nothing_and_is_said_so(tmp_path: Path, key: str) -> None:
    """The base64 of ``search_connections`` is no tool of that agent's, declared or not: the
    call's name is unknown (indeterminate, never incompatible), and the attribute is
    reported at its place."""
    front = agent(1, None, "front_desk")
    spans = {"gen_ai.tool.name": [front, tool(2, 1, "search_connections")],
             "gen_ai.request.model": [front, chat(2, 1, "gpt-4o")],
             "gen_ai.agent.name": [front, tool(2, 1, "search_connections")]}[key]
    target = spans[0] if key == "gen_ai.agent.name" else spans[1]
    name = "front_desk" if key == "gen_ai.agent.name" else next(
        a["value"]["stringValue"] for a in target["attributes"] if a["key"] == key)
    _with(target, key, _bytes(name))
    if key == "gen_ai.agent.name":  # the agent's id would name it otherwise
        _with(target, "gen_ai.agent.id", _bytes(name))
    path = tmp_path / "bytes.jsonl"
    path.write_text(lines(request(*spans)))
    status, out = _trace(tmp_path, path, OTEL_MANIFESTS)
    assert base64.b64encode(name.encode()).decode() not in out
    assert status == 3, out
    assert f"{key} is not a string; it is not used" in out


def test_content_given_as_bytes_is_digested_as_the_bytes_it_is() -> None:
    """Content is any value: bytes are kept as their AnyValue, digested, never an error."""
    plain = chat(2, 1)
    as_bytes = _with(chat(2, 1), "gen_ai.input.messages", _bytes("a prompt"))
    read = [next(otlp.spans(request(item))) for item in (plain, as_bytes)]
    assert all(isinstance(s, otlp.Span) for s in read)
    assert read[1].values["content.input"] == _bytes("a prompt")  # type: ignore[union-attr]
    assert otlp.call(read[0], False)["input"] != otlp.call(read[1], False)["input"]  # type: ignore[arg-type]


def test_genai_attributes_of_the_wrong_type_are_reported_where_they_stand_and_not_used() -> None:
    model = chat(1, None)
    model["attributes"] += [
        {"key": "gen_ai.usage.input_tokens", "value": {"doubleValue": 412.5}},
        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "-38"}},
        attribute("gen_ai.request.temperature", "hot"),
        attribute("gen_ai.response.finish_reasons", "stop"),
        attribute("gen_ai.usage.cache_read.input_tokens", 7),  # well typed: read
    ]
    named = _with(tool(2, None, "x"), "gen_ai.tool.name", {"intValue": "5"})
    found = list(otlp.spans(request(model, named)))
    problems = {(p.pointer.rsplit("/", 3)[-3], p.pointer.rsplit("/", 1)[-1], p.detail)
                for p in found if isinstance(p, otlp.Problem)}
    assert problems == {
        ("0", "3", "gen_ai.usage.input_tokens is not a count (an integer, not negative); it "
                   "is not used"),
        ("0", "4", "gen_ai.usage.output_tokens is not a count (an integer, not negative); it "
                   "is not used"),
        ("0", "5", "gen_ai.request.temperature is not a number; it is not used"),
        ("0", "6", "gen_ai.response.finish_reasons is not an array of strings; it is not "
                   "used"),
        ("1", "1", "gen_ai.tool.name is not a string; it is not used"),
    }
    assert all(p.code == "trace.attribute-malformed" for p in found
               if isinstance(p, otlp.Problem))
    chat_span, tool_span = (s for s in found if isinstance(s, otlp.Span))
    assert otlp.call(chat_span, False)["tokens"] == {"cacheRead": 7}
    assert "target" not in otlp.call(tool_span, False)


def test_spans_under_otlp_0x_scopes_member_are_read(tmp_path: Path) -> None:
    """``instrumentationLibrarySpans`` (OTLP before 1.0, old Collectors' file exporter) holds
    the same spans: an undeclared tool under it is found, not a run of no spans."""
    legacy = request(agent(1, None, "front_desk"), tool(2, 1, "issue_refund"))
    resource = legacy["resourceSpans"][0]
    resource["instrumentationLibrarySpans"] = resource.pop("scopeSpans")
    path = tmp_path / "legacy.jsonl"
    path.write_text(lines(legacy))
    status, out = _trace(tmp_path, path, OTEL_MANIFESTS)
    assert status == 1, out
    assert "capability.undeclared-tool" in out and "issue_refund" in out
    # Where a resource has both, scopeSpans is OTLP 1.x's and alone read.
    both = request(agent(1, None, "front_desk"))
    both["resourceSpans"][0]["instrumentationLibrarySpans"] = [
        {"spans": [tool(2, 1, "issue_refund")]}]
    assert len([s for s in otlp.spans(both) if isinstance(s, otlp.Span)]) == 1


def test_the_service_counts_and_maps_otlp_0x_scopes_as_the_file_reader_reads_them() -> None:
    from ioa_semantic.service.traces import _hex_ids, _json_spans

    legacy = request(agent(1, None, "front_desk"), tool(2, 1, "issue_refund"))
    resource = legacy["resourceSpans"][0]
    resource["instrumentationLibrarySpans"] = resource.pop("scopeSpans")
    assert _json_spans(legacy) == 2
    mapped = _hex_ids(json.loads(json.dumps(legacy)))["resourceSpans"][0]
    assert "instrumentationLibrarySpans" not in mapped and len(mapped["scopeSpans"][0]["spans"]) == 2


def test_a_file_beside_the_events_in_traces_is_said_to_be_unread(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(MAS_LAB / "run", run)
    (run / "traces" / "events-2.jsonl").write_text(json.dumps(
        {"kind": "tool_call_start", "agent_id": "schedule_agent", "timestamp": 1771889094.95,
         "run_id": "f52df92b", "tool_name": "rm_rf"}) + "\n")
    (run / "traces" / ".hidden").write_text("")
    _, out = _trace(tmp_path, run, MAS_LAB / "manifests")
    reasons = [r for line in out.splitlines() for r in json.loads(line).get("summary", {}).get(
        "reasons", ())]
    assert [r["message"].split(": ", 1)[1] for r in reasons if r["code"] == "trace.run-malformed"
            ] == ["the run folder's traces/ also holds events-2.jsonl, which the schema does "
                  "not lay out: it is not read (only traces/events.jsonl is)"]


_EVENT = {"kind": "tool_call_start", "agent_id": "a", "call_id": "c", "tool_name": "t",
          "timestamp": 1771889094.95, "run_id": "f52df92b"}


@pytest.mark.parametrize("run_id", [12345, ["f52df92b"], {"id": "f52df92b"}, True])
def test_a_run_id_that_is_not_a_string_is_reported(run_id: Any) -> None:
    assert _problems(_EVENT, {**_EVENT, "call_id": "d", "run_id": run_id}) == [(
        "trace.attribute-malformed",
        f"the run_id {json.dumps(run_id)} is not a string; it names no run")]


@pytest.mark.parametrize("stamp", ["1771889094.95", " 1771889094.95 ", "1e3", "NaN"])
def test_a_timestamp_written_as_a_string_is_no_number_of_seconds(stamp: str) -> None:
    assert _problems({**_EVENT, "timestamp": stamp}) == [(
        "trace.attribute-malformed",
        f"the timestamp {json.dumps(stamp)} is not a number of Unix seconds; the call's time "
        "is not used")]


def _llm_end(usage: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "llm_call_end", "agent_id": "a", "call_id": "m", "model": "gpt-4o",
            "timestamp": 1771889094.95, "run_id": "f52df92b",
            "response": {"content": "ok", "usage": usage}}


@pytest.mark.parametrize(("usage", "tokens", "problems"), [
    ({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
     {"prompt": 10, "completion": 5, "total": 15}, []),
    ({"prompt_tokens": 10, "completion_tokens": 5},
     {"prompt": 10, "completion": 5, "total": 15}, []),
    ({"total_tokens": 99}, {"total": 99}, []),
    ({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 99},
     {"prompt": 10, "completion": 5, "total": 15},
     ["the usage's total_tokens 99 is not prompt plus completion (15); their sum is the total "
      "used"]),
    ({"prompt_tokens": "10", "completion_tokens": -1}, None,
     ["the usage's prompt_tokens \"10\" is not a count of tokens; it is not used",
      "the usage's completion_tokens -1 is not a count of tokens; it is not used"]),
])
def test_token_counts_are_counts_and_the_total_is_prompt_plus_completion(
        usage: dict[str, Any], tokens: dict[str, int] | None, problems: list[str]) -> None:
    fold = Fold()
    fold.value(1, _llm_end(usage))
    (call,) = fold.calls.values()
    assert call.tokens == tokens
    assert [p[2] for p in fold.problems] == problems


def test_an_undeclared_tool_under_an_int_run_id_is_still_judged(tmp_path: Path) -> None:
    """A malformed run_id is reported; the event is still this run's, and judged."""
    run = tmp_path / "run"
    shutil.copytree(MAS_LAB / "run", run)
    events = run / "traces" / "events.jsonl"
    with events.open("a") as handle:
        handle.write(json.dumps({**_EVENT, "agent_id": "schedule_agent", "tool_name": "rm_rf",
                                 "call_id": "x-1", "run_id": 7}) + "\n")
    status, out = _trace(tmp_path, run, MAS_LAB / "manifests")
    assert status == 1 and "rm_rf" in out and "the run_id 7 is not a string" in out


def _span_ids(tmp_path: Path, path: Path, manifests: Path) -> set[str]:
    graph = tmp_path / "kg.nt"
    subprocess.run([IOA_CHECK, "trace", str(path), "--manifests", str(manifests), "--no-shapes",
                    "--emit-kg", str(graph)], capture_output=True, timeout=120, cwd=tmp_path,
                   check=False)
    return {line.split('"')[1] for line in graph.read_text().splitlines()
            if "#spanId>" in line}


def test_span_ids_in_the_graph_are_otel_span_ids_only(tmp_path: Path) -> None:
    assert _span_ids(tmp_path, MAS_LAB / "run", MAS_LAB / "manifests") == set()
    spans = [agent(1, None, "front_desk"), tool(2, 1, "search_connections")]
    path = tmp_path / "otlp.jsonl"
    path.write_text(lines(request(*spans)))
    assert _span_ids(tmp_path, path, OTEL_MANIFESTS) == {f"{1:016x}", f"{2:016x}"}


def test_a_protobuf_message_without_its_length_is_refused_with_one_reason(
        tmp_path: Path) -> None:
    """Not a line-by-line reading of binary as JSON (34 json.syntax warnings): one reason for
    the file, saying what it is and how to make it readable (docs/trace.md)."""
    pytest.importorskip("opentelemetry.proto")
    from google.protobuf import json_format
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    message = json_format.ParseDict(
        {"resourceSpans": [{"scopeSpans": [{"spans": [{
            "traceId": base64.b64encode(bytes.fromhex(TRACE)).decode(),
            "spanId": base64.b64encode(bytes(range(1, 9))).decode(), "name": "x"}]}]}]},
        TracesData())
    path = tmp_path / "single.pb"
    path.write_bytes(message.SerializeToString())
    proc = subprocess.run([IOA_CHECK, "trace", str(path), "--no-shapes", "--format", "json"],
                          capture_output=True, timeout=120, cwd=tmp_path)
    reasons = [r for line in proc.stdout.decode().splitlines()
               for r in json.loads(line).get("summary", {}).get("reasons", ())]
    assert proc.returncode == 4, proc.stderr
    assert [(r["code"], "without the 4-byte big-endian length" in r["message"])
            for r in reasons if r["severity"] != "info"] == [("json.unreadable", True)]
