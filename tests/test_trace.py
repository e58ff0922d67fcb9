"""``ioa-check trace``: execution traces audited against what agents declare.

Run on the real samples in ``../shared/reference/mas-traces`` (mas-lab run folders, the
trip-planner manifests, the agent-utilities trace-outcome schema), through the installed
command from a folder outside the repository and through the library. Fixtures derived from
the samples (a renamed tool, a broken line) are written into ``tmp_path``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support import IOA_CHECK, SHARED, run_python

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

TRACES = SHARED / "reference" / "mas-traces"
MAS_LAB = TRACES / "mas-lab"
GOLDEN = MAS_LAB / "golden-extensions"
MANIFESTS = MAS_LAB / "trip-planner-manifests"
SMALLER = [MAS_LAB / "golden-lab-smoke", MAS_LAB / "tutorials" / "tutorial-01-traces-events.jsonl",
           MAS_LAB / "tutorials" / "tutorial-02-fixture-events.jsonl"]
OUTCOME_SCHEMA = TRACES / "agent-utilities" / "trace-outcome.schema.json"
LOOKUP_CALL = "9b6c8503-4d2b-4e8f-a7d2-29e6884d283c"  # schedule_agent's lookup_schedule call

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")


def trace(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None,
          shapes: bool = False) -> subprocess.CompletedProcess[bytes]:
    """The installed command; the SHACL step (most of its run time) only where a test asks."""
    extra = [] if shapes else ["--no-shapes"]
    return subprocess.run([IOA_CHECK, "trace", *map(str, args), *extra], cwd=cwd,
                          capture_output=True, timeout=120, env=env)


def report_lines(proc: subprocess.CompletedProcess[bytes]) -> tuple[list[dict[str, Any]],
                                                                     list[dict[str, Any]]]:
    """The JSON report's agent lines and its summaries, each in order."""
    agents: list[dict[str, Any]] = []
    summaries = []
    for line in proc.stdout.decode().splitlines():
        item = json.loads(line)
        if "summary" in item:
            summaries.append(item["summary"])
        else:
            agents.append(item)
    return agents, summaries


def records(proc: subprocess.CompletedProcess[bytes]) -> tuple[dict[str, dict[str, Any]],
                                                                list[dict[str, Any]]]:
    """Agent lines by agent name (of the last run), and the summaries in order."""
    agents, summaries = report_lines(proc)
    return {item["agent"]: item for item in agents}, summaries


def use(record: dict[str, Any], aspect: str, **match: Any) -> dict[str, Any]:
    uses = record["consumed"][aspect] if aspect != "provided" else record["provided"]
    found: list[dict[str, Any]] = [u for u in uses if all(u.get(k) == v for k, v in match.items())]
    assert len(found) == 1, (aspect, match, uses)
    return found[0]


def renamed_copy(folder: Path, old: str = "lookup_schedule", new: str = "book_hotel") -> Path:
    """The golden trip-planner run with one tool call's tool renamed."""
    run = folder / "renamed-run"
    (run / "traces").mkdir(parents=True)
    shutil.copy(GOLDEN / "run_info.json", run / "run_info.json")
    # Another run: its own run id, or it would be the same run as the original.
    info = json.loads((GOLDEN / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "run_hash": "renamed-" + info["run_hash"]}))
    text = (GOLDEN / "events.jsonl").read_text()
    assert text.count(f'"tool_name": "{old}"') == 2  # its start and its end
    (run / "traces" / "events.jsonl").write_text(text.replace(f'"tool_name": "{old}"',
                                                              f'"tool_name": "{new}"'))
    return run


# --- the trip planner -----------------------------------------------------------------------


def test_trip_planner_audit(tmp_path: Path) -> None:
    """schedule_agent's tools compatible (lookup_schedule is declared), its model indeterminate
    (the trace records none), the moderator's delegation tool compatible through delegates_to."""
    proc = trace([GOLDEN, "--manifests", MANIFESTS, "--format", "json"], tmp_path, shapes=True)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr == b""
    agents, [summary] = records(proc)
    assert sorted(agents) == ["moderator", "schedule_agent"]

    schedule = agents["schedule_agent"]
    assert schedule["aspects"]["tools"] == "compatible"
    lookup = use(schedule, "tools", tool="lookup_schedule")
    assert lookup["verdict"] == "compatible"
    assert lookup["declaredBy"][0].endswith("tools/lookup_schedule.tool.yaml#metadata.name")
    assert [c["id"] for c in lookup["calls"]] == [LOOKUP_CALL]
    assert schedule["aspects"]["models"] == "indeterminate"
    assert use(schedule, "models", model=None)["verdict"] == "indeterminate"
    assert "capability.model-unknown" in {r["code"] for r in schedule["reasons"]
                                          if r["severity"] == "error"}
    into = use(schedule, "provided", caller="moderator", via="delegate_to_schedule_agent")
    assert into["verdict"] == "compatible"
    assert schedule["verdict"] == "indeterminate"
    assert schedule["unused"]["tools"] == ["get_attractions", "get_attractions_description"]

    moderator = agents["moderator"]
    delegation = use(moderator, "tools", tool="delegate_to_schedule_agent")
    assert delegation["verdict"] == "compatible"
    assert delegation["declaredBy"] == [f"{MANIFESTS}/mas.yaml#workflow.nodes[moderator].delegates_to"]
    assert use(moderator, "delegations", agent="schedule_agent")["verdict"] == "compatible"
    assert use(moderator, "provided", caller="mas")["declaredBy"] == [
        f"{MANIFESTS}/mas.yaml#workflow.entry"]
    assert moderator["unused"]["delegations"] == ["concierge_agent", "itinerary_agent"]
    assert moderator["consumed"]["processing"] == {"context_assembly": 4, "wait_state": 2}

    assert summary["verdict"] == "indeterminate"
    assert summary["agents"] == {"moderator": "indeterminate", "schedule_agent": "indeterminate"}
    assert summary["events"] == 193 and summary["skippedLines"] == 0
    assert summary["declaredUnused"] == {"agents": ["concierge_agent", "itinerary_agent"]}
    assert summary["authorization"] == "not-evaluated"


