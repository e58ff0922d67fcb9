"""Who did what in OpenTelemetry traces as real frameworks lay them out (issue 36, part A).

Each trace here is made by the real OpenTelemetry SDK (a ``TracerProvider`` with explicit
span times, exported by the SDK's own OTLP encoder and written with protobuf's JSON mapping,
one request a line) and audited by the package: agents are who people declare (their
``gen_ai.agent.name``; an id only where a manifest gives it), a call belongs to the agent span
above it, else to one beside it that encloses it in time, else to its own agent attribute;
a model recorded as a placeholder is no model; a trace in which no agent acts is said so and
judged as nothing.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is not installed")

import yaml
from google.protobuf import json_format
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, set_span_in_context

from ioa_semantic.trace.audit import RunAudit, audit
from ioa_semantic.trace.declarations import Declarations, read_manifests
from ioa_semantic.trace.events import Fold, resolve, runs
from ioa_semantic.trace.privacy import Disclosure
from ioa_semantic.trace.state import consume

from support import IOA_CHECK

EPOCH_NS = 1_796_200_200 * 10**9
PLANNER, WEATHER = "travel_planner", "weather_agent"


@dataclass
class Node:
    """One span: its name, attributes and interval (milliseconds), and the spans under it."""

    name: str
    attributes: dict[str, Any]
    start: int
    end: int
    children: list[Node] = field(default_factory=list)


def agent(name: str, start: int, end: int, *children: Node, ident: str | None = None) -> Node:
    # Real frameworks give each instance a fresh UUID.
    return Node(f"invoke_agent {name}", {"gen_ai.operation.name": "invoke_agent",
                                         "gen_ai.agent.name": name,
                                         "gen_ai.agent.id": ident or str(uuid.uuid4())},
                start, end, list(children))


def chat(model: str | None, start: int, end: int, **more: Any) -> Node:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", **more}
    if model is not None:
        attributes["gen_ai.request.model"] = model
    return Node(f"chat {model}", attributes, start, end)


def tool(name: str, start: int, end: int, *children: Node, **more: Any) -> Node:
    return Node(f"execute_tool {name}", {"gen_ai.operation.name": "execute_tool",
                                         "gen_ai.tool.name": name, **more},
                start, end, list(children))


def framework(name: str, start: int, end: int, *children: Node) -> Node:
    """A framework's own span (a graph, a step, a build): no GenAI attribute at all."""
    return Node(name, {"framework.step": name}, start, end, list(children))


def _emit(tracer: Tracer, node: Node, parent: Span | None) -> None:
    context = set_span_in_context(parent) if parent is not None else Context()
    kind = SpanKind.CLIENT if node.name.startswith("chat") else SpanKind.INTERNAL
    span = tracer.start_span(node.name, context, kind, node.attributes,
                             start_time=EPOCH_NS + node.start * 10**6)
    for child in node.children:
        _emit(tracer, child, span)
    span.set_status(Status(StatusCode.OK))
    span.end(end_time=EPOCH_NS + node.end * 10**6)


