"""Runs as a knowledge graph in the oxp-ontology vocabulary, checked with its SHACL shapes.

The vocabulary and the shapes are read from the installed ``oxp-ontology`` package
(``oxp_ontology.get_ontology_path``), never copied. Each call becomes one ``mas:*Call`` node
(MASCall, AgentCall, LLMCall, ToolCall, ProcessingCall) with ``mas:executes`` and its
specific sub-property to the structural type it ran (Agent by agent id, LLM by model, Tool by
tool name, Processing by processing type, MAS by the MAS name), its times, duration, token
counts and finish reason; nesting is an
``ioat:parentCall`` link (and ``mas:spanId``/``mas:parentSpanId`` where the call is an OTel
span, whose ids they are), and each run is a ``mas:Session``. Declared types (from manifests,
or capabilities from registrations) carry ``mas:declared true``; types only discovered in the
trace carry ``false``. Free text never enters the graph: an input or output is an
``ioat:…Sha256`` digest and an ``ioat:…Chars`` count. On request the run's trajectory is
built too (:mod:`.trajectory`: States and Transitions, and how data flowed between calls),
whose States hold the text only when content was asked for.

The shapes are run as the package itself runs them (``oxp_ontology.verification``: shapes and
ontology files in one shapes graph, no inference). Results of rules that no run-built graph
can meet (:data:`QUIRKS`; with the trajectory, :data:`SESSION_END_QUIRK` in place of its
rules) are filtered and counted, never dropped silently; the rest become ``trace.shape``
findings, grouped by rule.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from .._codes import finding
from .._files import write_file
from .._findings import Finding, Severity
from . import nquads
from .attribution import Attribution, identified
from .calls import Ancestry, Call, Run
from .declarations import Declarations
from .privacy import IRI_BASE, Disclosure, literal_text
from .trajectory import SESSION_END_PATH, Sink, Trajectory

if TYPE_CHECKING:
    from rdflib import Graph

MAS = "https://outshift-open.github.io/oxp-ontology/mas#"
# Terms the oxp-ontology lacks: digests of withheld content, the parent link of a call, a
# session's scenario and run status.
# A provisional namespace, like the draft's own example.org vocabulary.
IOAT = "https://example.org/ioa/trace#"

_CLASSES = {"mas": "MASCall", "agent": "AgentCall", "llm": "LLMCall", "tool": "ToolCall",
            "processing": "ProcessingCall"}
_EXECUTES = {"mas": "executesMAS", "agent": "executesAgent", "llm": "executesLLM",
             "tool": "executesTool", "processing": "executesProcessing"}
_TYPE_KIND = {"mas": "mas", "llm": "llm", "tool": "tool", "processing": "processing"}

# Rules of the shapes that a graph built from run traces cannot meet, and why. Their results
# are counted under these names in every report.
QUIRKS: dict[str, tuple[frozenset[str], str]] = {
    "trajectory": (
        frozenset({"hasState", "hasInitialState", "hasFinalState", "correspondsToTransition"}),
        "every execution element must link to State/Transition trajectory nodes, which are "
        "built only with --trajectory (three more nodes and about thirty more triples a call, "
        "and the SHACL check's time with them)",
    ),
    "semantic-groups": (
        frozenset({"containsSemanticGroup"}),
        "a MAS must contain SemanticGroups, clusters of many sessions made by OXP's analysis; "
        "a graph of individual runs has none",
    ),
    "legacy-shortcuts": (
        frozenset({"hasToolCall", "hasLLMCall"}),
        "every AgentCall must carry the legacy shortcut edges that the ontology itself tells "
        "consumers not to emit in normalized output (a call without tools breaks it anyway)",
    ),
}

# With --trajectory the "trajectory" rules are met, and this one alone is filtered in their
# place: mas:inputTo (at least one) on the State that is a session's final State, and on no
# other State.
SESSION_END_QUIRK = (
    "session-end",
    "a session's final State must be mas:inputTo some Transition, and nothing in a run comes "
    "after the session's end",
)


def quirks(trajectory: bool = False) -> dict[str, str]:
    """The names of the quirks filtered from a graph's report, and why."""
    named = {name: why for name, (_, why) in QUIRKS.items()}
    if not trajectory:
        return named
    del named["trajectory"]
    return {SESSION_END_QUIRK[0]: SESSION_END_QUIRK[1], **named}


