"""Review of a private store's one-pass feed (commits f17c8d0, f126b39, 3e60aeb): each call of
a run is turned plain -> keyed -> revealed in one step, and the record's calls are made back
from the revealed ones as they are written (``_judged_privately``, ``_RecordCalls``), where a
feed kept the keyed run (:func:`~ioa_semantic.trace.store.private_runs`) beside the revealed
one. The claim: the store is the same quad for quad.

The feeds here run the installed command on runs whose names are hostile to that turning
back: a published agent name that spells another agent's reference (made with the store's
key, known to the test), names with quotes, a newline, a tab, a backslash and non-ASCII
letters, the same tool under two agents, tools named like agents and like delegations,
delegations to agents nobody declares. Each stored record is held to the one the keyed run
makes (the record of the two-copy feed), whole and in parts; a reaudit of the store must read
it back and judge it as a feed under the new declarations does.

The last tests hold a gap of a private store that the review met on the way (older than these
commits) closed: what an OTLP span says of its agent beside the agent's span
(``gen_ai.agent.name`` on a model or tool span, the ``gen_ai.agent.id`` of any span) was
stored as the trace had it; it is keyed, and judged as the report judges it.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import pyoxigraph
from test_trace_store import KEY, LATER, feed, ioa, keyed, query

from ioa_semantic.cli import trace as trace_cli
from ioa_semantic.trace import store
from ioa_semantic.trace.events import Fold, Source, otlp_runs, resolve
from ioa_semantic.trace.privacy import Private
from ioa_semantic.trace.state import consume
from ioa_semantic.trace.store import PART_CHARS_ENV, key_fingerprint

from otlp_requests import request, span

IOAT = "https://example.org/ioa/trace#"
KEYS = Private(KEY)
MODE = f"private:{key_fingerprint(KEY)}"
WEIRD = ['we"ird\nname', "üñí©ødé 🤖", "tab\there\\", "delegate_to_x"]
# A published agent name that spells the reference of "other", an agent the trace names and
# no declaration publishes: its calls, keyed, read as that name (one would need the store's
# key to write such a manifest).
SPELLED = KEYS.keyed("agent", "other")
# The agents the manifests m1 publish (_hostile).
PUBLISHED = frozenset({"lead", *WEIRD, SPELLED, "finder"})


def _maslab_run(folder: Path, run_id: str, lead: str, delegates: dict[str, list[str]],
                lead_tools: tuple[str, ...] = ()) -> Path:
    """A mas-lab run folder: ``lead`` calls ``lead_tools``, then delegates to each agent of
    ``delegates`` (``delegate_to_<agent>``), which calls its tools."""
    clock = [1_800_000_000.0]

    def event(kind: str, agent: str, call: str, parent: str | None, **more: Any
              ) -> dict[str, Any]:
        clock[0] += 0.001
        out = {"kind": kind, "agent_id": agent, "run_id": run_id, "call_id": call,
               "timestamp": round(clock[0], 3), **more}
        if parent is not None:
            out["parent_call_id"] = parent
        return out

    def tool_call(agent: str, call: str, parent: str, name: str) -> list[dict[str, Any]]:
        return [event("tool_call_start", agent, call, parent, tool_name=name, arguments={}),
                event("tool_call_end", agent, call, parent, tool_name=name, output="done")]

    root, own = f"{run_id}-mas", f"{run_id}-lead"
    events = [event("mas_call_start", "mas", root, None),
              event("execution_start", lead, own, root, input="task"),
              event("llm_call_start", lead, f"{own}-llm", own, model="m-1", input="plan"),
              event("llm_call_end", lead, f"{own}-llm", own, model="m-1", output="ok")]
    for number, name in enumerate(lead_tools):
        events += tool_call(lead, f"{own}-t{number}", own, name)
    for index, (agent, tools) in enumerate(delegates.items()):
        via, call = f"{run_id}-to-{index}", f"{run_id}-a{index}"
        events.append(event("tool_call_start", lead, via, own,
                            tool_name=f"delegate_to_{agent}", arguments={"task": "part"}))
        events.append(event("execution_start", agent, call, via, input="part"))
        for number, name in enumerate(tools):
            events += tool_call(agent, f"{call}-t{number}", call, name)
        events.append(event("execution_end", agent, call, via, output="part done"))
        events.append(event("tool_call_end", lead, via, own, tool_name=f"delegate_to_{agent}",
                            output="part done"))
    events += [event("execution_end", lead, own, root, output="done"),
               event("mas_call_end", "mas", root, None)]
    run = folder / run_id
    (run / "traces").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_hash": run_id}))
    (run / "traces" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run


def _manifests(folder: Path, agents: dict[str, list[str]], delegates: dict[str, list[str]],
               ids: dict[str, str] | None = None) -> Path:
    """mas.yaml and one manifest an agent (JSON, which YAML reads), its tools by name;
    ``ids``: the gen_ai.agent.id mas.yaml gives an agent (its entry's agent_id)."""
    (folder / "agents").mkdir(parents=True)
    names = list(agents)
    ids = ids or {}
    (folder / "mas.yaml").write_text(json.dumps({
        "apiVersion": "mas/v1", "kind": "MAS", "metadata": {"name": "generated"},
        "spec": {"agency": {"agents": [{"id": a, "ref": f"agents/a{i}.yaml",
                                        **({"agent_id": ids[a]} if a in ids else {})}
                                       for i, a in enumerate(names)]},
                 "workflow": {"type": "dynamic", "entry": names[0], "nodes": [
                     {"id": a, **({"delegates_to": delegates[a]} if a in delegates else {})}
                     for a in names]}}}, ensure_ascii=False), encoding="utf-8")
    for index, agent in enumerate(names):
        (folder / "agents" / f"a{index}.yaml").write_text(json.dumps({
            "apiVersion": "mas/v1", "kind": "Agent", "metadata": {"name": agent},
            "spec": {"models": [{"model": "m-1"}],
                     "tools": [{"name": t} for t in agents[agent]]}}, ensure_ascii=False),
            encoding="utf-8")
    return folder


def _hostile(root: Path) -> tuple[list[str], Path, Path]:
    """The inputs (relative to ``root``), manifests publishing some of their names (m1), and
    manifests publishing others (m2)."""
    inputs = root / "in"
    inputs.mkdir()
    _maslab_run(inputs, "run-a", "lead",
                {**{w: ["search", "pay"] for w in WEIRD}, "ghost": ["search"]},
                lead_tools=("lead", WEIRD[0], "delegate_to_", "delegate_to_" + SPELLED))
    _maslab_run(inputs, "run-b", "lead",
                {"other": ["search", "fetch"], "finder": ["search"],
                 KEYS.keyed("agent", "finder"): ["x"]})
    _maslab_run(inputs, "run-c", "finder", {"lead": ["search"], "other": ["pay"]})
    # Every use declared, the delegation to a published agent with a hostile name included.
    _maslab_run(inputs, "run-d", "lead", {WEIRD[1]: ["search"]})
    m1 = _manifests(root / "m1", {"lead": ["search"], **{w: ["search"] for w in WEIRD},
                                  SPELLED: ["search"], "finder": ["fetch"]},
                    {"lead": [*WEIRD, "finder"]})
    m2 = _manifests(root / "m2", {"lead": ["search"], "other": ["search", "fetch"],
                                  "ghost": ["search"], "finder": []},
                    {"lead": ["other", "ghost", "finder"]})
    return ["in/run-a", "in/run-b", "in/run-c", "in/run-d"], m1, m2


def _stored_records(path: Path) -> dict[str, tuple[str, str]]:
    """Each run graph's record (its parts joined, in order) and recordSha256."""
    opened = pyoxigraph.Store(str(path))
    whole: dict[str, str] = {}
    parts: dict[str, dict[int, str]] = {}
    digests: dict[str, str] = {}
    for quad in opened:
        predicate, graph = quad.predicate.value, str(quad.graph_name)
        if not graph.startswith("<urn:ioa-trace:run:"):
            continue
        if predicate == IOAT + "runRecord":
            whole[graph] = quad.object.value
        elif predicate == IOAT + "recordPart":
            parts.setdefault(graph, {})[int(quad.subject.value.rpartition(":")[2])] = (
                quad.object.value)
        elif predicate == IOAT + "recordSha256":
            digests[graph] = quad.object.value
    del opened
    gc.collect()
    for graph, texts in parts.items():
        whole[graph] = "".join(texts[i] for i in range(len(texts)))
    return {graph: (text, digests[graph]) for graph, text in whole.items()}


def _consumed(root: Path, inputs: list[str], monkeypatch: pytest.MonkeyPatch
              ) -> list[Source | tuple[Source, Fold]]:
    """``inputs`` read as the feed reads them (given relative to ``root``, as to the feed)."""
    monkeypatch.chdir(root)
    consumed: list[Source | tuple[Source, Fold]] = []
    for given in inputs:
        source = resolve(given)
        fold = Fold()
        consume(source, fold)
        consumed.append((source, fold))
    return consumed


def _two_copy_records(root: Path, inputs: list[str], monkeypatch: pytest.MonkeyPatch
                      ) -> dict[str, tuple[dict[str, Any], str]]:
    """The records of the feed before the one-pass path: the runs built as the feed builds
    them, keyed whole by private_runs, written by record_pieces from their own calls."""
    (runs,) = trace_cli._runs(_consumed(root, inputs, monkeypatch),
                              [(KEYS, lambda s, d: s._replace(given=d.path(s.given)))])
    out = {}
    for run in store.private_runs(runs, KEYS):
        assert run.calls  # the keyed run holds its calls, as the two-copy feed's did
        iri = f"<{store.Pseudonymous().run_iri(run.ident)}>"
        text = "".join(store.record_pieces(MODE, run))
        out[iri] = (json.loads(text), store.pieces_digest(store.record_pieces(
            MODE, run, identity=True)))
    return out


def _judged_in_one_pass_keeps_some(root: Path, inputs: list[str],
                                   monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the scenario reaches the one-pass path's fallback (a call turning back would
    not give again, kept as it was): the published names of m1, as the feed reads them."""
    (runs,) = trace_cli._runs(_consumed(root, inputs, monkeypatch), [(KEYS, None)])
    _, _, calls_of = store._judged_privately(runs, KEYS, Private(KEY, PUBLISHED))
    return any(c.kept for c in calls_of)


@pytest.mark.parametrize("parts", [None, "600"], ids=["whole", "in-parts"])
def test_a_private_feeds_records_are_the_keyed_runs_whatever_the_names(
        tmp_path: Path, parts: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's record of each run, whole or in parts, is the one the keyed run makes
    (private_runs, record_pieces: the two-copy feed), call for call, and its recordSha256 the
    digest of that record; names that spell references, quotes, newlines, delegations to
    nobody declared change nothing."""
    inputs, m1, _ = _hostile(tmp_path)
    assert _judged_in_one_pass_keeps_some(tmp_path, inputs, monkeypatch)
    folder = keyed(tmp_path / "s")
    proc = feed(inputs, folder, tmp_path, "--manifests", m1, "--trajectory",
                env={PART_CHARS_ENV: parts} if parts else None)
    assert proc.returncode == 1, proc.stderr.decode()
    stored = _stored_records(folder)
    expected = _two_copy_records(tmp_path, inputs, monkeypatch)
    assert sorted(stored) == sorted(expected) and len(stored) == 4
    if parts:
        opened = pyoxigraph.Store(str(folder))
        assert len(list(opened.quads_for_pattern(
            None, pyoxigraph.NamedNode(IOAT + "runRecordParts"), None, None))) == 4
        del opened
        gc.collect()
    for iri, (text, digest) in stored.items():
        record, want = expected[iri]
        assert json.loads(text) == record
        assert digest == want == store.record_digest(json.loads(text))
    # The verdicts stored are the report's (judged on the runs as the traces name them), each
    # agent by its name if m1 publishes it, else by its reference; but for the agent whose
    # reference m1 publishes as a name, judged in the store as that name's (SPELLED).
    report = {(row["run"], row["agent"]): row["verdict"] for row in map(
        json.loads, proc.stdout.decode().splitlines()) if "agent" in row}
    assert len(report) == 15  # run-a: 6 agents, run-b: 4, run-c: 3, run-d: 2
    assert report["run-d", "lead"] == report["run-d", WEIRD[1]] == "compatible"
    shown = {(KEYS.run_iri(run), name if name in PUBLISHED else KEYS.keyed("agent", name)):
             verdict for (run, name), verdict in report.items() if name != "other"}
    results = _stored_results(folder)
    assert {k: v for k, v in results.items() if k[1] != SPELLED} == shown
    assert {k[0] for k in results if k[1] == SPELLED} == {KEYS.run_iri("run-b"),
                                                          KEYS.run_iri("run-c")}


def _stored_results(folder: Path) -> dict[tuple[str, str], str]:
    """(run IRI, agent as the verdict names it): its result, of the store's verdicts (one
    a run here)."""
    opened = pyoxigraph.Store(str(folder))
    out = {}
    for quad in opened.quads_for_pattern(None, pyoxigraph.NamedNode(IOAT + "auditedRun"),
                                         None, pyoxigraph.NamedNode(store.VERDICTS)):
        for agent in _objects(opened, quad.subject, "agentVerdict"):
            key = (_value(quad.object), _value(_objects(opened, agent, "agentId")[0]))
            assert key not in out
            out[key] = _value(_objects(opened, agent, "result")[0])
    del opened
    gc.collect()
    return out


def _objects(opened: pyoxigraph.Store, subject: Any, name: str) -> list[Any]:
    return [q.object for q in opened.quads_for_pattern(
        subject, pyoxigraph.NamedNode(IOAT + name), None, pyoxigraph.NamedNode(store.VERDICTS))]


def _value(term: Any) -> str:
    return str(term.value)


def _undeclared_uses(folder: Path, cwd: Path) -> list[dict[str, Any]]:
    """The undeclared uses of the store's current verdicts (the shipped query), sorted."""
    uses = query(folder, cwd, "undeclared_uses")
    return sorted(uses, key=lambda row: json.dumps(row, sort_keys=True))


def test_a_reaudit_of_a_one_pass_store_judges_as_a_feed_under_the_new_declarations(
        tmp_path: Path) -> None:
    """A store written by the one-pass feed against m1, reaudited against m2 (other names
    published, one that spelled a reference no longer), holds the same current undeclared
    uses as a store fed the same runs against m2; the reaudit reads every record back (its
    digest checked: a record not as its digest says is refused, exit 2)."""
    inputs, m1, m2 = _hostile(tmp_path)
    first, second = keyed(tmp_path / "first"), keyed(tmp_path / "second")
    assert feed(inputs, first, tmp_path, "--manifests", m1).returncode == 1
    proc = ioa(["trace", "reaudit", first, "--manifests", m2, "--format", "json", "--at",
                LATER], tmp_path)
    assert proc.returncode == 1, proc.stderr.decode()
    assert feed(inputs, second, tmp_path, "--manifests", m2).returncode == 1
    assert _undeclared_uses(first, tmp_path) == _undeclared_uses(second, tmp_path)


# --- what an OTLP span says of its agent, beside the agent's span -----------------------------

HIDDEN_NAME = "Carol Personal Assistant"  # no declaration publishes it
HIDDEN_ID = "asst-carol-7f3e9b21"  # a framework's instance id of an agent


def _spans_naming_agents_beside(root: Path) -> Path:
    """One trace whose model and tool spans carry their agent's gen_ai.agent.name (and id)
    with no agent span above them (the framework layout docs/trace.md reads last), and
    another whose agent span carries a gen_ai.agent.id: none of these is declared."""
    loose = [span(1, None, {"framework.step": "step"}),
             span(2, 1, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                         "gen_ai.agent.name": HIDDEN_NAME}, kind=3),
             span(3, 1, {"gen_ai.operation.name": "execute_tool",
                         "gen_ai.tool.name": "get_weather", "gen_ai.agent.name": HIDDEN_NAME,
                         "gen_ai.agent.id": HIDDEN_ID})]
    agent = [span(1, None, {"gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": "helper", "gen_ai.agent.id": HIDDEN_ID},
                  trace="6" * 32),
             span(2, 1, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"},
                  kind=3, trace="6" * 32)]
    path = root / "spans.jsonl"
    path.write_text(json.dumps(request(*loose)) + "\n" + json.dumps(request(*agent)) + "\n")
    return path


