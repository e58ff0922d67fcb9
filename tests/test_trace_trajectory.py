"""``ioa-check trace --trajectory``: the oxp State/Transition view of a run, and its data flow.

Through the installed command where a user would go (``--emit-kg``, ``--store``, ``trace
query``), on the shipped OpenTelemetry example and the mas-lab samples; through the library
where a test counts what the builder does (the growth in triples and in calls visited) or
draws random call trees (hypothesis), or edits a built graph to show that nothing but the
one documented rule is filtered from its SHACL report.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import EXAMPLES, IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import pyoxigraph
import trace_runs
from test_trace import GOLDEN, MANIFESTS, SMALLER, TRACES
from test_trace_store import graphs, revised_manifests, tampered

from ioa_semantic.trace.calls import Call, Digest, Run

OTEL = EXAMPLES / "trace" / "otel"
AT = "2026-12-02T00:00:00Z"
LATER = "2026-12-03T00:00:00Z"
MAS = "https://outshift-open.github.io/oxp-ontology/mas#"
IOAT = "https://example.org/ioa/trace#"
OTEL_RUN = "urn:ioa-trace:run:4bf92f3577b34da6a3ce929d0e0e4736"
# The trajectory's own properties: nothing of them may be filtered from a report with it.
TRAJECTORY_PATHS = ("hasState", "hasInitialState", "hasFinalState", "correspondsToTransition",
                    "inputTo", "leadsTo", "representsExecution", "content", "sessionId")

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")


def ioa(args: list[Any], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run([IOA_CHECK, *map(str, args)], cwd=cwd, capture_output=True,
                          timeout=300)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc


def emitted(tmp_path: Path, source: Path | str, *more: Any) -> pyoxigraph.Store:
    """The graph ``--emit-kg`` writes of ``source`` with its trajectory, loaded."""
    out = tmp_path / "kg.nt"
    proc = ioa(["trace", source, "--no-shapes", "--emit-kg", out, "--trajectory", *more],
               tmp_path)
    assert proc.returncode in (0, 1, 3), proc.stderr.decode()
    store = pyoxigraph.Store()
    store.load(out.read_bytes(), pyoxigraph.RdfFormat.N_TRIPLES)
    return store


def select(store: pyoxigraph.Store, text: str) -> list[tuple[str, ...]]:
    prefixes = f"PREFIX mas: <{MAS}>\nPREFIX ioat: <{IOAT}>\n"
    solutions = store.query(prefixes + text)
    assert isinstance(solutions, pyoxigraph.QuerySolutions)
    names = [v.value for v in solutions.variables]
    return sorted(tuple(getattr(s[n], "value", str(s[n])) for n in names) for s in solutions)


def flows(store: pyoxigraph.Store) -> set[tuple[str, str, str]]:
    """Every flow between two execution elements: (from, its side, to), by mas:id."""
    rows = select(store, """
        SELECT ?from ?side ?to WHERE {
          ?source mas:hasState ?state ; mas:id ?from .
          ?state mas:inputTo ?step .
          ?step mas:representsExecution ?target .
          ?target mas:id ?to .
          FILTER (?source != ?target)
          FILTER NOT EXISTS { ?source a mas:Session }
          FILTER NOT EXISTS { ?target a mas:Session }
          BIND (IF(EXISTS { ?source mas:hasInitialState ?state }, "input", "output") AS ?side)
        }""")
    return {(a, b, c) for a, b, c in rows}


# --- the nodes ----------------------------------------------------------------------------------


def test_every_call_and_the_session_has_its_transition_and_two_states(tmp_path: Path) -> None:
    store = emitted(tmp_path, OTEL / "events.jsonl")
    elements = select(store, "SELECT ?e WHERE { { ?e a mas:Session } UNION { ?e a ?c . "
                             "FILTER (STRENDS(STR(?c), 'Call')) } }")
    assert len(elements) == 13  # the session and its 12 calls
    per_element = select(store, """
        SELECT ?e (COUNT(DISTINCT ?t) AS ?transitions) (COUNT(DISTINCT ?i) AS ?initial)
               (COUNT(DISTINCT ?f) AS ?final) (COUNT(DISTINCT ?s) AS ?states)
        WHERE {
          ?e mas:correspondsToTransition ?t ; mas:hasInitialState ?i ; mas:hasFinalState ?f ;
             mas:hasState ?s .
          ?t a mas:Transition ; mas:representsExecution ?e ; mas:leadsTo ?f .
          ?i a mas:State ; mas:inputTo ?t .
          ?f a mas:State .
        } GROUP BY ?e""")
    assert [row[1:] for row in per_element] == [("1", "1", "1", "2")] * 13
    assert sorted(row[0] for row in per_element) == [e for (e,) in elements]
    # The session id on every State and Transition, as on the calls.
    assert select(store, "SELECT DISTINCT ?id WHERE { { ?n a mas:State } UNION "
                         "{ ?n a mas:Transition } ?n mas:sessionId ?id }") == [
        ("4bf92f3577b34da6a3ce929d0e0e4736",)]
    assert select(store, "SELECT ?n WHERE { { ?n a mas:State } UNION { ?n a mas:Transition } "
                         "FILTER NOT EXISTS { ?n mas:sessionId ?id } }") == []
    # The session's States are those of the MAS call, which starts and ends it.
    mas_call = f"<{OTEL_RUN}:call:00f067aa0ba90201>"
    assert select(store, f"SELECT ?p WHERE {{ <{OTEL_RUN}> ?p ?s . {mas_call} ?p ?s . "
                         "FILTER (?p IN (mas:hasInitialState, mas:hasFinalState)) }") == [
        (MAS + "hasFinalState",), (MAS + "hasInitialState",)]


def test_a_state_holds_the_digest_and_count_never_the_text(tmp_path: Path) -> None:
    store = emitted(tmp_path, OTEL / "events.jsonl")
    text = (tmp_path / "kg.nt").read_text()
    for secret in ("R-7781", "Zürich", "München", "EC 196"):  # prompts, arguments, results
        assert secret in (OTEL / "events.jsonl").read_text() and secret not in text
    rows = select(store, """
        SELECT ?call ?side ?content ?sha ?chars ?callSha ?callChars WHERE {
          ?c mas:id ?call .
          { ?c mas:hasInitialState ?s . BIND ("input" AS ?side)
            OPTIONAL { ?c ioat:inputSha256 ?callSha ; ioat:inputChars ?callChars } }
          UNION
          { ?c mas:hasFinalState ?s . BIND ("output" AS ?side)
            OPTIONAL { ?c ioat:outputSha256 ?callSha ; ioat:outputChars ?callChars } }
          ?s mas:content ?content .
          OPTIONAL { ?s ioat:contentSha256 ?sha ; ioat:contentChars ?chars }
          FILTER NOT EXISTS { ?c a mas:Session }
        }""")
    assert len(rows) == 24
    for call, side, content, sha, chars, call_sha, call_chars in rows:
        if call_sha == "None":  # the trace does not record this side
            assert (content, sha, chars) == ("not recorded", "None", "None"), (call, side)
        else:
            assert (sha, chars) == (call_sha, call_chars), (call, side)
            assert content == f"withheld: sha256 {sha}, {chars} characters"
    # issue_refund's result is not in the trace; the MAS call records neither side.
    assert ("00f067aa0ba9020b", "output") in {(r[0], r[1]) for r in rows if r[2] == "not recorded"}
    assert sum(r[2] == "not recorded" for r in rows) == 3


def test_with_include_content_a_state_holds_the_text_its_digest_was_made_of(
        tmp_path: Path) -> None:
    store = emitted(tmp_path, OTEL / "events.jsonl", "--include-content")
    rows = select(store, "SELECT ?content ?sha ?chars WHERE { ?s a mas:State ; mas:content "
                         "?content ; ioat:contentSha256 ?sha ; ioat:contentChars ?chars }")
    assert len(rows) == 21
    for content, sha, chars in rows:
        assert hashlib.sha256(content.encode()).hexdigest() == sha and len(content) == int(chars)
    assert any("R-7781" in content for content, _, _ in rows)


def test_opaque_ids_reach_the_trajectory_too(tmp_path: Path) -> None:
    emitted(tmp_path, OTEL / "events.jsonl", "--opaque-ids")
    text = (tmp_path / "kg.nt").read_text()
    for identity in ("00f067aa0ba9020b", "booking_agent", "front_desk",
                     "4bf92f3577b34da6a3ce929d0e0e4736"):
        assert identity not in text, identity
    assert "<https://example.org/ioa/trace#agent> <urn:ioa-trace:agent:agent-" in text


# --- the flow -----------------------------------------------------------------------------------


def test_the_flow_of_the_shipped_example_rule_by_rule(tmp_path: Path) -> None:
    """front_desk (02) asks gpt-4o (03), searches (04), asks again (05), delegates (06) to
    booking_agent (07), which asks claude (08), reserves (0a), refunds (0b, undeclared), asks
    a model it does not name (0c); front_desk answers (0d). Every flow between two calls, each
    from one rule of docs/trace.md."""
    store = emitted(tmp_path, OTEL / "events.jsonl")
    c = "00f067aa0ba902{}".format
    assert flows(store) == {
        # the MAS call's input to the entry agent inside it, the agent's output back
        (c("01"), "input", c("02")), (c("02"), "output", c("01")),
        # front_desk: its task to its first call
        (c("02"), "input", c("03")),
        # a model's output to the calls it led to and to the next model call
        (c("03"), "output", c("04")), (c("03"), "output", c("05")),
        (c("05"), "output", c("06")), (c("05"), "output", c("0d")),
        # each result to the agent's next model call
        (c("04"), "output", c("05")), (c("06"), "output", c("0d")),
        # the last model call's output to the agent's own step
        (c("0d"), "output", c("02")),
        # the delegation: the tool call's input to the sub-agent, its output to the tool call
        (c("06"), "input", c("07")), (c("07"), "output", c("06")),
        # booking_agent likewise; both results (the undeclared refund's too) to its next model
        (c("07"), "input", c("08")), (c("08"), "output", c("0a")), (c("08"), "output", c("0b")),
        (c("08"), "output", c("0c")), (c("0a"), "output", c("0c")), (c("0b"), "output", c("0c")),
        (c("0c"), "output", c("07")),
    }


def test_the_golden_run_level_to_level(tmp_path: Path) -> None:
    """The schema's multi-level view on mas-lab's own trip planner: lookup_schedule's result
    feeds schedule_agent's next LLM call; schedule_agent's execution_end output feeds the
    delegation tool call it answered, whose result feeds the moderator's next LLM call."""
    store = emitted(tmp_path, GOLDEN)
    found = flows(store)
    lookup, schedule_llm = "9b6c8503-4d2b-4e8f-a7d2-29e6884d283c", "13a90d86-0e62-4229-83a9-6197cda408b6"
    delegation = "afac51e0-e134-40af-85d0-b45e7ba09193"
    schedule = f"schedule_agent-{delegation}-exec"
    moderator_llm = "f934c8fc-4a11-4d3a-98bb-b0f0d66b9e47"
    assert {(lookup, "output", schedule_llm), (schedule, "output", delegation),
            (delegation, "input", schedule), (delegation, "output", moderator_llm)} <= found
    # Nothing of a call flows to a call that started before it in the same execution.
    starts = {a: b for a, b in select(
        store, "SELECT ?id ?t WHERE { ?c mas:id ?id ; mas:startTime ?t ; ioat:parentCall ?p }")}
    parents = {a: b for a, b in select(
        store, "SELECT ?id ?p WHERE { ?c mas:id ?id ; ioat:parentCall ?q . ?q mas:id ?p }")}
    for source, side, target in found:
        if side == "output" and parents.get(source) == parents.get(target) and source in starts:
            assert Decimal(starts[source]) <= Decimal(starts[target]), (source, target)