def otlp(*roots: Node) -> str:
    """Each root a trace of its own, traced by the SDK; one OTLP request a line."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_ON, resource=Resource({"service.name": "trips"}),
                              shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("trips.agents", "1.0.0")
    try:
        for root in roots:
            _emit(tracer, root, None)
    finally:
        provider.shutdown()
    finished = exporter.get_finished_spans()
    line: str = json_format.MessageToJson(encode_spans(finished), indent=None)
    return line + "\n"


def manifests(folder: Path, tools: Mapping[str, Sequence[str]], models: Mapping[str, str],
              delegates: Mapping[str, Sequence[str]], entry: str = PLANNER,
              ids: dict[str, str] | None = None) -> Path:
    """mas-lab manifests declaring the agents, by name, their models, tools and delegations."""
    root = folder / "manifests"
    (root / "agents").mkdir(parents=True)
    (root / "tools").mkdir()
    entries = [{"id": name, "ref": f"agents/{name}.yaml",
                **({"agent_id": ids[name]} if ids and name in ids else {})} for name in tools]
    mas = {"apiVersion": "mas/v1", "kind": "MAS", "metadata": {"name": "trips"},
           "spec": {"agency": {"agents": entries},
                    "workflow": {"type": "dynamic", "entry": entry, "nodes": [
                        {"id": name, "delegates_to": list(delegates.get(name, ()))}
                        for name in tools]}}}
    (root / "mas.yaml").write_text(yaml.safe_dump(mas))
    for name, listed in tools.items():
        document = {"apiVersion": "mas/v1", "kind": "Agent", "metadata": {"name": name},
                    "spec": {"models": [{"model": models[name]}],
                             "tools": [{"ref": f"../tools/{t}.tool.yaml"} for t in listed]}}
        (root / "agents" / f"{name}.yaml").write_text(yaml.safe_dump(document))
        for each in listed:
            (root / "tools" / f"{each}.tool.yaml").write_text(yaml.safe_dump(
                {"apiVersion": "mas/v1", "kind": "Tool", "metadata": {"name": each}}))
    return root


def audited(path: Path, declared: Path | None) -> list[RunAudit]:
    disclose = Disclosure()
    source = resolve(str(path))
    fold = Fold()
    consume(source, fold)
    held = read_manifests(str(declared), disclose) if declared is not None else None
    return [audit(run, Declarations(held, None, None), disclose)
            for run in runs(source, fold, disclose)]


def verdicts(run: RunAudit) -> dict[str, str]:
    return {a.agent: str(a.verdict) for a in run.agents}


def codes(run: RunAudit) -> set[str]:
    return {r.code for r in run.reasons} | {r.code for a in run.agents for r in a.reasons}


def uses(run: RunAudit) -> dict[str, set[tuple[str, str | None, int]]]:
    """Each agent's uses: aspect, what was used and how many calls, whatever the span ids."""
    return {a.agent: {(u.aspect, u.name, len(u.calls)) for u in a.uses} for a in run.agents}


# --- the run, in three layouts ----------------------------------------------------------------


def parent_layout() -> Node:
    """Every call under its agent's invoke_agent span (the layout the SDK programs write)."""
    return Node("invoke_workflow trips", {"gen_ai.operation.name": "invoke_workflow",
                                          "gen_ai.workflow.name": "trips"}, 0, 100, [
        agent(PLANNER, 1, 99,
              chat("gpt-4o", 2, 8),
              tool("delegate_to_weather_agent", 10, 80,
                   agent(WEATHER, 12, 78,
                         chat("gpt-4o-mini", 15, 20),
                         tool("get_weather", 21, 30),
                         chat("gpt-4o-mini", 31, 40))),
              chat("gpt-4o", 85, 95))])


def sibling_layout() -> Node:
    """The framework writes invoke_agent beside its agent's chat and execute_tool spans, all
    children of its own step span; the delegated agent's span beside its calls likewise."""
    return Node("invoke_workflow trips", {"gen_ai.operation.name": "invoke_workflow",
                                          "gen_ai.workflow.name": "trips"}, 0, 100, [
        framework("graph.run", 1, 99,
                  agent(PLANNER, 1, 99),
                  chat("gpt-4o", 2, 8),
                  tool("delegate_to_weather_agent", 10, 80,
                       agent(WEATHER, 12, 78),
                       chat("gpt-4o-mini", 15, 20),
                       tool("get_weather", 21, 30),
                       chat("gpt-4o-mini", 31, 40)),
                  chat("gpt-4o", 85, 95))])


def nested_layout() -> Node:
    """The framework nests its own graph's invoke_agent span inside the agent's, same name."""
    return Node("invoke_workflow trips", {"gen_ai.operation.name": "invoke_workflow",
                                          "gen_ai.workflow.name": "trips"}, 0, 100, [
        agent(PLANNER, 1, 99, agent(
            PLANNER, 2, 98,
            chat("gpt-4o", 3, 8),
            tool("delegate_to_weather_agent", 10, 80,
                 agent(WEATHER, 12, 78, agent(
                     WEATHER, 13, 77,
                     chat("gpt-4o-mini", 15, 20),
                     tool("get_weather", 21, 30),
                     chat("gpt-4o-mini", 31, 40)))),
            chat("gpt-4o", 85, 95)))])


LAYOUTS = {"parent": parent_layout, "sibling": sibling_layout, "nested": nested_layout}
MODELS = {PLANNER: "gpt-4o", WEATHER: "gpt-4o-mini"}
DELEGATES = {PLANNER: [WEATHER]}