_ONTOLOGY_FILES = ("mas", "semantic", "metrics", "analysis", "insight")
_SHAPE_FILES = ("mas-shapes", "mas-shapes-custom")


class ShapeReport(NamedTuple):
    results: int  # distinct results, wrappers of nested shapes collapsed
    filtered: dict[str, int]  # quirk -> results filtered under it
    findings: tuple[Finding, ...]


# --- building ---------------------------------------------------------------------------------


class _Builder:
    def __init__(self, declarations: Declarations, disclose: Disclosure,
                 trajectory: bool = False) -> None:
        self.graph = self._new_graph()
        self.declarations = declarations
        self.disclose = disclose
        self.trajectory = trajectory
        self._ancestry = Ancestry({})
        self._attribution: Attribution | None = None  # the run's, while one is built
        # Every call names its type again: each type is written once, and whether a name is
        # declared is looked up once (it is a search of every declared agent).
        self._structural: dict[tuple[str, str, bool, str | None], str] = {}
        self._declared: dict[tuple[str, str], bool] = {}

    def _new_graph(self) -> Any:
        """The graph the builder writes to: an rdflib ``Graph`` (with its namespaces as
        :attr:`mas` and :attr:`ioat`)."""
        from rdflib import Graph, Namespace

        graph = Graph()
        graph.bind("mas", MAS)
        graph.bind("ioat", IOAT)
        self.mas = Namespace(MAS)
        self.ioat = Namespace(IOAT)
        return graph

    def _property(self, name: str) -> Any:
        """The ontology's property ``name`` (a structural node's)."""
        return self.mas[name]

    def _plain(self, value: str | bool) -> Any:
        """A structural node's literal (its name, whether it is declared), as rdflib types it."""
        from rdflib import Literal

        return Literal(value)

    def _literal(self, value: Any, datatype: str | None = None) -> Any:
        from rdflib import Literal
        from rdflib.namespace import XSD

        if datatype == "decimal":
            return Literal(Decimal(value), datatype=XSD.decimal)
        if datatype == "double":
            return Literal(float(value), datatype=XSD.double)
        if isinstance(value, bool):
            return Literal(value, datatype=XSD.boolean)
        if isinstance(value, int):
            return Literal(value, datatype=XSD.integer)
        return Literal(literal_text(str(value)))  # a plain literal: xsd:string in RDF 1.1

    def _node(self, iri: str) -> Any:
        from rdflib import URIRef

        return URIRef(iri)

    def _add(self, subject: str, prop: str, value: Any, datatype: str | None = None) -> None:
        namespace = self.ioat if prop.startswith("ioat:") else self.mas
        predicate = namespace[prop.removeprefix("ioat:")]
        self.graph.add((self._node(subject), predicate, self._literal(value, datatype)))

    def _link(self, subject: str, prop: str, target: str) -> None:
        namespace = self.ioat if prop.startswith("ioat:") else self.mas
        self.graph.add((self._node(subject), namespace[prop.removeprefix("ioat:")],
                        self._node(target)))

    def _type(self, subject: str, cls: str) -> None:
        from rdflib.namespace import RDF

        self.graph.add((self._node(subject), RDF.type, self.mas[cls]))

    def structural(self, kind: str, name: str, declared: bool,
                   description: str | None = None) -> str:
        """A structural type node; declared wins over discovered when both name it."""
        key = (kind, name, declared, description)
        known = self._structural.get(key)
        if known is not None:
            return known  # the same call again changes nothing

        if kind == "agent":
            iri, shown, cls = self.disclose.agent_iri(name), self.disclose.agent(name), "Agent"
        else:
            iri = self.disclose.type_iri(kind, name)
            shown = self.disclose.tool(name) if kind == "tool" else self.disclose.mas(
                name) if kind == "mas" else name
            cls = {"mas": "MAS", "llm": "LLM", "tool": "Tool", "processing": "Processing"}[kind]
        node = self._node(iri)
        self._hold(node)
        self._type(iri, cls)
        literal = self._plain
        self.graph.set((node, self._property("id"), literal(shown)))
        self.graph.set((node, self._property("name"), literal(shown)))
        flag = self._property("declared")
        if declared or (node, flag, literal(True)) not in self.graph:
            self.graph.set((node, flag, literal(declared)))
        # Descriptions can name agents, so they are left out when identities are withheld.
        if description and not self.disclose.is_opaque:
            self.graph.set((node, self._property("description"), literal(description)))
        self._structural[key] = iri
        return iri

    def declared_types(self) -> None:
        manifests = self.declarations.manifests
        if manifests is not None:
            mas_iri = self.structural("mas", manifests.mas, True, manifests.description) if (
                manifests.mas) else None
            for declaration in manifests.agents.values():
                # Listed in mas.yaml is declared, even when the agent's own manifest is missing.
                agent = self.structural("agent", declaration.agent, True, declaration.description)
                if mas_iri is not None:
                    self._link(agent, "belongsToMAS", mas_iri)
                for model in sorted(declaration.models or ()):
                    self._link(agent, "usesLLM", self.structural("llm", model, True))
                for tool in sorted(set(declaration.tools) | declaration.delegation_tools()):
                    self._link(agent, "usesTool", self.structural(
                        "tool", tool, True, declaration.tool_descriptions.get(tool)))
        bindings, registrations = self.declarations.bindings, self.declarations.registrations
        if bindings is not None and registrations is not None:
            for agent, iris in sorted(bindings.agents.items()):
                for iri in iris:
                    if iri in registrations.iris:
                        self._type(iri, "Capability")
                        self._add(iri, "id", iri)
                        self._add(iri, "name", iri)
                        self._add(iri, "declared", True)
                        self._link(self.disclose.agent_iri(agent), "usesCapability", iri)

    def _hold(self, node: Any) -> None:
        """``node`` is structural: its triples may be revised (``set``) until the end."""

    def run(self, run: Run) -> None:
        for _ in self.steps(run):
            pass

    def steps(self, run: Run) -> Iterator[None]:
        """:meth:`run`, a step at a time (a call each): the graph is taken as it grows."""
        run = identified(run, self.declarations)
        calls = run.by_key()
        self._ancestry = Ancestry(calls)
        self._attribution = Attribution(run, calls, self._ancestry)
        # The tools the trace's own spans list for an agent (gen_ai.tool.definitions) are
        # declared types, whether or not a manifest is given.
        for agent, tools in run.definitions.items():
            agent_iri = self.structural("agent", agent, self._is_declared("agent", agent))
            for tool in tools:
                self._declared[("tool", tool)] = True
                self._link(agent_iri, "usesTool", self.structural("tool", tool, True))
        session = self.disclose.run_iri(run.ident)
        session_id = self.disclose.run(run.session_id or run.ident)
        mas_iri = self.structural("mas", run.mas, False) if run.mas else None
        if run.calls:  # outcome records name no call, so they make no session either
            self._type(session, "Session")
            self._add(session, "id", self.disclose.run(run.ident))
            self._add(session, "name", f"run {self.disclose.run(run.ident)}")
            self._add(session, "sessionId", session_id)
            if mas_iri is not None:
                self._link(session, "executesSession", mas_iri)
                self._link(session, "executes", mas_iri)
            # The run's span, taken in one pass: a list of every call's instants would weigh
            # a long run's graph down by a hundred bytes a call.
            first = min((Decimal(c.start) for c in run.calls if c.start is not None), default=None)
            last = max((Decimal(c.end) for c in run.calls if c.end is not None), default=None)
            if first is not None and last is not None:
                self._add(session, "startTime", str(first), "decimal")
                self._add(session, "endTime", str(last), "decimal")
                self._add(session, "duration", (last - first) * 1000, "double")
            self.run_file(run, session, first is not None and last is not None)
        for call in run.calls:
            self.call(run, call, calls, session, session_id, mas_iri)
            yield
        if self.trajectory and run.calls:
            yield from Trajectory(Sink(self._add, self._link, self._type), self.disclose, run,
                                  session, session_id, self._attribution).steps()

    def run_file(self, run: Run, session: str, timed: bool) -> None:
        """What a mas-lab run.json says of the session: its scenario, its status, and its
        start and duration where no event gives them (the events time the calls; run.json
        times the run, start-up included)."""
        if run.status is not None:
            self._add(session, "success", run.status == "success")
            self._add(session, "ioat:status", run.status)
            # The run's status is its MAS call's too, when the run made one and it says
            # nothing of its own (several MAS calls, retries, may each have ended otherwise).
            roots = [c for c in run.calls if c.cls == "mas"]
            if len(roots) == 1 and roots[0].success is None:
                self._add(self._iri(run, roots[0]), "success", run.status == "success")
        if run.scenario is not None:
            self._add(session, "ioat:scenario", run.scenario)
        if not timed and run.created_at is not None:
            self._add(session, "startTime", run.created_at, "decimal")
        if not timed and run.duration_secs is not None:
            self._add(session, "duration", Decimal(run.duration_secs) * 1000, "double")

    def _iri(self, run: Run, call: Call) -> str:
        return self.disclose.call_iri(run.ident, call.ref)

    def call(self, run: Run, call: Call, calls: dict[str, Call], session: str, session_id: str,  # noqa: C901
             mas_iri: str | None) -> None:
        iri = self._iri(run, call)
        self._type(iri, _CLASSES[call.cls])
        name = self.disclose.call_name(call.id, call.key)  # ids may be shared; IRIs never
        self._add(iri, "id", name)
        # mas:spanId is the "ID of the corresponding span in OTel traces, where one exists"
        # (the ontology): a span's own id, never a mas-lab event's call id or a line's name
        # (~N); the nesting of every call is ioat:parentCall.
        spans = run.unit == "spans" and bool(call.id)
        if spans:
            self._add(iri, "spanId", name)
        self._add(iri, "sessionId", session_id)
        self._add(iri, "name", self._call_name(call))
        if call.parent_id and spans:
            self._add(iri, "parentSpanId", self.disclose.parent_name(call.parent_id, call.parent))
        parent = calls.get(call.parent) if call.parent else None
        if parent is not None:
            self._link(iri, "ioat:parentCall", self._iri(run, parent))
        if call.start is not None:
            self._add(iri, "startTime", call.start, "decimal")
        if call.end is not None:
            self._add(iri, "endTime", call.end, "decimal")
        if call.start is not None and call.end is not None:
            self._add(iri, "duration", (Decimal(call.end) - Decimal(call.start)) * 1000, "double")
        if call.success is not None:
            self._add(iri, "success", call.success)
        target = self._target(call, mas_iri)
        if target is not None:
            self._link(iri, "executes", target)
            self._link(iri, _EXECUTES[call.cls], target)
        if call.cls == "mas":
            self._link(session, "hasMASCall", iri)
        if call.cls == "agent":
            owner = self._enclosing(call, "mas")
            if owner is not None:
                self._link(iri, "belongsToMASCall", self._iri(run, owner))
                self._link(self._iri(run, owner), "hasAgentCall", iri)
            if mas_iri is not None and call.target:
                self._link(self.disclose.agent_iri(call.target), "belongsToMAS", mas_iri)
        if call.cls == "processing" and parent is not None and parent.cls in ("agent", "mas"):
            self._link(self._iri(run, parent), "hasProcessingCall", iri)
        # The agent the call acted for, as the audit attributes it (attribution.py), whatever
        # the layout: an agent call acts for the agent it executes, an A2A call out of the
        # run for its caller.
        attribution = self._attribution
        agent = call.target if call.cls == "agent" and not call.remote else (
            attribution.agent(call) if attribution is not None and call.cls != "mas" else None)
        if agent:
            self._link(iri, "ioat:agent", self.disclose.agent_iri(agent))
        if call.cls == "llm":
            for field, prop in (("total", "totalTokenCount"), ("prompt", "promptTokenCount"),
                                ("completion", "completionTokenCount"),
                                ("cacheRead", "cacheReadTokenCount")):
                if field in call.tokens:
                    self._add(iri, prop, call.tokens[field])
            if call.finish:
                self._add(iri, "finishReason", call.finish)
            if call.temperature is not None:
                self._add(iri, "temperature", call.temperature, "double")
            # A provider's response id leads to the conversation at the provider: withheld
            # with the identities.
            if call.response_id and not self.disclose.is_opaque:
                self._add(iri, "responseId", call.response_id)
        for side in ("input", "output"):
            digest = getattr(call, side)
            if digest is not None:
                self._add(iri, f"ioat:{side}Sha256", digest.sha256)
                self._add(iri, f"ioat:{side}Chars", digest.chars)

    def _call_name(self, call: Call) -> str:
        if call.cls == "agent":
            return self.disclose.agent(call.target) if call.target else "agent call"
        if call.cls == "tool":
            return self.disclose.tool(call.target) if call.target else "tool call"
        if call.cls == "processing":
            return call.label or call.target or "processing call"
        if call.cls == "llm":
            return call.target or "LLM call (model not recorded)"
        return "MAS call"

    def _target(self, call: Call, mas_iri: str | None) -> str | None:
        if call.cls == "mas":
            return mas_iri
        if call.target is None:
            return None
        if call.cls == "agent":
            return self.structural("agent", call.target, self._is_declared("agent", call.target))
        kind = _TYPE_KIND[call.cls]
        return self.structural(kind, call.target, self._is_declared(kind, call.target))

    def _is_declared(self, kind: str, name: str) -> bool:
        known = self._declared.get((kind, name))
        if known is None:
            known = self._declared[(kind, name)] = self._search_declared(kind, name)
        return known

    def _search_declared(self, kind: str, name: str) -> bool:
        manifests = self.declarations.manifests
        if manifests is None:
            return False
        if kind == "agent":
            return name in manifests.agents
        for declaration in manifests.agents.values():
            if kind == "llm" and name in (declaration.models or ()):
                return True
            if kind == "tool" and (name in declaration.tools
                                   or name in declaration.delegation_tools()):
                return True
        return False

    def _enclosing(self, call: Call, cls: str) -> Call | None:
        return self._ancestry.nearest(call, (cls,))


