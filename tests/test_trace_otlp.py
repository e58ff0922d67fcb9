"""OTLP JSON input of ``ioa-check trace``: spans read through the mapping table, per span.

Each test feeds a request written in the OTLP specification's JSON (tests/otlp_requests.py)
through the installed command, or through the reading stage where only the stage is meant,
and states what the audit makes of it. The SDK-made traces are tests/test_trace_otel.py's.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ioa_semantic.trace import otlp
from ioa_semantic.trace.events import Fold, Source, runs
from ioa_semantic.trace.privacy import Disclosure

from otlp_requests import TRACE, agent, chat, lines, request, span, tool, trip
from support import IOA_CHECK, ROOT

TRACE_SOURCE = ROOT / "ioa_semantic" / "trace"

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

MANIFESTS = (Path(__file__).resolve().parents[2] / "shared" / "reference" / "mas-traces"
             / "mas-lab" / "trip-planner-manifests")


def _trace(tmp_path: Path, text: str, *args: str, name: str = "otlp.jsonl"
           ) -> tuple[int, list[dict[str, Any]]]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    proc = subprocess.run([IOA_CHECK, "trace", str(path), "--format", "json", "--no-shapes",
                           *args], capture_output=True, timeout=120, cwd=tmp_path)
    assert proc.returncode in (0, 1, 3, 4), proc.stderr
    reports: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    for line in proc.stdout.decode().splitlines():
        item = json.loads(line)
        if "summary" in item:
            reports.append({**item["summary"], "records": records})
            records = []
        elif "agent" in item:
            records.append(item)
    return proc.returncode, reports


def _agents(report: dict[str, Any]) -> dict[str, str]:
    verdicts: dict[str, str] = report["agents"]
    return verdicts


def _record(report: dict[str, Any], agent: str) -> dict[str, Any]:
    record: dict[str, Any] = next(r for r in report["records"] if r["agent"] == agent)
    return record


def _uses(record: dict[str, Any]) -> dict[tuple[str, str | None], str]:
    """(aspect, name) -> verdict, for every use of an agent's record."""
    out = {}
    for aspect, member in (("tools", "tool"), ("models", "model"), ("delegations", "agent")):
        for use in record["consumed"][aspect]:
            out[(aspect, use[member])] = use["verdict"]
    for use in record["provided"]:
        out[("provided", use["caller"])] = use["verdict"]
    return out


def _codes(report: dict[str, Any]) -> set[str]:
    found = {r["code"] for r in report["reasons"]}
    for each in report["records"]:
        found |= {r["code"] for r in each["reasons"]}
    return found


def _fold(*requests: dict[str, Any]) -> Fold:
    fold = Fold()
    for seq, value in enumerate(requests, 1):
        fold.value(seq, value)
    return fold


def test_the_trip_planner_as_spans_audits_like_its_mas_lab_run(tmp_path: Path) -> None:
    status, (report,) = _trace(tmp_path, lines(request(*trip())), "--manifests", str(MANIFESTS))
    assert status == 0, report
    assert _agents(report) == {"moderator": "compatible", "schedule_agent": "compatible"}
    assert report["run"] == TRACE
    uses = _uses(_record(report, "schedule_agent"))
    # The HTTP span between schedule_agent and its tool is passed through, not a caller.
    assert uses[("tools", "lookup_schedule")] == "compatible"
    assert uses[("provided", "moderator")] == "compatible"
    assert _uses(_record(report, "moderator"))[("delegations", "schedule_agent")] == "compatible"


def test_spans_arrive_in_any_order_and_in_several_requests(tmp_path: Path) -> None:
    spans = trip()
    text = lines(request(*spans[4:]), request(*reversed(spans[:4])))
    status, (report,) = _trace(tmp_path, text, "--manifests", str(MANIFESTS))
    assert status == 0 and report["events"] == len(spans)


