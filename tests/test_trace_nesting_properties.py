"""One run, with and without call ids: mas-lab events read by the order they nest in.

Hypothesis draws the runs of ``tests/test_trace_otlp_properties.py`` (agents delegating
through ``delegate_to_*`` tools, several LLM and tool calls per agent, models sometimes
missing, manifests declaring subsets of the tools, models and delegations) and writes each as
the nested interval tree the mas-lab schema draws: every call's start, then what it contains,
then its end. Once with ``call_id``/``parent_call_id`` (the golden fixtures' form), once
without (the schema's documented form). Read in-process and audited:

* in order, the two are judged alike: every agent's verdict, every use's verdict and calls,
  and every call's parent;
* with two agents' events interleaved at random (each agent's own order kept), no use the
  order of events leaves ambiguous is ``compatible``, the tool and model uses are judged as
  with ids, and nothing is decided otherwise than with ids: a verdict either agrees or is
  ``indeterminate``;
* checkpointed (``Fold.delta``) at random lines and resumed into a fresh fold from the
  checkpoints alone (``Fold.restore``, through JSON), as ``--state`` does after a kill, the
  run is the same run.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

from test_trace_otlp_properties import scenarios

from ioa_semantic._findings import Verdict
from ioa_semantic.trace.audit import audit
from ioa_semantic.trace.calls import Run
from ioa_semantic.trace.declarations import Declarations
from ioa_semantic.trace.events import Fold, Source, build
from ioa_semantic.trace.privacy import Disclosure

Scenario = tuple[list[dict[str, Any]], Declarations, int]
_KINDS = {"mas": "mas_call", "agent": "execution", "llm": "llm_call", "tool": "tool_call"}


def nested_events(steps: list[dict[str, Any]], ids: bool, mas_call: bool = True) -> list[
        dict[str, Any]]:
    """The run as the schema's interval tree: a call's start, its calls, its end. ``ids``:
    with ``call_id`` and ``parent_call_id`` (the nearest enclosing call; the HTTP steps, which
    are no calls, are passed through); ``mas_call``: with the MAS call's events."""
    children: dict[int | None, list[dict[str, Any]]] = {}
    for step in steps:
        children.setdefault(step["parent"], []).append(step)
    out: list[dict[str, Any]] = []

    def emit(step: dict[str, Any], parent: int | None) -> None:
        if step["kind"] == "http" or (step["kind"] == "mas" and not mas_call):
            for child in children.get(step["id"], ()):
                emit(child, parent)
            return
        event: dict[str, Any] = {"agent_id": step.get("agent", "mas"), "run_id": "r-1"}
        if ids:
            event["call_id"] = f"{step['id']:016x}"
            if parent is not None:
                event["parent_call_id"] = f"{parent:016x}"
        prefix = _KINDS[step["kind"]]
        start = {"kind": f"{prefix}_start", **event, "timestamp": len(out) + 1}
        end = {"kind": f"{prefix}_end", **event}
        if step["kind"] == "tool":  # both name the tool, as the schema's events do
            start["tool_name"] = end["tool_name"] = step["name"]
        if step["kind"] == "llm" and step["name"]:  # only the start names the model
            start["model"] = step["name"]
        out.append(start)
        for child in children.get(step["id"], ()):
            emit(child, step["id"])
        out.append({**end, "timestamp": len(out) + 1, "status": "success"})

    for root in children[None]:
        emit(root, None)
    return out


def read(events: Iterable[dict[str, Any]]) -> Run:
    fold = Fold()
    for seq, event in enumerate(events, 1):
        fold.value(seq, event)
    return build(Source("events", "events", None, None), fold, Disclosure())


def judged(run: Run, declarations: Declarations) -> dict[str, Any]:
    """Every agent's verdict and its uses: aspect, name, via, verdict and the lines of their
    calls (ids differ between the two writings; lines do not)."""
    result = audit(run, declarations, Disclosure())
    return {a.agent: (a.verdict, sorted((u.aspect, u.name or "", u.via or "", u.verdict,
                                         tuple(c.first_line for c in u.calls)) for u in a.uses))
            for a in result.agents}


def parents(run: Run) -> dict[int, int | None]:
    """Each call's line, and its parent's."""
    by_key = run.by_key()
    return {c.first_line: by_key[c.parent].first_line if c.parent in by_key else None
            for c in run.calls}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.booleans())
