"""The trace audit attacked as a hostile user and as a new user would: each case a finding or a
clear error, never a traceback, never a hang, and never an identity where ``--opaque-ids`` or
a private store withholds it.

Each test cites the seed sentence (``../shared/reference/seeds/``) it holds the audit to.
The runs are the mas-lab schema's own example (``tests/mas_lab_run.py``), damaged one way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import mas_lab_run
from test_trace import records, trace
from test_trace_nesting import EXAMPLE, run_folder

from support import IOA_CHECK

MANIFESTS = EXAMPLE / "manifests"
EVENTS_NO_RUN_ID = [{k: v for k, v in e.items() if k != "run_id"} for e in mas_lab_run.events()]


def _text(proc: Any) -> str:
    return str(proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace"))


def _events_file(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


@pytest.mark.skipif(os.name != "posix", reason="file names of bytes are POSIX's")
@pytest.mark.parametrize("opaque", [False, True])
def test_a_run_named_after_a_path_that_is_not_utf8(tmp_path: Path, opaque: bool) -> None:
    """A run whose events carry no ``run_id`` is named after its input's path (docs/trace.md);
    a path of bytes that are not UTF-8 reaches Python with lone surrogates, which
    ``urllib.parse.quote`` and the HMAC of a reference refused (a traceback, exit 70). The
    schema's run folder is ``<YYYYMMDD-HHMMSS>-<scenario>-<run-id>``, with the scenario's
    name as the user wrote it (mas-lab-trajectory-schema, "Run directory layout")."""
    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/20260223-232448-sc\xe9nario-f52df92b"))
    (folder / "traces").mkdir(parents=True)
    _events_file(folder / "traces" / "events.jsonl", EVENTS_NO_RUN_ID)
    more = ["--opaque-ids"] if opaque else []
    proc = trace([folder, "--manifests", MANIFESTS, "--format", "json", "--emit-kg", "kg.ttl",
                  *more], tmp_path)
    assert proc.returncode == 0, _text(proc)
    agents, [summary] = records(proc)
    assert summary["verdict"] == "compatible" and len(agents) == 2
    graph = (tmp_path / "kg.ttl").read_text()
    # The run's node: the path's bytes percent-encoded (surrogatepass), or its reference.
    assert ("%ED%B3%A9" in graph) != opaque and "urn:ioa-trace:run:" in graph


@pytest.mark.skipif(os.name != "posix", reason="file names of bytes are POSIX's")
@pytest.mark.parametrize("keep", [["--state", "s.state"], ["--store", "st", "--store-plain-ids"],
                                  ["--store", "st"]])
def test_a_run_named_after_a_path_that_is_not_utf8_is_kept_and_read_again(
        tmp_path: Path, keep: list[str]) -> None:
    """The same run kept in a trace state or a durable store, plain or private: the state's
    line and the store's literals and node names could not hold the name's lone surrogate
    (a traceback, exit 70). A second feed reads the state back (nothing new), and the store
    is re-audited."""
    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/20260223-232448-sc\xe9nario-f52df92b"))
    (folder / "traces").mkdir(parents=True)
    _events_file(folder / "traces" / "events.jsonl", EVENTS_NO_RUN_ID)
    for _ in range(2):
        at = ["--at", "2026-06-01T00:00:00Z"] if keep[0] == "--store" else []
        proc = trace([folder, "--manifests", MANIFESTS, *keep, *at], tmp_path)
        assert proc.returncode == 0, _text(proc)
    if keep[0] == "--store":
        done = subprocess.run([IOA_CHECK, "trace", "reaudit", "st", "--manifests",
                               str(MANIFESTS)], cwd=tmp_path, capture_output=True, timeout=300)
        assert done.returncode == 0, _text(done)


def test_opaque_ids_name_no_path_of_an_unreadable_input(tmp_path: Path) -> None:
    """"Run identifiers are converted to stable opaque references before persistence ... so
    a run id, user name, or machine path is not copied into node ids" (agent-utilities trace
    ontology, "Identity and privacy"); ``--opaque-ids`` words reports so (docs/trace.md). An
    input that is missing, or a folder without events, named its raw path in its reason."""
    secret = tmp_path / "home-alice-runs"
    (secret / "empty").mkdir(parents=True)
    proc = trace([secret / "missing", secret / "empty", "--opaque-ids", "--format", "json"],
                 tmp_path)
    assert proc.returncode == 4, _text(proc)
    assert b"alice" not in proc.stdout + proc.stderr
    _, summaries = records(proc)
    messages = [r["message"] for s in summaries for r in s["reasons"]]
    assert [m.split(": ", 1)[1] for m in messages] == [
        "no such file or folder", "a folder without traces/events.jsonl or events.jsonl"]
    assert all(m.startswith(s["source"]) for m, s in zip(messages, summaries, strict=True))
    plain = trace([secret / "missing"], tmp_path)
    assert str(secret / "missing").encode() in plain.stdout  # shown where nothing is withheld


def test_opaque_ids_name_no_path_of_an_otlp_conflict(tmp_path: Path) -> None:
    """The same span in two OTLP files with other contents is ``trace.call-conflict`` naming
    the input (docs/trace.md); under ``--opaque-ids`` the input is a reference, as in the
    report's header ("a run id, user name, or machine path is not copied", agent-utilities
    trace ontology)."""
    secret = tmp_path / "home-alice"
    secret.mkdir()
    original = EXAMPLE.parent / "otel" / "otlp.jsonl"
    shutil.copy(original, secret / "a.jsonl")
    request = json.loads(original.read_text().splitlines()[0])
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["endTimeUnixNano"] = str(int(span["endTimeUnixNano"]) + 1)
    (secret / "b.jsonl").write_text(json.dumps(request) + "\n")
    proc = trace([secret / "a.jsonl", secret / "b.jsonl", "--opaque-ids", "--format", "json"],
                 tmp_path)
    assert proc.returncode in (1, 3), _text(proc)
    _, summaries = records(proc)
    conflicts = [r for s in summaries for r in s["reasons"] if r["code"] == "trace.call-conflict"]
    assert conflicts and all(r["message"].startswith("file-") for r in conflicts)
    assert b"alice" not in proc.stdout + proc.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX's")
@pytest.mark.parametrize("name", ["run.json", "run_info.json"])
def test_a_named_pipe_in_a_run_folder_never_blocks(tmp_path: Path, name: str) -> None:
    """``run.json`` is a "Single JSON object. Written once at the end of the run"
    (mas-lab-trajectory-schema): a named pipe in its place (a hostile or broken folder) was
    opened and read, and the audit waited forever for a writer. It is not a file: not read,
    and ``run.json`` says so (``trace.run-malformed``); the events are judged as ever."""
    folder = run_folder(tmp_path / "run", mas_lab_run.events())
    (folder / "run.json").unlink()
    os.mkfifo(folder / name)
    proc = trace([folder, "--manifests", MANIFESTS, "--format", "json"], tmp_path)
    assert proc.returncode in (0, 3), _text(proc)
    agents, [summary] = records(proc)
    assert {a["verdict"] for a in agents.values()} == {"compatible"}
    codes = [r["code"] for r in summary["reasons"]]
    assert codes == (["trace.run-malformed"] if name == "run.json" else [])
    pipe = trace([folder / name], tmp_path)  # given as the events file itself
    assert pipe.returncode == 4 and b"not a regular file or folder" in pipe.stdout


def test_a_json_bomb_in_run_info_is_no_traceback(tmp_path: Path) -> None:
    """``run_info.json`` (mas-lab's golden fixtures; the schema documents ``run.json``) was read
    with ``json.load``, which a document nested 200,000 deep ends in a ``RecursionError``. It
    is read as ``run.json`` is, bounded; one that cannot be parsed names nothing."""
    folder = run_folder(tmp_path / "run", mas_lab_run.events())
    (folder / "run_info.json").write_text('{"mas": ' + "[" * 200_000 + "]" * 200_000 + "}")
    proc = trace([folder, "--manifests", MANIFESTS, "--format", "json"], tmp_path)
    assert proc.returncode == 0, _text(proc)
    agents, [summary] = records(proc)
    assert summary["verdict"] == "compatible" and set(agents) == {"moderator", "schedule_agent"}


@pytest.mark.parametrize("clock", ["whole seconds", "skewed"])
def test_the_trajectory_of_events_follows_their_order_not_their_clock(
        tmp_path: Path, clock: str) -> None:
    """"Events are emitted in chronological order" and "Each tool_call_end at level N provides
    the facts available to level N-1's next context_assembled event" (mas-lab-trajectory-
    schema). Calls were ordered by timestamp, ties by key: with a clock of whole seconds
    (every event at one instant) ``~10`` sorted before ``~9``, and the moderator's delegation
    result flowed into its first model call, not its next one; a skewed clock reordered it
    as well. The flow is the same as the same run's with exact, ordered timestamps."""
    from test_trace_trajectory import emitted, flows

    events = mas_lab_run.events()
    if clock == "whole seconds":
        damaged = [dict(e, timestamp=int(events[0]["timestamp"])) for e in events]
    else:  # each event stamped earlier than the one before it
        damaged = [dict(e, timestamp=events[0]["timestamp"] - n) for n, e in enumerate(events)]
    exact = run_folder(tmp_path / "exact", events)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    expected = flows(emitted(tmp_path / "a", exact))
    # The delegation's result (line 5's call) flows into the moderator's next model call.
    assert ("~5", "output", "~18") in expected
    assert flows(emitted(tmp_path / "b", run_folder(tmp_path / "damaged", damaged))) == expected


