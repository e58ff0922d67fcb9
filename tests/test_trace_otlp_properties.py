"""One run, three encodings: random multi-agent runs written as OTLP spans (GenAI), as mas-lab
events and as mas-lab's own OTel spans are judged alike.

Hypothesis draws a run (agents delegating through ``delegate_to_*`` tools, tool calls some
of which run under HTTP spans the mapping passes through, model calls with or without a
model) and declarations (manifests declaring some of the tools, models and delegations).
The run is written once as mas-lab events, once as OTLP requests of GenAI spans and once as
OTLP requests of mas-lab spans (``TaskCall``, ``AgentCall``, ``LLMCall``, ``ToolCall`` with
``mas.*`` attributes, the HTTP spans as mas-lab's ``NetworkCall``, a call without a model as
its ``unknown``; hex ids; the spans shuffled and cut into requests at random, as exporters
batch them), and each is read by the trace stage and audited in-process: every agent's
verdict and every use's verdict, with the calls behind it, must be the same.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

from ioa_semantic.trace.audit import audit
from ioa_semantic.trace.declarations import AgentDeclaration, Declarations, Manifests
from ioa_semantic.trace.events import Fold, Source, build, runs
from ioa_semantic.trace.privacy import Disclosure

from otlp_requests import TRACE, agent, chat, maslab, request, span, tool

TOOLS = ("search", "reserve", "refund", "notify")
MODELS = ("gpt-4o", "claude-sonnet-4-5")
AGENTS = ("lead", "finder", "booker")


@st.composite
def scenarios(draw: Any) -> tuple[list[dict[str, Any]], Declarations, int]:
    """A run as steps (id, parent id or None, kind, agent, name), its declarations, a seed."""
    steps: list[dict[str, Any]] = [{"id": 1, "parent": None, "kind": "mas"}]
    counter = [1]

    def new(parent: int, kind: str, owner: str, name: str | None) -> int:
        counter[0] += 1
        steps.append({"id": counter[0], "parent": parent, "kind": kind, "agent": owner,
                      "name": name})
        return counter[0]

    def run_agent(name: str, parent: int, depth: int) -> None:
        me = new(parent, "agent", name, name)
        for _ in range(draw(st.integers(1, 4))):
            choice = draw(st.sampled_from(("tool", "http-tool", "chat", "delegate")))
            if choice == "chat":
                new(me, "llm", name, draw(st.sampled_from((*MODELS, None))))
            elif choice == "delegate" and depth < 2:
                callee = draw(st.sampled_from(AGENTS[1:]))
                via = new(me, "tool", name, f"delegate_to_{callee}")
                run_agent(callee, via, depth + 1)
            else:
                under = new(me, "http", name, None) if choice == "http-tool" else me
                new(under, "tool", name, draw(st.sampled_from(TOOLS)))

    run_agent("lead", 1, 0)
    declared = {}
    for name in AGENTS:
        if not draw(st.booleans()) and name != "lead":
            continue  # not listed: its uses are undeclared
        declared[name] = AgentDeclaration(
            agent=name, source=f"agents/{name}.yaml", description=None,
            models=frozenset(draw(st.sets(st.sampled_from(MODELS)))),
            tools={t: f"tools/{t}.yaml" for t in draw(st.sets(st.sampled_from(TOOLS)))},
            tool_descriptions={}, tools_complete=True,
            delegates_to=frozenset(draw(st.sets(st.sampled_from(AGENTS[1:])))), problem=None)
    manifests = Manifests("mas", "mas.yaml", None, declared, True, "lead", True, ())
    return steps, Declarations(manifests, None, None), draw(st.integers(0, 2**32))


def _nearest_call(steps: dict[int, dict[str, Any]], parent: int | None) -> int | None:
    while parent is not None and steps[parent]["kind"] == "http":
        parent = steps[parent]["parent"]
    return parent


def _events(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {s["id"]: s for s in steps}
    kinds = {"mas": "mas_call", "agent": "execution", "llm": "llm_call", "tool": "tool_call"}
    out = []
    for step in steps:
        if step["kind"] == "http":
            continue
        event: dict[str, Any] = {"call_id": f"{step['id']:016x}",
                                 "agent_id": step.get("agent", "mas"), "timestamp": step["id"]}
        parent = _nearest_call(by_id, step["parent"])
        if parent is not None:
            event["parent_call_id"] = f"{parent:016x}"
        if step["kind"] == "tool":
            event["tool_name"] = step["name"]
        if step["kind"] == "llm" and step["name"]:
            event["model"] = step["name"]
        prefix = kinds[step["kind"]]
        out.append({"kind": f"{prefix}_start", **event})
        out.append({"kind": f"{prefix}_end", **event, "status": "ok"})
    return out


def _spans(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for step in steps:
        if step["kind"] == "mas":
            out.append(span(step["id"], None, {"gen_ai.operation.name": "invoke_workflow",
                                               "gen_ai.workflow.name": "mas"}))
        elif step["kind"] == "agent":
            out.append(agent(step["id"], step["parent"], step["name"]))
        elif step["kind"] == "tool":
            out.append(tool(step["id"], step["parent"], step["name"]))
        elif step["kind"] == "llm":
            out.append(chat(step["id"], step["parent"], step["name"]))
        else:
            out.append(span(step["id"], step["parent"], {"http.request.method": "GET"}, kind=3))
    return out


_MASLAB = {"mas": "TaskCall", "agent": "AgentCall", "llm": "LLMCall", "tool": "ToolCall",
           "http": "NetworkCall"}


def _maslab_spans(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for step in steps:
        name = _MASLAB[step["kind"]]
        attributes: dict[str, Any] = {"mas.boundary": name,
                                      "mas.agent.id": step.get("agent", "mas")}
        if step["kind"] == "tool":
            attributes["mas.tool.name"] = step["name"]
        if step["kind"] == "llm":
            attributes["mas.llm.model"] = step["name"] or "unknown"
        out.append(maslab(name, attributes, step["id"], step["parent"], start=step["id"],
                          end=step["id"], status=1))
    return out


def _requests(spans: list[dict[str, Any]], seed: int) -> Fold:
    """The spans shuffled and cut into up to four requests, as a fold."""
    shuffled = list(spans)
    random.Random(seed).shuffle(shuffled)
    cuts = sorted(random.Random(seed + 1).sample(range(1, len(shuffled)),
                                                 k=min(3, len(shuffled) - 1)))
    fold = Fold()
    for seq, (start, end) in enumerate(zip([0, *cuts], [*cuts, len(shuffled)], strict=True), 1):
        fold.value(seq, request(*shuffled[start:end]))
    return fold


def _judged(run: Any, declarations: Declarations) -> dict[str, Any]:
    result = audit(run, declarations, Disclosure())
    return {a.agent: (str(a.verdict), sorted((u.aspect, u.name or "", u.via or "",
                                              str(u.verdict), tuple(c.ref for c in u.calls))
                                             for u in a.uses))
            for a in result.agents}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_a_run_as_spans_is_judged_as_the_same_run_as_events(
        scenario: tuple[list[dict[str, Any]], Declarations, int]) -> None:
    steps, declarations, seed = scenario
    events = Fold()
    for seq, event in enumerate(_events(steps), 1):
        events.value(seq, event)
    from_events = build(Source("events", "events", None, None), events, Disclosure())

    spans = _requests(_spans(steps), seed)
    (from_spans,) = runs(Source("spans", "spans", None, None), spans, Disclosure())
    maslab_spans = _requests(_maslab_spans(steps), seed)
    (from_maslab,) = runs(Source("maslab", "maslab", None, None), maslab_spans, Disclosure())

    assert from_spans.run_id == from_maslab.run_id == TRACE
    assert _judged(from_spans, declarations) == _judged(from_events, declarations)
    assert _judged(from_maslab, declarations) == _judged(from_events, declarations)