def _terms(folder: Path) -> Iterator[str]:
    opened = pyoxigraph.Store(str(folder))
    try:
        for quad in opened:
            for term in (quad.graph_name, quad.subject, quad.predicate, quad.object):
                yield str(getattr(term, "value", term))
    finally:
        del opened
        gc.collect()


@pytest.mark.parametrize("secret", [HIDDEN_NAME, HIDDEN_ID], ids=["agent-name", "agent-id"])
def test_a_private_store_keys_the_agent_a_span_names_beside_its_agent_span(
        tmp_path: Path, secret: str) -> None:
    """docs/trace.md, "Privacy in the store": agent names no declaration publishes are held
    as references (``agent-…``: "an agent only the trace names may be named after a person
    or an instance"). A model or tool span's own gen_ai.agent.name (Call.own_agent) and a
    span's gen_ai.agent.id (Call.agent_id, a framework's instance id) are agent identities
    the trace alone names; no term of the store (graph IRIs, verdicts, the run's record)
    may hold them as they are."""
    path = _spans_naming_agents_beside(tmp_path)
    folder = keyed(tmp_path / "s")
    proc = feed([path], folder, tmp_path)
    assert proc.returncode in (1, 3), proc.stderr.decode()
    if secret == HIDDEN_NAME:  # the calls are its: the report names it, as the trace does
        assert secret in proc.stdout.decode()
    leaked = sorted({t for t in _terms(folder) if secret in t}, key=len)
    assert leaked == [], leaked[:3]