# --- the shapes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [OTEL / "events.jsonl", OTEL / "otlp.jsonl",
                                    OTEL / "otlp-collector.json", GOLDEN, *SMALLER],
                         ids=lambda p: p.name)
def test_the_trajectory_of_every_shipped_run_passes_the_ontologys_shapes(
        tmp_path: Path, source: Path) -> None:
    proc = ioa(["trace", source, "--trajectory", "--format", "json"], tmp_path)
    shapes = json.loads(proc.stdout.decode().splitlines()[-1])["summary"]["shapes"]
    # The trajectory quirk no longer applies: only the session's end is filtered, once.
    assert shapes["filtered"] == {"session-end": 1, "semantic-groups": 1,
                                  "legacy-shortcuts": shapes["filtered"]["legacy-shortcuts"]}
    for found in shapes["findings"]:
        assert "mas:State" not in found["message"] and "mas:Transition" not in found["message"]
        assert not any(f"mas:{path} " in found["message"] for path in TRAJECTORY_PATHS), found
    plain = ioa(["trace", source, "--format", "json"], tmp_path)
    filtered = json.loads(plain.stdout.decode().splitlines()[-1])["summary"]["shapes"]["filtered"]
    assert filtered["trajectory"] > 0 and "session-end" not in filtered


def _graph(source: Path, trajectory: bool = True) -> Any:
    from ioa_semantic.trace.declarations import Declarations
    from ioa_semantic.trace.events import Fold, build, resolve
    from ioa_semantic.trace.graph import build as build_graph
    from ioa_semantic.trace.privacy import Disclosure
    from ioa_semantic.trace.state import consume

    found = resolve(str(source))
    fold = Fold()
    consume(found, fold)
    return build_graph(build(found, fold, Disclosure()), Declarations(None, None, None),
                       Disclosure(), trajectory)