@pytest.mark.parametrize("declares_get_weather", [True, False])
def test_the_same_run_in_every_layout_gives_the_same_verdicts_and_uses(
        tmp_path: Path, declares_get_weather: bool) -> None:
    tools: dict[str, list[str]] = {
        PLANNER: [], WEATHER: ["get_weather"] if declares_get_weather else []}
    declared = manifests(tmp_path, tools, MODELS, DELEGATES)
    results = {}
    for layout, build in LAYOUTS.items():
        path = tmp_path / f"{layout}.jsonl"
        path.write_text(otlp(build()))
        (run,) = audited(path, declared)
        results[layout] = run
    expected = {PLANNER: "compatible",
                WEATHER: "compatible" if declares_get_weather else "incompatible"}
    for layout, run in results.items():
        assert verdicts(run) == expected, (layout, codes(run))
        assert "capability.caller-unknown" not in codes(run), layout
    assert uses(results["sibling"]) == uses(results["parent"]) == uses(results["nested"])
    # The nested graph span is the agent itself: never a delegation to itself.
    assert (("delegations", PLANNER, 1) not in uses(results["nested"])[PLANNER])
    assert uses(results["parent"])[PLANNER] >= {("delegations", WEATHER, 1),
                                                 ("models", "gpt-4o", 2)}
    if not declares_get_weather:
        for run in results.values():
            (weather,) = [a for a in run.agents if a.agent == WEATHER]
            (undeclared,) = [r for r in weather.reasons
                             if r.code == "capability.undeclared-tool"]
            assert "get_weather" in undeclared.message


def test_agents_are_matched_by_name_and_instances_are_one_agent(tmp_path: Path) -> None:
    """Each instance of an agent has a fresh UUID: the manifest names the agent, and the two
    instances of weather_agent are one agent called twice."""
    root = parent_layout()
    delegation = root.children[0].children[1]
    delegation.children.append(agent(WEATHER, 50, 79, chat("gpt-4o-mini", 51, 60)))
    path = tmp_path / "run.jsonl"
    path.write_text(otlp(root))
    declared = manifests(tmp_path, {PLANNER: [], WEATHER: ["get_weather"]}, MODELS, DELEGATES)
    (run,) = audited(path, declared)
    assert verdicts(run) == {PLANNER: "compatible", WEATHER: "compatible"}
    assert ("provided", PLANNER, 2) in uses(run)[WEATHER]
    assert ("models", "gpt-4o-mini", 3) in uses(run)[WEATHER]
    assert "capability.undeclared-agent" not in codes(run)


def _weather_bot(tmp_path: Path, **more: Any) -> tuple[Path, Path]:
    """The parent layout with weather_agent shown as "Weather Bot" under the stable id
    asst_w42 (``more`` on its span), and manifests that give that id explicitly."""
    root = parent_layout()
    weather = root.children[0].children[1].children[0]
    weather.attributes.update({"gen_ai.agent.name": "Weather Bot",
                               "gen_ai.agent.id": "asst_w42", **more})
    path = tmp_path / "run.jsonl"
    path.write_text(otlp(root))
    return path, manifests(tmp_path, {PLANNER: [], WEATHER: ["get_weather"]}, MODELS,
                           DELEGATES, ids={WEATHER: "asst_w42"})


def test_an_id_a_manifest_gives_explicitly_names_the_agent(tmp_path: Path) -> None:
    """A framework with stable ids and display names: the mas.yaml entry's agent_id matches
    the span's gen_ai.agent.id, whatever its name says."""
    path, declared = _weather_bot(tmp_path)
    (run,) = audited(path, declared)
    assert verdicts(run) == {PLANNER: "compatible", WEATHER: "compatible"}


def test_a_call_beside_agents_of_two_agents_is_ambiguous_naming_their_spans(
        tmp_path: Path) -> None:
    """Two agents run in parallel beside one chat span that both enclose in time: whose call
    it is is never guessed; the calls only one encloses are still that agent's."""
    root = framework("parallel", 0, 100,
                     agent(PLANNER, 1, 90, ident="a1"),
                     agent(WEATHER, 2, 95, ident="b2"),
                     chat("gpt-4o", 10, 20),
                     chat("gpt-4o-mini", 91, 94))
    path = tmp_path / "run.jsonl"
    path.write_text(otlp(root))
    (run,) = audited(path, manifests(tmp_path, {PLANNER: [], WEATHER: []}, MODELS, {}))
    (reason,) = [r for r in run.reasons if r.code == "capability.caller-ambiguous"]
    assert str(reason.effect) == "indeterminate"
    assert PLANNER in reason.message and WEATHER in reason.message
    spans = {c.id for c in run.run.calls if c.cls == "agent"}
    assert all(span in reason.message for span in spans)
    assert ("models", "gpt-4o-mini", 1) in uses(run)[WEATHER]
    assert not any(u[0] == "models" for u in uses(run).get(PLANNER, set()))


