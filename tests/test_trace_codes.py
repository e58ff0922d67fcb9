"""Every code the trace stage can emit is registered and reached by some trace input.

The counterpart, for ``ioa-check trace``, of ``tests/test_codes.py`` (whose reachability test
runs envelope cases): the trace modules' literal codes and the ``trace.`` family, each reached
by a real input through the installed command.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ioa_semantic._codes import CODES, FAMILIES

from otlp_requests import agent, chat, maslab, maslab_trip, request, span, tool, trip
from support import IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import mas_lab_run
from test_trace import (
    GOLDEN,
    MANIFESTS,
    TRACES,
    _outcome_from_schema,
    _registration,
    renamed_copy,
)
from test_trace_nesting import run_folder

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")

PACKAGE = Path(__file__).resolve().parents[1] / "ioa_semantic"
TRAVEL = "https://example.org/onto/travel#"


def trace_codes() -> set[str]:
    literal = re.compile(r'(?:finding\(\s*|\[)"([a-z]+\.[a-z0-9.-]+)"')
    used: set[str] = set()
    for path in (PACKAGE / "trace").glob("*.py"):
        used |= set(literal.findall(path.read_text()))
    return used | {code for code in CODES if code.startswith("trace.")}


def test_the_trace_codes_are_registered_in_contract_families() -> None:
    codes = trace_codes()
    assert "capability.undeclared-tool" in codes and "trace.shape" in codes
    assert codes <= set(CODES), codes - set(CODES)
    assert "trace" in FAMILIES


def _codes(proc: subprocess.CompletedProcess[bytes]) -> set[str]:
    assert proc.returncode in (0, 1, 3, 4), proc.stderr
    found = set()
    for line in proc.stdout.decode().splitlines():
        item = json.loads(line)
        summary = item.get("summary", item)
        found |= {r["code"] for r in summary["reasons"]}
        found |= {r["code"] for r in summary.get("shapes", {}).get("findings", [])}
    return found


def test_every_trace_code_is_reached_by_some_trace_input(tmp_path: Path) -> None:
    def run(*args: object) -> set[str]:
        return _codes(subprocess.run([IOA_CHECK, "trace", *map(str, args), "--format", "json"],
                                     cwd=tmp_path, capture_output=True, timeout=120))

    reached = run(GOLDEN, "--manifests", MANIFESTS)  # with the shapes
    reached |= run(GOLDEN, "--max-shape-calls", "1")  # a run over the shapes' call limit
    reached |= run(renamed_copy(tmp_path), "--manifests", MANIFESTS, "--no-shapes")

    # A MAS that no longer lists schedule_agent nor delegates to it, and another model.
    manifests = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, manifests)
    mas = (manifests / "mas.yaml").read_text()
    mas = mas.replace("      - id: schedule_agent\n        ref: agents/schedule.yaml\n", "")
    (manifests / "mas.yaml").write_text(mas.replace("          - schedule_agent\n", ""))
    (tmp_path / "model.jsonl").write_text((GOLDEN / "events.jsonl").read_text().replace(
        '"kind": "llm_call_start", "agent_id": "moderator", "run_id": ""',
        '"kind": "llm_call_start", "agent_id": "moderator", "model": "m", "run_id": ""'))
    reached |= run("model.jsonl", "--manifests", manifests, "--no-shapes")

    # A damaged stream: a broken line, no kind, an array, an unnamed tool, a call started twice, a
    # parent the trace does not hold, a call that never ends.
    lines = (GOLDEN / "events.jsonl").read_text().splitlines()
    lines += ['{"kind": "tool_call_start", "agent_id": "moderator", "call_id": "t-x", '
              '"parent_call_id": "moderator-u1-exec", "timestamp": 1}',
              '{"kind": "tool_call_end", "agent_id": "moderator", "call_id": "t-x", '
              '"timestamp": 2}',
              "{broken", '{"no": "kind"}', "[1, 2]", lines[1],
              '{"kind": "execution_start", "agent_id": "late", "call_id": "late-exec", '
              '"parent_call_id": "gone", "timestamp": 3}']
    (tmp_path / "damaged.jsonl").write_text("\n".join(lines) + "\n")
    reached |= run("damaged.jsonl", "--no-shapes")

    (tmp_path / "regs.jsonl").write_text(json.dumps(_registration(TRAVEL + "A")) + "\n")
    for tools, agents in (
            ({}, {}),
            ({"lookup_schedule": [TRAVEL + "A", TRAVEL + "B"]}, {}),
            ({"lookup_schedule": TRAVEL + "B"}, {"schedule_agent": [TRAVEL + "A"]}),
            ({"lookup_schedule": TRAVEL + "B"}, {"schedule_agent": [TRAVEL + "B"]})):
        (tmp_path / "b.json").write_text(json.dumps({"tools": tools, "agents": agents}))
        reached |= run(GOLDEN, "--registrations", "regs.jsonl", "--profile", "cs-translation",
                       "--bindings", "b.json", "--no-shapes")

    # OTLP spans: one without an id, an attribute of the wrong type, two spans that are each
    # other's parents, an A2A request whose served agent is not in the trace, a tool name on
    # a span without an operation.
    spans = [*trip(), span(8, 2, {"a2a.method.name": "message/send"}, kind=3),
             agent(9, 10, "intruder"), tool(10, 9, "wire_money"), tool(11, 5, "x"),
             span(12, 5, {"gen_ai.tool.name": "wire_money"})]
    spans[9]["attributes"][1]["value"] = {"intValue": "x"}
    del spans[-2]["spanId"]
    (tmp_path / "otlp.jsonl").write_text(json.dumps(request(*spans)) + "\n")
    reached |= run("otlp.jsonl", "--manifests", MANIFESTS, "--no-shapes")

    # Agent spans of two agents beside a chat span that both enclose in time: whose call it
    # is is not guessed.
    beside = [agent(21, None, "moderator"), agent(22, None, "schedule_agent"), chat(23, None)]
    start = int(beside[2]["startTimeUnixNano"])
    for each in beside[:2]:
        each["startTimeUnixNano"], each["endTimeUnixNano"] = str(start - 1), str(start + 10**6)
    (tmp_path / "beside.jsonl").write_text(json.dumps(request(*beside)) + "\n")
    reached |= run("beside.jsonl", "--manifests", MANIFESTS, "--no-shapes")

    # The trajectory schema's run without call ids: moderator's last LLM call moved into
    # schedule_agent's run (interleaved, so nesting is ambiguous); run.json with a status the
    # schema does not know, then another run's run.json.
    events = mas_lab_run.events()
    stream = events[:9] + events[16:19] + events[9:16] + events[19:]
    for name, run_json in (("tangled", {**mas_lab_run.RUN_JSON, "status": "done"}),
                           ("other", {**mas_lab_run.RUN_JSON, "run_id": "0badc0de"})):
        reached |= run(run_folder(tmp_path / name, stream, run_json), "--no-shapes")
    # mas-lab's OTel export: a span of a name the table does not know, a GenAI call in a
    # trace of mas-lab spans, and a trace of links only.
    links = "0123456789abcdef0123456789abcdef"
    maslab_spans = [*maslab_trip(),
                    maslab("SkillExecution", {"mas.agent.id": "schedule_agent"}, 8, 5),
                    span(9, 3, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}),
                    maslab("CallAnnotation", {"mas.agent.id": "moderator"}, 10, None,
                           trace=links)]
    (tmp_path / "maslab.jsonl").write_text(json.dumps(request(*maslab_spans)) + "\n")
    reached |= run("maslab.jsonl", "--manifests", MANIFESTS, "--no-shapes")

    (tmp_path / "outcome.json").write_text(json.dumps(_outcome_from_schema()))
    reached |= run("outcome.json", "no-such-run", "--no-shapes")
    # A bound the process alone passes: the run is not judged (trace.memory-bound).
    reached |= run(GOLDEN, "--no-shapes", "--max-memory", "1MiB")

    missing = trace_codes() - reached
    assert not missing, f"trace codes no input reaches: {sorted(missing)}"