def test_a_run_without_ids_is_judged_as_the_same_run_with_ids(scenario: Scenario,
                                                              mas_call: bool) -> None:
    steps, declarations, _ = scenario
    with_ids = read(nested_events(steps, ids=True, mas_call=mas_call))
    without = read(nested_events(steps, ids=False, mas_call=mas_call))
    assert not [c for c in without.calls if c.candidates is not None]
    assert [f.code for f in without.findings] == [f.code for f in with_ids.findings] == []
    assert parents(without) == parents(with_ids)
    assert judged(without, declarations) == judged(with_ids, declarations)


def interleaved(events: list[dict[str, Any]], seed: int) -> tuple[list[int], tuple[str, str]]:
    """A permutation of ``events`` that merges the events of two of its agents at random, each
    agent's own events in their order, everything else in place; and the two agents."""
    rng = random.Random(seed)
    agents = sorted({e["agent_id"] for e in events if e["agent_id"] != "mas"})
    if len(agents) < 2:
        return list(range(len(events))), ("", "")
    pair = tuple(rng.sample(agents, 2))
    slots = [i for i, e in enumerate(events) if e["agent_id"] in pair]
    queues = {a: [i for i in slots if events[i]["agent_id"] == a] for a in pair}
    merged = []
    while queues[pair[0]] or queues[pair[1]]:
        pick = rng.choice([a for a in pair if queues[a]])
        merged.append(queues[pick].pop(0))
    order = list(range(len(events)))
    for slot, index in zip(slots, merged, strict=True):
        order[slot] = index
    return order, (pair[0], pair[1])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.booleans())
def test_interleaving_two_agents_never_turns_an_ambiguous_nesting_into_a_verdict(
        scenario: Scenario, mas_call: bool) -> None:
    steps, declarations, seed = scenario
    plain = nested_events(steps, ids=False, mas_call=mas_call)
    order, _ = interleaved(plain, seed)
    truth = judged(read(nested_events(steps, ids=True, mas_call=mas_call)[i] for i in order),
                   declarations)
    run = read(plain[i] for i in order)
    result = audit(run, declarations, Disclosure())
    got = judged(run, declarations)
    for audited in result.agents:
        for use in audited.uses:
            # The brief's property: a use resting on an ambiguous nesting is never compatible.
            if any(c.candidates is not None for c in use.calls):
                assert use.verdict is not Verdict.COMPATIBLE, use
    truth_uses = {(agent, u[0], u[1], u[2]): u[3] for agent, (_, uses) in truth.items()
                  for u in uses}
    for agent, (verdict, uses) in got.items():
        # Tools and models are the agent's own events: judged exactly as with ids.
        assert [u for u in uses if u[0] in ("tools", "models")] == [
            u for u in truth.get(agent, (None, []))[1] if u[0] in ("tools", "models")]
        # Nothing is decided otherwise than with ids.
        assert verdict in (truth[agent][0], Verdict.INDETERMINATE) if agent in truth else (
            verdict is Verdict.INDETERMINATE)
        for aspect, name, via, use_verdict, _ in uses:
            if use_verdict is not Verdict.INDETERMINATE:
                assert truth_uses.get((agent, aspect, name, via)) is use_verdict, (
                    agent, aspect, name, via, use_verdict)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.booleans(), st.lists(st.integers(1, 400), max_size=6))
def test_a_fold_resumed_from_its_checkpoints_is_the_same_fold(
        scenario: Scenario, interleave: bool, cuts: list[int]) -> None:
    """What ``--state`` relies on: the checkpoints alone (through JSON) restore the fold,
    nesting included, however the stream was cut."""
    steps, _, seed = scenario
    events = nested_events(steps, ids=False)
    if interleave:
        order, _ = interleaved(events, seed)
        events = [events[i] for i in order]
    whole = read(events)
    checkpoints: list[str] = []
    fold = Fold()
    for seq, event in enumerate(events, 1):
        fold.value(seq, event)
        if seq in cuts:
            checkpoints.append(json.dumps(fold.delta()))
            fold = Fold()  # killed: a new process reads the checkpoints back
            for checkpoint in checkpoints:
                fold.restore(json.loads(checkpoint))
    assert build(Source("events", "events", None, None), fold, Disclosure()) == whole