def test_protobuf_json_mapping_ids_in_base64_and_enumerations_by_name(tmp_path: Path) -> None:
    def protobuf(item: dict[str, Any]) -> dict[str, Any]:
        out = dict(item)
        for member in ("traceId", "spanId", "parentSpanId"):
            if member in out:
                out[member] = base64.b64encode(bytes.fromhex(out[member])).decode()
        out["kind"] = {1: "SPAN_KIND_INTERNAL", 3: "SPAN_KIND_CLIENT"}[out["kind"]]
        out["status"] = {"code": "STATUS_CODE_OK"}
        return out

    hex_status, (hex_report,) = _trace(tmp_path, lines(request(*trip())), "--manifests",
                                         str(MANIFESTS), name="hex.jsonl")
    b64_status, (b64_report,) = _trace(tmp_path, lines(request(*map(protobuf, trip()))),
                                         "--manifests", str(MANIFESTS), name="b64.jsonl")
    assert hex_status == b64_status == 0
    assert b64_report["run"] == TRACE
    def unsourced(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k != "source"} for r in records]

    assert unsourced(b64_report["records"]) == unsourced(hex_report["records"])


def test_an_undeclared_tool_is_incompatible_naming_its_span(tmp_path: Path) -> None:
    spans = [*trip(), tool(8, 5, "wire_money")]
    status, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", str(MANIFESTS))
    assert status == 1
    schedule = _record(report, "schedule_agent")
    reason = next(r for r in schedule["reasons"] if r["code"] == "capability.undeclared-tool")
    assert f"{8:016x}" in reason["message"] and "wire_money" in reason["message"]


def test_a_model_call_without_a_model_is_indeterminate_evidence(tmp_path: Path) -> None:
    spans = [*trip(), chat(8, 5, model=None)]
    status, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", str(MANIFESTS))
    assert status == 3
    assert "capability.model-unknown" in _codes(report)
    assert _agents(report)["schedule_agent"] == "indeterminate"


def test_tool_definitions_declare_tools_when_no_manifest_is_given(tmp_path: Path) -> None:
    spans = [*trip(), tool(8, 5, "wire_money")]
    status, (report,) = _trace(tmp_path, lines(request(*spans)))
    verdicts = {name: v for (aspect, name), v in _uses(_record(report, "schedule_agent")).items()
                if aspect == "tools"}
    assert verdicts == {"lookup_schedule": "compatible", "wire_money": "incompatible"}
    assert status == 1
    # With a manifest, the manifest is the declaration: the trace's list is not consulted.
    _, (with_manifest,) = _trace(tmp_path, lines(request(*trip())), "--manifests",
                                   str(MANIFESTS))
    assert "gen_ai.tool.definitions" not in json.dumps(with_manifest["records"])


def test_defined_tools_are_declared_in_the_knowledge_graph(tmp_path: Path) -> None:
    pytest.importorskip("rdflib")
    from rdflib import Graph, Literal, Namespace

    (tmp_path / "otlp.jsonl").write_text(lines(request(*trip())))
    subprocess.run([IOA_CHECK, "trace", "otlp.jsonl", "--no-shapes", "--emit-kg", "kg.ttl"],
                   cwd=tmp_path, capture_output=True, timeout=120, check=False)
    graph = Graph().parse(tmp_path / "kg.ttl")
    mas = Namespace("https://outshift-open.github.io/oxp-ontology/mas#")
    tools = {str(graph.value(t, mas.name)): graph.value(t, mas.declared)
             for t, _, _ in graph.triples((None, None, mas.Tool))}
    assert tools["lookup_schedule"] == Literal(True)
    text = (tmp_path / "kg.ttl").read_text()
    assert "a prompt the audit must not copy" not in text and "Zürich" not in text


def test_content_attributes_are_digests_unless_content_is_asked_for(tmp_path: Path) -> None:
    text = lines(request(*trip()))
    _, (report,) = _trace(tmp_path, text)
    assert "a prompt the audit must not copy" not in json.dumps(report, ensure_ascii=False)
    fold = _fold(request(*trip()))
    call = fold.spans[f"{TRACE}/{3:016x}"]
    assert set(call["input"].as_json()) == {"sha256", "chars"} and "content" not in call
    with_content = Fold(include_content=True)
    with_content.value(1, request(*trip()))
    assert with_content.spans[f"{TRACE}/{3:016x}"]["content"]["input"] == (
        "a prompt the audit must not copy")