def test_only_the_sessions_last_state_is_filtered_nothing_else_of_the_trajectory() -> None:
    """Each part of the trajectory taken out of a built graph is reported, not filtered: a
    result's flow, a call's States and Transition, a State's content and session id; and the
    session's final State is let off only the count of mas:inputTo, never its class."""
    from rdflib import Literal, Namespace, URIRef

    from ioa_semantic.trace.graph import check

    mas = Namespace(MAS)
    graph = _graph(OTEL / "events.jsonl")
    baseline = check(graph, True)
    assert baseline.filtered["session-end"] == 1 and "trajectory" not in baseline.filtered
    call = URIRef(f"{OTEL_RUN}:call:00f067aa0ba9020b")
    result = URIRef(f"{OTEL_RUN}:output:00f067aa0ba9020b")
    session_end = URIRef(f"{OTEL_RUN}:output:00f067aa0ba90201")
    assert (session_end, mas.inputTo, None) not in graph
    graph.remove((result, mas.inputTo, None))  # the refund's result flows nowhere
    graph.remove((call, mas.hasState, None))
    graph.remove((call, mas.correspondsToTransition, None))
    graph.remove((URIRef(f"{OTEL_RUN}:input:00f067aa0ba9020a"), mas.content, None))
    graph.remove((URIRef(f"{OTEL_RUN}:transition:00f067aa0ba90204"), mas.sessionId, None))
    report = check(graph, True)
    messages = [f.message for f in report.findings]
    for rule in ("mas:State node lacks mas:inputTo", "mas:ToolCall node lacks mas:hasState",
                 "mas:ToolCall node lacks mas:correspondsToTransition",
                 "mas:State node lacks mas:content", "mas:Transition node lacks mas:sessionId"):
        assert any(m.startswith(f"1 {rule} ") for m in messages), (rule, messages)
    assert report.filtered == baseline.filtered
    assert len(report.findings) == len(baseline.findings) + 5
    # A value of the wrong class on the session's final State is reported like any other.
    graph.add((session_end, mas.inputTo, Literal("not a Transition")))
    report = check(graph, True)
    assert report.filtered["session-end"] == 0
    assert any(f.message.startswith("1 mas:State node has a value of the wrong class for "
                                    "mas:inputTo ") for f in report.findings)