def test_a_renamed_tool_nobody_declares_is_incompatible_naming_the_call(tmp_path: Path) -> None:
    run = renamed_copy(tmp_path)
    proc = trace([run, "--manifests", MANIFESTS, "--format", "json"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    agents, [summary] = records(proc)
    schedule = agents["schedule_agent"]
    assert schedule["verdict"] == "incompatible"
    assert schedule["aspects"]["tools"] == "incompatible"
    assert use(schedule, "tools", tool="book_hotel")["declaredBy"] == []
    [reason] = [r for r in schedule["reasons"] if r["code"] == "capability.undeclared-tool"]
    assert reason["severity"] == "error"
    assert "book_hotel" in reason["message"] and LOOKUP_CALL in reason["message"]
    assert reason["path"].endswith(f":call:{LOOKUP_CALL}")
    # The established conflict outranks the unknown model; the moderator is untouched.
    assert agents["moderator"]["verdict"] == "indeterminate"
    assert summary["verdict"] == "incompatible"


def test_the_text_report_leads_with_the_verdict(tmp_path: Path) -> None:
    proc = trace([renamed_copy(tmp_path), "--manifests", MANIFESTS], tmp_path, shapes=True)
    assert proc.returncode == 1
    text = proc.stdout.decode()
    assert text.startswith("INCOMPATIBLE ")
    assert "capability.undeclared-tool" in text and LOOKUP_CALL in text


# The golden run and tutorial 02 with their shapes, the report in JSON and the graph written:
# what the determinism and the digests tests read, run once for both (the SHACL step is most
# of a run's time).
TWO_RUNS: list[str | Path] = [GOLDEN, SMALLER[2], "--manifests", MANIFESTS, "--format", "json",
                              "--emit-kg", "kg.ttl"]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[
        subprocess.CompletedProcess[bytes], str]:
    """``TWO_RUNS`` audited: the process, and the graph it wrote."""
    folder = tmp_path_factory.mktemp("two-runs")
    proc = trace(TWO_RUNS, folder, shapes=True)
    return proc, (folder / "kg.ttl").read_text()


def test_output_is_deterministic(
        two_runs: tuple[subprocess.CompletedProcess[bytes], str], tmp_path: Path) -> None:
    again = trace(TWO_RUNS, tmp_path, shapes=True)
    assert again.stdout == two_runs[0].stdout
    assert (tmp_path / "kg.ttl").read_text() == two_runs[1]


# --- streaming --------------------------------------------------------------------------------


def test_malformed_lines_are_reported_by_line_and_the_rest_is_read(tmp_path: Path) -> None:
    lines = (GOLDEN / "events.jsonl").read_text().splitlines()
    lines.insert(9, '{"kind": "execution_start", "agent_id": ')  # line 10: not JSON
    lines.insert(19, '{"no kind": true}')  # line 20: JSON, but no event
    lines.insert(29, '{"kind": "mystery_event", "agent_id": "moderator"}')  # line 30: unknown kind
    lines.insert(39, '{"kind": "audit", "a": 1, "a": 2}')  # line 40: a repeated member
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n")
    proc = trace(["events.jsonl", "--manifests", MANIFESTS, "--format", "json"], tmp_path)
    assert proc.returncode == 3, proc.stderr
    agents, [summary] = records(proc)
    by_code = {r["code"]: r for r in summary["reasons"] if r["message"].startswith("line ")}
    assert by_code["json.syntax"]["message"].startswith("line 10:")
    assert by_code["json.syntax"]["path"] == "/9"
    assert by_code["trace.event-malformed"]["message"].startswith("line 20:")
    assert by_code["json.duplicate-key"]["message"].startswith("line 40:")
    by_code = {r["code"]: r for r in summary["reasons"]}
    assert summary["skippedLines"] == 3
    # Evidence is missing, so the run cannot be compatible.
    assert by_code["trace.incomplete"]["severity"] == "error"
    assert summary["unknownKinds"] == {"mystery_event": 1}
    assert summary["events"] == 193 + 1  # the unknown kind is an event; skipped lines are not
    assert use(agents["schedule_agent"], "tools", tool="lookup_schedule")["verdict"] == "compatible"


def test_unknown_kinds_are_counted_not_fatal(tmp_path: Path) -> None:
    text = (GOLDEN / "events.jsonl").read_text()
    extra = '{"kind": "future_event", "agent_id": "moderator", "timestamp": 1}\n'
    (tmp_path / "events.jsonl").write_text(text + extra + extra)
    proc = trace(["events.jsonl", "--manifests", MANIFESTS, "--format", "json"], tmp_path)
    original = trace([GOLDEN / "events.jsonl", "--manifests", MANIFESTS, "--format", "json"],
                     tmp_path)
    agents, [summary] = records(proc)
    reference, [reference_summary] = records(original)
    assert summary["unknownKinds"] == {"future_event": 2}
    assert "trace.incomplete" not in {r["code"] for r in summary["reasons"]}
    assert {a: agents[a]["verdict"] for a in agents} == {
        a: reference[a]["verdict"] for a in reference}
    assert summary["verdict"] == reference_summary["verdict"]


def test_calls_without_ids_pair_and_calls_without_an_end_are_reported(tmp_path: Path) -> None:
    """mas-lab writes some processing calls with an empty call_id; they still pair up."""
    from ioa_semantic.trace.events import Fold, build, resolve
    from ioa_semantic.trace.privacy import Disclosure
    from ioa_semantic.trace.state import consume

    source = resolve(str(GOLDEN))
    fold = Fold()
    consume(source, fold)
    run = build(source, fold, Disclosure())
    anonymous = [c for c in run.calls if not c.id]
    assert len(anonymous) == 4
    assert all(c.start is not None and c.end is not None for c in anonymous)
    assert not [f for f in run.findings if f.code == "trace.call-incomplete"]

    lines = (GOLDEN / "events.jsonl").read_text().splitlines()
    kept = [line for line in lines if not (LOOKUP_CALL in line and "tool_call_end" in line)]
    (tmp_path / "cut.jsonl").write_text("\n".join(kept) + "\n")
    proc = trace(["cut.jsonl", "--format", "json"], tmp_path)
    _, [summary] = records(proc)
    [incomplete] = [r for r in summary["reasons"] if r["code"] == "trace.call-incomplete"]
    assert LOOKUP_CALL in incomplete["message"] and "no end" in incomplete["message"]


def test_a_call_started_twice_is_a_conflict(tmp_path: Path) -> None:
    lines = (GOLDEN / "events.jsonl").read_text().splitlines()
    start = next(line for line in lines if LOOKUP_CALL in line and "tool_call_start" in line)
    (tmp_path / "twice.jsonl").write_text("\n".join([*lines, start]) + "\n")
    proc = trace(["twice.jsonl", "--format", "json"], tmp_path)
    _, [summary] = records(proc)
    [conflict] = [r for r in summary["reasons"] if r["code"] == "trace.call-conflict"]
    assert conflict["message"].startswith("line 194:")


# --- into the ontology ------------------------------------------------------------------------


@pytest.mark.parametrize("sample", SMALLER, ids=lambda p: p.name)
def test_the_smaller_samples_build_graphs_the_shapes_accept_apart_from_quirks(sample: Path) -> None:
    """Every SHACL Violation left after the documented quirks is the evidence gap the audit
    reports too: an LLM call whose model the trace does not record."""
    from ioa_semantic.trace.audit import audit
    from ioa_semantic.trace.declarations import Declarations
    from ioa_semantic.trace.events import Fold, build, resolve
    from ioa_semantic.trace.graph import build as build_graph
    from ioa_semantic.trace.graph import check
    from ioa_semantic.trace.privacy import Disclosure
    from ioa_semantic.trace.state import consume

    source = resolve(str(sample))
    fold = Fold()
    consume(source, fold)
    run = build(source, fold, Disclosure())
    declarations = Declarations(None, None, None)
    report = check(build_graph(run, declarations, Disclosure()))
    assert report.filtered["trajectory"] > 0 and report.filtered["semantic-groups"] == 1
    violations = [f for f in report.findings if "(SHACL Violation: " in f.message]
    unrecorded = [c for c in run.calls if c.cls == "llm" and c.target is None]
    if not unrecorded:
        assert violations == []
        return
    assert {f.message.split(" lack")[0].split(" ", 1)[1] for f in violations} <= {
        "mas:LLMCall node", "mas:LLMCall nodes"}
    assert {f.message.split("mas:")[2].split(" ")[0] for f in violations} == {
        "executes", "executesLLM"}
    audited = audit(run, declarations, Disclosure())
    assert any(r.code == "capability.model-unknown" for a in audited.agents for r in a.reasons)


def test_the_trace_page_shows_the_real_output_of_its_trip_planner_example() -> None:
    root = Path(__file__).resolve().parents[1]
    relative = "../shared/reference/mas-traces/mas-lab"
    proc = trace([f"{relative}/golden-extensions", "--manifests",
                  f"{relative}/trip-planner-manifests"], root, shapes=True)
    assert proc.returncode == 3
    page = (root / "docs" / "trace.md").read_text()
    assert f"```\n{proc.stdout.decode().rstrip()}\n```" in page


def test_every_documented_quirk_is_on_the_trace_page() -> None:
    from ioa_semantic.trace.graph import QUIRKS

    page = (Path(__file__).resolve().parents[1] / "docs" / "trace.md").read_text()
    section = page.split("## The SHACL check and its documented quirks", 1)[1].split("\n## ", 1)[0]
    for name in QUIRKS:
        assert f"`{name}`" in section, name


def _store(path: Path) -> Any:
    import pyoxigraph

    store = pyoxigraph.Store()
    fmt = pyoxigraph.RdfFormat.TURTLE if path.suffix == ".ttl" else pyoxigraph.RdfFormat.JSON_LD
    store.load(path.read_bytes(), fmt)
    return store


@pytest.mark.parametrize("suffix", [".ttl", ".jsonld"])
def test_the_emitted_graph_loads_in_oxigraph_and_lists_each_agents_tools(
        tmp_path: Path, suffix: str) -> None:
    """The named query trace_agent_tools.rq answers what the audit observed, per agent."""
    from ioa_semantic import data as _resources

    run = renamed_copy(tmp_path)
    proc = trace([GOLDEN, run, "--manifests", MANIFESTS, "--format", "json",
                  "--emit-kg", f"kg{suffix}"], tmp_path)
    assert proc.returncode == 3, proc.stderr  # the highest status: one run indeterminate
    store = _store(tmp_path / f"kg{suffix}")
    rows = {(str(r["agentId"].value), str(r["toolName"].value), int(r["calls"].value))
            for r in store.query(_resources.query("trace_agent_tools"))}
    # Both runs in one graph: the same agents, lookup_schedule in one, book_hotel in the other.
    assert rows == {("moderator", "delegate_to_schedule_agent", 2),
                    ("schedule_agent", "book_hotel", 1), ("schedule_agent", "lookup_schedule", 1)}
    observed: dict[tuple[str, str], int] = {}
    for line in proc.stdout.decode().splitlines():
        item = json.loads(line)
        for tool in item.get("consumed", {}).get("tools", []):
            key = (item["agent"], tool["tool"])
            observed[key] = observed.get(key, 0) + len(tool["calls"])
    assert {(a, t, n) for (a, t), n in observed.items()} == rows


def test_declared_types_carry_declared_true_and_discovered_ones_false(tmp_path: Path) -> None:
    run = renamed_copy(tmp_path)
    trace([run, "--manifests", MANIFESTS, "--emit-kg", "kg.ttl"], tmp_path)
    store = _store(tmp_path / "kg.ttl")
    query = """PREFIX mas: <https://outshift-open.github.io/oxp-ontology/mas#>
               SELECT ?name ?declared WHERE { ?t mas:name ?name ; mas:declared ?declared }"""
    declared = {str(r["name"].value): r["declared"].value == "true" for r in store.query(query)}
    assert declared["lookup_schedule"] is True
    assert declared["book_hotel"] is False
    assert declared["schedule_agent"] is True and declared["concierge_agent"] is True
    assert declared["azure/gpt-4o"] is True and declared["context_assembly"] is False
    assert declared["trip-planner"] is True


def test_calls_carry_times_durations_tokens_and_nesting(tmp_path: Path) -> None:
    trace([SMALLER[2], "--emit-kg", "kg.ttl"], tmp_path)
    store = _store(tmp_path / "kg.ttl")
    query = """PREFIX mas: <https://outshift-open.github.io/oxp-ontology/mas#>
               PREFIX ioat: <https://example.org/ioa/trace#>
               SELECT ?call ?total ?prompt ?duration ?model ?agent WHERE {
                 ?call a mas:LLMCall ; mas:totalTokenCount ?total ; mas:promptTokenCount ?prompt ;
                       mas:duration ?duration ; mas:executesLLM/mas:id ?model ;
                       ioat:parentCall/mas:executesAgent/mas:id ?agent }
               ORDER BY ?call"""
    rows = [(r["call"].value.rsplit(":", 1)[1], int(r["total"].value), int(r["prompt"].value),
             float(r["duration"].value), r["model"].value, r["agent"].value)
            for r in store.query(query)]
    assert rows == [("t3-llm-001", 86, 62, 1000.0, "openai/gpt-4o-mini", "qa-agent-t3"),
                    ("t3-llm-002", 122, 90, 1000.0, "openai/gpt-4o-mini", "qa-agent-t3"),
                    ("t3-llm-003", 170, 140, 1000.0, "openai/gpt-4o-mini", "qa-agent-t3")]


# --- privacy ----------------------------------------------------------------------------------


def _free_text(value: Any) -> set[str]:
    """Strings that read as text (not names such as a tool's, which a report must show)."""
    if isinstance(value, str):
        return {value} if len(value) >= 12 and " " in value.strip() else set()
    if isinstance(value, dict):
        return set().union(*(map(_free_text, value.values()))) if value else set()
    if isinstance(value, list):
        return set().union(*(map(_free_text, value))) if value else set()
    return set()


def _trace_texts(path: Path) -> set[str]:
    members = ("input", "output", "content", "messages", "arguments", "args", "result",
               "response", "content_preview", "reason", "prompt")
    texts: set[str] = set()
    for line in path.read_text().splitlines():
        event = json.loads(line)
        for member in members:
            texts |= _free_text(event.get(member))
    return texts


def test_reports_and_graphs_carry_digests_never_trace_text(
        two_runs: tuple[subprocess.CompletedProcess[bytes], str], tmp_path: Path) -> None:
    texts = _trace_texts(GOLDEN / "events.jsonl") | _trace_texts(SMALLER[2])
    assert len(texts) > 10
    proc, graph = two_runs
    text_report = trace([GOLDEN, SMALLER[2], "--manifests", MANIFESTS], tmp_path,
                        shapes=True).stdout.decode()
    written = proc.stdout.decode() + graph + text_report
    for text in texts:
        assert text not in written and json.dumps(text)[1:-1] not in written, text[:40]
    agents, _ = records(proc)
    first = use(agents["moderator"], "provided", caller="mas")["calls"][0]
    question = "What is 2+2? Use the calculator if helpful."
    assert first["input"] == {"sha256": hashlib.sha256(question.encode()).hexdigest(),
                              "chars": len(question)}


def test_include_content_copies_the_text(tmp_path: Path) -> None:
    proc = trace([GOLDEN, "--format", "json", "--include-content"], tmp_path)
    agents, _ = records(proc)
    first = use(agents["moderator"], "provided", caller="mas")["calls"][0]
    assert first["content"]["input"] == "What is 2+2? Use the calculator if helpful."


def test_opaque_ids_hide_agents_runs_and_calls(tmp_path: Path) -> None:
    (tmp_path / "key").write_bytes(b"a key of the operator's")
    args: list[str | Path] = [renamed_copy(tmp_path), "--manifests", MANIFESTS, "--format", "json",
                              "--opaque-ids", "--opaque-key", "key", "--emit-kg", "kg.ttl"]
    proc = trace(args, tmp_path, shapes=True)
    assert proc.returncode == 1
    written = proc.stdout.decode() + (tmp_path / "kg.ttl").read_text()
    for identity in ("moderator", "schedule_agent", "concierge_agent", "7cc4f1e6780b4c6d2eb0",
                     LOOKUP_CALL, "afac51e0-e134-40af-85d0-b45e7ba09193"):
        assert identity not in written, identity
    agents, [summary] = records(proc)
    assert all(name.startswith("agent-") for name in agents)
    assert summary["run"].startswith("run-")
    assert sorted(a["verdict"] for a in agents.values()) == ["incompatible", "indeterminate"]
    # The same key gives the same references; another key, others.
    assert trace(args, tmp_path, shapes=True).stdout == proc.stdout
    (tmp_path / "key").write_bytes(b"another key, of 16 bytes at least")
    assert records(trace(args, tmp_path))[1][0]["run"] != summary["run"]


# --- registrations through bindings ---------------------------------------------------------

TRAVEL = "https://example.org/onto/travel#"


def _registration(ident: str) -> dict[str, Any]:
    from support import registration_63

    document = registration_63()
    document["@id"] = ident
    return document


def _bindings(tmp_path: Path, tools: dict[str, Any], agents: dict[str, Any]) -> Path:
    path = tmp_path / "bindings.json"
    path.write_text(json.dumps({"agents": agents, "tools": tools}))
    return path


def test_registrations_declare_capabilities_through_bindings(tmp_path: Path) -> None:
    (tmp_path / "regs.jsonl").write_text("".join(
        json.dumps(_registration(TRAVEL + name)) + "\n"
        for name in ("Schedules", "Delegation")) + "not json\n")
    bindings = _bindings(tmp_path, {
        "lookup_schedule": TRAVEL + "Schedules",
        "delegate_to_schedule_agent": TRAVEL + "Schedules",
    }, {"schedule_agent": [TRAVEL + "Schedules"], "moderator": [TRAVEL + "Delegation"]})
    proc = trace([GOLDEN, "--registrations", "regs.jsonl", "--profile", "cs-translation",
                  "--bindings", bindings, "--format", "json"], tmp_path)
    assert proc.returncode == 3, proc.stderr
    agents, [summary] = records(proc)
    lookup = use(agents["schedule_agent"], "tools", tool="lookup_schedule")
    assert lookup["verdict"] == "compatible" and lookup["declaredBy"] == ["regs.jsonl#0"]
    into = use(agents["schedule_agent"], "provided", caller="moderator")
    assert into["verdict"] == "compatible" and into["declaredBy"] == ["regs.jsonl#0"]
    # Registrations declare no models, so with them alone a model stays unknown.
    assert agents["schedule_agent"]["aspects"]["models"] == "indeterminate"
    # The line that is not a registration is reported, not counted as a declaration.
    [unread] = [r for r in summary["reasons"] if r["code"] == "capability.unregistered"]
    assert "regs.jsonl#2" in unread["message"] and "json.syntax" in unread["message"]
    assert unread["severity"] == "warning"


def test_the_shipped_bindings_example_declares_the_schedule_lookup(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[1] / "examples" / "trace"
    proc = trace([GOLDEN, "--registrations", examples / "registrations.jsonl", "--profile",
                  "cs-translation", "--bindings", examples / "bindings.json", "--format", "json"],
                 tmp_path)
    agents, [summary] = records(proc)
    assert use(agents["schedule_agent"], "tools", tool="lookup_schedule")["verdict"] == "compatible"
    assert use(agents["schedule_agent"], "provided", caller="moderator")["verdict"] == "compatible"
    assert not [r for r in summary["reasons"] if r["code"] == "capability.unregistered"]


@pytest.mark.parametrize(("tools", "agents", "verdict", "code"), [
    ({}, {"schedule_agent": [TRAVEL + "Schedules"]}, "indeterminate", "capability.unbound-name"),
    ({"lookup_schedule": [TRAVEL + "Schedules", TRAVEL + "Other"]},
     {"schedule_agent": [TRAVEL + "Schedules"]}, "indeterminate", "capability.ambiguous-binding"),
    ({"lookup_schedule": TRAVEL + "Schedules"}, {}, "indeterminate", "capability.unbound-name"),
    ({"lookup_schedule": TRAVEL + "Other"}, {"schedule_agent": [TRAVEL + "Schedules"]},
     "incompatible", "capability.undeclared-capability"),
    ({"lookup_schedule": TRAVEL + "Unregistered"},
     {"schedule_agent": [TRAVEL + "Unregistered"]}, "indeterminate", "capability.unregistered"),
])
def test_bindings_are_exact_and_never_guessed(tmp_path: Path, tools: dict[str, Any],
                                              agents: dict[str, Any], verdict: str,
                                              code: str) -> None:
    (tmp_path / "regs.jsonl").write_text(json.dumps(_registration(TRAVEL + "Schedules")) + "\n"
                                         + json.dumps(_registration(TRAVEL + "Other")) + "\n")
    bindings = _bindings(tmp_path, tools, agents)
    proc = trace([GOLDEN, "--registrations", "regs.jsonl", "--profile", "cs-translation",
                  "--bindings", bindings, "--format", "json"], tmp_path)
    found, _ = records(proc)
    lookup = use(found["schedule_agent"], "tools", tool="lookup_schedule")
    assert lookup["verdict"] == verdict
    assert code in {r["code"] for r in found["schedule_agent"]["reasons"]}


def test_a_manifest_declaration_outranks_an_unbound_name(tmp_path: Path) -> None:
    """Declared by one source is enough; not declared needs every source to complete."""
    (tmp_path / "regs.jsonl").write_text(json.dumps(_registration(TRAVEL + "Schedules")) + "\n")
    bindings = _bindings(tmp_path, {}, {})
    base: list[str | Path] = ["--registrations", "regs.jsonl", "--profile", "cs-translation",
                              "--bindings", bindings, "--manifests", MANIFESTS, "--format", "json"]
    agents, _ = records(trace([GOLDEN, *base], tmp_path))
    assert use(agents["schedule_agent"], "tools", tool="lookup_schedule")["verdict"] == "compatible"
    agents, _ = records(trace([renamed_copy(tmp_path), *base], tmp_path))
    renamed = use(agents["schedule_agent"], "tools", tool="book_hotel")
    assert renamed["verdict"] == "indeterminate"  # the manifest says no, the bindings cannot say
    reasons = {r["code"]: r["severity"] for r in agents["schedule_agent"]["reasons"]}
    assert reasons["capability.undeclared-tool"] == "warning"
    assert reasons["capability.unbound-name"] == "error"


# --- declarations ----------------------------------------------------------------------------


def _manifests_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, copy)
    return copy


def test_an_unreadable_tool_manifest_leaves_unmatched_tools_indeterminate(tmp_path: Path) -> None:
    manifests = _manifests_copy(tmp_path)
    (manifests / "tools" / "get_attractions.tool.yaml").unlink()
    agents, _ = records(trace([renamed_copy(tmp_path), "--manifests", manifests, "--format",
                               "json"], tmp_path))
    schedule = agents["schedule_agent"]
    assert use(schedule, "tools", tool="book_hotel")["verdict"] == "indeterminate"
    assert "capability.declaration-unavailable" in {r["code"] for r in schedule["reasons"]}


def test_undeclared_agents_models_and_delegations_are_incompatible(tmp_path: Path) -> None:
    manifests = _manifests_copy(tmp_path)
    mas = (manifests / "mas.yaml").read_text()
    mas = mas.replace("      - id: schedule_agent\n        ref: agents/schedule.yaml\n", "")
    mas = mas.replace("          - schedule_agent\n", "")
    mas = mas.replace("entry: moderator", "entry: concierge_agent")
    (manifests / "mas.yaml").write_text(mas)
    moderator = (manifests / "agents" / "moderator.yaml").read_text()
    (manifests / "agents" / "moderator.yaml").write_text(moderator.replace("azure/gpt-4o",
                                                                           "azure/gpt-5"))
    lines = (GOLDEN / "events.jsonl").read_text().replace(
        '"kind": "llm_call_start", "agent_id": "moderator", "run_id": ""',
        '"kind": "llm_call_start", "agent_id": "moderator", "model": "azure/gpt-4o", "run_id": ""')
    (tmp_path / "events.jsonl").write_text(lines)
    proc = trace(["events.jsonl", "--manifests", manifests, "--format", "json"], tmp_path)
    assert proc.returncode == 1
    agents, _ = records(proc)
    moderator_codes = {r["code"] for r in agents["moderator"]["reasons"] if r["severity"] == "error"}
    assert {"capability.undeclared-model", "capability.undeclared-delegation",
            "capability.undeclared-tool"} <= moderator_codes
    assert agents["moderator"]["aspects"] == {"tools": "incompatible", "models": "incompatible",
                                              "delegations": "incompatible",
                                              "provided": "incompatible"}
    schedule_codes = {r["code"] for r in agents["schedule_agent"]["reasons"]}
    assert "capability.undeclared-agent" in schedule_codes
    assert agents["schedule_agent"]["verdict"] == "incompatible"


def test_without_declarations_everything_is_indeterminate(tmp_path: Path) -> None:
    proc = trace([SMALLER[2], "--format", "json"], tmp_path)
    assert proc.returncode == 3
    agents, _ = records(proc)
    assert set(agents["qa-agent-t3"]["aspects"].values()) == {"indeterminate"}
    assert "capability.declaration-unavailable" in {r["code"] for r in agents["qa-agent-t3"]["reasons"]}


def test_a_parent_the_trace_does_not_hold_leaves_the_caller_unknown(tmp_path: Path) -> None:
    lines = [line for line in (GOLDEN / "events.jsonl").read_text().splitlines()
             if "afac51e0-e134-40af-85d0-b45e7ba09193\", \"timestamp" not in line]
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n")
    agents, _ = records(trace(["events.jsonl", "--manifests", MANIFESTS, "--format", "json"],
                              tmp_path))
    into = use(agents["schedule_agent"], "provided", caller=None)
    assert into["verdict"] == "indeterminate"
    assert "capability.caller-unknown" in {r["code"] for r in agents["schedule_agent"]["reasons"]}


# --- trace outcome records --------------------------------------------------------------------


def _outcome_from_schema() -> dict[str, Any]:
    """A record built from the agent-utilities schema: every required member, valid."""
    import jsonschema

    schema = json.loads(OUTCOME_SCHEMA.read_text())
    samples = {"string": "opaque-ref-1", "integer": 1000, "array": ["sha256:0f1e"], "object": {}}
    record: dict[str, Any] = {}
    for name in schema["required"]:
        spec = schema["properties"][name]
        if "const" in spec:
            record[name] = spec["const"]
        elif "enum" in spec:
            record[name] = spec["enum"][0]
        else:
            kinds = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
            record[name] = None if "null" in kinds else samples[kinds[0]]
    record["operation"] = "tool.invoke"
    jsonschema.Draft202012Validator(schema).validate(record)
    return record


def test_the_reader_knows_the_schema_required_members() -> None:
    from ioa_semantic.trace.events import OUTCOME_REQUIRED

    assert sorted(OUTCOME_REQUIRED) == sorted(json.loads(OUTCOME_SCHEMA.read_text())["required"])


def test_a_trace_outcome_record_audits_to_indeterminate(tmp_path: Path) -> None:
    """Identities are opaque and payloads references: what was used cannot be established."""
    record = _outcome_from_schema()
    (tmp_path / "outcome.json").write_text(json.dumps(record, indent=2))
    (tmp_path / "outcomes.jsonl").write_text(json.dumps(record) + "\n" + json.dumps(
        {**record, "status": "not a status"}) + "\n")
    proc = trace(["outcome.json", "outcomes.jsonl", "--format", "json"], tmp_path)
    assert proc.returncode == 3, proc.stderr
    agents, [one, two] = records(proc)
    assert agents == {}
    for summary in (one, two):
        assert summary["verdict"] == "indeterminate" and summary["records"] == 1
        opaque = [r for r in summary["reasons"] if r["code"] == "capability.evidence-opaque"]
        assert len(opaque) == 1 and opaque[0]["severity"] == "error"
    assert "trace.event-malformed" in {r["code"] for r in two["reasons"]}
    assert one["run"] == "opaque-ref-1"


# --- the command line -----------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["--registrations", "r.jsonl"],
    ["--emit-kg", "graph.xml"],
    ["--manifests", "missing-folder"],
    ["--bindings", "missing.json"],
    ["--opaque-key", "key"],
    ["--batch-size", "0"],
])
def test_usage_errors_exit_2_with_nothing_on_stdout(tmp_path: Path, args: list[str]) -> None:
    proc = trace([GOLDEN, *args], tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"Traceback" not in proc.stderr


def test_malformed_bindings_are_a_usage_error(tmp_path: Path) -> None:
    for content in ('{"tools": {"lookup_schedule": "not an iri"}}', '{"tools": []}',
                    '{"other": {}}', '{"tools": {"a": "urn:x", "a": "urn:y"}}', "[]"):
        (tmp_path / "b.json").write_text(content)
        proc = trace([GOLDEN, "--bindings", "b.json"], tmp_path)
        assert proc.returncode == 2 and proc.stdout == b"", content


def test_the_same_run_twice_is_a_usage_error(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN, tmp_path / "copy")
    proc = trace([GOLDEN, "copy"], tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"the same run (7cc4f1e6780b4c6d2eb0)" in proc.stderr


def test_an_unreadable_input_is_a_result_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "empty-folder").mkdir()
    proc = trace(["no-such-run", "empty-folder", GOLDEN, "--format", "json"], tmp_path)
    assert proc.returncode == 4
    _, summaries = records(proc)
    assert [s["verdict"] for s in summaries] == ["invalid", "invalid", "indeterminate"]
    assert summaries[0]["reasons"][0]["code"] == "json.unreadable"


def test_without_the_trace_extra_the_command_says_what_to_install(tmp_path: Path) -> None:
    """A Python without oxp_ontology: a clear message and exit 2, before any work."""
    script = (
        "import sys\n"
        "sys.modules['oxp_ontology'] = None  # what finding it answers for a module not there\n"
        "from ioa_semantic.cli.main import main\n"
        f"sys.exit(main(['trace', {str(GOLDEN)!r}, '--no-shapes']))\n")
    proc = run_python(script)
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"(oxp_ontology is not installed): pip install 'ioa-semantic[trace]'" in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_a_trace_extra_that_cannot_be_imported_is_said_when_it_is_needed(tmp_path: Path) -> None:
    """A Python where oxp_ontology is found but cannot be imported (a broken install): the
    extra is found, not imported, up front (a third of a second of every invocation); the
    shapes, which need it, say what to install, exit 2, and show no report."""
    import os

    shadow = tmp_path / "shadow" / "oxp_ontology"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed in this test')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "shadow")}
    proc = trace([GOLDEN], tmp_path, env=env, shapes=True)
    assert proc.returncode == 2 and proc.stdout == b""
    assert (b"(oxp_ontology is installed but cannot be imported: not installed in this test): "
            b"pip install 'ioa-semantic[trace]'") in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_envelope_checks_never_import_the_trace_extra() -> None:

    script = (
        "import io, sys, contextlib\n"
        "import ioa_semantic\n"
        "from ioa_semantic.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['examples/envelope-6.2.jsonld', '--profile', 'cs-translation',"
        " '--at', '2026-06-01T00:00:00Z'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('rdflib', 'pyshacl', 'yaml', 'oxp_ontology') or m.startswith('ioa_semantic._trace')))\n")
    proc = run_python(script)
    assert proc.stdout.decode().strip() == "[]", proc.stderr


def test_a_run_over_the_shape_limit_says_the_check_was_not_run(tmp_path: Path) -> None:
    """The SHACL check is refused before pyshacl runs on a run with more calls than
    --max-shape-calls (its cost per call would pass the 2 s bound), never left out silently."""
    proc = trace([GOLDEN, "--format", "json", "--max-shape-calls", "1"], tmp_path, shapes=True)
    _, summaries = records(proc)
    (shapes,) = [s["shapes"] for s in summaries]
    assert shapes["results"] == 0
    assert [f["code"] for f in shapes["findings"]] == ["trace.shapes-not-run"]
    assert "--max-shape-calls" in shapes["findings"][0]["message"]
    proc = trace([GOLDEN, "--format", "json"], tmp_path, shapes=True)
    (shapes,) = [s["shapes"] for s in records(proc)[1]]
    assert "trace.shapes-not-run" not in {f["code"] for f in shapes["findings"]}


def test_the_text_report_counts_one_in_the_singular(tmp_path: Path) -> None:
    event = {"kind": "tool_call_start", "agent_id": "solo", "call_id": "c1", "tool_name": "t",
             "run_id": "r1", "timestamp": 1796200200.0}
    (tmp_path / "events.jsonl").write_text(json.dumps(event) + "\n")
    text = trace(["events.jsonl", "--no-shapes"], tmp_path).stdout.decode()
    assert "run r1, 1 event, 1 agent\n" in text, text
