"""A review of the trace audit (h66): a span given twice with other contents, and the outcome
``timeout``.

A span id given twice with other contents names no agent, target or caller (docs/trace.md,
"Hostile spans"): either copy may be the true one, so its use is nobody's
(``capability.caller-unknown``) and the graph links it to no agent, in mas-lab's spans as in
the GenAI conventions', never the agent the order of events or a time interval happens to
put around it. ``timeout`` (mas-lab's third outcome word, beside ``success`` and ``error``) is
no success: ``mas:success false``, and an error where an OTLP status code is compared with it.

Inputs are written into ``tmp_path`` and read by the installed command.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_trace import report_lines

from ioa_semantic.trace import calls

from otlp_requests import START, agent, attribute, lines, maslab, request, span, tool
from support import IOA_CHECK, SHARED

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

MANIFESTS = SHARED / "reference" / "mas-traces" / "mas-lab" / "trip-planner-manifests"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
AGENT = "<https://example.org/ioa/trace#agent>"
SUCCESS = "<https://outshift-open.github.io/oxp-ontology/mas#success>"
FALSE = '"false"^^<http://www.w3.org/2001/XMLSchema#boolean>'

pytestmark = pytest.mark.skipif(not MANIFESTS.is_dir(), reason="../shared/reference is absent")


def _trace(cwd: Path, text: str, *args: str) -> tuple[int, dict[str, Any], list[str]]:
    """Exit status, the one run's summary (its agents' records under ``records``) and the
    lines of its graph (N-Triples)."""
    (cwd / "trace.jsonl").write_text(text, encoding="utf-8")
    proc = subprocess.run([IOA_CHECK, "trace", "trace.jsonl", "--format", "json", "--no-shapes",
                           "--emit-kg", "kg.nt", *args], cwd=cwd, capture_output=True,
                          timeout=240, check=False)
    assert proc.returncode in (0, 1, 3) and b"Traceback" not in proc.stderr, proc.stderr
    records, summaries = report_lines(proc)
    (summary,) = summaries
    graph = (cwd / "kg.nt").read_text(encoding="utf-8").splitlines()
    return proc.returncode, {**summary, "records": records}, graph


def _reasons(report: dict[str, Any], code: str) -> list[dict[str, Any]]:
    found = list(report["reasons"])
    for record in report["records"]:
        found += record["reasons"]
    return [r for r in found if r["code"] == code]


def _charged(report: dict[str, Any], call: str) -> list[str]:
    """The agents whose records name ``call`` among their uses or reasons."""
    out = []
    for record in report["records"]:
        uses = [u for aspect in record["consumed"].values() if isinstance(aspect, list)
                for u in aspect] + record["provided"]
        if any(c["id"] == call for u in uses for c in u["calls"]) or any(
                r["path"].endswith(f":call:{call}") for r in record["reasons"]):
            out.append(record["agent"])
    return out


def _links(graph: list[str], call: str, predicate: str) -> list[str]:
    subject = f"<urn:ioa-trace:run:{TRACE}:call:{call}> {predicate} "
    return [line[len(subject):] for line in graph if line.startswith(subject)]


def _maslab(name: str, attributes: dict[str, Any], ident: int, parent: int | None,
            start: int, end: int) -> dict[str, Any]:
    return maslab(name, attributes, ident, parent, start=start, end=end, trace=TRACE)


def _timed(span: dict[str, Any], start: int, end: int) -> dict[str, Any]:
    """A GenAI span (otlp_requests) at whole seconds after START."""
    return {**span, "traceId": TRACE, "startTimeUnixNano": str(START + start * 10**9),
            "endTimeUnixNano": str(START + end * 10**9)}


# --- a span given twice with other contents -------------------------------------------------


def _delegation() -> list[dict[str, Any]]:
    """moderator -> delegate_to_schedule_agent -> schedule_agent -> lookup_schedule (span 4),
    as mas-lab's exporter writes them (a span when it ends: children first)."""
    return [
        _maslab("ToolCall", {"mas.agent.id": "schedule_agent", "mas.tool.name": "lookup_schedule",
                             "mas.tool.result": "a"}, 4, 3, 4, 5),
        _maslab("AgentCall", {"mas.agent.id": "schedule_agent"}, 3, 2, 3, 6),
        _maslab("ToolCall", {"mas.agent.id": "moderator",
                             "mas.tool.name": "delegate_to_schedule_agent"}, 2, 1, 2, 7),
        _maslab("AgentCall", {"mas.agent.id": "moderator"}, 1, None, 1, 8),
    ]