def test_an_a2a_call_whose_server_is_not_in_the_trace_leaves_the_callee_unknown(
        tmp_path: Path) -> None:
    spans = [*trip(), span(8, 2, {"a2a.method.name": "message/send", "a2a.task.id": "t-1"},
                           kind=3)]
    status, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", str(MANIFESTS))
    assert status == 3
    assert _record(report, "moderator")["aspects"]["delegations"] == "indeterminate"
    assert "capability.callee-unknown" in _codes(report)


def test_an_a2a_client_span_with_the_served_agent_beneath_is_a_delegation(
        tmp_path: Path) -> None:
    # moderator -> A2A client span -> schedule_agent's own agent span (context propagated).
    spans = [span(1, None, {"gen_ai.operation.name": "invoke_workflow",
                            "gen_ai.workflow.name": "trip-planner"}),
             agent(2, 1, "moderator"),
             span(3, 2, {"a2a.method.name": "message/send"}, kind=3),
             agent(4, 3, "schedule_agent")]
    _, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", str(MANIFESTS))
    assert _uses(_record(report, "moderator"))[("delegations", "schedule_agent")] == "compatible"


@pytest.mark.parametrize(("damage", "code"), [
    (lambda s: s.pop("spanId"), "trace.event-malformed"),
    (lambda s: s.update(traceId="00000000000000000000000000000000"), "trace.event-malformed"),
    (lambda s: s.update(spanId=12), "trace.event-malformed"),
    (lambda s: s.update(parentSpanId="not-an-id"), "trace.event-malformed"),
    (lambda s: s.update(attributes={"gen_ai.tool.name": "x"}), "trace.attribute-malformed"),
    (lambda s: s["attributes"].append({"key": "gen_ai.tool.name", "value": {"intValue": "x"}}),
     "trace.attribute-malformed"),
    (lambda s: s.update(startTimeUnixNano="yesterday"), "trace.attribute-malformed"),
    (lambda s: s.update(status={"code": 9}), "trace.attribute-malformed"),
])
def test_a_malformed_span_is_reported_at_its_place_and_the_rest_is_read(
        tmp_path: Path, damage: Any, code: str) -> None:
    spans = [*trip(), tool(8, 5, "lookup_schedule")]
    damage(spans[7])
    _, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", str(MANIFESTS))
    found = [r for r in report["reasons"] if r["code"] == code]
    assert found, report["reasons"]
    assert found[0]["path"] == "/0/resourceSpans/0/scopeSpans/0/spans/7" or found[0][
        "path"].startswith("/0/resourceSpans/0/scopeSpans/0/spans/7/")
    # The other spans are still read: both agents are judged.
    assert set(_agents(report)) == {"moderator", "schedule_agent"}
    if code == "trace.event-malformed":
        # A span left out may have been an undeclared use: never compatible.
        assert report["verdict"] != "compatible"


def test_a_tool_name_of_the_wrong_type_makes_the_tool_unknown_never_a_guess(
        tmp_path: Path) -> None:
    spans = [*trip(), tool(8, 5, "lookup_schedule")]
    spans[7]["attributes"][1] = {"key": "gen_ai.tool.name", "value": {"intValue": "7"}}
    status, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", str(MANIFESTS))
    assert status == 3 and "capability.tool-unknown" in _codes(report)


def test_a_cycle_of_parents_is_reported_and_its_calls_have_no_known_caller(
        tmp_path: Path) -> None:
    spans = [*trip(), agent(8, 9, "intruder"), tool(9, 8, "wire_money")]
    status, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", str(MANIFESTS))
    assert "trace.parent-cycle" in _codes(report)
    assert _agents(report)["intruder"] != "compatible" and status != 0


def test_a_span_given_twice_differently_is_ambiguous_and_a_retry_is_not(tmp_path: Path) -> None:
    spans = trip()
    retry = lines(request(*spans), request(spans[6]))
    status, (report,) = _trace(tmp_path, retry, "--manifests", str(MANIFESTS))
    assert status == 0 and report["events"] == len(spans)
    forged = tool(7, 6, "wire_money")
    status, (report,) = _trace(tmp_path, lines(request(*spans), request(forged)),
                                 "--manifests", str(MANIFESTS), name="forged.jsonl")
    assert status == 3 and "trace.call-conflict" in _codes(report)