SCHEMA_TOOL_SPAN = {"resourceSpans": [{"scopeSpans": [{"spans": [{
    "name": "ToolCall",
    "startTimeUnixNano": "1771889092000000000",
    "endTimeUnixNano": "1771889098000000000",
    "attributes": [
        {"key": "mas.agent.id", "value": {"stringValue": "moderator"}},
        {"key": "mas.tool.name", "value": {"stringValue": "delegate_to_schedule_agent"}},
        {"key": "mas.tool.arguments", "value": {"stringValue": "{}"}},
        {"key": "mas.tool.result", "value": {"stringValue": "..."}}]}]}]}]}


def test_a_reason_about_a_span_without_ids_names_the_span_not_its_fed_event(
        tmp_path: Path) -> None:
    """"OTel spans carry both start and end in a single record and are expanded to an
    (e_start, e_end) event pair" (mas-lab-trajectory-schema, "OTel export alternative"); the
    schema's own example span has no ids. Reasons about the nesting of such spans named the
    position of the expanded event ("line 2", path ``/1``, in a file of one line) instead of
    the span's line and JSON Pointer, as every other reason about a span does."""
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(SCHEMA_TOOL_SPAN, indent=2))
    proc = trace([path, "--manifests", MANIFESTS, "--format", "json"], tmp_path)
    assert proc.returncode == 0, _text(proc)
    agents, [summary] = records(proc)
    assert agents["moderator"]["verdict"] == "compatible"
    [reason] = [r for r in summary["reasons"] if r["code"] == "trace.nesting-interleaved"]
    span = "/resourceSpans/0/scopeSpans/0/spans/0"
    assert reason["path"] == "/0" + span
    assert reason["message"].startswith(f"line 1, {span}: ") and "line 2" not in reason["message"]