def _spans_of_declared_agents(root: Path) -> Path:
    """The layouts of :func:`_spans_naming_agents_beside`, their agents declared: the model
    and tool spans name "helper" beside no agent span, and the agent span of the other trace
    names an agent no declaration publishes, by an id that mas.yaml gives "assistant"."""
    loose = [span(1, None, {"framework.step": "step"}),
             span(2, 1, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                         "gen_ai.agent.name": "helper"}, kind=3),
             span(3, 1, {"gen_ai.operation.name": "execute_tool",
                         "gen_ai.tool.name": "get_weather", "gen_ai.agent.name": "helper"})]
    agent = [span(1, None, {"gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": HIDDEN_NAME, "gen_ai.agent.id": HIDDEN_ID},
                  trace="6" * 32),
             span(2, 1, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"},
                  kind=3, trace="6" * 32),
             span(3, 1, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
                  trace="6" * 32)]
    path = root / "declared.jsonl"
    path.write_text(json.dumps(request(*loose)) + "\n" + json.dumps(request(*agent)) + "\n")
    return path


def _declaring(root: Path) -> Path:
    """Manifests publishing "helper", and "assistant" with the agent id HIDDEN_ID."""
    return _manifests(root, {"helper": ["search"], "assistant": ["search"]}, {},
                      ids={"assistant": HIDDEN_ID})


