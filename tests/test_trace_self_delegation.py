"""An agent that delegates to itself through a tool (``delegate_to_A`` called by ``A``: the
seed's "recursive delegation", one of execution_start's causes) is judged against its
``delegates_to`` like any other delegation. It was dropped as if the agent were resuming
itself, so the inner agent call appeared in no use. An agent call directly under the same
agent's own call stays no delegation."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support import EXAMPLES, IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

MANIFESTS = EXAMPLES / "trace" / "mas-lab" / "manifests"


def _events(*through_tool: bool) -> str:
    lines = [{"kind": "execution_start", "agent_id": "moderator", "timestamp": 1.0,
              "run_id": "r2", "input": "q"}]
    clock = 2.0
    for tool in through_tool:
        if tool:
            lines.append({"kind": "tool_call_start", "agent_id": "moderator", "timestamp": clock,
                          "run_id": "r2", "tool_name": "delegate_to_moderator",
                          "arguments": None})
        lines.append({"kind": "execution_start", "agent_id": "moderator",
                      "timestamp": clock + 0.1, "run_id": "r2", "input": "sub"})
        lines.append({"kind": "execution_end", "agent_id": "moderator",
                      "timestamp": clock + 0.2, "run_id": "r2", "status": "success",
                      "output": "x"})
        if tool:
            lines.append({"kind": "tool_call_end", "agent_id": "moderator",
                          "timestamp": clock + 0.3, "run_id": "r2",
                          "tool_name": "delegate_to_moderator", "result": {}})
        clock += 1
    lines.append({"kind": "execution_end", "agent_id": "moderator", "timestamp": clock,
                  "run_id": "r2", "status": "success", "output": "y"})
    return "".join(json.dumps(line) + "\n" for line in lines)


def _manifests(tmp_path: Path, delegates_to_itself: bool) -> Path:
    folder = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, folder)
    (folder / "tools" / "delegate_to_moderator.tool.yaml").write_text(
        "apiVersion: mas/v1\nkind: Tool\nmetadata:\n  name: delegate_to_moderator\n"
        "  version: 1.0.0\n  description: re-enter the moderator\nspec:\n  description: x\n")
    agent = folder / "agents" / "moderator.yaml"
    agent.write_text(agent.read_text().replace(
        "spec:\n", "spec:\n  tools:\n  - ref: ../tools/delegate_to_moderator.tool.yaml\n", 1))
    if delegates_to_itself:
        mas = folder / "mas.yaml"
        text = mas.read_text()
        listed = "      delegates_to:\n      - schedule_agent\n"
        assert listed in text, text
        mas.write_text(text.replace(listed, listed + "      - moderator\n"))
    return folder


def _trace(tmp_path: Path, events: str, manifests: Path) -> tuple[int, str]:
    path = tmp_path / "events.jsonl"
    path.write_text(events)
    proc = subprocess.run([IOA_CHECK, "trace", str(path), "--manifests", str(manifests),
                           "--no-shapes", "--format", "json"], capture_output=True, timeout=120)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc.returncode, proc.stdout.decode()


def test_a_delegation_to_itself_through_a_tool_is_judged_against_delegates_to(
        tmp_path: Path) -> None:
    status, out = _trace(tmp_path, _events(True), _manifests(tmp_path, False))
    assert status == 1, out
    assert out.count("capability.undeclared-delegation") == 1, out
    assert "delegated to moderator" in out


def test_a_declared_delegation_to_itself_is_compatible(tmp_path: Path) -> None:
    status, out = _trace(tmp_path, _events(True), _manifests(tmp_path, True))
    assert status == 0, out
    report = [json.loads(line) for line in out.splitlines()]
    moderator = next(r for r in report if r.get("agent") == "moderator")
    assert moderator["aspects"].get("delegations") == "compatible", moderator


def test_an_agent_call_directly_under_its_own_is_no_delegation(tmp_path: Path) -> None:
    _, out = _trace(tmp_path, _events(False), _manifests(tmp_path, False))
    assert "capability.undeclared-delegation" not in out
    report = [json.loads(line) for line in out.splitlines()]
    moderator = next(r for r in report if r.get("agent") == "moderator")
    assert "delegations" not in moderator["aspects"], moderator