def test_the_text_report_shows_what_a_name_would_hide_from_a_terminal(tmp_path: Path) -> None:
    """``agent_id`` is the "Emitting agent identifier" (mas-lab-trajectory-schema), text the
    trace's writer chooses. The text report is for people at a terminal: an escape sequence
    in a name cleared the screen or moved the cursor (a forged verdict line), a right-to-left
    override reversed the rest of the line, a line feed forged a line. Each is shown as its
    code point; JSON output keeps the name as it is."""
    hostile = "sched\x1b[2J\u202eule\n  agent x: compatible"
    events = []
    for event in mas_lab_run.events():
        if event["agent_id"] == "schedule_agent":
            event["agent_id"] = hostile
        if event.get("tool_name") == "delegate_to_schedule_agent":
            event["tool_name"] = "delegate_to_" + hostile
        events.append(event)
    path = _events_file(tmp_path / "events.jsonl", events)
    proc = trace([path, "--manifests", MANIFESTS], tmp_path)
    assert proc.returncode == 1, _text(proc)
    out = proc.stdout.decode()
    assert "\x1b" not in out and "\u202e" not in out
    assert "agent sched<U+001B>[2J<U+202E>ule<U+000A>  agent x: compatible: incompatible" in out
    as_json = trace([path, "--manifests", MANIFESTS, "--format", "json"], tmp_path)
    agents, _ = records(as_json)
    assert hostile in agents