def build(run: Run, declarations: Declarations, disclose: Disclosure,
          trajectory: bool = False) -> Graph:
    """The knowledge graph of one run, with the declared types beside it (and its
    trajectory, :mod:`.trajectory`, when asked)."""
    builder = _Builder(declarations, disclose, trajectory)
    builder.declared_types()
    if run.readable:
        builder.run(run)
    graph: Graph = builder.graph
    return graph


# --- the shapes -------------------------------------------------------------------------------


@cache
def _shapes() -> tuple[Graph, Graph]:
    """The package's shapes graph (shapes and ontologies together) and its ontology graph."""
    from oxp_ontology import get_ontology_path
    from rdflib import Graph

    ontology = Graph()
    for name in _ONTOLOGY_FILES:
        ontology.parse(str(get_ontology_path(name)), format="turtle")
    shapes = Graph()
    for name in _ONTOLOGY_FILES + _SHAPE_FILES:
        # The property shapes live on the ontology's own property declarations, so the
        # ontology files belong in the shapes graph (as oxp_ontology.verification does).
        shapes.parse(str(get_ontology_path(name)), format="turtle")
    return shapes, ontology


def shapes_not_run(calls: int, limit: int, left: int | None = None,
                   trajectory: bool = False) -> ShapeReport:
    """The report of a run past the SHACL check's bound: no results, and a reason that names
    the limit (the check is refused before pyshacl runs, never silently left out). ``left``
    is what earlier runs of the invocation left of ``limit``."""
    left = limit if left is None else left
    budget = f"the {limit}" if left == limit else (
        f"the {left} that earlier runs left of the {limit}")
    return ShapeReport(0, dict.fromkeys(quirks(trajectory), 0), (finding(
        "trace.shapes-not-run",
        f"the run has {calls} calls, more than {budget} the SHACL check takes on in one "
        "invocation within the time bound; raise --max-shape-calls to check it anyway", ""),))


