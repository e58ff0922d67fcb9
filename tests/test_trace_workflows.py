"""Workflows as they are (issue 36, item 3): a manifest declares several entries and
sequential or parallel steps, and the agents the workflow starts are declared, not undeclared
delegations.

The trace is a GenAI-convention OTLP trace (spans written from the semantic conventions'
attributes: ``gen_ai.operation.name`` ``invoke_workflow``/``invoke_agent``/``chat``/
``execute_tool``, ``gen_ai.agent.name``, ``gen_ai.request.model``, ``gen_ai.tool.name``) of a
pipeline: the MAS starts ``researcher``, then ``fanout``, a parallel agent (as frameworks'
parallel agents are agents themselves) that starts ``writer_en`` and ``writer_de``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("yaml", reason="the trace extra is not installed")

from genai_spans import request_line, span, span_id, write_manifests

from support import IOA_CHECK

MODEL = "gpt-4o"
AGENTS: dict[str, tuple[list[str], list[str]]] = {
    "researcher": ([MODEL], ["web_search"]),
    "fanout": ([], []),
    "writer_en": ([MODEL], ["spell_check"]),
    "writer_de": ([MODEL], ["spell_check"]),
}
STEPS = ["researcher", {"id": "fanout", "parallel": ["writer_en", "writer_de"]}]


def agent(number: int, parent: int, name: str, start: int) -> dict[str, Any]:
    return span(number, parent, f"invoke_agent {name}", {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}, start, start + 90)


def chat(number: int, parent: int, start: int) -> dict[str, Any]:
    return span(number, parent, f"chat {MODEL}", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": MODEL}, start, start + 10, 3)


def tool(number: int, parent: int, name: str, start: int) -> dict[str, Any]:
    return span(number, parent, f"execute_tool {name}", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}, start, start + 10)


def pipeline() -> str:
    spans = [span(1, None, "invoke_workflow newsroom", {
        "gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "newsroom"}, 0, 500),
        agent(2, 1, "researcher", 10), chat(3, 2, 20), tool(4, 2, "web_search", 40),
        agent(5, 1, "fanout", 200),
        agent(6, 5, "writer_en", 210), chat(7, 6, 220), tool(8, 6, "spell_check", 240),
        agent(9, 5, "writer_de", 210), chat(10, 9, 220), tool(11, 9, "spell_check", 240)]
    return request_line(spans, "newsroom")


def audit(trace: Path, manifests: Path) -> tuple[int, dict[str, dict[str, Any]], str]:
    proc = subprocess.run([IOA_CHECK, "trace", str(trace), "--manifests",
                           str(manifests / "mas.yaml"), "--format", "json", "--no-shapes"],
                          capture_output=True, timeout=120)
    assert proc.returncode in (0, 1, 3), proc.stderr
    lines = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    return proc.returncode, {r["agent"]: r for r in lines if "agent" in r}, proc.stdout.decode()


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "pipeline.jsonl"
    path.write_text(pipeline(), encoding="utf-8")
    return path


def test_steps_declare_every_agent_the_workflow_starts(trace: Path, tmp_path: Path) -> None:
    manifests = write_manifests(tmp_path / "m", "newsroom", AGENTS,
                                {"type": "sequential", "steps": STEPS})
    status, agents, text = audit(trace, manifests)
    assert set(agents) == set(AGENTS)
    assert {n: a["verdict"] for n, a in agents.items()} == dict.fromkeys(AGENTS, "compatible"), text
    assert status == 0


def test_one_entry_alone_leaves_the_second_step_an_undeclared_delegation(
        trace: Path, tmp_path: Path) -> None:
    """The manifest as it could be written before: one entry, no steps."""
    manifests = write_manifests(tmp_path / "m", "newsroom", AGENTS,
                                {"type": "sequential", "entry": "researcher", "nodes": [
                                    {"id": "fanout",
                                     "delegates_to": ["writer_en", "writer_de"]}]})
    status, agents, _ = audit(trace, manifests)
    assert status == 1
    assert {n for n, a in agents.items() if a["verdict"] != "compatible"} == {"fanout"}
    codes = [r["code"] for r in agents["fanout"]["reasons"]]
    assert "capability.undeclared-delegation" in codes


def test_several_entries_and_nodes_declare_the_same(trace: Path, tmp_path: Path) -> None:
    manifests = write_manifests(tmp_path / "m", "newsroom", AGENTS, {
        "type": "parallel", "entries": ["researcher", "fanout"],
        "nodes": [{"id": "fanout", "delegates_to": ["writer_en", "writer_de"]}]})
    status, agents, _ = audit(trace, manifests)
    assert status == 0 and {a["verdict"] for a in agents.values()} == {"compatible"}


def test_one_tool_removed_makes_exactly_its_agent_incompatible(trace: Path,
                                                               tmp_path: Path) -> None:
    declared = dict(AGENTS, writer_de=([MODEL], []))
    manifests = write_manifests(tmp_path / "m", "newsroom", declared,
                                {"type": "sequential", "steps": STEPS})
    status, agents, _ = audit(trace, manifests)
    assert status == 1
    assert {n for n, a in agents.items() if a["verdict"] != "compatible"} == {"writer_de"}
    undeclared = [r for r in agents["writer_de"]["reasons"]
                  if r["code"] == "capability.undeclared-tool"]
    assert len(undeclared) == 1
    assert "spell_check" in undeclared[0]["message"] and span_id(11) in undeclared[0]["message"]


def test_an_unreadable_step_leaves_the_agents_it_starts_unknown(trace: Path,
                                                                tmp_path: Path) -> None:
    manifests = write_manifests(tmp_path / "m", "newsroom", AGENTS, {
        "type": "sequential", "steps": ["researcher", {"parallel": "writer_en"}]})
    status, agents, text = audit(trace, manifests)
    assert agents["researcher"]["verdict"] == "compatible"
    assert agents["fanout"]["verdict"] == "indeterminate"
    assert "capability.declaration-unavailable" in text and status == 3