def test_the_quirk_of_the_session_end_is_on_the_trace_page() -> None:
    from ioa_semantic.trace.graph import quirks

    page = (Path(__file__).resolve().parents[1] / "docs" / "trace.md").read_text()
    section = page.split("## The SHACL check and its documented quirks", 1)[1].split("\n## ", 1)[0]
    for name in quirks(trajectory=True):
        assert f"`{name}`" in section, name


# --- the command line ---------------------------------------------------------------------------


def test_trajectory_without_a_graph_to_build_is_a_usage_error(tmp_path: Path) -> None:
    proc = ioa(["trace", OTEL / "events.jsonl", "--trajectory", "--no-shapes"], tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"--trajectory" in proc.stderr


def test_a_call_with_its_trajectory_weighs_three_against_max_kg_calls(tmp_path: Path) -> None:
    common = ["trace", OTEL / "events.jsonl", "--no-shapes", "--emit-kg", tmp_path / "kg.ttl",
              "--max-kg-calls", "30"]
    assert ioa(common, tmp_path).returncode == 3  # 12 calls
    refused = ioa([*common, "--trajectory"], tmp_path)
    assert refused.returncode == 2 and refused.stdout == b""
    assert b"as large as 36 calls' without" in refused.stderr
    assert ioa([*common[:-1], "36", "--trajectory"], tmp_path).returncode == 3


# --- the store and its query --------------------------------------------------------------------


def feed(paths: list[Any], store: Path, cwd: Path, *more: Any) -> subprocess.CompletedProcess[bytes]:
    """A plain store (its rows name calls and runs as the traces do, which these tests
    compare); the private default keys them (tests/test_trace_store_private.py)."""
    return ioa(["trace", *paths, "--store", store, "--store-plain-ids", "--no-shapes",
                "--format", "json", "--at", AT, *more], cwd)


def query(store: Path, cwd: Path, name: str = "undeclared_flow") -> list[dict[str, Any]]:
    proc = ioa(["trace", "query", store, name], cwd)
    assert proc.returncode == 0, proc.stderr.decode()
    return [json.loads(line) for line in proc.stdout.decode().splitlines()]


REFUND_ROW = {"runId": "4bf92f3577b34da6a3ce929d0e0e4736", "agentId": "booking_agent",
              "tool": "issue_refund", "toolCall": "00f067aa0ba9020b",
              "intoCall": "00f067aa0ba9020c", "intoClass": "LLMCall",
              "intoName": "LLM call (model not recorded)"}


@pytest.mark.parametrize("source", ["events.jsonl", "otlp.jsonl"])
def test_undeclared_flow_names_the_call_the_refund_result_went_into(
        tmp_path: Path, source: str) -> None:
    store = tmp_path / "store"
    fed = feed([OTEL / source], store, tmp_path, "--manifests", OTEL / "manifests",
               "--trajectory")
    assert fed.returncode == 1, fed.stderr.decode()
    assert query(store, tmp_path) == [REFUND_ROW]


def test_undeclared_flow_follows_the_current_verdict(tmp_path: Path) -> None:
    """The golden trip planner with lookup_schedule renamed book_hotel: its result went into
    schedule_agent's next LLM call; once a reaudit finds book_hotel declared, no row."""
    bad = tampered(tmp_path)
    store = tmp_path / "store"
    assert feed([GOLDEN, bad], store, tmp_path, "--manifests", MANIFESTS,
                "--trajectory").returncode == 3
    assert query(store, tmp_path) == [{
        "runId": "tampered-7cc4f1e6780b4c6d2eb0", "agentId": "schedule_agent",
        "tool": "book_hotel", "toolCall": "9b6c8503-4d2b-4e8f-a7d2-29e6884d283c",
        "intoCall": "13a90d86-0e62-4229-83a9-6197cda408b6", "intoClass": "LLMCall",
        "intoName": "azure/gpt-4o"}]
    assert ioa(["trace", "reaudit", store, "--manifests", revised_manifests(tmp_path), "--at",
                LATER], tmp_path).returncode == 3
    assert query(store, tmp_path) == []


def test_undeclared_flow_against_an_independent_computation(tmp_path: Path) -> None:
    """Generated runs (tests/trace_runs.py): a specialist asks its model once, then calls its
    tools; every result flows to the specialist's own step, the undeclared ones included,
    each call of a use (not only the five a verdict links)."""
    specs = trace_runs.generate(12, seed=11)
    specs.append(trace_runs.Spec("gen-many", trace_runs.BASE_TIME - 60,
                                 {"booker": ["reserve", *["pay"] * 7]}))
    runs = [trace_runs.write_run(tmp_path / "runs", spec) for spec in specs]
    manifests = trace_runs.write_manifests(tmp_path / "manifests")
    store = tmp_path / "store"
    assert feed(runs, store, tmp_path, "--manifests", manifests, "--trajectory").returncode == 1
    expected = [
        {"runId": spec.run_id, "agentId": agent, "tool": tool,
         "toolCall": f"{spec.run_id}-{agent}-tool-{number}",
         "intoCall": f"{spec.run_id}-{agent}", "intoClass": "AgentCall", "intoName": agent}
        for spec in specs for agent, tools in spec.uses.items()
        for number, tool in enumerate(tools) if tool not in trace_runs.DECLARED[agent]]
    assert len({r["runId"] for r in expected}) >= 3 and len(expected) >= 9
    assert query(store, tmp_path) == sorted(expected, key=lambda r: (
        r["runId"], r["agentId"], r["tool"], r["toolCall"], r["intoCall"]))


def test_the_stored_graph_is_the_emitted_graph_with_its_trajectory(tmp_path: Path) -> None:
    store = tmp_path / "store"
    feed([GOLDEN], store, tmp_path, "--manifests", MANIFESTS, "--emit-kg", "kg.nt",
         "--trajectory")
    emitted_graph = pyoxigraph.Store()
    emitted_graph.load((tmp_path / "kg.nt").read_bytes(), pyoxigraph.RdfFormat.N_TRIPLES)
    expected = {(str(q.subject), str(q.predicate), str(q.object)) for q in emitted_graph}
    graph = graphs(store)["<urn:ioa-trace:run:7cc4f1e6780b4c6d2eb0>"]
    extra = {t for t in graph if t[1] in (f"<{IOAT}runRecord>", f"<{IOAT}recordSha256>")}
    assert len(extra) == 2 and graph - extra == expected
    assert any(t[2] == f"<{MAS}Transition>" for t in expected)


def _transitions(store: Path) -> int:
    return sum(1 for graph in graphs(store).values() for t in graph
               if t[2] == f"<{MAS}Transition>")


def test_a_stored_run_gains_its_trajectory_when_asked_and_keeps_it(tmp_path: Path) -> None:
    """Fed without, then with --trajectory: the run's graph gains it and no verdict is added
    (nothing was judged again). Events appended and fed without --trajectory: the rebuilt
    graph keeps it."""
    events = tmp_path / "events.jsonl"
    lines = (OTEL / "events.jsonl").read_text().splitlines(keepends=True)
    events.write_text("".join(lines[:-4]))  # front_desk's last LLM call not yet in it
    store = tmp_path / "store"
    args = ["--manifests", OTEL / "manifests"]
    assert feed([events], store, tmp_path, *args).returncode in (1, 3)
    assert _transitions(store) == 0 and query(store, tmp_path) == []
    assert feed([events], store, tmp_path, *args, "--trajectory").returncode in (1, 3)
    assert _transitions(store) == 12  # the cut trace's eleven calls and the session
    assert [r["verdicts"] for r in query(store, tmp_path, "runs")] == [1]
    assert query(store, tmp_path) == [REFUND_ROW]
    events.write_text("".join(lines))
    assert feed([events], store, tmp_path, *args).returncode == 1
    assert _transitions(store) == 13
    assert [r["verdicts"] for r in query(store, tmp_path, "runs")] == [2]


def test_the_trace_page_shows_the_query_and_its_real_output(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    # The page's commands run from the repository's folder.
    shutil.copytree(root / "examples" / "trace", tmp_path / "examples" / "trace")
    page = (root / "docs" / "trace.md").read_text()
    section = page.split("### Asking the history: `trace query`", 1)[1].split("\n### ", 1)[0]
    feed_command = ("ioa-check trace examples/trace/otel/events.jsonl --manifests "
                    "examples/trace/otel/manifests --store history --store-plain-ids "
                    "--trajectory")
    assert feed_command in section.replace("\\\n    ", "")
    feed([Path("examples/trace/otel/events.jsonl")], Path("history"), tmp_path, "--manifests",
         Path("examples/trace/otel/manifests"), "--store-plain-ids", "--trajectory")
    table = ioa(["trace", "query", "history", "undeclared_flow", "--format", "table"],
                tmp_path).stdout.decode()
    assert f"```text\n{table.rstrip()}\n```" in section


# --- growth -------------------------------------------------------------------------------------


def _call(key: str, cls: str, parent: str | None, start: int | None, agent: str | None = None,
          target: str | None = None) -> Call:
    return Call(key=key, id=key, cls=cls, agent=agent, target=target, parent=parent,
                parent_id=parent, start=None if start is None else str(start),
                end=None if start is None else str(start + 1), first_line=1, status=None,
                label=None, tokens={}, finish=None, temperature=None, response_id=None,
                input=Digest("0" * 64, 1), output=None, content=None,
                ambiguous=())


def _run(calls: list[Call]) -> Run:
    return Run("generated", "generated", "generated", None, tuple(calls), len(calls) * 2, {}, {},
               (), (), 0, True)


def _flat(units: int) -> Run:
    """One agent asking its model and calling a tool, ``units`` times."""
    calls = [_call("mas", "mas", None, 0), _call("agent", "agent", "mas", 1, target="a")]
    for n in range(units):
        calls += [_call(f"llm{n}", "llm", "agent", 10 * n + 2, "a", "m"),
                  _call(f"tool{n}", "tool", "agent", 10 * n + 5, "a", "t")]
    return _run(calls)


def _deep(levels: int) -> Run:
    """A chain of delegations ``levels`` deep: agent, tool, agent, tool..., and a processing
    step at the bottom whose agent is only known from the agent call above it."""
    calls = [_call("a0", "agent", None, 0, target="a0")]
    for n in range(levels):
        calls += [_call(f"t{n}", "tool", f"a{n}", 2 * n + 1, f"a{n}", f"delegate_to_a{n + 1}"),
                  _call(f"a{n + 1}", "agent", f"t{n}", 2 * n + 2, target=f"a{n + 1}")]
    calls.append(_call("p", "processing", f"a{levels}", 2 * levels + 3))
    return _run(calls)


def _measure(run: Run) -> tuple[int, int]:
    """The trajectory's triples and the calls its builder visited."""
    from ioa_semantic.trace.attribution import Attribution
    from ioa_semantic.trace.privacy import Disclosure
    from ioa_semantic.trace.trajectory import Sink, Trajectory

    triples: list[tuple[str, str, Any]] = []
    sink = Sink(lambda s, p, v, datatype=None: triples.append((s, p, v)),
                lambda s, p, o: triples.append((s, p, o)),
                lambda s, c: triples.append((s, "type", c)))
    trajectory = Trajectory(sink, Disclosure(), run, "urn:ioa-trace:run:generated", "generated",
                            Attribution(run))
    trajectory.build()
    assert len(set(triples)) == len(triples)  # nothing written twice
    return len(triples), trajectory.visits


@pytest.mark.parametrize("shape", [_flat, _deep], ids=["flat", "deep"])
def test_building_the_trajectory_is_linear_in_the_calls(shape: Any) -> None:
    sizes = (100, 200, 400, 800)
    measured = [_measure(shape(n)) for n in sizes]
    calls = [len(shape(n).calls) for n in sizes]
    triples = [t for t, _ in measured]
    # The same triples for each further call, however many came before it.
    per_call = {(triples[i + 1] - triples[i]) / (calls[i + 1] - calls[i]) for i in range(3)}
    assert len(per_call) == 1 and next(iter(per_call)) < 40
    for (_, visits), count in zip(measured, calls, strict=True):
        assert visits <= 4 * count


def test_the_trajectorys_iris_share_their_namespaces_whatever_the_calls() -> None:
    """rdflib's Turtle writer files each IRI under the namespace before its last ":" and looks
    every IRI up among the namespaces met so far: one namespace a call made ``--emit-kg``
    quadratic. The namespaces of the trajectory's IRIs do not grow with the calls."""
    from rdflib.namespace import split_uri

    from ioa_semantic.trace.attribution import Attribution
    from ioa_semantic.trace.privacy import Disclosure
    from ioa_semantic.trace.trajectory import Sink, Trajectory

    def namespaces(run: Run) -> set[str]:
        nodes: set[str] = set()
        sink = Sink(lambda s, p, v, datatype=None: nodes.add(s),
                    lambda s, p, o: nodes.update((s, o)), lambda s, c: nodes.add(s))
        Trajectory(sink, Disclosure(), run, "urn:ioa-trace:run:generated", "generated",
                   Attribution(run)).build()
        return {split_uri(node)[0] for node in nodes}

    assert namespaces(_flat(50)) == namespaces(_flat(800))
    assert len(namespaces(_flat(800))) <= 8


def test_the_weight_of_a_call_with_its_trajectory_is_under_three(tmp_path: Path) -> None:
    from ioa_semantic.cli.trace import TRAJECTORY_WEIGHT

    for units in (25, 500):
        spec = trace_runs.Spec(f"w{units}", trace_runs.BASE_TIME,
                               {"finder": ["search"] * units, "booker": ["reserve"] * units})
        folder = trace_runs.write_run(tmp_path, spec)
        plain, traced = len(_graph(folder, False)), len(_graph(folder, True))
        assert 2.5 < traced / plain < TRAJECTORY_WEIGHT


# --- every State but the session's last feeds a step: random call trees ------------------------


@st.composite
def call_trees(draw: st.DrawFn) -> Run:
    """Random calls: events, or spans whose intervals may enclose each other (so calls beside
    an agent span are part of its execution)."""
    count = draw(st.integers(1, 25))
    spans = draw(st.booleans())
    calls = []
    for n in range(count):
        cls = draw(st.sampled_from(["mas", "agent", "llm", "tool", "processing"]))
        # A parent among all calls (a loop, a missing one, the call itself included).
        parent = draw(st.none() | st.integers(0, count).map(lambda i: f"c{i}"))
        start = draw(st.none() | st.integers(0, 5))
        call = _call(f"c{n}", cls, parent, start, None if spans else draw(
            st.none() | st.just("x")), draw(st.none() | st.sampled_from(["y", "z"])))
        if spans and start is not None:
            call = call._replace(end=str(start + draw(st.integers(0, 6))))
        calls.append(call)
    parents = {c.key for c in calls}
    run = _run([c._replace(parent=c.parent if c.parent in parents else None,
                           parent_id=c.parent if c.parent in parents else None)
                for c in calls])
    return run._replace(unit="spans") if spans else run


@settings(max_examples=200, deadline=None)
@given(call_trees())
def test_every_state_but_the_sessions_last_feeds_a_transition(run: Run) -> None:
    from ioa_semantic.trace.attribution import Attribution
    from ioa_semantic.trace.privacy import Disclosure
    from ioa_semantic.trace.trajectory import Sink, Trajectory

    links: list[tuple[str, str, str]] = []
    types: dict[str, str] = {}
    sink = Sink(lambda *a, **k: None, lambda s, p, o: links.append((s, p, o)),
                lambda s, c: types.__setitem__(s, c))
    session = "urn:ioa-trace:run:generated"
    Trajectory(sink, Disclosure(), run, session, "generated", Attribution(run)).build()
    states = {s for s, c in types.items() if c == "State"}
    transitions = {s for s, c in types.items() if c == "Transition"}
    assert len(states) == 2 * len(run.calls) and len(transitions) == len(run.calls) + 1
    fed = {s for s, p, o in links if p == "inputTo"}
    assert all(o in transitions for s, p, o in links if p == "inputTo")
    [session_end] = [o for s, p, o in links if s == session and p == "hasFinalState"]
    # Where parents loop, no call is top-level, and the session's final State may feed the
    # step of the call around it.
    top_level = any(c.parent is None or c.parent == c.key for c in run.calls)
    assert states - fed == {session_end} if top_level else states - fed <= {session_end}
    [session_start] = [o for s, p, o in links if s == session and p == "hasInitialState"]
    shared = {p for s, p, o in links if s != session and o in (session_start, session_end)}
    assert {"hasInitialState", "hasFinalState"} <= shared
