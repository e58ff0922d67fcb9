"""mas-lab run folders as the trajectory schema documents them: events without call ids, and
``run.json``.

The schema's own example, the trip planner (``tests/mas_lab_run.py``, shipped as
``examples/trace/mas-lab``), through the installed command: read by the order its events
nest in, it is judged as the same run with ids; a tool left out of a manifest makes exactly
its agent incompatible, naming the line of the call. Damaged copies of it (an end without its
start, a stream cut short, two agents' events interleaved, an agent nobody delegated to) are
reasons naming their lines, never ``compatible`` on a guess. ``run.json`` gives the run's id,
its MAS and its session; a malformed one, or another run's, is a reason, and what it must not
disclose never leaves it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support import ROOT

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import mas_lab_run
from test_trace import records, trace, use

EXAMPLE = ROOT / "examples" / "trace" / "mas-lab"
PROGRAM = ROOT / "tests" / "mas_lab_run.py"
MAS = "https://outshift-open.github.io/oxp-ontology/mas#"
IOAT = "https://example.org/ioa/trace#"


def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def run_folder(folder: Path, events: list[dict[str, Any]],
               run_json: dict[str, Any] | str | None = None) -> Path:
    """A run folder holding ``events`` and ``run_json`` (the schema's example by default)."""
    (folder / "traces").mkdir(parents=True)
    (folder / "traces" / "events.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in events))
    document = mas_lab_run.RUN_JSON if run_json is None else run_json
    (folder / "run.json").write_text(document if isinstance(document, str) else json.dumps(
        document))
    return folder


def judge(folder: Path, cwd: Path, manifests: Path = EXAMPLE / "manifests",
          *more: str) -> tuple[int, dict[str, dict[str, Any]], dict[str, Any]]:
    proc = trace([folder, "--manifests", manifests, "--format", "json", *more], cwd)
    assert proc.returncode in (0, 1, 3), proc.stderr
    agents, [summary] = records(proc)
    return proc.returncode, agents, summary


def calls(found: dict[str, Any]) -> list[tuple[str | None, int]]:
    """A use's calls by id and line."""
    return [(c["id"], c["line"]) for c in found["calls"]]


def reasons(record: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [r for r in record["reasons"] if r["code"] == code]


# --- the shipped example ----------------------------------------------------------------------


def test_the_shipped_example_is_what_the_program_writes(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(PROGRAM), str(tmp_path / "out")],
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    shipped = _files(EXAMPLE)
    del shipped["README.md"]
    assert shipped == _files(tmp_path / "out"), (
        "examples/trace/mas-lab is stale: rerun python tests/mas_lab_run.py examples/trace/mas-lab")
    events = [json.loads(line) for line in shipped["run/traces/events.jsonl"].splitlines()]
    assert not [e for e in events if "call_id" in e or "parent_call_id" in e]
    assert {e["run_id"] for e in events} == {"f52df92b"}


def test_the_schemas_own_run_is_compatible_for_every_agent(tmp_path: Path) -> None:
    status, agents, summary = judge(EXAMPLE / "run", tmp_path)
    assert status == 0
    assert summary["verdict"] == "compatible" and summary["run"] == "f52df92b"
    assert summary["agents"] == {"moderator": "compatible", "schedule_agent": "compatible"}
    assert summary["reasons"] == []
    moderator, schedule = agents["moderator"], agents["schedule_agent"]
    assert calls(use(moderator, "provided", caller="mas")) == [(None, 1)]
    delegation = use(moderator, "delegations", agent="schedule_agent",
                     via="delegate_to_schedule_agent")
    assert delegation["verdict"] == "compatible"
    into = use(schedule, "provided", caller="moderator", via="delegate_to_schedule_agent")
    assert calls(into) == [(None, mas_lab_run.SCHEDULE_START_LINE)]
    for record in (moderator, schedule):
        model = use(record, "models", model=mas_lab_run.MODEL)
        assert model["verdict"] == "compatible" and len(model["calls"]) == 2
    lookup = use(schedule, "tools", tool="lookup_schedule")
    assert calls(lookup) == [(None, mas_lab_run.LOOKUP_LINE)]
    assert {a: r["verdict"] for a, r in agents.items()} == summary["agents"]


def test_a_tool_left_out_of_one_manifest_makes_exactly_its_agent_incompatible(
        tmp_path: Path) -> None:
    mas_lab_run.write(str(tmp_path / "full"))
    mas_lab_run.write(str(tmp_path / "cut"), leave_out=("lookup_schedule",))
    _, full, _ = judge(EXAMPLE / "run", tmp_path, tmp_path / "full" / "manifests")
    status, agents, summary = judge(EXAMPLE / "run", tmp_path, tmp_path / "cut" / "manifests")
    assert status == 1 and summary["verdict"] == "incompatible"
    assert summary["agents"] == {"moderator": "compatible", "schedule_agent": "incompatible"}
    schedule = agents["schedule_agent"]
    assert use(schedule, "tools", tool="lookup_schedule")["verdict"] == "incompatible"
    [undeclared] = [r for r in schedule["reasons"] if r["severity"] == "error"]
    line = mas_lab_run.LOOKUP_LINE
    assert undeclared["code"] == "capability.undeclared-tool"
    assert "the tool lookup_schedule" in undeclared["message"]
    assert undeclared["message"].endswith(f"(call without an id at line {line})")
    assert undeclared["path"] == f"urn:ioa-trace:run:f52df92b:call:~{line}"
    # The other agent is judged exactly as before.
    unchanged = json.loads(json.dumps(agents["moderator"]).replace(
        str(tmp_path / "cut"), str(tmp_path / "full")))
    assert unchanged == full["moderator"]


def with_ids(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same events with call_id and parent_call_id, as the golden fixtures write them."""
    out: list[dict[str, Any]] = []
    open_calls: list[tuple[str, str]] = []
    for number, event in enumerate(events, 1):
        kind = event["kind"]
        if not kind.endswith(("_start", "_end")):
            out.append(event)
            continue
        if kind.endswith("_start"):
            parent = open_calls[-1][1] if open_calls else None
            open_calls.append((event["agent_id"], f"c{number}"))
            out.append({**event, "call_id": f"c{number}",
                        **({"parent_call_id": parent} if parent else {})})
        else:
            _, ident = open_calls.pop()
            out.append({**event, "call_id": ident})
    return out


def test_the_same_run_with_call_ids_is_judged_alike(tmp_path: Path) -> None:
    events = mas_lab_run.events()
    _, plain, plain_summary = judge(EXAMPLE / "run", tmp_path)
    _, ided, ided_summary = judge(run_folder(tmp_path / "ids", with_ids(events)), tmp_path)

    def verdicts(agents: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return {name: (record["verdict"], record["aspects"], [
            (u.get("caller"), u.get("via"), u["verdict"], [c["line"] for c in u["calls"]])
            for u in record["provided"]]) for name, record in agents.items()}

    assert verdicts(plain) == verdicts(ided)
    assert plain_summary["verdict"] == ided_summary["verdict"] == "compatible"


def test_a_run_mixing_events_with_and_without_ids_reads_each_its_own_way(tmp_path: Path) -> None:
    """schedule_agent's events carry call ids (its calls name its execution as parent, its
    execution names none); moderator's carry none. Each event goes its own way: ids pair
    schedule_agent's calls, the order places its execution in moderator's delegation."""
    events = mas_lab_run.events()
    ided = with_ids(events)
    mixed = [ided[i] if e["agent_id"] == "schedule_agent" else e for i, e in enumerate(events)]
    start = mas_lab_run.SCHEDULE_START_LINE - 1
    del mixed[start]["parent_call_id"]
    status, agents, summary = judge(run_folder(tmp_path / "run", mixed), tmp_path)
    assert status == 0 and summary["reasons"] == []
    into = use(agents["schedule_agent"], "provided", caller="moderator",
               via="delegate_to_schedule_agent")
    assert calls(into) == [(f"c{start + 1}", start + 1)]
    assert calls(use(agents["schedule_agent"], "tools", tool="lookup_schedule")) == [
        (f"c{mas_lab_run.LOOKUP_LINE}", mas_lab_run.LOOKUP_LINE)]


# --- streams that do not nest -----------------------------------------------------------------


def test_an_execution_without_its_start_leaves_who_called_it_unknown(tmp_path: Path) -> None:
    events = mas_lab_run.events()
    gone = mas_lab_run.SCHEDULE_START_LINE
    status, agents, summary = judge(run_folder(tmp_path / "run", events[:gone - 1] + events[gone:]),
                                    tmp_path)
    assert status == 3 and summary["verdict"] == "indeterminate"
    end = next(n for n, e in enumerate(events[:gone - 1] + events[gone:], 1)
               if e["kind"] == "execution_end" and e["agent_id"] == "schedule_agent")
    [incomplete] = reasons(summary, "trace.call-incomplete")
    assert incomplete["path"] == f"/{end - 1}" and "no start event" in incomplete["message"]
    [unplaced] = [r for r in reasons(summary, "trace.nesting-ambiguous")
                  if "schedule_agent" in r["message"]]
    assert unplaced["message"].startswith(f"line {end}: execution_end of agent schedule_agent: "
                                          "its execution_start is missing")
    into = use(agents["schedule_agent"], "provided", caller=None)
    assert into["verdict"] == "indeterminate"
    # moderator's delegation tool was open around it: it may have made it, never established.
    maybe = use(agents["moderator"], "delegations", agent="schedule_agent")
    assert maybe["verdict"] == "indeterminate"
    assert agents["schedule_agent"]["aspects"]["tools"] == "compatible"


def test_a_stream_cut_short_names_every_call_it_left_open(tmp_path: Path) -> None:
    events = mas_lab_run.events()[:mas_lab_run.LOOKUP_LINE]
    _, agents, summary = judge(run_folder(tmp_path / "run", events), tmp_path)
    lines = sorted(int(r["path"][1:]) + 1 for r in reasons(summary, "trace.call-incomplete"))
    assert lines == [1, 5, mas_lab_run.SCHEDULE_START_LINE, mas_lab_run.LOOKUP_LINE]
    assert all("no end event" in r["message"] for r in reasons(summary, "trace.call-incomplete"))
    # What started is established: nothing of it was guessed.
    assert use(agents["schedule_agent"], "provided", caller="moderator")["verdict"] == "compatible"
    assert not reasons(summary, "trace.nesting-interleaved")


def test_two_agents_interleaved_are_named_by_line_and_never_compatible(tmp_path: Path) -> None:
    events = mas_lab_run.events()
    # moderator's last LLM call (context_assembled, start, end) moved into schedule_agent's run.
    last = [i for i, e in enumerate(events) if e["agent_id"] == "moderator"
            and e["kind"] == "context_assembled"][-1]
    moved = events[last:last + 3]
    rest = events[:last] + events[last + 3:]
    at = mas_lab_run.LOOKUP_LINE - 1
    stream = rest[:at] + moved + rest[at:]
    status, agents, summary = judge(run_folder(tmp_path / "run", stream), tmp_path)
    assert status == 3
    [tangle] = reasons(summary, "trace.nesting-interleaved")
    start = at + 2  # the moved llm_call_start
    assert tangle["path"] == f"/{start - 1}"
    assert tangle["message"].startswith(
        f"line {start}: the events of agents moderator and schedule_agent do not nest")
    assert f"the execution of agent schedule_agent (line {mas_lab_run.SCHEDULE_START_LINE})" in (
        tangle["message"])
    assert use(agents["schedule_agent"], "provided", caller=None)["verdict"] == "indeterminate"
    assert use(agents["moderator"], "delegations", agent="schedule_agent")[
        "verdict"] == "indeterminate"
    # The rest of the run is still judged: every agent's own tools and models.
    for record in agents.values():
        assert record["aspects"]["tools"] == record["aspects"]["models"] == "compatible"


def test_a_delegation_its_agent_never_ran_inside_is_no_evidence_of_an_entry(
        tmp_path: Path) -> None:
    """schedule_agent's run moved after moderator's: every event still nests (it reads as an
    entry by the MAS), but moderator's delegate_to_schedule_agent ran with nothing inside it.
    The order of their events is then no evidence: never incompatible on that guess."""
    events = mas_lab_run.events()
    start = mas_lab_run.SCHEDULE_START_LINE - 1
    end = next(i for i, e in enumerate(events) if e["kind"] == "execution_end"
               and e["agent_id"] == "schedule_agent")
    stream = events[:start] + events[end + 1:] + events[start:end + 1]
    status, agents, summary = judge(run_folder(tmp_path / "run", stream), tmp_path)
    [tangle] = reasons(summary, "trace.nesting-interleaved")
    tool_end = start + 1  # delegate_to_schedule_agent's tool_call_end, now right after its start
    assert tangle["message"].startswith(f"line {tool_end}: the events of agents moderator and "
                                        "schedule_agent do not nest")
    assert ("the tool call delegate_to_schedule_agent of agent moderator (line 5) ended, and no "
            "execution of agent schedule_agent started inside it") in tangle["message"]
    into = use(agents["schedule_agent"], "provided", caller=None)
    assert into["verdict"] == "indeterminate"
    assert status == 3 and summary["verdict"] == "indeterminate"


def test_an_agent_nobody_delegated_to_is_a_reason_at_its_line(tmp_path: Path) -> None:
    events = mas_lab_run.events()
    at = mas_lab_run.LOOKUP_LINE - 1  # inside schedule_agent's run, no tool call open
    intruder = [{**events[mas_lab_run.SCHEDULE_START_LINE - 1], "agent_id": "intruder"},
                {**events[at + 4], "agent_id": "intruder", "kind": "execution_end"}]
    stream = events[:at] + intruder + events[at:]
    _, agents, summary = judge(run_folder(tmp_path / "run", stream), tmp_path)
    [ambiguous] = [r for r in reasons(summary, "trace.nesting-ambiguous")
                   if "intruder" in r["message"]]
    assert ambiguous["path"] == f"/{at}"
    assert ambiguous["message"].startswith(f"line {at + 1}: execution_start of agent intruder: "
                                           "calls were open")
    assert "no open call delegated to it" in ambiguous["message"]
    assert use(agents["intruder"], "provided", caller=None)["verdict"] == "indeterminate"
    for caller in ("moderator", "schedule_agent"):
        maybe = use(agents[caller], "delegations", agent="intruder")
        assert maybe["verdict"] == "indeterminate"
        assert [r["code"] for r in agents[caller]["reasons"] if "intruder" in r["message"]] == [
            "trace.nesting-ambiguous"]
    assert summary["verdict"] != "compatible"


def test_an_end_naming_another_tool_than_the_call_it_closes_is_a_conflict(
        tmp_path: Path) -> None:
    events = mas_lab_run.events()
    end = mas_lab_run.LOOKUP_LINE  # the 0-based index of lookup_schedule's tool_call_end
    events[end] = {**events[end], "tool_name": "book_hotel"}
    _, agents, summary = judge(run_folder(tmp_path / "run", events), tmp_path)
    [conflict] = reasons(summary, "trace.call-conflict")
    assert conflict["message"].startswith(
        f"line {end + 1}: call without an id at line {mas_lab_run.LOOKUP_LINE} is started, ended")
    unnamed = use(agents["schedule_agent"], "tools", tool=None)
    assert unnamed["verdict"] == "indeterminate"


# --- run.json ---------------------------------------------------------------------------------


def _graph(path: Path) -> Any:
    import rdflib

    graph = rdflib.Graph()
    graph.parse(path, format="turtle")
    return graph


def test_run_json_names_the_run_its_mas_and_its_session(tmp_path: Path) -> None:
    import rdflib

    proc = trace([EXAMPLE / "run", "--format", "json", "--emit-kg", "kg.ttl"], tmp_path)
    _, [summary] = records(proc)
    assert summary["run"] == "f52df92b"
    graph = _graph(tmp_path / "kg.ttl")
    mas = rdflib.Namespace(MAS)
    session = rdflib.URIRef("urn:ioa-trace:run:f52df92b")
    assert set(graph.subjects(rdflib.RDF.type, mas.MAS)) == {
        rdflib.URIRef("urn:ioa-trace:mas:trip-planner")}  # no phantom MAS named "mas"
    assert graph.value(session, mas.executesSession) == rdflib.URIRef(
        "urn:ioa-trace:mas:trip-planner")
    assert graph.value(session, mas.success).toPython() is True
    assert str(graph.value(session, rdflib.URIRef(IOAT + "scenario"))) == "baseline"
    assert str(graph.value(session, rdflib.URIRef(IOAT + "status"))) == "success"
    # The events time the session: their first start, not run.json's created_at.
    assert str(graph.value(session, mas.startTime)) == "1771889088.7677"


def test_run_json_times_the_session_when_no_event_does(tmp_path: Path) -> None:
    import rdflib

    events = [{k: v for k, v in e.items() if k != "timestamp"} for e in mas_lab_run.events()]
    failed = {**mas_lab_run.RUN_JSON, "status": "timeout"}
    trace([run_folder(tmp_path / "run", events, failed), "--emit-kg", "kg.ttl"], tmp_path)
    graph = _graph(tmp_path / "kg.ttl")
    mas = rdflib.Namespace(MAS)
    session = rdflib.URIRef("urn:ioa-trace:run:f52df92b")
    # 2026-02-23T23:24:48.694866+00:00, exactly.
    assert str(graph.value(session, mas.startTime)) == "1771889088.694866"
    assert graph.value(session, mas.duration).toPython() == pytest.approx(24870.0)
    assert graph.value(session, mas.success).toPython() is False
    assert graph.value(session, mas.endTime) is None


@pytest.mark.parametrize("mas_calls", [1, 2])
def test_run_json_gives_the_status_of_the_runs_one_mas_call(tmp_path: Path,
                                                            mas_calls: int) -> None:
    """A run with MAS call events (mas-lab's golden runs write them): run.json's status is
    its one MAS call's too; of two (a retry), neither's is known."""
    import rdflib

    events = mas_lab_run.events()
    turn = [{"kind": "mas_call_start", "agent_id": "mas", "timestamp": 1771889088.7,
             "run_id": "f52df92b"}, *events,
            {"kind": "mas_call_end", "agent_id": "mas", "timestamp": 1771889113.7,
             "run_id": "f52df92b"}]
    trace([run_folder(tmp_path / "run", turn * mas_calls), "--emit-kg", "kg.ttl"], tmp_path)
    graph = _graph(tmp_path / "kg.ttl")
    mas = rdflib.Namespace(MAS)
    roots = set(graph.subjects(rdflib.RDF.type, mas.MASCall))
    assert len(roots) == mas_calls
    assert [graph.value(r, mas.success) for r in roots] == (
        [rdflib.Literal(True)] if mas_calls == 1 else [None, None])
    assert graph.value(rdflib.URIRef("urn:ioa-trace:run:f52df92b"), mas.success) == (
        rdflib.Literal(True))


@pytest.mark.parametrize(("document", "path", "detail"), [
    ("{not json", "", "not JSON"),
    ("[]", "", "not one JSON object"),
    ({**mas_lab_run.RUN_JSON, "status": "done"}, "#/status", "status is not one of success"),
    ({**mas_lab_run.RUN_JSON, "created_at": "yesterday"}, "#/created_at",
     "created_at is not an ISO-8601 timestamp"),
    ({**mas_lab_run.RUN_JSON, "duration_secs": "24.87"}, "#/duration_secs",
     "duration_secs is not a number of seconds"),
    ({**mas_lab_run.RUN_JSON, "mas_id": 7}, "#/mas_id", "mas_id is not a non-empty string"),
])
def test_a_malformed_run_json_is_a_reason_and_the_run_is_still_judged(
        tmp_path: Path, document: Any, path: str, detail: str) -> None:
    text = document if isinstance(document, str) else json.dumps(document)
    folder = run_folder(tmp_path / "run", mas_lab_run.events(), text)
    status, _, summary = judge(folder, tmp_path)
    [malformed] = reasons(summary, "trace.run-malformed")
    assert malformed["severity"] == "warning"
    assert malformed["path"] == f"{folder / 'run.json'}{path}"
    assert detail in malformed["message"], malformed["message"]
    assert status == 0 and set(summary["agents"].values()) == {"compatible"}
    assert summary["run"] == "f52df92b"  # from the events, or what was valid of run.json


def test_another_runs_run_json_is_a_reason_and_is_not_used(tmp_path: Path) -> None:
    other = {**mas_lab_run.RUN_JSON, "run_id": "0badc0de", "mas_id": "other-mas"}
    folder = run_folder(tmp_path / "run", mas_lab_run.events(), other)
    proc = trace([folder, "--manifests", EXAMPLE / "manifests", "--format", "json",
                  "--emit-kg", "kg.ttl"], tmp_path)
    _, [summary] = records(proc)
    [mismatch] = reasons(summary, "trace.run-mismatch")
    assert "run_id 0badc0de is not the run_id f52df92b of the events" in mismatch["message"]
    assert summary["run"] == "f52df92b" and summary["verdict"] == "compatible"
    assert "other-mas" not in (tmp_path / "kg.ttl").read_text()


def test_run_json_text_the_audit_must_not_keep_never_leaves_it(tmp_path: Path) -> None:
    """folder is a machine path, prompt free text, env the machine: none reaches a report, a
    graph, a checkpoint or the record the store keeps."""
    from ioa_semantic.trace.events import Fold, build, resolve
    from ioa_semantic.trace.privacy import Disclosure
    from ioa_semantic.trace.state import consume
    from ioa_semantic.trace.store import run_record

    secrets = ("/home/user", "Celestia", "macOS", "mas-runtime", "lifecycle-control",
               "library-samples", "d2909f0")
    proc = trace([EXAMPLE / "run", "--manifests", EXAMPLE / "manifests", "--format", "json",
                  "--emit-kg", "kg.ttl", "--state", "state"], tmp_path)
    source = resolve(str(EXAMPLE / "run"))
    fold = Fold()
    consume(source, fold)
    stored = json.dumps(run_record(build(source, fold, Disclosure())))
    for text in (proc.stdout.decode(), (tmp_path / "kg.ttl").read_text(),
                 (tmp_path / "state").read_text(), stored):
        assert not [s for s in secrets if s in text]
    assert '"scenario": "baseline"' in stored and '"status": "success"' in stored
