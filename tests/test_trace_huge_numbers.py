"""Numbers past what a float or 64 bits hold, where the trace audit reads a number or a count:
a reason or no value, never a traceback (a review found each ending in exit 70, in both
builds: ``float()`` of an integer of 400 digits, and a token count of 2^64 that the knowledge
graph's JSON-LD writer refused)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

from ioa_semantic.trace import otlp

from support import IOA_CHECK

HUGE = 10 ** 400  # json.dumps writes it as an integer of 401 digits
SPAN = {"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba90201",
        "startTimeUnixNano": "1", "endTimeUnixNano": "2"}


def request(name: str, attributes: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": [{
        **SPAN, "name": name,
        "attributes": [{"key": k, "value": v} for k, v in attributes.items()]}]}]}]}


def audit(tmp_path: Path, lines: list[dict[str, Any]], *options: str) -> tuple[int, str]:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    proc = subprocess.run([IOA_CHECK, "trace", str(path), "--no-shapes", "--format", "json",
                           *options], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode != 70, proc.stderr
    assert proc.stderr == "", proc.stderr
    return proc.returncode, proc.stdout


CHAT = {"gen_ai.operation.name": {"stringValue": "chat"}}


@pytest.mark.parametrize("lines", [
    [request("chat", {**CHAT, "gen_ai.request.temperature": {"doubleValue": HUGE}})],
    [request("chat", {**CHAT, "gen_ai.request.temperature": {"intValue": HUGE}})],
    [request("chat", {**CHAT, "gen_ai.usage.input_tokens": {"intValue": str(1 << 63)}})],
    [request("LLMCall", {"mas.agent.id": {"stringValue": "a"},
                         "mas.llm.temperature": {"intValue": HUGE}})],
    [request("LLMCall", {"mas.agent.id": {"stringValue": "a"},
                         "mas.llm.temperature": {"doubleValue": HUGE}})],
], ids=["otlp-double", "otlp-int", "otlp-int64-string", "maslab-int", "maslab-double"])
def test_an_attribute_too_large_for_its_type_is_malformed(tmp_path: Path,
                                                          lines: list[dict[str, Any]]) -> None:
    _, out = audit(tmp_path, lines)
    assert "trace.attribute-malformed" in out


def test_an_outcome_records_score_too_large_for_a_float_is_malformed(tmp_path: Path) -> None:
    record = {"schema_version": "1", "outcome_id": "o1", "trace_id": "t1", "context_id": "c1",
              "operation": "tool.invoke", "status": "succeeded", "started_at_ms": 1000,
              "ended_at_ms": 2000, "input_artifact_refs": [], "output_artifact_refs": [],
              "metrics": {"latency_ms": HUGE}}
    _, out = audit(tmp_path, [record])
    assert "trace.event-malformed" in out


def test_a_temperature_or_token_count_past_its_type_is_no_value(tmp_path: Path) -> None:
    """mas-lab events: a temperature of 400 digits and a token count of 2^64 are not the
    call's; the knowledge graph (JSON-LD, whose writer refuses integers past 64 bits) is
    written."""
    events = [{"kind": "execution_start", "agent_id": "a", "timestamp": 1.5, "run_id": "r"},
              {"kind": "llm_call_start", "agent_id": "a", "timestamp": 1.6, "run_id": "r",
               "model": "m", "temperature": HUGE},
              {"kind": "llm_call_end", "agent_id": "a", "timestamp": 1.7, "run_id": "r",
               "response": {"usage": {"prompt_tokens": 1 << 64, "completion_tokens": 1}}},
              {"kind": "execution_end", "agent_id": "a", "timestamp": 1.8, "run_id": "r"}]
    status, _ = audit(tmp_path, events, "--emit-kg", "kg.jsonld")
    assert status in (0, 1, 3)
    graph = (tmp_path / "kg.jsonld").read_text()
    assert str(1 << 64) not in graph and str(HUGE)[:50] not in graph


def test_a_count_is_a_whole_number_within_64_bits() -> None:
    assert [otlp.count(v) for v in (0, (1 << 63) - 1, 1 << 63, -1, True, 1.0)] == [
        0, (1 << 63) - 1, None, None, None, None]
    assert [otlp.number(v) for v in (1, 1.5, HUGE, True, "1")] == [1.0, 1.5, None, None, None]


def test_a_score_of_zero_is_a_score() -> None:
    """(A score's check once read 0 as no number: ``number or inf``.)"""
    from ioa_semantic.trace.events import _is_scores

    assert _is_scores({"a": 0, "b": 0.0, "c": -0.0, "d": 1e-400})
    assert not _is_scores({"a": 10 ** 400}) and not _is_scores({"a": "1"})