def check(graph: Graph, trajectory: bool = False) -> ShapeReport:
    """The shapes' results on ``graph``: quirks counted, the rest grouped into findings. A
    graph built with its trajectory is held to the trajectory's rules, but for the one no
    run can meet (:data:`SESSION_END_QUIRK`)."""
    import pyshacl
    from rdflib import Namespace
    from rdflib.namespace import RDF

    sh = Namespace("http://www.w3.org/ns/shacl#")
    shapes, ontology = _shapes()
    _, results, _ = pyshacl.validate(graph, shacl_graph=shapes, ont_graph=ontology,
                                     inference="none", advanced=True)
    distinct: set[tuple[str, str, str, str]] = set()
    for result in results.subjects(RDF.type, sh.ValidationResult):
        # A failing sh:node is reported twice: as a wrapper (with sh:detail) and as its cause.
        if results.value(result, sh.detail) is not None:
            continue
        focus = str(results.value(result, sh.focusNode))
        path = str(results.value(result, sh.resultPath) or "")
        severity = str(results.value(result, sh.resultSeverity) or sh.Violation).rpartition("#")[2]
        component = str(results.value(result, sh.sourceConstraintComponent) or "").rpartition("#")[2]
        distinct.add((focus, path, severity, component))
    filtered = dict.fromkeys(quirks(trajectory), 0)
    session_ends = _session_ends(graph) if trajectory else set()
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    for focus, path, severity, component in sorted(distinct):
        local = path.removeprefix(MAS)
        quirk = next((name for name, (paths, _) in QUIRKS.items() if local in paths and (
            name in filtered)), None)
        if (local == SESSION_END_PATH and focus in session_ends
                and component == "MinCountConstraintComponent"):
            quirk = SESSION_END_QUIRK[0]
        if quirk is not None:
            filtered[quirk] += 1
            continue
        cls = _class_of(graph, focus)
        groups.setdefault((severity, cls, local, component), []).append(focus)
    findings = []
    for (severity, cls, local, component), foci in sorted(
            groups.items(), key=lambda item: (_RANK.get(item[0][0], 3), item[0])):
        what = {"MinCountConstraintComponent": "lacks", "ClassConstraintComponent":
                "has a value of the wrong class for", "MaxCountConstraintComponent":
                "has too many values of"}.get(component, f"breaks {component} on")
        count = len(foci)
        findings.append(finding(
            "trace.shape",
            f"{count} mas:{cls} node{'s' if count > 1 else ''} {_verb(what, count)} mas:{local} "
            f"(SHACL {severity}{_WEIGHT.get(severity, '')}); for example {foci[0]}",
            foci[0], severity=Severity.WARNING if severity == "Violation" else Severity.INFO))
    return ShapeReport(len(distinct), filtered, tuple(findings))