def test_a_mas_lab_span_given_twice_with_other_contents_is_charged_to_no_agent(
        tmp_path: Path) -> None:
    """Both copies of span 4 say schedule_agent, one result "a", the other "b": the use is
    nobody's (caller unknown), not moderator's tool-unknown; the graph names no agent for the
    call; and the conflicting span, fed without a caller, no longer makes the order of events
    look interleaved."""
    spans = _delegation()
    other = copy.deepcopy(spans[0])
    other["attributes"][2] = attribute("mas.tool.result", "b")
    status, report, graph = _trace(tmp_path, lines(*(request(s) for s in [*spans, other])),
                                   "--manifests", str(MANIFESTS))
    assert status == 3 and len(_reasons(report, "trace.call-conflict")) == 1
    (unknown,) = _reasons(report, "capability.caller-unknown")
    assert unknown["path"] == f"urn:ioa-trace:run:{TRACE}:call:0000000000000004"
    assert unknown in report["reasons"]  # the run's, no agent's
    assert _charged(report, "0000000000000004") == []
    assert not _reasons(report, "capability.tool-unknown")
    assert not _reasons(report, "trace.nesting-interleaved")
    assert report["agents"] == {"moderator": "compatible", "schedule_agent": "compatible"}
    assert _links(graph, "0000000000000004", AGENT) == []
    assert _links(graph, "0000000000000002", AGENT) == ["<urn:ioa-trace:agent:moderator> ."]


def _top_level_conflict(convention: str) -> list[dict[str, Any]]:
    """moderator's agent span (1 s to 8 s, no parent) and a tool span without a parent inside
    its interval (4 s to 5 s), given twice with other tools."""
    if convention == "maslab":
        first = [_maslab("AgentCall", {"mas.agent.id": "moderator"}, 1, None, 1, 8),
                 _maslab("ToolCall", {"mas.agent.id": "moderator",
                                      "mas.tool.name": "delegate_to_schedule_agent"}, 9, None, 4, 5)]
        second = _maslab("ToolCall", {"mas.agent.id": "moderator", "mas.tool.name": "wire_money"},
                         9, None, 4, 5)
    else:
        first = [_timed(agent(1, None, "moderator"), 1, 8),
                 _timed(tool(9, None, "delegate_to_schedule_agent"), 4, 5)]
        second = _timed(tool(9, None, "wire_money"), 4, 5)
    return [*first, second]


@pytest.mark.parametrize("convention", ["maslab", "genai"])
def test_a_conflicting_span_without_a_parent_is_not_given_to_the_agent_around_it_in_time(
        tmp_path: Path, convention: str) -> None:
    """A time interval is no caller: a span given twice with other contents, at the top of
    its trace, is nobody's even where one agent's span encloses it in time (the sibling
    layout's rule, attribution.py, is for spans whose place is known)."""
    spans = _top_level_conflict(convention)
    status, report, graph = _trace(tmp_path, lines(*(request(s) for s in spans)),
                                   "--manifests", str(MANIFESTS))
    assert status == 3 and len(_reasons(report, "trace.call-conflict")) == 1
    (unknown,) = _reasons(report, "capability.caller-unknown")
    assert unknown["path"].endswith(":call:0000000000000009")
    assert _charged(report, "0000000000000009") == []
    assert "wire_money" not in json.dumps(report)
    assert _links(graph, "0000000000000009", AGENT) == []


