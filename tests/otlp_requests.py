"""OTLP trace requests written by hand, for the reader's edge cases.

The SDK-made traces (tests/otel_agents.py) are what real instrumentations write; these are
what a careless or hostile exporter might: each builder returns one request object in the
OTLP specification's JSON (hex ids, numeric enumerations), so a test can damage one member.
"""

from __future__ import annotations

import json
from typing import Any

TRACE = "5b8efff798038103d269b633813fc60c"
START = 1784619197_000_000_000


def attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, list):
        return {"key": key, "value": {"arrayValue": {"values": [
            {"stringValue": item} for item in value]}}}
    return {"key": key, "value": {"stringValue": value}}


def span(ident: int, parent: int | None, attributes: dict[str, Any], *, kind: int = 1,
         trace: str = TRACE, status: int = 1) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": trace, "spanId": f"{ident:016x}", "name": "span", "kind": kind,
        "startTimeUnixNano": str(START + ident * 1_000_000),
        "endTimeUnixNano": str(START + ident * 1_000_000 + 500_000),
        "attributes": [attribute(k, v) for k, v in attributes.items()],
        "status": {"code": status}}
    if parent is not None:
        out["parentSpanId"] = f"{parent:016x}"
    return out


def request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{
        "resource": {"attributes": [attribute("service.name", "trip-planner")]},
        "scopeSpans": [{"scope": {"name": "tests"}, "spans": list(spans)}]}]}


def agent(ident: int, parent: int | None, name: str, tools: list[str] | None = None
          ) -> dict[str, Any]:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent",
                                  "gen_ai.agent.id": name, "gen_ai.agent.name": name}
    if tools is not None:
        attributes["gen_ai.tool.definitions"] = json.dumps(
            [{"type": "function", "name": tool} for tool in tools])
    return span(ident, parent, attributes)


def tool(ident: int, parent: int | None, name: str) -> dict[str, Any]:
    return span(ident, parent, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                "gen_ai.tool.call.arguments": '{"city": "Zürich"}'})


def chat(ident: int, parent: int | None, model: str | None = "gpt-4o") -> dict[str, Any]:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat",
                                  "gen_ai.input.messages": "a prompt the audit must not copy"}
    if model is not None:
        attributes["gen_ai.request.model"] = model
    return span(ident, parent, attributes, kind=3)


def trip() -> list[dict[str, Any]]:
    """The trip planner's delegation as spans: moderator -> delegate tool -> schedule_agent,
    which calls lookup_schedule through an HTTP span the table does not map."""
    return [
        span(1, None, {"gen_ai.operation.name": "invoke_workflow",
                       "gen_ai.workflow.name": "trip-planner"}),
        agent(2, 1, "moderator", ["delegate_to_schedule_agent"]),
        chat(3, 2, "azure/gpt-4o"),
        tool(4, 2, "delegate_to_schedule_agent"),
        agent(5, 4, "schedule_agent", ["lookup_schedule"]),
        span(6, 5, {"http.request.method": "GET"}, kind=3),
        tool(7, 6, "lookup_schedule"),
    ]


def lines(*requests: dict[str, Any]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests)


# --- mas-lab's OTel export -------------------------------------------------------------------


def maslab(name: Any, attributes: dict[str, Any], ident: int | None = None,
           parent: int | None = None, *, start: int = 0, end: int = 1, trace: str = TRACE,
           status: int | None = None) -> dict[str, Any]:
    """A span as mas-lab's OTel export writes it: a span name and ``mas.*`` attributes, times
    in whole seconds after START (as the schema's example). With ``ident``, hex ids (as
    mas-lab's SDK writes them); without, none at all (as the schema's example). ``name`` None
    leaves the name out."""
    out: dict[str, Any] = {
        "name": name, "startTimeUnixNano": str(START + start * 10**9),
        "endTimeUnixNano": str(START + end * 10**9),
        "attributes": [attribute(k, v) for k, v in attributes.items()]}
    if name is None:
        del out["name"]
    if ident is not None:
        out.update(traceId=trace, spanId=f"{ident:016x}")
        if parent is not None:
            out["parentSpanId"] = f"{parent:016x}"
    if status is not None:
        out["status"] = {"code": status}
    return out


def maslab_trip(ids: bool = True, trace: str = TRACE) -> list[dict[str, Any]]:
    """The trip planner's delegation as mas-lab spans, in the order mas-lab's exporter writes
    them (a span when it ends: children first): the MAS call (TaskCall), moderator's call, its
    model call, its delegation tool, schedule_agent's call under it, its model call and its
    lookup_schedule tool; whole seconds, so the delegation tool and the call it runs share
    their interval."""
    def span(name: str, attributes: dict[str, Any], ident: int, parent: int | None,
             start: int, end: int) -> dict[str, Any]:
        return maslab(name, {"mas.boundary": name, **attributes}, ident if ids else None,
                      parent, start=start, end=end, trace=trace, status=1)

    return [
        span("LLMCall", {"mas.agent.id": "moderator", "mas.llm.model": "azure/gpt-4o",
                         "mas.llm.messages": "a prompt the audit must not copy",
                         "metrics.token.input": 1149, "metrics.token.output": 157,
                         "metrics.token.total": 1306}, 3, 2, 1, 2),
        span("LLMCall", {"mas.agent.id": "schedule_agent", "mas.llm.model": "azure/gpt-4o"},
             6, 5, 3, 4),
        span("ToolCall", {"mas.agent.id": "schedule_agent", "mas.tool.name": "lookup_schedule",
                          "mas.tool.input": '{"from": "Celestia"}', "mas.status": "ok"},
             7, 5, 4, 6),
        span("AgentCall", {"mas.agent.id": "schedule_agent", "mas.status": "ok"}, 5, 4, 2, 8),
        span("ToolCall", {"mas.agent.id": "moderator",
                          "mas.tool.name": "delegate_to_schedule_agent", "mas.status": "ok"},
             4, 2, 2, 8),
        span("AgentCall", {"mas.agent.id": "moderator", "mas.run.id": "f52df92b",
                           "mas.status": "ok"}, 2, 1, 0, 10),
        span("TaskCall", {"mas.agent.id": "trip-planner", "mas.run.id": "f52df92b",
                          "mas.status": "success"}, 1, None, 0, 10),
    ]