_RANK = {"Violation": 0, "Warning": 1, "Info": 2}
# What a shape's severity means here, in the finding's words: the shapes describe the graph,
# and no result of theirs decides a verdict (the audit does), so a Violation is reported as a
# warning, said plainly.
_WEIGHT = {"Violation": ": the ontology requires it; reported, it decides no verdict"}


def _session_ends(graph: Graph) -> set[str]:
    """The final States of the graph's sessions."""
    from rdflib import Namespace
    from rdflib.namespace import RDF

    mas = Namespace(MAS)
    return {str(state) for session in graph.subjects(RDF.type, mas.Session)
            for state in graph.objects(session, mas.hasFinalState)}


def _verb(phrase: str, count: int) -> str:
    """"lacks" / "has ..." for one node, "lack" / "have ..." for several."""
    if count == 1:
        return phrase
    head, _, rest = phrase.partition(" ")
    plural = {"lacks": "lack", "has": "have", "breaks": "break"}.get(head, head)
    return f"{plural} {rest}".strip()


def _class_of(graph: Graph, focus: str) -> str:
    from rdflib import URIRef
    from rdflib.namespace import RDF

    names = sorted(str(t).removeprefix(MAS) for t in graph.objects(URIRef(focus), RDF.type)
                   if str(t).startswith(MAS))
    return names[0] if names else "Element"


