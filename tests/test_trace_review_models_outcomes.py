"""Two readings of the seeds held to the letter (a review):

* an ``llm_call_end`` event's raw ``response`` may name the model that answered (a provider's
  dated name): it stands in only where no event names the model asked for, never against it
  (it made a declared model use ``trace.call-conflict`` and ``capability.model-unknown``);
* an outcome record's ``started_at_ms``/``ended_at_ms`` are JSON Schema 2020-12 integers, which
  admit ``1771889088767.0`` and ``1.771889088767e12`` (they were refused as malformed).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support import EXAMPLES, IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

RUN = EXAMPLES / "trace" / "mas-lab" / "run"
MANIFESTS = EXAMPLES / "trace" / "mas-lab" / "manifests"


def _trace(*args: str | Path) -> tuple[int, str]:
    proc = subprocess.run([IOA_CHECK, "trace", *map(str, args), "--no-shapes"],
                          capture_output=True, timeout=120)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc.returncode, proc.stdout.decode()


def _with_response_model(tmp_path: Path, model: str | None, named: bool) -> Path:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    path = run / "traces" / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    for event in events:
        if event["kind"] == "llm_call_end" and model is not None:
            event.setdefault("response", {})["model"] = model
        if event["kind"].startswith("llm_call") and not named:
            event.pop("model", None)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return run


def test_the_model_a_response_names_never_contradicts_the_model_asked_for(
        tmp_path: Path) -> None:
    before, _ = _trace(_with_response_model(tmp_path / "a", None, True),
                       "--manifests", MANIFESTS)
    status, out = _trace(_with_response_model(tmp_path / "b", "gemini-3-pro-preview-2026-01-15",
                                              True), "--manifests", MANIFESTS)
    assert (status, before) == (0, 0), out
    assert "trace.call-conflict" not in out and "model-unknown" not in out
    assert "model vertex_ai/gemini-3-pro-preview" in out


def test_the_model_asked_for_wins_in_whichever_order_the_events_come(tmp_path: Path) -> None:
    """An end (its response naming a dated model) read before its start (naming the model
    asked for), as concurrent writers may interleave a call with an id: the start's model
    replaces the response's, never contradicts it."""
    run = _with_response_model(tmp_path, "gemini-3-pro-preview-2026-01-15", True)
    path = run / "traces" / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    start = next(i for i, e in enumerate(events) if e["kind"] == "llm_call_start")
    end = next(i for i, e in enumerate(events) if e["kind"] == "llm_call_end")
    events[start]["call_id"] = events[end]["call_id"] = "llm-1"
    events[start], events[end] = events[end], events[start]
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    status, out = _trace(run, "--manifests", MANIFESTS)
    assert status == 0, out
    assert "trace.call-conflict" not in out and "model-unknown" not in out


def test_the_model_a_response_names_stands_in_where_none_was_named(tmp_path: Path) -> None:
    status, out = _trace(_with_response_model(tmp_path, "vertex_ai/gemini-3-pro-preview", False),
                         "--manifests", MANIFESTS)
    assert status == 0 and "model vertex_ai/gemini-3-pro-preview" in out, out


_RECORD = {"schema_version": "1", "outcome_id": "out-1", "trace_id": "trace-ab12",
           "context_id": "ctx-opaque-9f", "operation": "tool.invoke", "status": "succeeded",
           "started_at_ms": 1771889088767, "ended_at_ms": 1771889098251,
           "input_artifact_refs": ["art-1"], "output_artifact_refs": [],
           "metrics": {"latency_ms": 9484}, "policy_decision": "allow", "error_code": None,
           "error_detail_ref": None, "evaluation_scores": {"reward": 0.5}}


@pytest.mark.parametrize("written", ["1771889088767.0", "1.771889088767e12",
                                     "1771889088767"])
def test_an_outcome_records_whole_milliseconds_in_any_spelling_are_read(
        tmp_path: Path, written: str) -> None:
    path = tmp_path / "outcome.json"
    path.write_text(json.dumps(_RECORD).replace("1771889088767", written, 1))
    _, out = _trace(path)
    assert "trace.event-malformed" not in out and "capability.evidence-opaque" in out, out


@pytest.mark.parametrize("written", ["1771889088767.5", "-1.0", "1e300", "9007199254740993.0"])
def test_an_outcome_records_milliseconds_that_are_no_whole_number_are_malformed(
        tmp_path: Path, written: str) -> None:
    path = tmp_path / "outcome.json"
    path.write_text(json.dumps(_RECORD).replace("1771889088767", written, 1))
    _, out = _trace(path)
    assert "trace.event-malformed" in out and "started_at_ms" in out, out


@pytest.mark.parametrize(("member", "value"), [("tool_name", 42), ("agent_id", ["a"]),
                                               ("model", {"name": "m"})])
def test_a_name_that_is_no_string_is_said(tmp_path: Path, member: str, value: object) -> None:
    """The schema types agent_id, tool_name and model as strings: one written otherwise names
    nothing, and is said so (it was left out unseen)."""
    events: list[dict[str, object]] = [
              {"kind": "execution_start", "agent_id": "schedule_agent", "timestamp": 1.0,
               "run_id": "r"},
              {"kind": "tool_call_start" if member != "model" else "llm_call_start",
               "agent_id": "schedule_agent", "timestamp": 2.0, "run_id": "r"},
              {"kind": "execution_end", "agent_id": "schedule_agent", "timestamp": 3.0,
               "run_id": "r", "status": "success"}]
    events[1][member] = value
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    _, out = _trace(path, "--manifests", MANIFESTS)
    assert "trace.attribute-malformed" in out and f"the {member} " in out, out


@pytest.mark.parametrize("stamp", ["absent", None])
def test_an_event_without_a_timestamp_is_said(tmp_path: Path, stamp: object) -> None:
    """The schema: every event carries kind, agent_id, timestamp and run_id. One without a
    time is read (its call is not timed) and said so; it was silent."""
    events = [{"kind": "execution_start", "agent_id": "schedule_agent", "timestamp": 1.0,
               "run_id": "r"},
              {"kind": "execution_end", "agent_id": "schedule_agent", "timestamp": stamp,
               "run_id": "r", "status": "success"}]
    if stamp == "absent":
        del events[1]["timestamp"]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    _, out = _trace(path, "--manifests", MANIFESTS)
    assert "line 2: the event has no timestamp" in out, out
