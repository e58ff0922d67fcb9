"""mas-lab's OTel export (``instrumentation: otel_file``) read as the mas-lab events it stands for.

Each test states one behaviour of the reading: the schema's own example span, the eight span
names and what each becomes, which spans are mas-lab's (and what happens to the others), the
order the spans of a run are expanded in (the interval tree of spans written without ids),
hostile spans, and privacy. Requests are written by hand (tests/otlp_requests.py) and fed to
the installed ``ioa-check trace`` where a user would, or to the reading stage where only the
stage is meant. The SDK-made spans of the rail-assist scenario are tests/test_trace_otel.py's.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from operations import patched

from ioa_semantic.trace import maslab_otel
from ioa_semantic.trace.events import Fold, Source, runs
from ioa_semantic.trace.privacy import Disclosure, digest

from otlp_requests import TRACE, attribute, lines, maslab, maslab_trip, request, span
from support import IOA_CHECK, ROOT, SHARED

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

MANIFESTS = str(SHARED / "reference" / "mas-traces" / "mas-lab" / "trip-planner-manifests")
SEED = SHARED / "reference" / "seeds" / "mas-lab-trajectory-schema.txt"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "trace.md"

# The OTel export of the seeds' mas-lab-trajectory-schema.txt, section "OTel export
# alternative", verbatim: no traceId, spanId or parentSpanId, whole-second times.
SCHEMA_EXAMPLE = """{
  "resourceSpans": [
    {
      "scopeSpans": [
        {
          "spans": [
            {
              "name": "ToolCall",
              "startTimeUnixNano": "1771889092000000000",
              "endTimeUnixNano":   "1771889098000000000",
              "attributes": [
                { "key": "mas.agent.id",       "value": { "stringValue": "moderator" } },
                { "key": "mas.tool.name",      "value": { "stringValue": "delegate_to_schedule_agent" } },
                { "key": "mas.tool.arguments", "value": { "stringValue": "{}" } },
                { "key": "mas.tool.result",    "value": { "stringValue": "..." } }
              ]
            }
          ]
        }
      ]
    }
  ]
}"""


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run([IOA_CHECK, "trace", *args], capture_output=True, timeout=240,
                          cwd=cwd, check=False)
    assert proc.returncode != 70 and b"Traceback" not in proc.stderr, proc.stderr
    return proc


def _trace(cwd: Path, text: str, *args: str, name: str = "spans.jsonl"
           ) -> tuple[int, list[dict[str, Any]]]:
    """Exit status and the reports (summaries, each with its agents' records) of one file."""
    (cwd / name).write_text(text, encoding="utf-8")
    proc = _run(cwd, name, "--format", "json", "--no-shapes", *args)
    assert proc.returncode in (0, 1, 3), proc.stderr
    reports: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    for line in proc.stdout.decode().splitlines():
        item = json.loads(line)
        if "summary" in item:
            reports.append({**item["summary"], "records": records})
            records = []
        else:
            records.append(item)
    return proc.returncode, reports


def _record(report: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(r for r in report["records"] if r["agent"] == name)
    return found


def _uses(record: dict[str, Any]) -> dict[tuple[str, str | None], str]:
    out = {}
    for aspect, member in (("tools", "tool"), ("models", "model"), ("delegations", "agent")):
        for use in record["consumed"][aspect]:
            out[(aspect, use[member])] = use["verdict"]
    for use in record["provided"]:
        out[("provided", use["caller"])] = use["verdict"]
    return out


def _reasons(report: dict[str, Any], code: str | None = None) -> list[dict[str, Any]]:
    found = list(report["reasons"])
    for record in report["records"]:
        found += record["reasons"]
    return [r for r in found if code is None or r["code"] == code]


def _fold(*requests: dict[str, Any], include_content: bool = False) -> Fold:
    fold = Fold(include_content)
    for seq, value in enumerate(requests, 1):
        fold.value(seq, value)
    return fold


def _runs(*requests: dict[str, Any]) -> list[Any]:
    return runs(Source("spans", "spans", None, None), _fold(*requests), Disclosure())


# --- the schema's own example ------------------------------------------------------------------


def test_the_schema_s_example_span_is_the_seed_s_verbatim() -> None:
    if not SEED.is_file():
        pytest.skip("../shared/reference is absent")
    squeeze = re.compile(r"\s+")
    assert squeeze.sub("", SCHEMA_EXAMPLE) in squeeze.sub("", SEED.read_text(encoding="utf-8"))


def test_the_schema_s_example_span_reads_as_a_tool_call_of_moderator(tmp_path: Path) -> None:
    """A ToolCall of moderator named delegate_to_schedule_agent: without ids it is a call
    without an id, at the request's line; its arguments and result are digests."""
    status, (report,) = _trace(tmp_path, SCHEMA_EXAMPLE, name="otel.json")
    moderator = _record(report, "moderator")
    (use,) = moderator["consumed"]["tools"]
    assert use["tool"] == "delegate_to_schedule_agent"
    (call,) = use["calls"]
    assert call["id"] is None and call["line"] == 1
    assert call["input"] == digest("{}").as_json() and call["output"] == digest("...").as_json()
    assert report["agents"] == {"moderator": "indeterminate"}  # no declaration was given
    assert report["events"] == 1 and report["calls"] == {"tool": 1}
    assert not _reasons(report, "trace.incomplete") and status == 3
    # Judged against the trip planner's manifests: the workflow declares the delegation tool.
    status, (report,) = _trace(tmp_path, SCHEMA_EXAMPLE, "--manifests", MANIFESTS,
                               name="otel.json")
    assert report["agents"] == {"moderator": "compatible"} and status == 0
    assert report["records"][0]["consumed"]["tools"][0]["declaredBy"][0].endswith(
        "mas.yaml#workflow.nodes[moderator].delegates_to")


# --- the eight names ---------------------------------------------------------------------------


def test_each_of_the_eight_names_is_the_call_the_table_maps_it_to() -> None:
    """TaskCall and MASCall are MAS calls, AgentCall an agent call, LLMCall a model call,
    ToolCall a tool call, ProcessingCall, MemoryCall and RAGQuery processing calls (memory
    and retrieval counted by kind, never judged)."""
    spans = [
        maslab("TaskCall", {"mas.agent.id": "trip-planner"}, 1, None, start=0, end=20),
        maslab("MASCall", {"mas.agent.id": "trip-planner"}, 2, 1, start=0, end=20),
        maslab("AgentCall", {"mas.agent.id": "moderator"}, 3, 2, start=1, end=19),
        maslab("LLMCall", {"mas.agent.id": "moderator", "mas.llm.model": "gpt-4o",
                           "mas.llm.temperature": 0.2, "mas.llm.finish_reason": "stop",
                           "metrics.token.input": 10, "metrics.token.output": 5}, 4, 3,
               start=2, end=3),
        maslab("ToolCall", {"mas.agent.id": "moderator", "mas.tool.name": "lookup"}, 5, 3,
               start=4, end=5),
        maslab("ProcessingCall", {"mas.agent.id": "moderator",
                                  "mas.processing.type": "context_assembly",
                                  "mas.processing.name": "assemble"}, 6, 3, start=6, end=7),
        maslab("MemoryCall", {"mas.agent.id": "moderator", "mas.memory.type": "episodic",
                              "mas.memory.operation": "read"}, 7, 3, start=8, end=9),
        maslab("RAGQuery", {"mas.agent.id": "moderator", "mas.memory.type": "rag",
                            "mas.memory.query": "trains to Verdantia"}, 8, 3, start=10, end=11),
    ]
    (run,) = _runs(request(*spans))
    calls = {c.id: c for c in run.calls}
    assert {ident: calls[f"{ident:016x}"].cls for ident in range(1, 9)} == {
        1: "mas", 2: "mas", 3: "agent", 4: "llm", 5: "tool", 6: "processing", 7: "processing",
        8: "processing"}
    model = calls[f"{4:016x}"]
    assert (model.target, model.temperature, model.finish) == ("gpt-4o", 0.2, "stop")
    assert model.tokens == {"prompt": 10, "completion": 5, "total": 15}
    assert calls[f"{5:016x}"].target == "lookup"
    assert [calls[f"{i:016x}"].target for i in (6, 7, 8)] == [
        "context_assembly", "memory_call", "rag_query"]
    assert calls[f"{8:016x}"].input == digest("trains to Verdantia")
    assert run.mas == "trip-planner" and run.run_id == TRACE and run.unit == "spans"
    assert run.kinds == {"AgentCall": 1, "LLMCall": 1, "MASCall": 1, "MemoryCall": 1,
                         "ProcessingCall": 1, "RAGQuery": 1, "TaskCall": 1, "ToolCall": 1}
    # The parents are the parent spans'; times are the spans' own, exact.
    assert calls[f"{3:016x}"].parent == f"{2:016x}" and calls[f"{1:016x}"].parent is None
    assert Decimal(calls[f"{4:016x}"].start) == Decimal("1784619199")


def test_memory_and_retrieval_are_counted_never_judged(tmp_path: Path) -> None:
    spans = [*maslab_trip(),
             maslab("MemoryCall", {"mas.agent.id": "schedule_agent", "mas.memory.type": "episodic"},
                    8, 5, start=6, end=7),
             maslab("RAGQuery", {"mas.agent.id": "schedule_agent"}, 9, 5, start=7, end=8)]
    status, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", MANIFESTS)
    schedule = _record(report, "schedule_agent")
    assert schedule["consumed"]["processing"] == {"memory_call": 1, "rag_query": 1}
    assert schedule["verdict"] == "compatible" and status == 0


def test_the_trip_planner_as_mas_lab_spans_with_ids_audits_like_its_events(
        tmp_path: Path) -> None:
    """Spans with ids name their calls by span id and their callers by parent span id: the
    delegation through delegate_to_schedule_agent is judged, in whatever order and however
    many requests the spans come."""
    spans = maslab_trip()
    text = lines(request(*reversed(spans[3:])), request(*spans[:3]))
    status, (report,) = _trace(tmp_path, text, "--manifests", MANIFESTS)
    assert status == 0 and report["run"] == TRACE and report["events"] == 7
    assert report["agents"] == {"moderator": "compatible", "schedule_agent": "compatible"}
    assert _uses(_record(report, "moderator")) == {
        ("tools", "delegate_to_schedule_agent"): "compatible",
        ("models", "azure/gpt-4o"): "compatible",
        ("delegations", "schedule_agent"): "compatible", ("provided", "mas"): "compatible"}
    schedule = _record(report, "schedule_agent")
    assert _uses(schedule)[("provided", "moderator")] == "compatible"
    (lookup,) = schedule["consumed"]["tools"][0]["calls"]
    assert lookup["id"] == f"{7:016x}" and lookup["line"] == 2
    assert report["calls"] == {"agent": 2, "llm": 2, "mas": 1, "tool": 2}


def test_an_undeclared_tool_in_mas_lab_spans_is_incompatible_naming_its_span(
        tmp_path: Path) -> None:
    spans = [*maslab_trip(), maslab("ToolCall", {"mas.agent.id": "schedule_agent",
                                                 "mas.tool.name": "wire_money"}, 8, 5,
                                    start=6, end=7)]
    status, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", MANIFESTS)
    assert status == 1 and report["agents"]["schedule_agent"] == "incompatible"
    (reason,) = _reasons(report, "capability.undeclared-tool")
    assert "wire_money" in reason["message"] and f"{8:016x}" in reason["message"]


def test_the_converter_s_stand_ins_for_not_recorded_are_no_names(tmp_path: Path) -> None:
    """mas-lab writes mas.llm.model "unknown" for a model call that records no model,
    mas.tool.name "tool" for a tool it could not name, mas.agent.id "unknown" for an event
    without an agent: each is evidence missing, never a model, tool or agent of that name."""
    spans = [*maslab_trip(),
             maslab("LLMCall", {"mas.agent.id": "schedule_agent", "mas.llm.model": "unknown"},
                    8, 5, start=6, end=7),
             maslab("ToolCall", {"mas.agent.id": "schedule_agent", "mas.tool.name": "tool"},
                    9, 5, start=7, end=8),
             maslab("ToolCall", {"mas.agent.id": "unknown", "mas.tool.name": "lookup_schedule"},
                    10, None, start=7, end=8)]
    status, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", MANIFESTS)
    uses = _uses(_record(report, "schedule_agent"))
    assert uses[("models", None)] == uses[("tools", None)] == "indeterminate"
    assert ("models", "unknown") not in uses and ("tools", "tool") not in uses
    codes = {r["code"] for r in _reasons(report)}
    assert {"capability.model-unknown", "capability.tool-unknown",
            "capability.caller-unknown"} <= codes
    assert "unknown" not in report["agents"] and status == 3


# --- which spans are mas-lab's -----------------------------------------------------------------


def test_a_mas_lab_call_name_without_mas_attributes_is_reported_not_read(tmp_path: Path) -> None:
    """A span named ToolCall with no mas.* attribute (and no GenAI operation): what it called
    and for whom is not recorded, so it is reported and the run cannot be compatible."""
    bare = maslab("ToolCall", {}, 8, 5, start=6, end=7)
    status, (report,) = _trace(tmp_path, lines(request(*maslab_trip(), bare)),
                               "--manifests", MANIFESTS)
    (reason,) = _reasons(report, "trace.span-unmapped")
    assert reason["path"] == "/0/resourceSpans/0/scopeSpans/0/spans/7"
    assert "ToolCall" in reason["message"]
    assert report["verdict"] == "indeterminate" and status == 3
    assert set(report["agents"]) == {"moderator", "schedule_agent"}  # the rest is judged


def test_mas_attributes_under_an_unknown_name_are_reported_with_pointer_and_name(
        tmp_path: Path) -> None:
    """A span with mas.* attributes named as no mas-lab span the table knows (SkillExecution
    is one mas-lab writes, for a skill the audit cannot judge): a reason naming it by its JSON
    Pointer and name; nesting passes through it; the rest is judged, never compatible."""
    skill = maslab("SkillExecution", {"mas.agent.id": "schedule_agent",
                                      "mas.skill.name": "plan"}, 8, 5, start=6, end=7)
    under = maslab("ToolCall", {"mas.agent.id": "schedule_agent",
                                "mas.tool.name": "lookup_schedule"}, 9, 8, start=6, end=7)
    status, (report,) = _trace(tmp_path, lines(request(*maslab_trip(), skill, under)),
                               "--manifests", MANIFESTS)
    (reason,) = _reasons(report, "trace.span-name-unknown")
    assert reason["path"] == "/0/resourceSpans/0/scopeSpans/0/spans/7"
    assert '"SkillExecution"' in reason["message"]
    assert report["unknownKinds"] == {"SkillExecution": 1}
    assert "trace.incomplete" in {r["code"] for r in _reasons(report)}
    assert report["verdict"] == "indeterminate" and status == 3
    (run,) = _runs(request(*maslab_trip(), skill, under))
    (call,) = [c for c in run.calls if c.id == f"{9:016x}"]
    assert call.parent == f"{5:016x}"  # through the unknown span, to schedule_agent's call


def test_mas_lab_s_own_non_call_spans_are_links_without_a_word(tmp_path: Path) -> None:
    """Annotations, governance events, context contributions, workers, network calls and the
    topology span (named after the application, mas.boundary Graph) are no calls: nesting
    passes through them, and nothing is reported."""
    between = [
        maslab("CallAnnotation", {"mas.boundary": "CallAnnotation", "mas.agent.id": "moderator",
                                  "mas.annotation.kind": "routing"}, 20, 4, start=2, end=2),
        maslab("NetworkCall", {"mas.boundary": "NetworkCall", "mas.agent.id": "moderator",
                               "mas.network.url": "https://a.example"}, 21, 20, start=2, end=8),
        maslab("trip-planner.graph", {"mas.boundary": "Graph"}, 22, 1, start=0, end=0),
        maslab("GovernanceEvent", {"mas.boundary": "GovernanceEvent"}, 23, 2, start=1, end=1),
    ]
    spans = maslab_trip()
    # schedule_agent's call now runs under the annotation and the network call.
    spans[3] = maslab("AgentCall", {"mas.agent.id": "schedule_agent"}, 5, 21, start=2, end=8)
    status, (report,) = _trace(tmp_path, lines(request(*spans, *between)),
                               "--manifests", MANIFESTS)
    assert status == 0, report["reasons"]
    assert _uses(_record(report, "moderator"))[("delegations", "schedule_agent")] == "compatible"
    assert report["unknownKinds"] == {} and report["events"] == 11
    assert report["calls"] == {"agent": 2, "llm": 2, "mas": 1, "tool": 2}


def test_a_name_contradicted_by_mas_boundary_is_not_read_as_either(tmp_path: Path) -> None:
    spans = maslab_trip()
    spans[2] = maslab("ToolCall", {"mas.boundary": "LLMCall", "mas.agent.id": "schedule_agent",
                                   "mas.tool.name": "wire_money"}, 7, 5, start=4, end=6)
    status, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", MANIFESTS)
    (reason,) = _reasons(report, "trace.span-name-unknown")
    assert "ToolCall" in reason["message"] and "LLMCall" in reason["message"]
    assert reason["path"].endswith("/spans/2") and status == 3


def test_a_genai_span_with_stray_mas_attributes_is_the_genai_conventions(tmp_path: Path) -> None:
    from otlp_requests import trip

    spans = trip()
    spans[6]["attributes"].append(attribute("mas.agent.id", "intruder"))
    status, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", MANIFESTS)
    assert status == 0 and set(report["agents"]) == {"moderator", "schedule_agent"}


def test_a_file_of_both_conventions_reads_each_trace_by_its_own(tmp_path: Path) -> None:
    """GenAI spans of one trace and mas-lab spans of another in one file: two runs."""
    from otlp_requests import trip

    other = "0123456789abcdef0123456789abcdef"
    text = lines(request(*trip(), *maslab_trip(trace=other)))
    status, reports = _trace(tmp_path, text, "--manifests", MANIFESTS)
    assert sorted(r["run"] for r in reports) == sorted([TRACE, other])
    assert all(r["verdict"] == "compatible" for r in reports) and status == 0


def test_a_genai_call_in_a_trace_of_mas_lab_spans_is_not_read(tmp_path: Path) -> None:
    """mas-lab's LLMCall with a GenAI chat span beneath it (an instrumented client library)
    may be one call written twice: the GenAI call is reported and not used; a GenAI span of
    no call (HTTP) is passed through."""
    chat = span(30, 3, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})
    http = span(31, 5, {"http.request.method": "GET"}, kind=3)
    spans = maslab_trip()
    spans[2] = maslab("ToolCall", {"mas.agent.id": "schedule_agent",
                                   "mas.tool.name": "lookup_schedule"}, 7, 31, start=4, end=6)
    status, (report,) = _trace(tmp_path, lines(request(*spans, chat, http)),
                               "--manifests", MANIFESTS)
    (reason,) = _reasons(report, "trace.convention-mixed")
    assert f"{30:016x}" in reason["message"]
    assert report["verdict"] == "indeterminate" and status == 3
    assert report["calls"] == {"agent": 2, "llm": 2, "mas": 1, "tool": 2}
    (run,) = _runs(request(*spans, chat, http))
    (lookup,) = [c for c in run.calls if c.id == f"{7:016x}"]
    assert lookup.parent == f"{5:016x}"


def test_mas_lab_spans_of_no_call_in_a_genai_trace_leave_it_the_genai_reading_s(
        tmp_path: Path) -> None:
    """A trace of GenAI calls with a mas-lab annotation between an agent and its tool stays a
    GenAI run, the annotation a link; a span of an unknown name there is still reported."""
    from otlp_requests import trip

    spans = trip()
    spans[6]["parentSpanId"] = f"{20:016x}"  # lookup_schedule under the annotation
    note = maslab("CallAnnotation", {"mas.agent.id": "schedule_agent"}, 20, 6)
    status, (report,) = _trace(tmp_path, lines(request(*spans, note)), "--manifests", MANIFESTS)
    assert status == 0 and report["calls"] == {"agent": 2, "llm": 1, "mas": 1, "tool": 2}
    assert _uses(_record(report, "schedule_agent"))[("tools", "lookup_schedule")] == "compatible"
    odd = maslab("Flood", {"mas.agent.id": "schedule_agent"}, 20, 6)
    status, (report,) = _trace(tmp_path, lines(request(*spans, odd)), "--manifests", MANIFESTS,
                               name="odd.jsonl")
    assert [r["path"] for r in _reasons(report, "trace.span-name-unknown")] == [
        "/0/resourceSpans/0/scopeSpans/0/spans/7"]
    assert _uses(_record(report, "schedule_agent"))[("tools", "lookup_schedule")] == "compatible"
    assert report["verdict"] == "indeterminate" and status == 3


def test_a_trace_whose_spans_are_all_unmapped_says_so(tmp_path: Path) -> None:
    """No more silent "0 agents": a trace of no call gets one reason saying why."""
    http = [span(1, None, {"http.request.method": "GET"}), span(2, 1, {"db.system": "x"})]
    _, (report,) = _trace(tmp_path, lines(request(*http)))
    (reason,) = _reasons(report, "trace.all-spans-unmapped")
    assert "2 spans" in reason["message"]
    # No agent acts in it (issue 36, item 7): said so, and not indeterminate for it.
    assert _reasons(report, "trace.no-agents") and report["verdict"] == "compatible"
    notes = [maslab("CallAnnotation", {"mas.agent.id": "moderator"}, 1, None),
             maslab("Worker", {"mas.agent.id": "moderator"}, 2, 1)]
    _, (report,) = _trace(tmp_path, lines(request(*notes)), name="notes.jsonl")
    (reason,) = _reasons(report, "trace.all-spans-unmapped")
    assert "CallAnnotation x1" in reason["message"] and "Worker x1" in reason["message"]


# --- spans without ids: the order of their events ----------------------------------------------


def _stack_parents(records: dict[str, dict[str, Any]]) -> dict[str, str | None]:
    """Each span's caller as a stack reads the planned events (a start opens a call under the
    innermost open one, an end closes the innermost): the schema's interval tree. The events
    must nest properly."""
    stack: list[str] = []
    parents: dict[str, str | None] = {}
    for record, event in maslab_otel.Plan(records, {}).events():
        name = record["values"]["tool"]
        if event["kind"].endswith("_start"):
            parents[name] = stack[-1] if stack else None
            stack.append(name)
        else:
            assert stack.pop() == name
    return parents


def _idless(intervals: dict[str, tuple[int, int]], order: list[str]) -> dict[str, dict[str, Any]]:
    """Records of id-less tool spans named after their keys, written in ``order``."""
    spans = [maslab("ToolCall", {"mas.agent.id": "a", "mas.tool.name": key}, start=s, end=e)
             for key in order for s, e in [intervals[key]]]
    return _fold(request(*spans)).maslab


@st.composite
def trees(draw: Any) -> tuple[dict[str, tuple[int, int]], dict[str, str | None], list[str]]:
    """Intervals nested as a random tree, every instant distinct (the ties are the tests
    below): the opening and closing of a random well-nested sequence; and a file order."""
    intervals: dict[str, tuple[int, int]] = {}
    parents: dict[str, str | None] = {}
    stack: list[tuple[str, int]] = []
    instant = 0
    count = draw(st.integers(1, 24))
    opened = 0
    while opened < count or stack:
        if opened < count and (not stack or draw(st.booleans())):
            name = f"s{opened}"
            parents[name] = stack[-1][0] if stack else None
            stack.append((name, instant))
            opened += 1
        else:
            name, start = stack.pop()
            intervals[name] = (start, instant)
        instant += 1
    order = draw(st.permutations(sorted(intervals)))
    return intervals, parents, list(order)


@settings(max_examples=120, deadline=None)
@given(trees())
def test_spans_without_ids_are_fed_as_their_interval_tree(
        tree: tuple[dict[str, tuple[int, int]], dict[str, str | None], list[str]]) -> None:
    intervals, parents, order = tree
    assert _stack_parents(_idless(intervals, order)) == parents


def test_at_one_instant_an_end_comes_before_a_start() -> None:
    """A span ending when another begins is its sibling, not its caller."""
    intervals = {"p": (0, 10), "a": (2, 5), "b": (5, 8)}
    assert _stack_parents(_idless(intervals, ["a", "b", "p"])) == {"p": None, "a": "p", "b": "p"}


def test_of_two_spans_of_one_interval_the_later_written_is_the_caller() -> None:
    """Exporters write a span when it ends, so of two spans of the same interval (whole
    seconds), the one written later ended last: it encloses the other."""
    intervals = {"outer": (2, 8), "inner": (2, 8), "leaf": (3, 4)}
    assert _stack_parents(_idless(intervals, ["leaf", "inner", "outer"])) == {
        "outer": None, "inner": "outer", "leaf": "inner"}
    assert _stack_parents(_idless(intervals, ["leaf", "outer", "inner"])) == {
        "inner": None, "outer": "inner", "leaf": "outer"}


def test_a_span_of_no_duration_encloses_nothing() -> None:
    """Two instantaneous spans at one instant are siblings; one at its sibling's end comes
    after it; one at the start of a longer span is inside it (a longer span starting at an
    instant encloses what starts there)."""
    intervals = {"p": (0, 10), "a": (2, 5), "z": (5, 5), "y": (6, 6), "x": (6, 6),
                 "c": (7, 9), "w": (7, 7)}
    assert _stack_parents(_idless(intervals, list(intervals))) == {
        "p": None, "a": "p", "z": "p", "y": "p", "x": "p", "c": "p", "w": "c"}


def test_the_trip_without_ids_is_fed_as_its_tree_in_whole_seconds() -> None:
    """The trip planner as mas-lab writes it without ids, with whole-second times: the
    moderator's call shares the MAS call's interval, the delegation tool the delegated
    agent's; the order of the file (children first) tells which encloses which."""
    records = _fold(request(*maslab_trip(ids=False))).maslab
    stack: list[str] = []
    seen = []
    for record, event in maslab_otel.Plan(records, {}).events():
        label = f"{record['name']}:{record['values'].get('agent')}"
        if event["kind"].endswith("_start"):
            seen.append((label, stack[-1] if stack else None))
            stack.append(label)
        else:
            stack.pop()
    assert seen == [
        ("TaskCall:trip-planner", None), ("AgentCall:moderator", "TaskCall:trip-planner"),
        ("LLMCall:moderator", "AgentCall:moderator"), ("ToolCall:moderator", "AgentCall:moderator"),
        ("AgentCall:schedule_agent", "ToolCall:moderator"),
        ("LLMCall:schedule_agent", "AgentCall:schedule_agent"),
        ("ToolCall:schedule_agent", "AgentCall:schedule_agent")]


def test_spans_without_ids_carry_no_call_ids_and_their_agents_own_their_uses(
        tmp_path: Path) -> None:
    _, (report,) = _trace(tmp_path, lines(request(*maslab_trip(ids=False))),
                          "--manifests", MANIFESTS)
    tools = _uses(_record(report, "schedule_agent"))
    assert tools[("tools", "lookup_schedule")] == "compatible"
    calls = [c for use in _record(report, "schedule_agent")["consumed"]["tools"]
             for c in use["calls"]]
    assert all(c["id"] is None and c["line"] == 1 for c in calls)
    assert report["run"] == "f52df92b"  # mas-lab's run id, the spans naming no trace


def test_spans_without_ids_judge_the_delegation_as_with_ids(tmp_path: Path) -> None:
    status, (report,) = _trace(tmp_path, lines(request(*maslab_trip(ids=False))),
                               "--manifests", MANIFESTS)
    assert _uses(_record(report, "schedule_agent"))[("provided", "moderator")] == "compatible"
    assert _uses(_record(report, "moderator"))[("delegations", "schedule_agent")] == (
        "compatible")
    assert status == 0


# --- hostile spans -----------------------------------------------------------------------------


def _hostile(tmp_path: Path, damaged: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status, (report,) = _trace(tmp_path, lines(request(*maslab_trip(), damaged)),
                               "--manifests", MANIFESTS)
    assert set(report["agents"]) >= {"moderator", "schedule_agent"}, report  # the rest judged
    return status, report


@pytest.mark.parametrize(("name", "shown"), [
    (None, "has no name"), (7, "not a string"), ({"n": 1}, "not a string"),
    ("x" * 100_000, '"' + "x" * 64 + "…\""),
])
def test_a_span_without_a_usable_name_is_reported_at_its_place(
        tmp_path: Path, name: Any, shown: str) -> None:
    damaged = maslab(name, {"mas.agent.id": "schedule_agent", "mas.tool.name": "wire_money"},
                     8, 5, start=6, end=7)
    status, report = _hostile(tmp_path, damaged)
    (reason,) = _reasons(report, "trace.span-name-unknown")
    assert reason["path"] == "/0/resourceSpans/0/scopeSpans/0/spans/7"
    assert shown in reason["message"] and len(reason["message"]) < 400
    assert report["verdict"] != "compatible" and status == 3


@pytest.mark.parametrize(("key", "value", "effect"), [
    ("mas.tool.name", {"intValue": "7"}, "capability.tool-unknown"),
    ("mas.tool.name", {"arrayValue": {"values": [{"stringValue": "wire_money"}]}},
     "capability.tool-unknown"),
    ("mas.agent.id", {"boolValue": True}, "capability.caller-unknown"),
    ("mas.tool.name", {"stringValue": 5}, "capability.tool-unknown"),
])
def test_a_mas_attribute_of_the_wrong_type_is_reported_and_not_a_guess(
        tmp_path: Path, key: str, value: dict[str, Any], effect: str) -> None:
    damaged = maslab("ToolCall", {"mas.agent.id": "schedule_agent",
                                  "mas.tool.name": "wire_money"}, 8, None, start=6, end=7)
    index = [a["key"] for a in damaged["attributes"]].index(key)
    damaged["attributes"][index]["value"] = value
    status, report = _hostile(tmp_path, damaged)
    (reason,) = _reasons(report, "trace.attribute-malformed")
    assert reason["path"] == f"/0/resourceSpans/0/scopeSpans/0/spans/7/attributes/{index}"
    assert key in reason["message"]
    assert effect in {r["code"] for r in _reasons(report)}
    assert report["verdict"] == "indeterminate" and status == 3


def test_counts_and_numbers_of_the_wrong_type_are_left_out() -> None:
    damaged = maslab("LLMCall", {"mas.agent.id": "a", "mas.llm.model": "m",
                                 "metrics.token.input": -3, "mas.llm.temperature": "hot",
                                 "metrics.token.output": 4}, 8, None)
    fold = _fold(request(damaged))
    reasons = [p[2] for p in fold.problems]
    assert any("metrics.token.input" in r for r in reasons)
    assert any("mas.llm.temperature" in r for r in reasons)
    (run,) = runs(Source("x", "x", None, None), fold, Disclosure())
    (call,) = run.calls
    assert call.tokens == {"completion": 4} and call.temperature is None


def test_one_attribute_given_twice_differently_is_not_used(tmp_path: Path) -> None:
    damaged = maslab("ToolCall", {"mas.agent.id": "schedule_agent",
                                  "mas.tool.name": "lookup_schedule"}, 8, 5, start=6, end=7)
    damaged["attributes"].append(attribute("mas.tool.name", "wire_money"))
    status, report = _hostile(tmp_path, damaged)
    assert _reasons(report, "trace.attribute-malformed")
    assert _uses(_record(report, "schedule_agent"))[("tools", None)] == "indeterminate"
    assert status == 3


def test_a_span_id_given_twice_with_other_attributes_is_ambiguous_and_a_retry_is_not(
        tmp_path: Path) -> None:
    spans = maslab_trip()
    status, (report,) = _trace(tmp_path, lines(request(*spans), request(spans[2])),
                               "--manifests", MANIFESTS)
    assert status == 0 and report["events"] == 7
    forged = copy.deepcopy(spans[2])
    forged["attributes"][2] = attribute("mas.tool.name", "wire_money")
    status, (report,) = _trace(tmp_path, lines(request(*spans), request(forged)),
                               "--manifests", MANIFESTS, name="forged.jsonl")
    (reason,) = _reasons(report, "trace.call-conflict")
    assert reason["path"] == "/1/resourceSpans/0/scopeSpans/0/spans/0"
    assert "wire_money" not in json.dumps(report) and status == 3
    assert _uses(_record(report, "schedule_agent")).get(("tools", "lookup_schedule")) is None
    # A third copy, other again: still one span, one reason.
    third = copy.deepcopy(forged)
    third["attributes"][2] = attribute("mas.tool.name", "issue_refund")
    _, (report,) = _trace(tmp_path, lines(request(*spans), request(forged), request(third)),
                          "--manifests", MANIFESTS, name="third.jsonl")
    assert report["events"] == 7 and len(_reasons(report, "trace.call-conflict")) == 1


def test_mas_status_contradicting_the_status_code_leaves_the_outcome_unknown() -> None:
    damaged = maslab("ToolCall", {"mas.agent.id": "a", "mas.tool.name": "t",
                                  "mas.status": "success"}, 8, None, status=2)
    fold = _fold(request(damaged))
    assert [p[0] for p in fold.problems] == ["trace.attribute-malformed"]
    (run,) = runs(Source("x", "x", None, None), fold, Disclosure())
    assert run.calls[0].status is None
    agreeing = maslab("ToolCall", {"mas.agent.id": "a", "mas.tool.name": "t",
                                   "mas.status": "timeout"}, 8, None, status=2)
    (run,) = _runs(request(agreeing))
    assert run.calls[0].status == "timeout"


@pytest.mark.parametrize(("damage", "code"), [
    (lambda s: s.update(endTimeUnixNano="1"), "trace.attribute-malformed"),
    (lambda s: s.update(startTimeUnixNano="yesterday"), "trace.attribute-malformed"),
    (lambda s: s.update(spanId="00000000000000zz"), "trace.event-malformed"),
    (lambda s: s.pop("traceId"), "trace.event-malformed"),
    (lambda s: s.update(parentSpanId="not-an-id"), "trace.event-malformed"),
    (lambda s: s.update(attributes={"mas.tool.name": "x"}), "trace.attribute-malformed"),
    (lambda s: s.update(status={"code": 9}), "trace.attribute-malformed"),
])
def test_a_malformed_mas_lab_span_is_reported_and_the_rest_read(
        tmp_path: Path, damage: Any, code: str) -> None:
    damaged = maslab("ToolCall", {"mas.agent.id": "schedule_agent",
                                  "mas.tool.name": "lookup_schedule"}, 8, 5, start=6, end=7)
    damage(damaged)
    _, report = _hostile(tmp_path, damaged)
    found = _reasons(report, code)
    assert found and found[0]["path"].startswith("/0/resourceSpans/0/scopeSpans/0/spans/7")


def test_a_span_without_ids_nor_times_is_left_out(tmp_path: Path) -> None:
    idless = maslab("ToolCall", {"mas.agent.id": "schedule_agent",
                                 "mas.tool.name": "wire_money"})
    del idless["startTimeUnixNano"]
    status, (report,) = _trace(tmp_path, lines(request(*maslab_trip(), idless)),
                               "--manifests", MANIFESTS)
    (reason,) = _reasons(report, "trace.event-malformed")
    assert reason["path"] == "/0/resourceSpans/0/scopeSpans/0/spans/7"
    assert report["verdict"] == "indeterminate" and status == 3


def test_mas_lab_spans_that_are_each_other_s_parents_have_no_known_caller(
        tmp_path: Path) -> None:
    spans = [*maslab_trip(),
             maslab("AgentCall", {"mas.agent.id": "intruder"}, 8, 9, start=6, end=7),
             maslab("ToolCall", {"mas.agent.id": "intruder", "mas.tool.name": "delegate_to_x"},
                    9, 8, start=6, end=7)]
    status, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", MANIFESTS)
    assert _reasons(report, "trace.parent-cycle")
    assert _uses(_record(report, "intruder")).get(("provided", None)) == "indeterminate"
    assert status != 0


def test_a_flood_of_spans_in_one_request_is_read_span_by_span(tmp_path: Path) -> None:
    """3,000 spans in one request, every 100th of them hostile (no name, a name not a string,
    an unknown name): each hostile span gets its own reason at its own pointer; every other
    tool call is judged."""
    spans = [maslab("AgentCall", {"mas.agent.id": "moderator"}, 1, None, start=0, end=10_000)]
    hostile = {}
    for n in range(2, 3002):
        name: Any = "ToolCall"
        if n % 100 == 0:
            name = (None, 5, "Flood")[n // 100 % 3]
            hostile[len(spans)] = name
        spans.append(maslab(name, {"mas.agent.id": "moderator",
                                   "mas.tool.name": "delegate_to_schedule_agent"}, n, 1,
                            start=n, end=n))
    status, (report,) = _trace(tmp_path, lines(request(*spans)), "--manifests", MANIFESTS)
    reasons = _reasons(report, "trace.span-name-unknown")
    assert sorted(r["path"] for r in reasons) == sorted(
        f"/0/resourceSpans/0/scopeSpans/0/spans/{i}" for i in hostile)
    (use,) = _record(report, "moderator")["consumed"]["tools"]
    assert len(use["calls"]) == 3000 - len(hostile) and use["verdict"] == "compatible"
    assert report["verdict"] == "indeterminate" and status == 3


@patched
def test_a_run_of_mas_lab_spans_costs_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: each span is two events fed to the fold, and the walk from a call
    up through a chain of links to its caller is remembered for every link it passed, so
    twice the spans under twice the chain cost twice the steps."""
    fed = []
    steps = []
    original_event = Fold.event

    def counted_event(self: Fold, seq: int, kind: str, event: dict[str, Any]) -> None:
        fed.append(kind)
        original_event(self, seq, kind, event)

    class Counted(dict):  # type: ignore[type-arg]
        def __getitem__(self, key: Any) -> Any:
            steps.append(key)
            return super().__getitem__(key)

    original_init = maslab_otel.Plan.__init__

    def counted_init(self: maslab_otel.Plan, *args: Any) -> None:
        original_init(self, *args)
        self._through = Counted(self._through)

    monkeypatch.setattr(Fold, "event", counted_event)
    monkeypatch.setattr(maslab_otel.Plan, "__init__", counted_init)

    def cost(size: int) -> tuple[int, int]:
        fed.clear()
        steps.clear()
        spans = [maslab("AgentCall", {"mas.agent.id": "a"}, 1, None, start=0, end=10 * size)]
        spans += [maslab("CallAnnotation", {"mas.agent.id": "a"}, i, i - 1, start=1, end=1)
                  for i in range(2, size)]
        spans += [maslab("ToolCall", {"mas.agent.id": "a", "mas.tool.name": "t"}, size + i,
                         size - 1, start=2, end=3) for i in range(size)]
        (run,) = _runs(request(*spans))
        assert all(c.parent == f"{1:016x}" for c in run.calls if c.cls == "tool")
        return len(fed), len(steps)

    small, large = cost(1000), cost(2000)
    assert small[0] == 2 * 1001 and large[0] == 2 * 2001
    assert large[1] <= 2 * small[1] + 10 and small[1] <= 1000


# --- privacy -----------------------------------------------------------------------------------


def test_attributes_outside_the_table_are_never_read_nor_named(tmp_path: Path) -> None:
    secret = maslab("ToolCall", {"mas.agent.id": "schedule_agent",
                                 "mas.tool.name": "lookup_schedule",
                                 "mas.failure.reason": "TOPSECRET-1",
                                 "mas.llm.thinking": "TOPSECRET-2",
                                 "gen_ai.system_instructions": "TOPSECRET-3",
                                 "mas.secret.whatever": "TOPSECRET-4",
                                 "mas.tool.arguments": "an argument the audit must not copy"},
                    8, 5, start=6, end=7)
    secret["attributes"].append({"key": "mas.custom", "value": {"stringValue": 5}})  # malformed
    (tmp_path / "s.jsonl").write_text(lines(request(*maslab_trip(), secret)))
    for extra in ((), ("--include-content",)):
        out = _run(tmp_path, "s.jsonl", "--format", "json", "--no-shapes", *extra).stdout.decode()
        for hidden in ("TOPSECRET", "mas.failure.reason", "mas.llm.thinking", "mas.secret",
                       "mas.custom", "system_instructions"):
            assert hidden not in out, hidden
        assert ("an argument the audit must not copy" in out) == bool(extra)
    assert "a prompt the audit must not copy" not in _run(
        tmp_path, "s.jsonl", "--format", "json", "--no-shapes", "--emit-kg", "kg.ttl"
    ).stdout.decode() + (tmp_path / "kg.ttl").read_text()


def test_opaque_ids_withhold_agents_and_calls_of_mas_lab_spans(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text(lines(request(*maslab_trip())))
    out = _run(tmp_path, "s.jsonl", "--format", "json", "--no-shapes", "--opaque-ids",
               "--manifests", MANIFESTS).stdout.decode()
    assert "schedule_agent" not in out and f"{7:016x}" not in out and TRACE not in out
    assert "lookup_schedule" in out


# --- checkpoints and several inputs ------------------------------------------------------------


def test_a_fold_of_mas_lab_spans_restored_from_its_deltas_builds_the_same_runs() -> None:
    requests = [request(*maslab_trip()[:3]), request(*maslab_trip()[3:]),
                request(*maslab_trip(ids=False, trace=TRACE))]
    whole = _fold(*requests)
    first = Fold()
    for seq, value in enumerate(requests[:2], 1):
        first.value(seq, value)
    resumed = Fold()
    resumed.restore(json.loads(json.dumps(first.delta())))
    resumed.value(3, requests[2])
    assert json.dumps(resumed.delta()["maslab"])  # plain JSON
    source = Source("x", "x", None, None)
    assert runs(source, resumed, Disclosure()) == runs(source, whole, Disclosure())
    # A checkpoint holds digests only, unless content was asked for.
    assert "a prompt the audit must not copy" not in json.dumps(first.delta())
    with_content = _fold(requests[0], include_content=True)
    assert "a prompt the audit must not copy" in json.dumps(with_content.delta())


def test_state_over_mas_lab_spans_reads_appended_requests_incrementally(tmp_path: Path) -> None:
    spans = maslab_trip()
    (tmp_path / "live.jsonl").write_text(lines(request(*spans[:3])))
    args = ["live.jsonl", "--manifests", MANIFESTS, "--format", "json", "--no-shapes",
            "--state", "state"]
    _run(tmp_path, *args)
    with open(tmp_path / "live.jsonl", "a") as handle:
        handle.write(lines(request(*spans[3:])))
    resumed = _run(tmp_path, *args)
    (tmp_path / "whole.jsonl").write_text(lines(request(*spans[:3]), request(*spans[3:])))
    whole = _run(tmp_path, "whole.jsonl", "--manifests", MANIFESTS, "--format", "json",
                 "--no-shapes")
    assert resumed.returncode == whole.returncode == 0
    assert resumed.stdout.replace(b"live.jsonl", b"whole.jsonl") == whole.stdout


def test_a_mas_lab_trace_in_two_files_is_one_run_and_a_conflict_across_them_is_named(
        tmp_path: Path) -> None:
    spans = maslab_trip()
    (tmp_path / "a.jsonl").write_text(lines(request(*spans[:4])))
    (tmp_path / "b.jsonl").write_text(lines(request(*spans[4:])))
    proc = _run(tmp_path, "a.jsonl", "b.jsonl", "--manifests", MANIFESTS, "--format", "json",
                "--no-shapes")
    summary = json.loads(proc.stdout.decode().splitlines()[-1])["summary"]
    assert proc.returncode == 0 and summary["source"] == "a.jsonl, b.jsonl"
    forged = copy.deepcopy(spans[2])
    forged["attributes"][2] = attribute("mas.tool.name", "wire_money")
    (tmp_path / "b.jsonl").write_text(lines(request(*spans[4:], forged)))
    proc = _run(tmp_path, "a.jsonl", "b.jsonl", "--manifests", MANIFESTS, "--format", "json",
                "--no-shapes")
    assert proc.returncode == 3 and b"trace.call-conflict" in proc.stdout


# --- the table ---------------------------------------------------------------------------------


def test_the_table_is_the_one_place_mas_lab_attribute_names_live() -> None:
    table = maslab_otel.table()
    assert sorted(table["calls"]) == sorted(["ToolCall", "LLMCall", "AgentCall", "TaskCall",
                                             "MASCall", "RAGQuery", "MemoryCall",
                                             "ProcessingCall"])
    assert {row["class"] for row in table["calls"].values()} == {
        "mas", "agent", "llm", "tool", "processing"}
    # The source, not the installed module: the compiled build's is a native extension.
    trace = ROOT / "ioa_semantic" / "trace"
    code = (trace / "maslab_otel.py").read_text() + (trace / "events.py").read_text()
    for row in table["attributes"].values():
        for name in row["names"]:
            assert f'"{name}' not in code and f"'{name}" not in code, name


def test_every_name_and_attribute_of_the_table_is_documented() -> None:
    page = DOCS.read_text()
    section = page[page.index("## mas-lab's OTel export"):]
    section = section[:section.index("\n## ", 1)]
    table = maslab_otel.table()
    for name in [*table["calls"], *table["links"]]:
        assert f"`{name}`" in section, name
    for row in table["attributes"].values():
        for name in row["names"]:
            assert f"`{name}`" in section, name
    assert page.index("## mas-lab's OTel export") > page.index("## OpenTelemetry traces")