# --- writing ----------------------------------------------------------------------------------

FORMATS = {".ttl": "turtle", ".jsonld": "json-ld", ".json": "json-ld", ".nt": "nt"}


def emit(graphs: list[Graph], path: str) -> None:
    """The union of ``graphs`` written to ``path``, in the format its suffix names, atomically."""
    from rdflib import Graph

    union = Graph()
    union.bind("mas", MAS)
    union.bind("ioat", IOAT)
    for graph in graphs:
        for triple in graph:
            union.add(triple)
    suffix = os.path.splitext(path)[1].lower()
    data = union.serialize(format=FORMATS[suffix])
    write_file(path, data.encode("utf-8"))


def is_graph(head: bytes) -> bool:
    """Whether a file beginning with ``head`` is a knowledge graph ``emit`` wrote, in any of
    its formats: its first subject is one of the trace's own IRIs (``urn:ioa-trace:``), as
    every subject ``emit`` writes is; a graph of no run is written as nothing (``[]`` in
    JSON-LD). Naming the mas or ioat vocabulary is not enough: a user's own shapes or notes
    over the mas ontology do, and are not ours to replace."""
    text = head.strip()
    if text in (b"", b"[]", b"{}"):
        return True
    return _FIRST_SUBJECT.match(text) is not None