def test_a_conflicting_genai_span_is_not_given_to_the_agent_its_copy_names(
        tmp_path: Path) -> None:
    """A tool span's own gen_ai.agent.name (the last way its agent is read) is one copy's
    word: a span given twice with other contents is nobody's whatever either copy says."""
    def copy_of(name: str) -> dict[str, Any]:
        return _timed(span(9, None, {"gen_ai.operation.name": "execute_tool",
                                     "gen_ai.tool.name": name,
                                     "gen_ai.agent.name": "moderator"}), 4, 5)

    status, report, graph = _trace(
        tmp_path, lines(request(copy_of("delegate_to_schedule_agent")),
                        request(copy_of("wire_money"))), "--manifests", str(MANIFESTS))
    assert status == 3 and len(_reasons(report, "trace.call-conflict")) == 1
    (unknown,) = _reasons(report, "capability.caller-unknown")
    assert unknown["path"].endswith(":call:0000000000000009")
    assert _charged(report, "0000000000000009") == []
    assert not _reasons(report, "capability.tool-unknown")
    assert _links(graph, "0000000000000009", AGENT) == []


# --- the outcome timeout ----------------------------------------------------------------------


@pytest.mark.parametrize("word", ["timeout", "TIMEOUT", "exception"])
def test_a_timeout_or_an_exception_is_no_success(word: str) -> None:
    call = calls.Call(key="c", id="c", cls="tool", agent="a", target="t", parent=None,
                parent_id=None, start=None, end=None, first_line=1, status=word, label=None,
                tokens={}, finish=None, temperature=None, response_id=None, input=None,
                output=None, content=None, ambiguous=())
    assert call.success is False
    assert call._replace(status="success").success is True
    assert call._replace(status=None).success is None
    assert call._replace(status="pending").success is None


def test_an_execution_that_timed_out_records_mas_success_false(tmp_path: Path) -> None:
    """The events' own outcome word (the schema's "success" | "error" | "timeout")."""
    events = [{"kind": "execution_start", "agent_id": "moderator", "timestamp": 1.0,
               "run_id": "r9"},
              {"kind": "execution_end", "agent_id": "moderator", "timestamp": 2.0,
               "run_id": "r9", "status": "timeout"}]
    _, _, graph = _trace(tmp_path, "".join(json.dumps(e) + "\n" for e in events))
    assert [line for line in graph if line.startswith("<urn:ioa-trace:run:r9:call:")
            and f" {SUCCESS} " in line] == [
        f"<urn:ioa-trace:run:r9:call:~1> {SUCCESS} {FALSE} ."]


def test_a_mas_lab_span_that_timed_out_records_mas_success_false(tmp_path: Path) -> None:
    span = _maslab("AgentCall", {"mas.agent.id": "schedule_agent", "mas.status": "timeout"},
                   4, None, 1, 2)
    _, report, graph = _trace(tmp_path, lines(request(span)))
    assert not _reasons(report, "trace.attribute-malformed")
    assert _links(graph, "0000000000000004", SUCCESS) == [f"{FALSE} ."]


def test_a_timeout_with_the_status_code_ok_is_a_contradiction(tmp_path: Path) -> None:
    """mas.status timeout and status.code OK cannot both be right: the outcome is not used,
    as for success with ERROR."""
    span = maslab("AgentCall", {"mas.agent.id": "schedule_agent", "mas.status": "timeout"}, 4,
                  None, start=1, end=2, trace=TRACE, status=1)
    _, report, graph = _trace(tmp_path, lines(request(span)))
    (malformed,) = _reasons(report, "trace.attribute-malformed")
    assert "timeout" in malformed["message"] and "ok" in malformed["message"]
    assert _links(graph, "0000000000000004", SUCCESS) == []
    agreeing = maslab("AgentCall", {"mas.agent.id": "schedule_agent", "mas.status": "timeout"},
                      4, None, start=1, end=2, trace=TRACE, status=2)
    _, report, graph = _trace(tmp_path, lines(request(agreeing)))
    assert not _reasons(report, "trace.attribute-malformed")
    assert _links(graph, "0000000000000004", SUCCESS) == [f"{FALSE} ."]