def test_a_private_store_judges_the_agents_spans_name_beside_and_by_id_as_the_report_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the agent a span names beside its agent span, and the agent id, keyed in the
    store, the store still judges as the report: the calls of "helper" (published) are its,
    by name, in the stored verdict, and those of the agent span whose id mas.yaml gives
    "assistant" are the assistant's; the record's calls are made back from the judged ones
    (none kept as it was), and neither the undeclared name nor the id is stored as it is."""
    path = _spans_of_declared_agents(tmp_path)
    declaring = _declaring(tmp_path / "m")
    folder = keyed(tmp_path / "s")
    proc = feed([path], folder, tmp_path, "--manifests", declaring)
    assert proc.returncode == 1, proc.stderr.decode()
    report = {(row["run"], row["agent"]): row["verdict"] for row in map(
        json.loads, proc.stdout.decode().splitlines()) if "agent" in row}
    assert {agent for _, agent in report} == {"helper", "assistant"}
    assert _stored_results(folder) == {(KEYS.run_iri(run), agent): verdict
                                       for (run, agent), verdict in report.items()}
    assert {(row["agentId"], row["aspect"], row["name"])
            for row in _undeclared_uses(folder, tmp_path)} >= {
        ("helper", "tools", "get_weather"), ("assistant", "tools", "lookup")}
    assert [t for t in _terms(folder) if HIDDEN_NAME in t or HIDDEN_ID in t] == []
    # Every record call is the judged call turned back (none fell to the fallback).
    consumed = _consumed(tmp_path, [path.name], monkeypatch)
    runs = otlp_runs([item for item in consumed if not isinstance(item, Source)], KEYS)
    assert len(runs) == 2
    _, _, calls_of = store._judged_privately(
        runs, KEYS, Private(KEY, frozenset({"helper", "assistant"})))
    assert calls_of and not any(c.kept for c in calls_of)


def test_a_reaudit_judges_the_agents_spans_name_beside_and_by_id_as_a_feed(
        tmp_path: Path) -> None:
    """A store fed against manifests that publish neither agent, reaudited against ones that
    publish "helper" and give "assistant" the id: its current undeclared uses are a store's
    fed against the latter (the stored references of the span's own agent name and of its
    agent id are matched to the declarations published since)."""
    path = _spans_of_declared_agents(tmp_path)
    nobody = _manifests(tmp_path / "m0", {"other": ["search"]}, {})
    declaring = _declaring(tmp_path / "m")
    first, second = keyed(tmp_path / "first"), keyed(tmp_path / "second")
    assert feed([path], first, tmp_path, "--manifests", nobody).returncode == 1
    before = _undeclared_uses(first, tmp_path)
    assert not {"helper", "assistant"} & {row["agentId"] for row in before}
    proc = ioa(["trace", "reaudit", first, "--manifests", declaring, "--format", "json",
                "--at", LATER], tmp_path)
    assert proc.returncode == 1, proc.stderr.decode()
    assert feed([path], second, tmp_path, "--manifests", declaring).returncode == 1
    after = _undeclared_uses(first, tmp_path)
    assert after == _undeclared_uses(second, tmp_path)
    assert {"helper", "assistant"} <= {row["agentId"] for row in after}
    for folder in (first, second):
        assert [t for t in _terms(folder) if HIDDEN_NAME in t or HIDDEN_ID in t] == []