# The first subject of a graph ``emit`` wrote: Turtle (after its prefixes) and N-Triples
# begin with it, rdflib's JSON-LD with the first node's "@id".
_FIRST_SUBJECT = re.compile(
    rb'(?:(?:@prefix|PREFIX)[^\n]*\n\s*)*<' + re.escape(IRI_BASE.encode())
    + rb'|\[\s*\{\s*"@id":\s*"' + re.escape(IRI_BASE.encode()))


# --- quads for the persistent store -------------------------------------------------------------


class _Triples:
    """The part of an rdflib ``Graph`` the builder uses (``add``, ``set``, membership), kept as
    plain tuples: a run's graph goes to the persistent store as quads, and rdflib's indexed
    graph costs about 30 µs a triple for nothing there."""

    def __init__(self) -> None:
        self.triples: dict[tuple[Any, Any, Any], None] = {}
        self._values: dict[tuple[Any, Any], list[Any]] = {}

    def bind(self, prefix: str, namespace: str) -> None:
        """Prefixes are a serialization's concern; quads have none."""

    def add(self, triple: tuple[Any, Any, Any]) -> None:
        if triple not in self.triples:
            self.triples[triple] = None
            self._values.setdefault((triple[0], triple[1]), []).append(triple[2])

    def set(self, triple: tuple[Any, Any, Any]) -> None:
        subject, predicate, _ = triple
        for old in self._values.pop((subject, predicate), ()):
            del self.triples[(subject, predicate, old)]
        self.add(triple)

    def __contains__(self, triple: tuple[Any, Any, Any]) -> bool:
        return triple in self.triples

    def __len__(self) -> int:
        return len(self.triples)


# The nodes :class:`_QuadBuilder` keeps made: a call's node is wanted by its own triples and
# its children's, near one another; the cache is emptied when full rather than grow with a run.
_NODE_CACHE = 8192
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


class _QuadBuilder(_Builder):
    """The builder spelling its terms as N-Quads text where it makes them (literals, nodes,
    the triples of :meth:`_add`, :meth:`_link`, :meth:`_type`): a pyoxigraph object a term
    (and a quad) cost more than the store's loading of them. What the builder spells with
    rdflib itself (the structural nodes' revisable triples) is converted at the end."""

    def __init__(self, declarations: Declarations, disclose: Disclosure, sink: _Chunked,
                 trajectory: bool = False) -> None:
        super().__init__(declarations, disclose, trajectory)
        # The builder's graph is the sink: the part of an rdflib Graph the builder uses.
        self.graph = sink
        self.sink = sink
        self._nodes: dict[str, str] = {}
        # The properties (by their names) and the nodes every call may name (rdf:type, the
        # classes; by their IRIs): a few dozen, kept apart from the nodes, whose cache the
        # calls' own nodes empty again and again.
        self._constants: dict[str, str] = {}

    def _new_graph(self) -> Any:
        return None  # the sink, set by __init__: no rdflib graph (nor rdflib) is wanted

    def _property(self, name: str) -> str:
        return self._predicate(name)

    def _plain(self, value: str | bool) -> str:
        # Spelled as the rdflib literal the builder made was converted at the end: a string's
        # text as literal_text shows it, a boolean as an xsd:boolean.
        return self._literal(value)

    def _hold(self, node: Any) -> None:
        self.sink.hold(node)

    def _literal(self, value: Any, datatype: str | None = None) -> str:
        if datatype == "decimal":
            return nquads.typed(str(Decimal(value)), "decimal")
        if datatype == "double":
            return nquads.typed(repr(float(value)), "double")
        if isinstance(value, bool):
            return nquads.typed("true" if value else "false", "boolean")
        if isinstance(value, int):
            return nquads.typed(str(value), "integer")
        return nquads.string(literal_text(str(value)))

    def _node(self, iri: str) -> str:
        known = self._nodes.get(iri)
        if known is None:
            if len(self._nodes) >= _NODE_CACHE:
                self._nodes.clear()  # a large run's call nodes, each wanted a few times only
            known = self._nodes[iri] = nquads.iri(iri)
        return known

    def _predicate(self, prop: str) -> str:
        known = self._constants.get(prop)
        if known is None:
            known = self._constants[prop] = nquads.iri(
                IOAT + prop.removeprefix("ioat:") if prop.startswith("ioat:") else MAS + prop)
        return known

    def _add(self, subject: str, prop: str, value: Any, datatype: str | None = None) -> None:
        self.sink.add((self._node(subject), self._predicate(prop), self._literal(value, datatype)))

    def _link(self, subject: str, prop: str, target: str) -> None:
        self.sink.add((self._node(subject), self._predicate(prop), self._node(target)))

    def _type(self, subject: str, cls: str) -> None:
        self.sink.add((self._node(subject), self._constant(_RDF_TYPE), self._constant(MAS + cls)))

    def _constant(self, iri: str) -> str:
        """A node every call may name (rdf:type, a class), kept as the properties are (an IRI
        is never a property's name: the names have no "//")."""
        known = self._constants.get(iri)
        if known is None:
            known = self._constants[iri] = nquads.iri(iri)
        return known


