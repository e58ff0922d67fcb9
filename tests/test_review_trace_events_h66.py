"""A review (h66) of the trace audit on mas-lab events: three wrong verdicts, pinned.

* **An array of events** (a ``.json`` document, pretty-printed or on one line, or a ``.jsonl``
  file whose first line is ``[``) was folded as one line: calls without ids, known by their
  lines, overwrote each other, and an undeclared tool call vanished (compatible, where the
  same events as JSON Lines are incompatible). mas-lab's trajectory schema writes events one
  JSON object per line; an array's events are now refused with a reason that counts them,
  never merged, and an array of trace outcome records is still read.
* **A loop of ``parent_call_id``** made an undeclared delegation out of the loop, and the
  graph wrote the loop as ``ioat:parentCall``; the same calls as mas-lab spans were
  ``trace.parent-cycle`` and indeterminate. Events now read as spans do (one way to find a
  cycle, ``events.parent_cycles``); a start naming its own call is a cycle of one; a parent
  the trace holds no event of is reported (``trace.call-incomplete``; the span path says
  nothing of a tool span's, and an agent span's is ``capability.caller-unknown`` in both).
* **An event of an unknown kind naming a tool or a model** was only counted: the run stayed
  compatible, where a mas-lab span of an unknown name is ``trace.span-name-unknown`` and the
  run at best indeterminate. Events now read so; unknown kinds naming neither are counted only.

Each runs the installed command, from ``tmp_path``, on inputs written there.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_trace import records

from support import IOA_CHECK, SHARED

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

MANIFESTS = SHARED / "reference" / "mas-traces" / "mas-lab" / "trip-planner-manifests"
MODEL = "azure/gpt-4o"  # the model both manifests' agents declare

pytestmark = pytest.mark.skipif(not MANIFESTS.is_dir(), reason="../shared/reference is absent")


def trace(cwd: Path, *args: str | Path) -> tuple[int, dict[str, dict[str, Any]], dict[str, Any]]:
    """The installed command's JSON report: exit status, agent lines by agent, summary."""
    proc = subprocess.run([IOA_CHECK, "trace", *map(str, args), "--manifests", MANIFESTS,
                           "--format", "json", "--no-shapes"], cwd=cwd, capture_output=True,
                          timeout=120)
    assert proc.stderr == b"", proc.stderr
    agents, summaries = records(proc)
    [summary] = summaries
    return proc.returncode, agents, summary


def codes(reasons: list[dict[str, Any]]) -> set[str]:
    return {r["code"] for r in reasons}


def every_code(agents: dict[str, dict[str, Any]], summary: dict[str, Any]) -> set[str]:
    return codes(summary["reasons"]).union(*(codes(a["reasons"]) for a in agents.values()))