def test_a_calls_own_agent_attribute_is_read_last(tmp_path: Path) -> None:
    """No agent span in the trace: the framework's gen_ai.agent.name on the model and tool
    spans names their agent."""
    root = framework("step", 0, 50,
                     chat("gpt-4o-mini", 1, 10, **{"gen_ai.agent.name": WEATHER}),
                     tool("get_weather", 11, 20, **{"gen_ai.agent.name": WEATHER}))
    path = tmp_path / "run.jsonl"
    path.write_text(otlp(root))
    (run,) = audited(path, manifests(tmp_path, {WEATHER: ["get_weather"]}, MODELS, {},
                                     entry=WEATHER))
    assert verdicts(run) == {WEATHER: "compatible"}
    assert uses(run)[WEATHER] == {("models", "gpt-4o-mini", 1), ("tools", "get_weather", 1)}


@pytest.mark.parametrize("placeholder", ["unknown", "Unknown", "none", "", " "])
def test_a_placeholder_model_is_no_model_name(tmp_path: Path, placeholder: str) -> None:
    root = agent(WEATHER, 0, 50, chat(placeholder, 1, 10),
                 chat(placeholder, 11, 20, **{"gen_ai.response.model": "gpt-4o-mini"}))
    path = tmp_path / "run.jsonl"
    path.write_text(otlp(root))
    (run,) = audited(path, manifests(tmp_path, {WEATHER: []}, MODELS, {}, entry=WEATHER))
    assert "capability.model-unknown" in codes(run)
    assert "capability.undeclared-model" not in codes(run)
    # The model that answered is the call's model when the one asked for is a placeholder.
    assert ("models", "gpt-4o-mini", 1) in uses(run)[WEATHER]
    assert verdicts(run) == {WEATHER: "indeterminate"}