def quads(run: Run, declarations: Declarations, disclose: Disclosure, graph: str,
          trajectory: bool = False) -> list[Any]:
    """The graph :func:`build` makes of ``run``, as pyoxigraph quads in the named graph
    ``graph`` (:func:`quad_chunks` read back: what a store is given)."""
    return [quad for chunk in quad_chunks(run, declarations, disclose, graph, trajectory)
            for quad in chunk]


def quad_chunks(run: Run, declarations: Declarations, disclose: Disclosure, graph: str,
                trajectory: bool = False, size: int = 1 << 62) -> Iterator[nquads.Chunk]:
    """The graph :func:`build` makes of ``run`` in the named graph ``graph``, as N-Quads in
    chunks of about ``size`` quads, made as they are taken: a large run's graph goes to the
    store a chunk at a time, never whole in memory. The triples of the structural nodes
    (agents, tools, models: what :meth:`_Builder.structural` may revise) come in the last
    chunk; a chunk may repeat a triple another holds (the store keeps it once)."""
    sink = _Chunked(size, graph)
    builder = _QuadBuilder(declarations, disclose, sink, trajectory)
    builder.declared_types()
    yield from sink.ready()
    if run.readable:
        for _ in builder.steps(run):
            yield from sink.ready()
    yield sink.last()


class _Chunked:
    """The builder's triple set for :func:`quad_chunks`: the triples of held subjects (the
    structural nodes, which ``set`` revises and ``in`` asks about) stay until the end; the
    others are handed on as N-Quads lines in chunks."""

    def __init__(self, size: int, graph: str) -> None:
        self.size = size
        self.graph = nquads.iri(graph)
        self.held = _Triples()
        self.subjects: set[Any] = set()
        self.pending: list[str] = []

    def bind(self, prefix: str, namespace: str) -> None:
        """Prefixes are a serialization's concern; quads have none."""

    def hold(self, subject: Any) -> None:
        self.subjects.add(subject)

    def add(self, triple: tuple[Any, Any, Any]) -> None:
        if triple[0] in self.subjects:
            self.held.add(triple)
        else:
            self.pending.append(f"{triple[0]} {triple[1]} {triple[2]} {self.graph} .\n")

    def set(self, triple: tuple[Any, Any, Any]) -> None:
        # Only structural nodes are revised: were another, a triple handed on could not be.
        assert triple[0] in self.subjects, triple
        self.held.set(triple)

    def __contains__(self, triple: tuple[Any, Any, Any]) -> bool:
        assert triple[0] in self.subjects, triple
        return triple in self.held

    def ready(self) -> Iterator[nquads.Chunk]:
        while len(self.pending) >= self.size:
            chunk, self.pending = self.pending[:self.size], self.pending[self.size:]
            yield nquads.Chunk.lines(chunk)

    def last(self) -> nquads.Chunk:
        # Every term is spelled already: the builder writes N-Quads text (_QuadBuilder).
        held = [f"{s} {p} {o} {self.graph} .\n" for s, p, o in self.held.triples]
        return nquads.Chunk.lines([*self.pending, *held])
