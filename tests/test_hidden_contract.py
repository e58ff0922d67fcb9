"""The contract as an outside tester reads it: the installed ``ioa-check``, run from a folder
outside the repository, with the files a hidden case would bring (a profile of its own, a
registration, a mas-lab run folder written as the trajectory schema documents it).

Each test names the sentence of ``CONTRACT.md`` (or of the seeds) it holds the product to.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support import AT, IOA_CHECK, ROOT, envelope_62, registration_63

PROFILE = (ROOT / "ioa_semantic" / "data" / "profiles" / "cs-translation.ttl").read_text()
SCHEMES = '    iop:allowedScheme "https", "http", "urn" ;'


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IOA_CHECK, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NO_COLOR": "1"})


def _results(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def _codes(result: dict[str, Any]) -> list[str]:
    return [reason["code"] for reason in result["reasons"]]


# --- profiles are read strictly -----------------------------------------------------------


@pytest.mark.parametrize("schemes", ['"https:", "http:", "urn:"', '""', '"ht tp"', '"1https"'])
def test_an_allowed_scheme_that_is_no_scheme_is_a_configuration_error(
        tmp_path: Path, schemes: str) -> None:
    """"A value of the wrong kind ... [is a] configuration error (exit 2) naming the term":
    an allowed scheme written with its colon (or blank) matches no IRI, so every envelope
    would be invalid (17 jsonld.scheme-not-allowed reasons for the 6.2 envelope) for a
    reason that lies in the receiver's own profile."""
    assert SCHEMES in PROFILE
    (tmp_path / "p.ttl").write_text(PROFILE.replace(SCHEMES, f"    iop:allowedScheme {schemes} ;"))
    (tmp_path / "e.jsonld").write_text(json.dumps(envelope_62()))

    proc = _run(["e.jsonld", "--profile", "p.ttl", "--at", AT, "--format", "json"], tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout == ""
    assert "iop:allowedScheme" in proc.stderr and "line " in proc.stderr, proc.stderr

    lint = _run(["lint", "p.ttl"], tmp_path)
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert "iop:allowedScheme" in lint.stdout + lint.stderr


def test_allowed_schemes_are_names_in_any_case(tmp_path: Path) -> None:
    """The other side of the rule above: RFC 3986 schemes are case-insensitive names."""
    (tmp_path / "p.ttl").write_text(PROFILE.replace(
        SCHEMES, '    iop:allowedScheme "HTTPS", "Http", "urn", "did+key.v-1" ;'))
    (tmp_path / "e.jsonld").write_text(json.dumps(envelope_62()))
    proc = _run(["e.jsonld", "--profile", "p.ttl", "--at", AT, "--format", "json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _results(proc)[0]["verdict"] == "compatible"


# --- --capability ------------------------------------------------------------------------


@pytest.mark.parametrize(("named", "absent"), [("ontologyId", "ontologyVersion"),
                                               ("ontologyVersion", "ontologyId")])
def test_a_capability_naming_half_an_ontology_pair_says_which_half_is_missing(
        tmp_path: Path, named: str, absent: str) -> None:
    """"An unreadable or malformed --capability file is a configuration error (exit 2)":
    a registration with an ontologyId but no version (or the reverse) is one, and the
    message names the missing half, not the profile (which accepts exactly one ontology,
    so blaming it sent the operator the wrong way)."""
    registration = registration_63()
    registration["@context"]["ontologyId"] = {"@id": "ioa:ontologyId", "@type": "@id"}
    registration["@context"]["ontologyVersion"] = "ioa:ontologyVersion"
    registration[named] = {"ontologyId": "https://example.org/onto/agent-core",
                           "ontologyVersion": "1.0"}[named]
    (tmp_path / "cap.jsonld").write_text(json.dumps(registration))
    (tmp_path / "e.jsonld").write_text(json.dumps(envelope_62()))

    proc = _run(["e.jsonld", "--profile", "cs-translation", "--capability", "cap.jsonld",
                 "--at", AT, "--format", "json"], tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"names an {named} but no {absent}" in proc.stderr, proc.stderr
    assert "does not accept exactly one ontology" not in proc.stderr


# --- the trace audit on run folders written as mas-lab's trajectory schema documents them --


def _run_folder(tmp_path: Path, change: Any = None) -> tuple[Path, Path]:
    """The schema's own example run (tests/mas_lab_run.py) and its manifests, the events
    passed through ``change`` first; (the run folder, the manifests folder)."""
    import mas_lab_run

    mas_lab_run.write(str(tmp_path))
    events_file = tmp_path / "run" / "traces" / "events.jsonl"
    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    if change is not None:
        change(events)
    events_file.write_text("".join(json.dumps(e) + "\n" for e in events))
    return tmp_path / "run", tmp_path / "manifests"


def _trace(tmp_path: Path, run: Path, manifests: Path) -> tuple[int, list[dict[str, Any]]]:
    proc = _run(["trace", str(run), "--manifests", str(manifests), "--format", "json"], tmp_path)
    assert proc.returncode in (0, 1, 3), proc.stderr
    return proc.returncode, _results(proc)


@pytest.mark.parametrize("stamp", ["abc", True, {"seconds": 1771889088}, [1771889088.7681]])
def test_a_malformed_timestamp_of_an_event_is_reported_not_dropped_unseen(
        tmp_path: Path, stamp: Any) -> None:
    """The schema: every event carries "timestamp float Unix epoch seconds". One of another
    kind times nothing (mas:startTime is left out of the graph), and the audit says so at
    the member, as it does for a malformed time of an OTLP span; the verdicts, which the
    order of events decides, are unchanged."""
    def spoil(events: list[dict[str, Any]]) -> None:
        assert events[2]["kind"] == "llm_call_start"
        events[2]["timestamp"] = stamp

    status, lines = _trace(tmp_path, *_run_folder(tmp_path, spoil))
    summary = lines[-1]["summary"]
    assert status == 0 and summary["verdict"] == "compatible", summary
    malformed = [r for r in summary["reasons"] if r["code"] == "trace.attribute-malformed"]
    assert len(malformed) == 1, summary["reasons"]
    assert malformed[0]["path"] == "/2/timestamp"
    assert malformed[0]["severity"] == "warning"
    assert summary["skippedLines"] == 0


def test_a_call_that_ends_before_it_starts_is_reported_and_its_times_not_used(
        tmp_path: Path) -> None:
    """The schema: events are emitted in chronological order, each with its Unix seconds.
    A call whose end event carries an instant before its start event's cannot have both
    right: its end time is not used and the audit says so at the end's timestamp (its start,
    which places it among the other calls, is kept); the verdicts, which the order decides,
    stay."""
    def spoil(events: list[dict[str, Any]]) -> None:
        assert events[3]["kind"] == "llm_call_end" and events[2]["kind"] == "llm_call_start"
        events[3]["timestamp"] = events[2]["timestamp"] - 1

    status, lines = _trace(tmp_path, *_run_folder(tmp_path, spoil))
    summary = lines[-1]["summary"]
    assert status == 0 and summary["verdict"] == "compatible", summary
    malformed = [r for r in summary["reasons"] if r["code"] == "trace.attribute-malformed"]
    assert [(r["path"], r["severity"]) for r in malformed] == [("/3/timestamp", "warning")]
    assert "before it starts" in malformed[0]["message"]
    # The call's end time is left out of the graph; its start and its events' other
    # members are read.
    kg = tmp_path / "kg.nt"
    assert _run(["trace", str(tmp_path / "run"), "--manifests", str(tmp_path / "manifests"),
                 "--emit-kg", str(kg)], tmp_path).returncode == 0
    graph = kg.read_text()
    assert "1771889092.6925" in graph  # another call's start: the times are in the graph
    assert "1771889087.7681" not in graph and "1771889088.7681" in graph


def test_an_event_with_only_the_schemas_mandatory_members_is_read_as_a_call(
        tmp_path: Path) -> None:
    """Every member the schema documents beyond kind, agent_id, timestamp and run_id (and
    what names the call's target) may be absent: input, context, messages, temperature,
    response, usage, arguments, result, status, output, content, segments, payload."""
    keep = {"kind", "agent_id", "timestamp", "run_id", "model", "tool_name"}

    def strip(events: list[dict[str, Any]]) -> None:
        for event in events:
            for member in set(event) - keep:
                del event[member]

    status, lines = _trace(tmp_path, *_run_folder(tmp_path, strip))
    summary = lines[-1]["summary"]
    assert status == 0, summary
    assert summary["agents"] == {"moderator": "compatible", "schedule_agent": "compatible"}
    assert summary["calls"] == {"agent": 2, "llm": 4, "tool": 2}
    assert not [r for r in summary["reasons"] if r["severity"] != "info"], summary["reasons"]


@pytest.mark.parametrize("run_json", [
    None,                                   # no run.json: the events name the run
    {"run_id": "f52df92b"},                 # only the run's id
    {"run_id": "f52df92b", "status": "error", "duration_secs": 3},
    {"run_id": "f52df92b", "created_at": "2026-02-23T23:24:48.694866"},  # read as UTC
])
def test_run_json_variants_the_schema_allows_leave_the_verdict_alone(
        tmp_path: Path, run_json: dict[str, Any] | None) -> None:
    """run.json is the run's record, written once at its end: absent, minimal, an errored
    run's, or a created_at without an offset ("ISO-8601 UTC timestamp") all audit alike."""
    run, manifests = _run_folder(tmp_path)
    if run_json is None:
        (run / "run.json").unlink()
    else:
        (run / "run.json").write_text(json.dumps(run_json))
    status, lines = _trace(tmp_path, run, manifests)
    summary = lines[-1]["summary"]
    assert status == 0, summary
    assert summary["run"] == "f52df92b"
    assert not [r for r in summary["reasons"] if r["severity"] != "info"], summary["reasons"]


def test_the_audit_event_and_an_unknown_kind_decide_nothing(tmp_path: Path) -> None:
    """The schema's audit event (an arbitrary plugin payload) is a known kind; a kind the
    reader does not know is counted, never fatal."""
    def add(events: list[dict[str, Any]]) -> None:
        base = {"agent_id": "moderator", "timestamp": 1771889088.77, "run_id": "f52df92b"}
        events.insert(1, {"kind": "audit", **base, "payload": {
            "event": "budget_gate_triggered", "total_cost_usd": 1450.0, "budget_limit": 1200.0}})
        events.insert(2, {"kind": "checkpoint_saved", **base})

    status, lines = _trace(tmp_path, *_run_folder(tmp_path, add))
    summary = lines[-1]["summary"]
    assert status == 0, summary
    assert summary["unknownKinds"] == {"checkpoint_saved": 1}
    assert summary["events"] == 21 + 2


OUTCOME_SCHEMA = (ROOT.parent / "shared" / "reference" / "mas-traces" / "agent-utilities"
                  / "trace-outcome.schema.json")
OUTCOME = {"schema_version": "1", "outcome_id": "opaque-outcome-1", "trace_id": "opaque-trace-1",
           "context_id": "opaque-context-1", "operation": "tool.invoke", "status": "succeeded",
           "started_at_ms": 1000, "ended_at_ms": 2000, "input_artifact_refs": ["sha256:0f1e"],
           "output_artifact_refs": [], "metrics": {"latency_ms": 12.5},
           "policy_decision": "allow", "error_code": None, "error_detail_ref": None,
           "evaluation_scores": {}}


def test_an_outcome_record_is_read_exactly_when_the_published_v1_schema_admits_it(
        tmp_path: Path) -> None:
    """A trace outcome record is agent-utilities' TraceOutcome v1, whose schema is content
    free by construction ("additionalProperties": false; prompts and responses excluded):
    a record that carries a prompt, a negative or fractional time, an empty reference, a
    metric that is no number or a policy decision outside its enum is not that record, and
    is reported (trace.event-malformed at its line), never read as one. The published
    schema is the oracle, line by line."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(json.loads(OUTCOME_SCHEMA.read_text()))
    variants: list[dict[str, Any]] = [
        OUTCOME,
        {**OUTCOME, "prompt": "the user's own words"},
        {**OUTCOME, "started_at_ms": -5},
        {**OUTCOME, "ended_at_ms": 2000.5},
        {**OUTCOME, "started_at_ms": "1000"},
        {**OUTCOME, "input_artifact_refs": [""]},
        {**OUTCOME, "output_artifact_refs": [7]},
        {**OUTCOME, "metrics": {"latency_ms": "fast"}},
        {**OUTCOME, "metrics": {"ok": True}},
        {**OUTCOME, "evaluation_scores": []},
        {**OUTCOME, "policy_decision": "maybe"},
        {**OUTCOME, "error_code": ""},
        {**OUTCOME, "error_code": "E_TIMEOUT", "error_detail_ref": "artifact:diag-1"},
        {**OUTCOME, "status": "failed", "evaluation_scores": {"reward": 0.25}},
    ]
    admitted = [validator.is_valid(v) for v in variants]
    assert admitted.count(True) == 3 and admitted.count(False) == len(variants) - 3
    (tmp_path / "outcomes.jsonl").write_text("".join(json.dumps(v) + "\n" for v in variants))

    proc = _run(["trace", "outcomes.jsonl", "--format", "json"], tmp_path)
    assert proc.returncode == 3, proc.stderr
    summary = _results(proc)[-1]["summary"]
    assert summary["records"] == admitted.count(True)
    flagged = {r["path"] for r in summary["reasons"] if r["code"] == "trace.event-malformed"}
    assert flagged == {f"/{n}" for n, ok in enumerate(admitted) if not ok}
    # Names of members the schema does not define are counted, never shown: they may be the
    # very content the record keeps out.
    assert "prompt" not in proc.stdout and "the user's own words" not in proc.stdout


# --- the baseline context is the receiver's (rule 2) ----------------------------------------


@pytest.mark.parametrize("definition", [{"@id": "https://example.org/ioa/semantic#"},
                                        {"@id": "ioa:", "@protected": True}])
def test_the_baseline_prefix_as_an_expanded_definition_is_a_redefinition(
        tmp_path: Path, definition: dict[str, Any]) -> None:
    """Rule 2: a sender's definition of a baseline term must equal the baseline's, "whether or
    not JSON-LD itself would accept it". ``"ioa": {"@id": "...semantic#"}`` names the same
    IRI, but JSON-LD 1.1 takes an expanded definition for a prefix only with "@prefix":
    every ioa:... of the document stays unexpanded. That is one jsonld.term-redefinition at
    /@context/ioa, not two dozen envelope and scheme reasons at the document's root."""
    envelope = envelope_62()
    envelope["@context"]["ioa"] = definition
    (tmp_path / "e.jsonld").write_text(json.dumps(envelope))
    registration = registration_63()
    registration["@context"]["ioa"] = definition
    (tmp_path / "r.jsonl").write_text(json.dumps(registration) + "\n")

    proc = _run(["e.jsonld", "--profile", "cs-translation", "--at", AT, "--format", "json"],
                tmp_path)
    assert proc.returncode == 4, proc.stderr
    (result,) = _results(proc)
    assert [(r["code"], r["path"]) for r in result["reasons"]] == [
        ("jsonld.term-redefinition", "/@context/ioa")]

    audit = _run(["audit", "r.jsonl", "--profile", "cs-translation", "--format", "json"],
                 tmp_path)
    assert audit.returncode == 1, audit.stderr
    first = _results(audit)[0]
    assert first["status"] == "invalid"
    assert ("jsonld.term-redefinition", "/@context/ioa") in [
        (r["code"], r["path"]) for r in first["reasons"]]


def test_a_baseline_term_in_expanded_form_with_the_same_meaning_is_accepted(
        tmp_path: Path) -> None:
    """The other side: a term that is no prefix (ontologyVersion) may be written as
    {"@id": ...} with the baseline's IRI: the same meaning, compatible."""
    envelope = envelope_62()
    envelope["@context"]["ontologyVersion"] = {"@id": "ioa:ontologyVersion"}
    (tmp_path / "e.jsonld").write_text(json.dumps(envelope))
    proc = _run(["e.jsonld", "--profile", "cs-translation", "--at", AT, "--format", "json"],
                tmp_path)
    assert proc.returncode == 0, proc.stdout


# --- exit status 74: the environment failed the run ---------------------------------------


def test_a_trace_state_file_that_cannot_be_written_is_exit_74_naming_it(tmp_path: Path) -> None:
    """Exit 74: "the environment failed the run (disk full, an output or state file that
    cannot be written): a message on stderr naming the file". A --state in a folder that
    does not exist was an internal error (70, a traceback) instead."""
    run, manifests = _run_folder(tmp_path)
    state = tmp_path / "no-such-folder" / "trace.state"
    proc = _run(["trace", str(run), "--manifests", str(manifests), "--state", str(state),
                 "--format", "json"], tmp_path)
    assert proc.returncode == 74, proc.stderr
    assert proc.stdout == ""
    assert f"cannot write {state}" in proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