def test_another_runs_events_in_the_stream_are_reported(tmp_path: Path) -> None:
    """Every event carries ``run_id``, "Same run_id as in run.json" (mas-lab-trajectory-
    schema). Two runs' ``events.jsonl`` concatenated were read as one run named after the
    first, silently: the second run's calls became the first's in the report, the graph and
    the store. They are still judged (they are what the agents did), and the run says so at
    the first line of each other run, with how many events carry it."""
    events = mas_lab_run.events()
    both = events + [dict(e, run_id="a1b2c3d4") for e in events]
    path = _events_file(tmp_path / "events.jsonl", both)
    proc = trace([path, "--manifests", MANIFESTS, "--format", "json"], tmp_path)
    assert proc.returncode == 0, _text(proc)
    agents, [summary] = records(proc)
    assert {a["verdict"] for a in agents.values()} == {"compatible"}
    assert summary["run"] == mas_lab_run.RUN_ID
    [reason] = [r for r in summary["reasons"] if r["code"] == "trace.run-mismatch"]
    first = len(events) + 1
    assert reason["path"] == f"/{first - 1}" and reason["severity"] == "warning"
    assert reason["message"].startswith(f"line {first}: {len(events)} events carry run_id a1b2c3d4")
    alone = trace([_events_file(tmp_path / "one.jsonl", events), "--format", "json"], tmp_path)
    assert not [r for r in records(alone)[1][0]["reasons"] if r["code"] == "trace.run-mismatch"]


@pytest.mark.parametrize("placeholder", ["unknown", "None", " "])
def test_a_placeholder_model_in_events_is_no_model(tmp_path: Path, placeholder: str) -> None:
    """mas-lab writes ``unknown`` where the model is not known (its OTel export's reading
    treats it as "not recorded"): in an events file it is no model name either, so the
    call's model is unknown (capability.model-unknown, indeterminate), never a use of a model
    called "unknown" that a manifest would have to declare (issue 36, item 4)."""
    events = [dict(e) for e in mas_lab_run.events()]
    for event in events:
        if "model" in event:
            event["model"] = placeholder
    path = _events_file(tmp_path / "events.jsonl", events)
    proc = trace([path, "--manifests", MANIFESTS, "--format", "json"], tmp_path)
    agents, [summary] = records(proc)
    assert summary["verdict"] == "indeterminate", _text(proc)
    codes = {r["code"] for a in agents.values() for r in a["reasons"]}
    assert "capability.model-unknown" in codes and "capability.undeclared-model" not in codes


@pytest.mark.parametrize("opaque", [False, True])
def test_a_run_folder_with_events_in_both_places_names_the_one_not_read(
        tmp_path: Path, opaque: bool) -> None:
    """The schema's run directory layout puts a run's events in ``traces/events.jsonl``
    (mas-lab-trajectory-schema, "Run directory layout"); the audit also reads a folder's
    ``events.jsonl``. A folder with both (half a run moved, two exporters) was read from the
    first and the second left silently: it may hold the calls that decide a verdict."""
    events = mas_lab_run.events()
    folder = run_folder(tmp_path / "run", events[: len(events) // 2])
    _events_file(folder / "events.jsonl", events)
    more = ["--opaque-ids"] if opaque else []
    proc = trace([folder, "--manifests", MANIFESTS, "--format", "json", *more], tmp_path)
    assert proc.returncode in (0, 1, 3), _text(proc)
    _, [summary] = records(proc)
    [reason] = [r for r in summary["reasons"] if r["code"] == "trace.run-malformed"]
    assert reason["severity"] == "warning"
    assert "only that one is read: this file is not" in reason["message"]
    assert (str(folder / "events.jsonl") in reason["message"]) != opaque
    assert summary["events"] == len(events) // 2
    (folder / "events.jsonl").unlink()
    alone = trace([folder, "--manifests", MANIFESTS, "--format", "json"], tmp_path)
    assert not [r for r in records(alone)[1][0]["reasons"] if r["code"] == "trace.run-malformed"]