def test_a_file_of_several_traces_gives_a_run_each(tmp_path: Path) -> None:
    other = "0123456789abcdef0123456789abcdef"
    spans = [*trip(), agent(20, None, "moderator") | {"traceId": other}]
    _, reports = _trace(tmp_path, lines(request(*spans)), "--manifests", str(MANIFESTS))
    assert sorted(r["run"] for r in reports) == sorted([TRACE, other])


def test_one_document_and_the_collector_s_json_lines_in_a_json_file(tmp_path: Path) -> None:
    document = json.dumps(request(*trip()), indent=2)
    status, (report,) = _trace(tmp_path, document, "--manifests", str(MANIFESTS),
                                 name="doc.json")
    assert status == 0 and report["events"] == 7
    spans = trip()
    status, (report,) = _trace(tmp_path, lines(request(*spans[:3]), request(*spans[3:])),
                                 "--manifests", str(MANIFESTS), name="collector.json")
    assert status == 0 and report["events"] == 7


def test_an_otlp_request_in_a_file_of_events_is_not_read_as_either(tmp_path: Path) -> None:
    event = {"kind": "execution_start", "agent_id": "moderator", "call_id": "c1",
             "timestamp": 1}
    fold = _fold(event, request(*trip()))
    assert fold.format == "events" and fold.problems[0][0] == "trace.event-malformed"


def test_the_mapping_table_is_the_one_place_attribute_names_live() -> None:
    table = otlp.table()
    assert table["operations"]["invoke_agent"] == "agent"
    # A renamed attribute is one more name in a row, read newest first.
    assert table["attributes"]["workflow.name"][0] == "gen_ai.agent.name"
    # The source, not the installed module: the compiled build's is a native extension.
    source = ((TRACE_SOURCE / "otlp.py").read_text() + (TRACE_SOURCE / "events.py").read_text())
    assert '"gen_ai.' not in source


def test_every_attribute_of_the_table_is_documented() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "trace.md").read_text()
    for names in otlp.table()["attributes"].values():
        for name in names:
            assert f"`{name}`" in page, name


def test_deep_nesting_through_unmapped_spans_costs_linear_work() -> None:
    # 20,000 HTTP spans in a chain, then 2,000 tool calls under its bottom: every tool call
    # finds its agent through the whole chain (each walk up is remembered for the spans it
    # passed, so this is linear work; bench/bench_trace_otlp.py measures it).
    depth = 20_000
    spans = [agent(1, None, "moderator", ["lookup_schedule"])]
    spans += [span(i, i - 1, {"http.request.method": "GET"}) for i in range(2, depth)]
    spans += [tool(depth + i, depth - 1, "lookup_schedule") for i in range(2000)]
    fold = _fold(request(*spans))
    (run,) = runs(Source("x", "x", None, None), fold, Disclosure())
    tools = [c for c in run.calls if c.cls == "tool"]
    assert len(tools) == 2000 and all(c.parent == f"{1:016x}" for c in tools)


def test_tool_definitions_never_outweigh_registrations(tmp_path: Path) -> None:
    """The list is what the audited runtime offered its model: with registrations given it is
    no declaration source, so a tool the registrations do not establish stays unestablished."""
    from support import registration_63

    document = registration_63()
    document["@id"] = "https://example.org/onto/travel#A"
    (tmp_path / "regs.jsonl").write_text(json.dumps(document) + "\n")
    (tmp_path / "b.json").write_text(json.dumps({
        "agents": {"schedule_agent": ["https://example.org/onto/travel#A"]},
        "tools": {"lookup_schedule": "https://example.org/onto/travel#B"}}))
    _, (alone,) = _trace(tmp_path, lines(request(*trip())))
    assert _uses(_record(alone, "schedule_agent"))[("tools", "lookup_schedule")] == "compatible"
    status, (report,) = _trace(tmp_path, lines(request(*trip())), "--registrations", "regs.jsonl",
                               "--profile", "cs-translation", "--bindings", "b.json")
    assert _uses(_record(report, "schedule_agent"))[("tools", "lookup_schedule")] == (
        "incompatible")
    assert status == 1