def write_lines(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def event(kind: str, agent: str, at: int, **members: Any) -> dict[str, Any]:
    return {"kind": kind, "agent_id": agent, "timestamp": at, "run_id": "r4", **members}


# --- 1. arrays of events ---------------------------------------------------------------------

# The moderator calls a tool nobody declares, then the model it declares; no ids (the
# trajectory schema documents none), so each call is known by its line.
UNDECLARED = [
    event("execution_start", "moderator", 1),
    event("tool_call_start", "moderator", 2, tool_name="delete_all_bookings"),
    event("tool_call_end", "moderator", 3, tool_name="delete_all_bookings"),
    event("llm_call_start", "moderator", 4, model=MODEL),
    event("llm_call_end", "moderator", 5),
    event("execution_end", "moderator", 6, status="success"),
]


@pytest.mark.parametrize("name, text", [
    ("events.json", "[\n" + ",\n".join(json.dumps(e) for e in UNDECLARED) + "\n]\n"),
    ("oneline.json", json.dumps(UNDECLARED)),
    ("indented.json", json.dumps(UNDECLARED, indent=2)),
    ("events_array.jsonl", "[\n" + ",\n".join(json.dumps(e) for e in UNDECLARED) + "\n]\n"),
])
def test_an_array_of_events_is_refused_never_merged_into_one_call(
        tmp_path: Path, name: str, text: str) -> None:
    """Its events are not read (nor merged: the undeclared call is never passed over), the
    reason counts them and says how to give them, and the run cannot be compatible; the
    same events as JSON Lines are incompatible."""
    status, agents, summary = trace(tmp_path, write_lines(tmp_path / "lines.jsonl", UNDECLARED))
    assert status == 1 and summary["verdict"] == "incompatible"
    assert "capability.undeclared-tool" in codes(agents["moderator"]["reasons"])
    (tmp_path / name).write_text(text)
    status, agents, summary = trace(tmp_path, name)
    assert status == 3 and summary["verdict"] == "indeterminate"
    assert summary["events"] == 0 and agents == {}
    [refused] = [r for r in summary["reasons"] if r["code"] == "trace.event-malformed"]
    assert refused["severity"] == "warning" and refused["path"] == "/0"
    assert "a JSON array of 6 mas-lab events" in refused["message"]
    assert "one JSON object per line" in refused["message"]
    assert "trace.incomplete" in codes(summary["reasons"])


def test_an_array_of_outcome_records_is_still_read_and_its_events_refused(
        tmp_path: Path) -> None:
    record = {"schema_version": "1", "outcome_id": "o1", "trace_id": "t1", "context_id": "c1",
              "operation": "lookup", "status": "succeeded", "started_at_ms": 1,
              "ended_at_ms": 2, "input_artifact_refs": [], "output_artifact_refs": [],
              "metrics": {}, "policy_decision": "allow", "error_code": None,
              "error_detail_ref": None, "evaluation_scores": {}}
    (tmp_path / "records.json").write_text(json.dumps([record, {**record, "outcome_id": "o2"}]))
    _, _, summary = trace(tmp_path, "records.json")
    assert summary["records"] == 2
    assert "trace.event-malformed" not in codes(summary["reasons"])
    (tmp_path / "mixed.json").write_text(json.dumps([record, UNDECLARED[1]], indent=1))
    status, _, summary = trace(tmp_path, "mixed.json")
    assert status == 3 and summary["records"] == 1
    [refused] = [r for r in summary["reasons"] if r["code"] == "trace.event-malformed"]
    assert "a JSON array of 1 mas-lab event:" in refused["message"]


# --- 2. parents that loop, name their own call, or name no call of the trace -------------------

LOOP = [
    event("execution_start", "moderator", 1, call_id="m", parent_call_id="s"),
    event("tool_call_start", "moderator", 2, call_id="t1", parent_call_id="m",
          tool_name="delegate_to_schedule_agent"),
    event("execution_start", "schedule_agent", 3, call_id="s", parent_call_id="t1"),
    event("execution_end", "schedule_agent", 4, call_id="s", status="success"),
    event("tool_call_end", "moderator", 5, call_id="t1", tool_name="delegate_to_schedule_agent"),
    event("execution_end", "moderator", 6, call_id="m", status="success"),
]


def _span(ident: str, parent: str | None, name: str, start: int, end: int,
          **attributes: str) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": ident, "name": name,
        "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]}
    if parent is not None:
        span["parentSpanId"] = parent
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


# The same calls as mas-lab spans (1 = m, 2 = t1, 3 = s).
LOOP_SPANS = [
    _span("0000000000000001", "0000000000000003", "AgentCall", 1, 6,
          **{"mas.agent.id": "moderator"}),
    _span("0000000000000002", "0000000000000001", "ToolCall", 2, 5,
          **{"mas.agent.id": "moderator", "mas.tool.name": "delegate_to_schedule_agent"}),
    _span("0000000000000003", "0000000000000002", "AgentCall", 3, 4,
          **{"mas.agent.id": "schedule_agent"}),
]


def test_a_loop_of_parents_is_a_parent_cycle_and_its_callers_unknown(tmp_path: Path) -> None:
    """No delegation is made of the loop: the loop is reported, its parents not used (the
    graph links none of them), and each agent's caller is unknown."""
    write_lines(tmp_path / "events.jsonl", LOOP)
    status, agents, summary = trace(tmp_path, "events.jsonl", "--emit-kg", "kg.ttl")
    assert status == 3 and summary["verdict"] == "indeterminate"
    [cycle] = [r for r in summary["reasons"] if r["code"] == "trace.parent-cycle"]
    assert cycle["severity"] == "warning" and cycle["path"] == "/0"
    assert "calls m, s, t1 are each other's ancestors" in cycle["message"]
    assert "capability.undeclared-delegation" not in every_code(agents, summary)
    for agent in ("moderator", "schedule_agent"):
        assert agents[agent]["verdict"] == "indeterminate"
        [provided] = agents[agent]["provided"]
        assert provided["caller"] is None and provided["verdict"] == "indeterminate"
        assert "capability.caller-unknown" in codes(agents[agent]["reasons"])
    assert agents["moderator"]["consumed"]["delegations"] == []
    assert "parentCall" not in (tmp_path / "kg.ttl").read_text()


def test_a_loop_reads_as_the_same_loop_of_mas_lab_spans(tmp_path: Path) -> None:
    _, agents, summary = trace(tmp_path, write_lines(tmp_path / "events.jsonl", LOOP))
    _, span_agents, span_summary = trace(tmp_path, write_lines(tmp_path / "spans.jsonl",
                                                               LOOP_SPANS))
    assert summary["verdict"] == span_summary["verdict"] == "indeterminate"
    assert {a: r["verdict"] for a, r in agents.items()} == {
        a: r["verdict"] for a, r in span_agents.items()}
    assert every_code(agents, summary) == every_code(span_agents, span_summary)


def test_a_start_naming_its_own_call_is_a_cycle_of_one(tmp_path: Path) -> None:
    """A tool call its own parent is still its agent's (judged); an execution its own parent
    has no known caller. An end naming its own call, as mas-lab's golden runs write
    execution_end, names no parent and is no cycle (the moderator's, below)."""
    write_lines(tmp_path / "events.jsonl", [
        event("execution_start", "moderator", 1, call_id="m"),
        event("tool_call_start", "moderator", 2, call_id="t", parent_call_id="t",
              tool_name="delegate_to_schedule_agent"),
        event("tool_call_end", "moderator", 3, call_id="t", tool_name="delegate_to_schedule_agent"),
        event("execution_start", "schedule_agent", 4, call_id="s", parent_call_id="s"),
        event("execution_end", "schedule_agent", 5, call_id="s"),
        event("execution_end", "moderator", 6, call_id="m", parent_call_id="m")])
    status, agents, summary = trace(tmp_path, "events.jsonl")
    cycles = [r for r in summary["reasons"] if r["code"] == "trace.parent-cycle"]
    assert [(r["path"], r["message"]) for r in cycles] == [
        ("/1", "line 2: call t names itself as its parent (parent_call_id); its parent is not "
               "used"),
        ("/3", "line 4: call s names itself as its parent (parent_call_id); its parent is not "
               "used")]
    assert status == 3
    [moderator_call] = agents["moderator"]["provided"]
    assert moderator_call["caller"] == "mas" and moderator_call["verdict"] == "compatible"
    tools = agents["moderator"]["consumed"]["tools"]
    assert [(u["tool"], u["verdict"]) for u in tools] == [("delegate_to_schedule_agent",
                                                          "compatible")]
    [provided] = agents["schedule_agent"]["provided"]
    assert provided["caller"] is None and provided["verdict"] == "indeterminate"


def test_a_mas_lab_agent_span_its_own_parent_has_no_known_caller(tmp_path: Path) -> None:
    """The span path fed the span's events with their parent its own call, which the events'
    reading took for no parent and placed as an entry ("called by mas", compatible) beside
    the cycle's "their parents are not used": now the same loop of one as the events'."""
    write_lines(tmp_path / "spans.jsonl", [_span(
        "0000000000000001", "0000000000000001", "AgentCall", 1, 6, **{"mas.agent.id": "moderator"})])
    status, agents, summary = trace(tmp_path, "spans.jsonl")
    assert "trace.parent-cycle" in codes(summary["reasons"])
    [provided] = agents["moderator"]["provided"]
    assert provided["caller"] is None and provided["verdict"] == "indeterminate"
    assert status == 3


def test_a_parent_the_trace_does_not_hold_is_reported(tmp_path: Path) -> None:
    """The span path says nothing of a tool span's unknown parent; an event's is the parent
    call whose start and end the trace lacks (trace.call-incomplete), once per parent, and
    never decides: the tool call is its agent's and judged."""
    write_lines(tmp_path / "events.jsonl", [
        event("execution_start", "moderator", 1, call_id="m"),
        event("tool_call_start", "moderator", 2, call_id="t", parent_call_id="ghost",
              tool_name="delegate_to_schedule_agent"),
        event("tool_call_end", "moderator", 3, call_id="t", tool_name="delegate_to_schedule_agent"),
        event("llm_call_start", "moderator", 4, call_id="l", parent_call_id="ghost", model=MODEL),
        event("llm_call_end", "moderator", 5, call_id="l"),
        event("execution_end", "moderator", 6, call_id="m")])
    status, agents, summary = trace(tmp_path, "events.jsonl")
    [ghost] = [r for r in summary["reasons"] if r["code"] == "trace.call-incomplete"]
    assert ghost["severity"] == "warning" and ghost["path"] == "/1"
    assert ghost["message"] == ("line 2: call t and 1 more name call ghost as the parent "
                                "(parent_call_id), and the trace has no start and no end "
                                "event of it")
    assert status == 0 and agents["moderator"]["verdict"] == "compatible"


# --- 3. unknown kinds naming a tool or a model -------------------------------------------------

PLAIN = [event("execution_start", "moderator", 1), event("llm_call_start", "moderator", 2,
                                                         model=MODEL),
         event("llm_call_end", "moderator", 3)]


@pytest.mark.parametrize("member", [{"tool_name": "delete_all_bookings"}, {"model": "gpt-9"}])
def test_an_unknown_kind_naming_a_tool_or_a_model_is_a_use_not_judged(
        tmp_path: Path, member: dict[str, str]) -> None:
    """Reported at its line, counted, and the run at best indeterminate; an unknown kind
    naming neither (mas-lab's memory_store, a null tool_name, an empty model) is counted only."""
    write_lines(tmp_path / "events.jsonl", [
        *PLAIN, event("memory_store", "moderator", 4, tool_name=None, model=""),
        event("tool_call", "moderator", 5, **member), event("execution_end", "moderator", 6)])
    status, _, summary = trace(tmp_path, "events.jsonl")
    assert status == 3 and summary["verdict"] == "indeterminate"
    assert summary["unknownKinds"] == {"memory_store": 1, "tool_call": 1}
    [unknown] = [r for r in summary["reasons"] if r["code"] == "trace.span-name-unknown"]
    assert unknown["path"] == "/4" and unknown["severity"] == "warning"
    assert unknown["message"].startswith(
        f"line 5: an event of kind tool_call, which the reader does not know, carries "
        f"{next(iter(member))}:")
    assert summary["skippedLines"] == 1 and "trace.incomplete" in codes(summary["reasons"])
