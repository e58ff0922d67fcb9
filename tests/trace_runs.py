"""Generated trace runs of a small MAS, with what each one did known in advance.

A lead agent delegates to some of three specialists (``delegate_to_<agent>``, declared by
its workflow node), each of which calls tools; some of those tools are declared by the
specialist's manifest and some are not. Every LLM call records the declared model, so an
agent is ``compatible`` exactly when every tool it called is declared, and ``incompatible``
otherwise: the tests compute what the store's history queries must answer from the
:class:`Spec` of each run, without the audit. Used by tests/test_trace_store.py and
bench/bench_trace_store.py.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import NamedTuple

LEAD = "lead"
SPECIALISTS = ("finder", "booker", "writer")
MODEL = "m-1"
# Revision 1 of the manifests: the tools each specialist declares.
DECLARED: dict[str, tuple[str, ...]] = {"finder": ("search", "fetch"),
                                        "booker": ("reserve", "cancel"),
                                        "writer": ("draft",)}
UNDECLARED = ("pay", "mail", "scrape")  # called now and then, declared by nobody (revision 1)
BASE_TIME = 1_800_000_000


class Spec(NamedTuple):
    run_id: str
    start: int  # Unix seconds of the run's first event
    uses: dict[str, list[str]]  # specialist -> the tools it called, in order


def generate(count: int, seed: int = 7) -> list[Spec]:
    """``count`` runs with distinct ids and start times, in a shuffled order (the order they
    are fed in is not the order they happened in)."""
    rng = random.Random(seed)
    specs = []
    for index in range(count):
        uses: dict[str, list[str]] = {}
        for agent in rng.sample(SPECIALISTS, rng.randint(1, 3)):
            tools = [rng.choice(DECLARED[agent]) for _ in range(rng.randint(1, 3))]
            if rng.random() < 0.15:
                tools.insert(rng.randint(0, len(tools)), rng.choice(UNDECLARED))
            uses[agent] = tools
        specs.append(Spec(f"gen-{index:05d}", BASE_TIME + 60 * index, uses))
    rng.shuffle(specs)
    return specs


def events(spec: Spec) -> list[dict[str, object]]:
    clock = [float(spec.start)]

    def event(kind: str, agent: str, call: str, parent: str | None, **more: object) -> dict[
            str, object]:
        clock[0] += 0.001
        out: dict[str, object] = {"kind": kind, "agent_id": agent, "run_id": spec.run_id,
                                  "call_id": call, "timestamp": round(clock[0], 3)}
        if parent is not None:
            out["parent_call_id"] = parent
        out.update(more)
        return out

    def llm(agent: str, call: str, parent: str) -> list[dict[str, object]]:
        return [event("llm_call_start", agent, call, parent, model=MODEL, input="plan"),
                event("llm_call_end", agent, call, parent, model=MODEL, output="ok")]

    root, lead = f"{spec.run_id}-mas", f"{spec.run_id}-lead"
    out = [event("mas_call_start", "mas", root, None),
           event("execution_start", LEAD, lead, root, input="task")]
    out += llm(LEAD, f"{lead}-llm", lead)
    for agent, tools in spec.uses.items():
        via, own = f"{spec.run_id}-to-{agent}", f"{spec.run_id}-{agent}"
        out.append(event("tool_call_start", LEAD, via, lead, tool_name=f"delegate_to_{agent}",
                         arguments={"task": "part"}))
        out.append(event("execution_start", agent, own, via, input="part"))
        out += llm(agent, f"{own}-llm", own)
        for number, tool in enumerate(tools):
            call = f"{own}-tool-{number}"
            out.append(event("tool_call_start", agent, call, own, tool_name=tool,
                             arguments={"n": number}))
            out.append(event("tool_call_end", agent, call, own, tool_name=tool, output="done"))
        out.append(event("execution_end", agent, own, via, output="part done"))
        out.append(event("tool_call_end", LEAD, via, lead, tool_name=f"delegate_to_{agent}",
                         output="part done"))
    out.append(event("execution_end", LEAD, lead, root, output="done"))
    out.append(event("mas_call_end", "mas", root, None))
    return out


def write_run(folder: Path, spec: Spec) -> Path:
    """A run folder: ``run.json`` (its run hash) and ``traces/events.jsonl``."""
    run = folder / spec.run_id
    (run / "traces").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_hash": spec.run_id}))
    (run / "traces" / "events.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in events(spec)))
    return run


def write_manifests(folder: Path, declared: dict[str, tuple[str, ...]] = DECLARED) -> Path:
    """``mas.yaml`` and one manifest an agent; tools are declared by name."""
    (folder / "agents").mkdir(parents=True)
    agents = (LEAD, *SPECIALISTS)
    mas = ["apiVersion: mas/v1", "kind: MAS", "metadata:", "  name: generated", "spec:",
           "  agency:", "    agents:"]
    for agent in agents:
        mas += [f"      - id: {agent}", f"        ref: agents/{agent}.yaml"]
    mas += ["  workflow:", "    type: dynamic", f"    entry: {LEAD}", "    nodes:",
            f"      - id: {LEAD}", "        delegates_to:"]
    mas += [f"          - {agent}" for agent in SPECIALISTS]
    mas += [f"      - id: {agent}" for agent in SPECIALISTS]
    (folder / "mas.yaml").write_text("\n".join(mas) + "\n")
    for agent in agents:
        lines = ["apiVersion: mas/v1", "kind: Agent", "metadata:", f"  name: {agent}", "spec:",
                 "  models:", f"  - model: {MODEL}", "  tools:"]
        lines += [f"  - name: {tool}" for tool in declared.get(agent, ())]
        if not declared.get(agent):
            lines[-1] = "  tools: []"
        (folder / "agents" / f"{agent}.yaml").write_text("\n".join(lines) + "\n")
    return folder


def agent_results(spec: Spec, declared: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """What the audit must say of each agent of ``spec``: computed from the spec alone."""
    out = {LEAD: "compatible"}
    for agent, tools in spec.uses.items():
        out[agent] = ("compatible" if set(tools) <= set(declared.get(agent, ()))
                      else "incompatible")
    return out


def run_result(spec: Spec, declared: dict[str, tuple[str, ...]]) -> str:
    results = agent_results(spec, declared).values()
    return "incompatible" if "incompatible" in results else "compatible"