def test_a_trace_without_agents_is_said_so_and_leaves_the_exit_status_alone(
        tmp_path: Path) -> None:
    """A framework's build steps, traced apart from the run: reported, never indeterminate."""
    build = framework("graph.compile", 0, 5, framework("graph.validate", 1, 2))
    path = tmp_path / "runs.jsonl"
    path.write_text(otlp(parent_layout(), build))
    declared = manifests(tmp_path, {PLANNER: [], WEATHER: ["get_weather"]}, MODELS, DELEGATES)
    agentless = [r for r in audited(path, declared) if not r.agents]
    (setup,) = agentless
    assert "trace.no-agents" in codes(setup)
    assert str(setup.verdict) == "compatible" and "trace.incomplete" not in codes(setup)
    proc = subprocess.run([IOA_CHECK, "trace", str(path), "--manifests", str(declared),
                           "--no-shapes"], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stdout.decode()
    # Model calls no agent owns are no setup step: whose they are is unknown.
    orphan = tmp_path / "orphan.jsonl"
    orphan.write_text(otlp(framework("step", 0, 50, chat("gpt-4o", 1, 10))))
    (run,) = audited(orphan, None)
    assert str(run.verdict) == "indeterminate"
    assert "capability.caller-unknown" in codes(run) and "trace.no-agents" not in codes(run)


# --- the knowledge graph and the trajectory say what the audit judged ---------------------------

MAS_NS = "https://outshift-open.github.io/oxp-ontology/mas#"
IOAT_NS = "https://example.org/ioa/trace#"


def _graph(path: Path, declared: Path) -> Any:
    """The run's graph, with its trajectory, in an Oxigraph store."""
    import pyoxigraph

    from ioa_semantic.trace.graph import quads

    disclose = Disclosure()
    source = resolve(str(path))
    fold = Fold()
    consume(source, fold)
    declarations = Declarations(read_manifests(str(declared), disclose), None, None)
    (run,) = runs(source, fold, disclose)
    store = pyoxigraph.Store()
    store.extend(quads(run, declarations, disclose, "urn:run", trajectory=True))
    return store


def _objects(store: Any, subject: Any, prop: str) -> list[Any]:
    import pyoxigraph

    return [q.object for q in store.quads_for_pattern(subject, pyoxigraph.NamedNode(prop), None)]


def _labels(store: Any) -> dict[str, str]:
    """Each call named by what it did and when (span ids differ between layouts)."""
    import pyoxigraph

    label = {}
    for quad in store.quads_for_pattern(None, pyoxigraph.NamedNode(MAS_NS + "startTime"), None):
        subject = quad.subject
        executes = _objects(store, subject, MAS_NS + "executes")
        if not executes:  # the session, timed by its calls
            continue
        (name,) = [o.value for o in _objects(store, executes[0], MAS_NS + "id")] or ["?"]
        label[subject.value] = f"{name}@{quad.object.value}"
    return label


def _agents_of_calls(store: Any) -> dict[str, str]:
    labels = _labels(store)
    found = {}
    for iri, label in labels.items():
        import pyoxigraph

        agents = _objects(store, pyoxigraph.NamedNode(iri), IOAT_NS + "agent")
        found[label] = ",".join(sorted(
            o.value for a in agents for o in _objects(store, a, MAS_NS + "id")))
    return found


def _flows(store: Any) -> set[tuple[str, str, str]]:
    """Data flow between calls: (the call whose State it is, its side, the call whose
    Transition takes it), the framework's own spans left out."""
    import pyoxigraph

    labels = _labels(store)
    states: dict[str, tuple[str, str]] = {}
    steps: dict[str, str] = {}
    for iri, label in labels.items():
        node = pyoxigraph.NamedNode(iri)
        for side, prop in (("input", "hasInitialState"), ("output", "hasFinalState")):
            for state in _objects(store, node, MAS_NS + prop):
                states[state.value] = (label, side)
        for step in _objects(store, node, MAS_NS + "correspondsToTransition"):
            steps[step.value] = label
    flows = set()
    for quad in store.quads_for_pattern(None, pyoxigraph.NamedNode(MAS_NS + "inputTo"), None):
        if quad.subject.value in states and quad.object.value in steps:
            label, side = states[quad.subject.value]
            flows.add((label, side, steps[quad.object.value]))
    return flows


def test_the_graph_links_each_call_to_its_agent_in_every_layout(tmp_path: Path) -> None:
    """The knowledge graph's ioat:agent is the audit's attribution: a chat or execute_tool
    span beside its invoke_agent is that agent's, as one beneath it; the named query lists
    the same tools per agent in every layout; the trajectory's flow between calls is the
    same, a call beside its agent span being part of that agent's execution."""
    from ioa_semantic import data as resources

    declared = manifests(tmp_path, {PLANNER: [], WEATHER: ["get_weather"]}, MODELS, DELEGATES)
    agents, rows, flows = {}, {}, {}
    for layout, build in LAYOUTS.items():
        path = tmp_path / f"{layout}.jsonl"
        path.write_text(otlp(build()))
        store = _graph(path, declared)
        agents[layout] = {k: v for k, v in _agents_of_calls(store).items()
                          if not k.startswith(("invoke_agent", "graph."))}
        rows[layout] = sorted((r["agentId"].value, r["toolName"].value, r["calls"].value)
                              for r in store.query(resources.query("trace_agent_tools"),
                                                      use_default_graph_as_union=True))
        flows[layout] = _flows(store)
    ms = EPOCH_NS // 10**9
    assert agents["parent"][f"get_weather@{ms}.021"] == WEATHER
    assert agents["parent"][f"gpt-4o@{ms}.002"] == PLANNER
    assert agents["parent"][f"delegate_to_weather_agent@{ms}.01"] == PLANNER
    assert agents["sibling"] == agents["parent"]
    assert rows["parent"] == [(PLANNER, "delegate_to_weather_agent", "1"),
                              (WEATHER, "get_weather", "1")]
    assert rows["sibling"] == rows["nested"] == rows["parent"]
    # Beside or beneath, weather_agent's input reaches its first model call, and its last
    # model call's output is the agent's own.
    first = (f"{WEATHER}@{ms}.012", "input", f"gpt-4o-mini@{ms}.015")
    last = (f"gpt-4o-mini@{ms}.031", "output", f"{WEATHER}@{ms}.012")
    assert {first, last} <= flows["parent"]
    assert flows["sibling"] == flows["parent"]


def test_the_graph_names_an_agent_by_the_id_a_manifest_gives(tmp_path: Path) -> None:
    """The graph names agents as the audit does: by the manifest's agent_id, not the span's
    display name."""
    path, declared = _weather_bot(tmp_path)
    store = _graph(path, declared)
    ms = EPOCH_NS // 10**9
    assert _agents_of_calls(store)[f"get_weather@{ms}.021"] == WEATHER
    assert f"{WEATHER}@{ms}.012" in _labels(store).values()
    assert not any(label.startswith("Weather Bot") for label in _labels(store).values())


def _defined(*tools: str) -> dict[str, Any]:
    import json

    return {"gen_ai.tool.definitions": json.dumps(
        [{"type": "function", "name": t} for t in tools])}


@pytest.mark.parametrize("lists_get_weather", [True, False])
def test_tool_definitions_on_a_chat_span_beside_its_agent_declare_for_that_agent(
        tmp_path: Path, lists_get_weather: bool) -> None:
    """Without manifests, the tools a model call's span lists are its agent's declaration,
    whether the span is beneath the agent's invoke_agent span or beside it."""
    listed = ("get_weather",) if lists_get_weather else ("get_forecast",)
    results = {}
    for layout, build in (("parent", parent_layout), ("sibling", sibling_layout)):
        root = build()
        delegation = (root.children[0].children[1] if layout == "parent"
                      else root.children[0].children[2])
        model_call = (delegation.children[0].children[0] if layout == "parent"
                      else delegation.children[1])
        assert model_call.name == "chat gpt-4o-mini"
        model_call.attributes.update(_defined(*listed))
        path = tmp_path / f"{layout}.jsonl"
        path.write_text(otlp(root))
        (results[layout],) = audited(path, None)
    for layout, run in results.items():
        assert run.run.definitions == {WEATHER: {t: run.run.definitions[WEATHER][t]
                                                 for t in listed}}, layout
        (weather,) = [a for a in run.agents if a.agent == WEATHER]
        (tools,) = [u for u in weather.uses if u.aspect == "tools"]
        assert str(tools.verdict) == ("compatible" if lists_get_weather else "incompatible")
        assert "trace.attribute-malformed" not in codes(run), layout
    assert uses(results["sibling"]) == uses(results["parent"])


def test_tool_definitions_follow_the_name_a_manifest_gives_by_id(tmp_path: Path) -> None:
    """An agent a manifest names by its gen_ai.agent.id: the tools its spans list are that
    agent's in the graph, not the display name's."""
    import pyoxigraph

    path, declared = _weather_bot(tmp_path, **_defined("get_weather"))
    store = _graph(path, declared)
    uses_tool = {(q.subject.value, q.object.value) for q in store.quads_for_pattern(
        None, pyoxigraph.NamedNode(MAS_NS + "usesTool"), None)}
    agents = {s for s, _ in uses_tool}
    assert any(s.endswith(f"agent:{WEATHER}") for s in agents), uses_tool
    assert not any("Weather" in s for s in agents), uses_tool


def _ladder(depth: int) -> Node:
    """A hostile trace: a chain of ``depth`` tool spans, each with an agent span beside it
    that encloses nothing of the chain (it starts after the chain ends)."""
    node: Node | None = None
    for level in reversed(range(depth)):
        children = [agent(WEATHER, 900_000 + level, 900_001 + level)]
        if node is not None:
            children.append(node)
        node = tool(f"step{level}", level, 100_000 - level, *children)
    assert node is not None
    return node


def test_searching_beside_agents_is_bounded_per_call_on_a_hostile_trace(tmp_path: Path) -> None:
    """Levels with agent spans beside them, none enclosing the call: the search for each call
    looks at most LEVELS of them, so the work grows linearly with the spans, and a call whose
    search stopped at the bound is nobody's with a reason that says so."""
    from ioa_semantic.trace.attribution import LEVELS, Attribution

    lookups, calls = [], []
    for depth in (100, 200, 400):
        path = tmp_path / f"ladder{depth}.jsonl"
        path.write_text(otlp(_ladder(depth)))
        source = resolve(str(path))
        fold = Fold()
        consume(source, fold)
        (run,) = runs(source, fold, Disclosure())
        attribution = Attribution(run)
        for call in run.calls:
            attribution.owner(call)
        lookups.append(attribution.lookups)
        calls.append(len(run.calls))
    for asked, count in zip(lookups, calls, strict=True):
        assert asked <= LEVELS * count
    # Each doubling of the spans at most doubles the work (a quadratic search quadruples it).
    assert lookups[2] - lookups[1] <= 2.2 * (lookups[1] - lookups[0])
    (audited_run,) = audited(tmp_path / "ladder100.jsonl", None)
    unknown = [r for r in audited_run.reasons if r.code == "capability.caller-unknown"]
    bounded = [r for r in unknown if f"nearest {LEVELS} levels" in r.message]
    # step k has an agent span beside it and beside each of its callers but step0: k levels,
    # so steps 65 to 99 are past the bound, and the rest are plainly nobody's.
    assert len(bounded) == 100 - LEVELS - 1, len(bounded)
    assert len(unknown) == 100
    assert str(audited_run.verdict) == "indeterminate"
