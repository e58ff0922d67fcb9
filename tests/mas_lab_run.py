"""A mas-lab run folder written from the trajectory schema's own example, for the id-less reading.

``python tests/mas_lab_run.py OUTDIR`` (or :func:`write`) writes the run the schema
(``seeds/mas-lab-trajectory-schema.txt``) uses as its example, the trip planner, as mas-lab
writes a run folder, and the system's manifests:

* ``run/run.json``: the schema's ``run.json`` example, member for member (``run_id``
  ``f52df92b``, ``mas_id`` ``trip-planner``, scenario ``baseline``, status ``success``,
  ``created_at`` ``2026-02-23T23:24:48.694866+00:00``, ``duration_secs`` 24.87, and the
  members the audit never reads: ``folder``, ``env``, ``prompt``, ``overlay_path``,
  ``flavour``, ``mas_yaml``, ``verbosity``).
* ``run/traces/events.jsonl``: the run's events in the schema's form: ``kind``,
  ``agent_id``, ``timestamp``, ``run_id`` and each kind's documented fields, **no** ``call_id``
  and **no** ``parent_call_id``. The order is the schema's multi-level trajectory view:
  ``moderator`` asks its model, calls ``delegate_to_schedule_agent``, inside which
  ``schedule_agent`` runs (asks its model, calls ``lookup_schedule``, asks its model again),
  then ``moderator`` asks its model once more and answers the user. Every LLM call names the
  model ``vertex_ai/gemini-3-pro-preview``; the timestamps and payloads of the schema's
  examples are used where it gives them.
* ``manifests/``: the system's mas-lab manifests (``mas.yaml``, ``agents/*.yaml``,
  ``tools/*.tool.yaml``), declaring everything the run does: both agents' model, the
  workflow (entry ``moderator``, which delegates to ``schedule_agent``) and
  ``schedule_agent``'s tool ``lookup_schedule``.

Audited with the manifests, every agent is ``compatible``; with ``lookup_schedule`` left out
of ``schedule_agent``'s manifest, ``schedule_agent`` alone is ``incompatible``, naming the
tool and :data:`LOOKUP_LINE`. Nothing depends on the time or machine it is run on; the
shipped example ``examples/trace/mas-lab/`` is its output (``tests/test_trace_nesting.py``
fails when they differ).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import yaml

RUN_ID = "f52df92b"
MAS = "trip-planner"
MODEL = "vertex_ai/gemini-3-pro-preview"
PROMPT = "what trains go from Celestia to Verdantia?"
TASK = "Look up the trains from Celestia to Verdantia."
ANSWER = "Here is the schedule for trains from Celestia to Verdantia ..."
SCHEDULE = "Here is the schedule information ..."

RUN_JSON: dict[str, Any] = {
    "run_id": RUN_ID,
    "mas_id": MAS,
    "scenario": "baseline",
    "created_at": "2026-02-23T23:24:48.694866+00:00",
    "folder": "/home/user/.mas/runs/trip-planner/20260223-232448-baseline-f52df92b",
    "env": {
        "python": "3.14.3 ...",
        "platform": "macOS-26.3-arm64-arm-64bit-Mach-O",
        "packages": {"mas-runtime": "0.1.16"},
        "git_commit": "d2909f0",
        "git_dirty": True,
    },
    "prompt": PROMPT,
    "overlay_path": "labs/lifecycle-control.lab/overlays/baseline.yaml",
    "flavour": "local",
    "mas_yaml": "library-samples/apps/trip-planner/mas.yaml",
    "verbosity": 0,
    "status": "success",
    "duration_secs": 24.87,
}


def _event(kind: str, agent: str, timestamp: float, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "agent_id": agent, "timestamp": timestamp, "run_id": RUN_ID, **fields}


def _segments(role: str, tools: str, task: str) -> list[dict[str, str]]:
    return [
        {"source": "SystemPromptPlugin", "placement": "system", "role": "agent_identity",
         "content": role},
        {"source": "ToolRegistryPlugin", "placement": "system", "role": "system_agents",
         "content": f"Available tools: {tools}"},
        {"source": "HistoryPlugin", "placement": "user", "role": "user_task", "content": task},
    ]


def _llm(agent: str, start: float, end: float, role: str, tools: str, task: str,
         content: str, usage: tuple[int, int], latency: float | None = None) -> list[dict[str, Any]]:
    """context_assembled + llm_call_start ── llm_call_end, as the schema draws each LLM call."""
    messages = [{"role": "system", "content": role}, {"role": "user", "content": task}]
    return [
        _event("context_assembled", agent, start, segments=_segments(role, tools, task)),
        _event("llm_call_start", agent, start, model=MODEL, messages=messages,
               temperature=None, max_tokens=None),
        _event("llm_call_end", agent, end,
               latency_ms=latency if latency is not None else round((end - start) * 1000, 2),
               response={"content": content, "usage": {
                   "prompt_tokens": usage[0], "completion_tokens": usage[1],
                   "total_tokens": usage[0] + usage[1]}},
               finish_reason=None, tokens_used=None),
    ]


MODERATOR_ROLE = "You are the Trip Planner Moderator ..."
SCHEDULE_ROLE = "You look up train and airplane schedules between cities ..."
LOOKUP = {"origin": "Celestia", "destination": "Verdantia", "travel_mode": "train"}


def events() -> list[dict[str, Any]]:
    """The run's events, in the order mas-lab emits them (the schema's trajectory view)."""
    delegate = "delegate_to_schedule_agent"
    intent = json.dumps({"tool_name": delegate, "arguments": {"task": TASK}})
    return [
        _event("execution_start", "moderator", 1771889088.7677, input=PROMPT,
               context={"agent_id": "moderator", "run_id": "local"}),
        *_llm("moderator", 1771889088.7681, 1771889092.6869, MODERATOR_ROLE,
              f"{delegate}, ...", PROMPT,
              f"Based on your request ...\n```json\n{intent}\n```", (1149, 157), 3918.59),
        _event("tool_call_start", "moderator", 1771889092.6896, tool_name=delegate,
               arguments=None),
        _event("execution_start", "schedule_agent", 1771889092.6921, input=TASK,
               context={"agent_id": "moderator", "run_id": "local"}),
        *_llm("schedule_agent", 1771889092.6925, 1771889094.9013, SCHEDULE_ROLE,
              "lookup_schedule, get_attractions, get_attractions_description", TASK,
              json.dumps({"tool_name": "lookup_schedule", "arguments": LOOKUP}), (812, 64)),
        _event("tool_call_start", "schedule_agent", 1771889094.9031, tool_name="lookup_schedule",
               arguments=LOOKUP),
        _event("tool_call_end", "schedule_agent", 1771889094.9433, latency_ms=40.2,
               tool_name="lookup_schedule",
               result={"result": {"status": "ok", "result": "EX 12 06:40, ST 40 07:15 ..."}}),
        *_llm("schedule_agent", 1771889094.9440, 1771889098.2481, SCHEDULE_ROLE,
              "lookup_schedule, get_attractions, get_attractions_description", TASK,
              SCHEDULE, (1203, 211)),
        _event("execution_end", "schedule_agent", 1771889098.2508, status="success",
               output=SCHEDULE),
        _event("tool_call_end", "moderator", 1771889098.2510, latency_ms=5561.17,
               tool_name=delegate,
               result={"result": {"result": {"status": "ok", "result": SCHEDULE}}}),
        *_llm("moderator", 1771889098.2519, 1771889113.6201, MODERATOR_ROLE, f"{delegate}, ...",
              PROMPT, ANSWER, (1587, 402)),
        _event("user_response", "moderator", 1771889113.6235, content=ANSWER,
               message_type="info"),
        _event("execution_end", "moderator", 1771889113.6241, status="success", output=ANSWER),
    ]


def _line_of(kind: str, agent: str, **match: Any) -> int:
    for number, event in enumerate(events(), 1):
        if event["kind"] == kind and event["agent_id"] == agent and all(
                event.get(k) == v for k, v in match.items()):
            return number
    raise LookupError(kind)


LOOKUP_LINE = _line_of("tool_call_start", "schedule_agent", tool_name="lookup_schedule")
SCHEDULE_START_LINE = _line_of("execution_start", "schedule_agent")


# --- manifests ---------------------------------------------------------------------------------

_GENERATED = "# Written by tests/mas_lab_run.py; regenerate rather than edit.\n"


def manifests(leave_out: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """mas-lab manifests of the trip planner, by path relative to the manifests folder;
    ``leave_out`` names tools ``schedule_agent``'s manifest does not list."""
    tools = [t for t in ("lookup_schedule",) if t not in leave_out]
    return {
        "mas.yaml": {
            "apiVersion": "mas/v1", "kind": "MAS",
            "metadata": {"name": MAS, "description": "The trip planner of mas-lab's trajectory "
                         "schema: moderator delegates schedule questions to schedule_agent."},
            "spec": {
                "agency": {"agents": [{"id": "moderator", "ref": "agents/moderator.yaml"},
                                      {"id": "schedule_agent", "ref": "agents/schedule.yaml"}]},
                "workflow": {"type": "dynamic", "entry": "moderator", "nodes": [
                    {"id": "moderator", "role": "specialist",
                     "delegates_to": ["schedule_agent"]},
                    {"id": "schedule_agent", "role": "specialist"}]},
            },
        },
        "agents/moderator.yaml": {
            "apiVersion": "mas/v1", "kind": "Agent", "metadata": {"name": "moderator"},
            "spec": {"models": [{"model": MODEL}],
                     "description": "Trip planner moderator: delegates schedule questions.",
                     "context": {"role": MODERATOR_ROLE}},
        },
        "agents/schedule.yaml": {
            "apiVersion": "mas/v1", "kind": "Agent", "metadata": {"name": "schedule_agent"},
            "spec": {"models": [{"model": MODEL}],
                     "tools": [{"ref": f"../tools/{name}.tool.yaml"} for name in tools],
                     "description": "Transport schedule specialist.",
                     "context": {"role": SCHEDULE_ROLE}},
        },
        "tools/lookup_schedule.tool.yaml": {
            "apiVersion": "mas/v1", "kind": "Tool",
            "metadata": {"name": "lookup_schedule", "version": "1.0.0",
                         "description": "Look up departure schedules between two cities."},
            "spec": {
                "description": "Departures between an origin and a destination city.",
                "parameters": [
                    {"name": "origin", "type": "string", "required": True,
                     "description": "Departure city."},
                    {"name": "destination", "type": "string", "required": True,
                     "description": "Arrival city."},
                    {"name": "travel_mode", "type": "string", "required": False,
                     "enum": ["train", "airplane", "any"], "description": "Transport mode."}],
                "impl": {"kind": "python", "module_path": "./lookup_schedule.py",
                         "class_name": "LookupScheduleTool"},
            },
        },
    }


# --- writing -----------------------------------------------------------------------------------


def outputs(leave_out: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """Every file the program writes, as (path relative to the output folder, text)."""
    yield "run/run.json", json.dumps(RUN_JSON, indent=2, ensure_ascii=False) + "\n"
    yield "run/traces/events.jsonl", "".join(json.dumps(e, ensure_ascii=False) + "\n"
                                             for e in events())
    for path, document in manifests(leave_out).items():
        yield f"manifests/{path}", _GENERATED + yaml.safe_dump(
            document, sort_keys=False, allow_unicode=True, width=100)


def write(outdir: str, leave_out: tuple[str, ...] = ()) -> list[str]:
    """Write every output under ``outdir``; the paths written."""
    written = []
    for relative, text in outputs(leave_out):
        path = os.path.join(outdir, *relative.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python tests/mas_lab_run.py OUTDIR", file=sys.stderr)
        return 2
    for path in write(args[0]):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
