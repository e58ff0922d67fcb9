"""Domain constraints: a profile's own SHACL shapes (draft 5.2, 5.4), judged in every check.

A profile names shape files (``iop:shapes``). Each top-level shape (one with a target) is
routed once, when the Checker is built:

* **compiled**: a node shape of ``sh:targetClass`` targets whose constraints are all in
  the subset the baseline's compiler understands (``sh:property`` with a predicate
  ``sh:path`` and ``sh:minCount``, ``sh:maxCount``, ``sh:nodeKind``, ``sh:datatype``
  ``xsd:string``/``rdf:langString``, ``sh:pattern`` without flags, ``sh:hasValue``,
  ``sh:message``) is evaluated by :class:`CompiledShape` over the check's store;
* **pyshacl**: any other SHACL Core or SHACL-SPARQL shape goes to pySHACL, which validates
  the check's Oxigraph store in place (the union of its graphs), once per check for all of
  them together, never once per shape.

Both read the same graph (see ``docs/constraints.md``): the expanded envelope, the check's
facts (``urn:ioa-semantic:check``) and the task parameters as one node
(``urn:ioa-semantic:task``, a ``iop:TaskParameters`` with one ``param:<name>`` literal a
parameter), the profile and its vocabulary, the offered registrations and artifacts.

A result becomes a reason under a ``constraint.`` code: ``constraint.shape-violated``
(``incompatible``: a completed check found the conflict), ``constraint.shape-warning`` for
``sh:Warning``/``sh:Info`` (it decides nothing), ``constraint.shape-unevaluable``
(``indeterminate``: the shapes could not be evaluated). ``sh:pattern`` is read as XPath reads
it in both routes: ``$`` matches at the end of the value only (pySHACL's Python ``re`` would
also match before a final newline), so the shapes pySHACL sees have their patterns
translated first.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cache
from typing import Any, NamedTuple
from urllib.parse import quote

import pyoxigraph

from .._codes import finding
from .._exceptions import ConfigurationError
from .._findings import Finding, Severity
from .._vocab import IOP, IOPARAM, RDF_LANGSTRING, RDF_TYPE, RDFS, SH, XSD
from .shapes import python_pattern

CHECK = pyoxigraph.NamedNode("urn:ioa-semantic:check")
TASK = pyoxigraph.NamedNode("urn:ioa-semantic:task")
TASK_GRAPH = pyoxigraph.NamedNode("urn:ioa-semantic:graph:task")
TASK_PARAMETERS = IOP + "TaskParameters"
_RDF_TYPE = pyoxigraph.NamedNode(RDF_TYPE)
_SUBCLASS = RDFS + "subClassOf"
_SUBCLASS_NODE = pyoxigraph.NamedNode(_SUBCLASS)

ROUTE_COMPILED = "compiled"
ROUTE_PYSHACL = "pyshacl"
ROUTE_UNSUPPORTED = "unsupported"
# SHACL Advanced Features and SHACL-JS: pySHACL evaluates them only in its advanced mode,
# which this project does not turn on (rules would change the check's store). A shape that
# uses one is never evaluated, so every check under it is indeterminate.
_UNSUPPORTED = frozenset({"rule", "target", "js", "jsConstraint", "jsLibrary", "expression",
                          "condition", "values", "filterShape"})

_TARGETS = ("targetClass", "targetNode", "targetSubjectsOf", "targetObjectsOf", "target")
_COMPILED_NODE_KEYS = frozenset({"targetClass", "property"})
_COMPILED_PROPERTY_KEYS = frozenset({
    "path", "minCount", "maxCount", "nodeKind", "datatype", "pattern", "hasValue", "message"})
_COMPILED_DATATYPES = frozenset({XSD + "string", RDF_LANGSTRING})
_NODE_KINDS = {
    SH + "IRI": frozenset({"iri"}),
    SH + "BlankNode": frozenset({"blank"}),
    SH + "Literal": frozenset({"literal"}),
    SH + "BlankNodeOrIRI": frozenset({"blank", "iri"}),
    SH + "BlankNodeOrLiteral": frozenset({"blank", "literal"}),
    SH + "IRIOrLiteral": frozenset({"iri", "literal"}),
}
_SEVERITIES = {SH + "Violation": Severity.ERROR, SH + "Warning": Severity.WARNING,
               SH + "Info": Severity.INFO}


class ShapesUnreadable(ConfigurationError, ValueError):
    """A profile's shape file is not Turtle, or not SHACL the project can route."""


class ShapeRoute(NamedTuple):
    """Where one top-level shape is evaluated, and why (``ioa-check lint --explain``)."""

    shape: str
    engine: str
    why: str
    source: str


class Result(NamedTuple):
    """One SHACL validation result, in the terms both routes report."""

    focus: str
    path: str | None
    value: str | None
    shape: str  # the top-level shape it belongs to
    component: str  # the constraint component's local name
    severity: Severity
    message: str


class _PropertyCheck(NamedTuple):
    node: str
    path: pyoxigraph.NamedNode
    min_count: int | None
    max_count: int | None
    node_kind: frozenset[str] | None
    datatype: str | None
    pattern: "re.Pattern[str] | None"
    has_value: Any
    message: str | None


class CompiledShape(NamedTuple):
    """A node shape in the compiled subset: its targets and property checks, evaluated over
    a store with one pattern lookup per focus node and property."""

    name: str
    target_classes: tuple[str, ...]
    properties: tuple[_PropertyCheck, ...]

    def results(self, store: pyoxigraph.Store) -> Iterator[Result]:
        for focus in sorted(_instances(store, self.target_classes), key=_term_text):
            for prop in self.properties:
                yield from _check_property(self.name, prop, store, focus)


def _instances(store: pyoxigraph.Store, classes: Sequence[str]) -> set[Any]:
    """SHACL instances of the classes in the store's union: of a class, or of a class that
    is an rdfs:subClassOf one of them (transitively), as the data graph says."""
    pending = [pyoxigraph.NamedNode(c) for c in classes]
    seen: set[Any] = set(pending)
    while pending:
        cls = pending.pop()
        for quad in store.quads_for_pattern(None, _SUBCLASS_NODE, cls, None):
            if quad.subject not in seen:
                seen.add(quad.subject)
                pending.append(quad.subject)
    found: set[Any] = set()
    for cls in seen:
        for quad in store.quads_for_pattern(None, _RDF_TYPE, cls, None):
            found.add(quad.subject)
    return found


def _kind(term: Any) -> str:
    if isinstance(term, pyoxigraph.NamedNode):
        return "iri"
    if isinstance(term, pyoxigraph.BlankNode):
        return "blank"
    return "literal"


def _term_text(term: Any) -> str:
    if isinstance(term, pyoxigraph.NamedNode):
        return term.value
    if isinstance(term, pyoxigraph.BlankNode):
        return f"_:{term.value}"
    return str(term)


def _check_property(shape: str, prop: _PropertyCheck, store: pyoxigraph.Store,
                    focus: Any) -> Iterator[Result]:
    # The union of the store's graphs, as pySHACL reads it: one value for a triple that
    # several graphs hold.
    values = sorted({q.object for q in store.quads_for_pattern(focus, prop.path, None, None)},
                    key=_term_text)
    focus_text, path = _term_text(focus), prop.path.value

    def result(component: str, default: str, value: Any = None) -> Result:
        return Result(focus_text, path, None if value is None else _term_text(value), shape,
                      component, Severity.ERROR, prop.message or default)

    if prop.min_count is not None and len(values) < prop.min_count:
        yield result("MinCountConstraintComponent",
                     f"fewer than {prop.min_count} value(s) ({len(values)})")
    if prop.max_count is not None and len(values) > prop.max_count:
        yield result("MaxCountConstraintComponent",
                     f"more than {prop.max_count} value(s) ({len(values)})")
    if prop.has_value is not None and prop.has_value not in values:
        yield result("HasValueConstraintComponent", f"no value {_term_text(prop.has_value)}")
    for value in values:
        kind = _kind(value)
        if prop.node_kind is not None and kind not in prop.node_kind:
            yield result("NodeKindConstraintComponent", f"a {kind} value is not allowed", value)
        if prop.datatype is not None and not (
                kind == "literal" and value.datatype.value == prop.datatype):
            yield result("DatatypeConstraintComponent",
                         f"the value is not of datatype {prop.datatype}", value)
        if prop.pattern is not None:
            text = None if kind == "blank" else value.value
            if text is None or not prop.pattern.search(text):
                yield result("PatternConstraintComponent", "the value does not match the "
                             "shape's pattern", value)


# --- reading and routing --------------------------------------------------------------------


class _Shapes:
    """The triples of the shape files, by subject."""

    def __init__(self, quads: Sequence[pyoxigraph.Quad]) -> None:
        self.quads = quads
        self.by_subject: dict[Any, dict[str, list[Any]]] = {}
        self.referenced: dict[Any, int] = {}
        for q in quads:
            self.by_subject.setdefault(q.subject, {}).setdefault(q.predicate.value, []).append(
                q.object)
            if not isinstance(q.object, pyoxigraph.Literal):
                self.referenced[q.object] = self.referenced.get(q.object, 0) + 1

    def get(self, subject: Any, predicate: str) -> list[Any]:
        return self.by_subject.get(subject, {}).get(predicate, [])

    def types(self, subject: Any) -> set[str]:
        return {t.value for t in self.get(subject, RDF_TYPE) if isinstance(t, pyoxigraph.NamedNode)}

    def top_level(self) -> list[Any]:
        """The shapes with targets (explicit, or implicit: a node shape that is a class)."""
        tops = []
        for subject, props in self.by_subject.items():
            types = self.types(subject)
            explicit = any(SH + t in props for t in _TARGETS)
            implicit = bool(types & {SH + "NodeShape", SH + "PropertyShape"}) and bool(
                types & {RDFS + "Class", "http://www.w3.org/2002/07/owl#Class"})
            if explicit or implicit:
                tops.append(subject)
        return sorted(tops, key=_term_text)


def _sh_keys(props: Mapping[str, list[Any]]) -> set[str]:
    return {p[len(SH):] for p in props if p.startswith(SH)}


def _single(values: list[Any]) -> Any:
    return values[0] if len(values) == 1 else None


def _compile(graph: _Shapes, shape: Any) -> "CompiledShape | str":
    """The shape in the compiled subset, or why it is not."""
    props = graph.by_subject[shape]
    types = graph.types(shape)
    if SH + "NodeShape" not in types or types & {RDFS + "Class",
                                                  "http://www.w3.org/2002/07/owl#Class"}:
        return "not a node shape with explicit targets only"
    extra = _sh_keys(props) - _COMPILED_NODE_KEYS
    if extra:
        return "uses " + ", ".join(f"sh:{k}" for k in sorted(extra))
    if graph.referenced.get(shape):
        return "another shape refers to it"
    classes = []
    for cls in props.get(SH + "targetClass", []):
        if not isinstance(cls, pyoxigraph.NamedNode):
            return "a target class that is not an IRI"
        classes.append(cls.value)
    checks = []
    for node in props.get(SH + "property", []):
        compiled = _compile_property(graph, node)
        if isinstance(compiled, str):
            return compiled
        checks.append(compiled)
    return CompiledShape(_term_text(shape), tuple(sorted(classes)),
                         tuple(sorted(checks, key=lambda c: (c.path.value, c.node))))


def _compile_property(graph: _Shapes, node: Any) -> "_PropertyCheck | str":
    props = graph.by_subject.get(node, {})
    extra = _sh_keys(props) - _COMPILED_PROPERTY_KEYS
    if extra:
        return "a property shape uses " + ", ".join(f"sh:{k}" for k in sorted(extra))
    if graph.referenced.get(node, 0) != 1 or graph.types(node) - {SH + "PropertyShape"}:
        return "a property shape that is shared or is also a node shape"
    if any(len(v) > 1 for k, v in props.items() if k.startswith(SH)):
        return "a property shape with a parameter given more than once"
    path = _single(props.get(SH + "path", []))
    if not isinstance(path, pyoxigraph.NamedNode):
        return "a property shape whose sh:path is not one predicate"

    def count(name: str) -> int | None:
        value = _single(props.get(SH + name, []))
        if value is None:
            return None
        if not (isinstance(value, pyoxigraph.Literal) and value.datatype.value == XSD + "integer"):
            raise _NotCompiled(f"sh:{name} that is not an xsd:integer")
        return int(value.value)

    try:
        min_count, max_count = count("minCount"), count("maxCount")
    except _NotCompiled as exc:
        return str(exc)
    kind = _single(props.get(SH + "nodeKind", []))
    if kind is not None and (not isinstance(kind, pyoxigraph.NamedNode)
                             or kind.value not in _NODE_KINDS):
        return "an sh:nodeKind that is not one of SHACL's six"
    datatype = _single(props.get(SH + "datatype", []))
    if datatype is not None and (not isinstance(datatype, pyoxigraph.NamedNode)
                                 or datatype.value not in _COMPILED_DATATYPES):
        return "an sh:datatype whose lexical space the compiled checks do not test"
    pattern = _single(props.get(SH + "pattern", []))
    compiled_pattern = None
    if pattern is not None:
        if not isinstance(pattern, pyoxigraph.Literal):
            return "an sh:pattern that is not a literal"
        try:
            compiled_pattern = re.compile(python_pattern(pattern.value))
        except re.error:
            return "an sh:pattern Python's re cannot read"
    message = _single(props.get(SH + "message", []))
    if message is not None and not isinstance(message, pyoxigraph.Literal):
        return "an sh:message that is not a literal"
    return _PropertyCheck(
        _term_text(node), path, min_count, max_count,
        _NODE_KINDS[kind.value] if kind is not None else None,
        datatype.value if datatype is not None else None, compiled_pattern,
        _single(props.get(SH + "hasValue", [])), message.value if message is not None else None)


class _NotCompiled(Exception):
    pass


class ProfileShapes:
    """A profile's shapes, read and routed once per Checker (immutable once built)."""

    def __init__(self, files: Sequence[Any]) -> None:
        self.files = tuple(files)
        quads: list[pyoxigraph.Quad] = []
        sources: dict[Any, str] = {}
        names: dict[Any, str] = {}  # a stable name for each blank top-level shape
        for file in self.files:
            try:
                parsed = list(pyoxigraph.parse(file.data, pyoxigraph.RdfFormat.TURTLE,
                                               base_iri=_base_of(file.source),
                                               without_named_graphs=True))
            except (SyntaxError, ValueError) as exc:
                raise ShapesUnreadable(f"{file.source}: not valid Turtle: {exc}") from exc
            for q in parsed:
                sources.setdefault(q.subject, file.reference)
                if isinstance(q.subject, pyoxigraph.BlankNode) and q.subject not in names:
                    names[q.subject] = f"{file.reference}#blank-{len(names) + 1}"
            quads.extend(parsed)
        graph = _Shapes(quads)
        self._names = names
        routes, compiled, unsupported = [], [], []
        for shape in graph.top_level():
            name, source = self.name_of(shape), sources.get(shape, "")
            used = _features(graph, shape) & _UNSUPPORTED
            if used:
                routes.append(ShapeRoute(name, ROUTE_UNSUPPORTED, "uses " + ", ".join(
                    f"sh:{k}" for k in sorted(used)) + " (SHACL Advanced Features or SHACL-JS)",
                    source))
                unsupported.append(name)
                continue
            outcome = _compile(graph, shape)
            if isinstance(outcome, CompiledShape):
                compiled.append(outcome._replace(name=name))
                routes.append(ShapeRoute(name, ROUTE_COMPILED,
                                         "SHACL Core in the compiled subset", source))
            else:
                routes.append(ShapeRoute(name, ROUTE_PYSHACL, outcome, source))
        self.routes = tuple(routes)
        self.compiled = tuple(compiled)
        self.unsupported = tuple(unsupported)
        self._quads = tuple(quads)
        self._compiled_nodes = _owned_subjects(
            graph, {s for s in graph.by_subject if self.name_of(s) in {c.name for c in compiled}})
        self._pyshacl_graph: Any = None
        self._parents: dict[str, str] = {}
        self.digest = hashlib.sha256(b"".join(f.digest.encode() for f in self.files)).hexdigest()

    def name_of(self, subject: Any) -> str:
        """An IRI shape by its IRI; a blank one by its file and its place in it."""
        return self._names.get(subject) or _term_text(subject)

    @property
    def needs_pyshacl(self) -> bool:
        return any(r.engine == ROUTE_PYSHACL for r in self.routes)

    def dependencies(self) -> list[dict[str, str]]:
        return [{"reference": f.reference, "sha256": f.digest} for f in self.files]

    def shacl_graph(self) -> Any:
        """The shapes pySHACL evaluates, as an rdflib graph, built once: every triple of the
        files but those of compiled shapes, with sh:pattern translated (see the module)."""
        if self._pyshacl_graph is None:
            graph, blanks = _rdflib_graph(
                q for q in self._quads if q.subject not in self._compiled_nodes)
            # A result names its shape by the rdflib node pySHACL read: back to this set's
            # names, a property shape by the top-level shape it belongs to.
            names = {f"_:{b}": self.name_of(pyoxigraph.BlankNode(k)) for k, b in blanks.items()}
            import rdflib

            for subject, node in graph.subject_objects(rdflib.URIRef(SH + "property")):
                owner = _rdflib_shape_name(subject)
                self._parents.setdefault(_rdflib_shape_name(node), names.get(owner, owner))
            for key, name in names.items():
                self._parents.setdefault(key, name)
            self._pyshacl_graph = graph
        return self._pyshacl_graph

    def results(self, store: pyoxigraph.Store, triples: int = 0) -> list[Result]:
        """Every result of every shape over one check's store: compiled shapes by their
        checks, the rest by one pySHACL validation, ``triples`` the number the check (or
        registration) brought to the store.

        Raises :class:`Unevaluable`, with the compiled shapes' results, for shapes pySHACL
        cannot evaluate or is not asked to (past :data:`MAX_PYSHACL_TRIPLES`)."""
        results: list[Result] = []
        for shape in self.compiled:
            results.extend(shape.results(store))
        if self.unsupported:
            raise Unevaluable("the shape(s) " + ", ".join(self.unsupported) + " use SHACL "
                              "Advanced Features or SHACL-JS, which are not evaluated",
                              _ordered(results))
        if self.needs_pyshacl and triples > MAX_PYSHACL_TRIPLES:
            raise Unevaluable(
                f"the input brings {triples:,} triples, more than the "
                f"{MAX_PYSHACL_TRIPLES:,} the profile's pySHACL shapes are evaluated over "
                "(pySHACL's cost grows with them by milliseconds each)", _ordered(results))
        if self.needs_pyshacl:
            try:
                results.extend(self._pyshacl_results(store))
            except Unevaluable as exc:
                raise Unevaluable(str(exc), _ordered(results)) from exc
        return _ordered(results)

    def _pyshacl_results(self, store: pyoxigraph.Store) -> Iterator[Result]:
        try:
            import pyshacl
        except ImportError as exc:  # pragma: no cover - pyshacl is a dependency
            raise Unevaluable(f"pySHACL is not installed: {exc}") from exc
        shacl_graph = self.shacl_graph()
        try:
            _, report, _ = pyshacl.validate(_data_graph(store), shacl_graph=shacl_graph,
                                            inplace=True, allow_warnings=True, allow_infos=True)
        except Exception as exc:  # pySHACL's errors, mapped at this one boundary
            raise Unevaluable(f"{type(exc).__name__}: {exc}") from exc
        yield from _report_results(report, self._parents)


def _data_graph(store: pyoxigraph.Store) -> Any:
    """The store as pySHACL's data graph, read in place. pySHACL tests a data graph's truth
    (``datagraph or shapes_graph``) for every result it describes, and its Oxigraph graph
    answers that with ``len()``, a SPARQL count of the whole store: a batch of registrations
    with many results would cost their number times the store's size. A store is never
    empty here, so its truth is answered without counting."""
    return _store_graph_type()(store)


@cache
def _store_graph_type() -> type:
    from pyshacl.graph_abstraction import OxigraphDataGraph

    class StoreGraph(OxigraphDataGraph):
        def __bool__(self) -> bool:
            return True

    return StoreGraph


# The triples a check (the envelope and its task) or a registration may bring to a store
# that pySHACL validates: its Core constraints cost about a millisecond a focus node and a
# value, so an envelope within the input limits (16,384 values) could hold a check for
# seconds. Past it the pySHACL shapes are not evaluated (constraint.shape-unevaluable, which
# names the limit); compiled shapes, linear and cheap, always are.
MAX_PYSHACL_TRIPLES = 2000


def _ordered(results: Iterable[Result]) -> list[Result]:
    return sorted(set(results), key=lambda r: (r.shape, r.focus, r.path or "", r.component,
                                               r.value or "", r.message))


class Unevaluable(Exception):
    """pySHACL could not evaluate the shapes (an unsupported feature, a SPARQL error, an
    input past MAX_PYSHACL_TRIPLES); ``results`` are those of the compiled shapes."""

    def __init__(self, message: str, results: Sequence["Result"] = ()) -> None:
        super().__init__(message)
        self.results = tuple(results)


def _base_of(source: str) -> str | None:
    return source if source.startswith(("http://", "https://")) else None


def _features(graph: _Shapes, shape: Any) -> set[str]:
    """The SHACL terms a shape uses, with those of every node it reaches."""
    used: set[str] = set()
    pending, seen = [shape], {shape}
    while pending:
        node = pending.pop()
        for predicate, values in graph.by_subject.get(node, {}).items():
            if predicate.startswith(SH):
                used.add(predicate[len(SH):])
            for value in values:
                if value in graph.by_subject and value not in seen:
                    seen.add(value)
                    pending.append(value)
    return used


def _owned_subjects(graph: _Shapes, shapes: set[Any]) -> frozenset[Any]:
    owned = set(shapes)
    for subject in shapes:
        owned.update(graph.get(subject, SH + "property"))
    return frozenset(owned)


def _rdflib_graph(quads: Iterable[pyoxigraph.Quad]) -> tuple[Any, dict[str, Any]]:
    import rdflib

    graph = rdflib.Graph()
    blanks: dict[str, rdflib.BNode] = {}

    def term(t: Any) -> Any:
        if isinstance(t, pyoxigraph.NamedNode):
            return rdflib.URIRef(t.value)
        if isinstance(t, pyoxigraph.BlankNode):
            return blanks.setdefault(t.value, rdflib.BNode())
        if t.language:
            return rdflib.Literal(t.value, lang=t.language)
        return rdflib.Literal(t.value, datatype=rdflib.URIRef(t.datatype.value))

    for q in quads:
        obj = q.object
        if q.predicate.value == SH + "pattern" and isinstance(obj, pyoxigraph.Literal):
            obj = pyoxigraph.Literal(python_pattern(obj.value))
        graph.add((term(q.subject), term(q.predicate), term(obj)))
    return graph, blanks


def _report_results(report: Any, parents: Mapping[str, str]) -> Iterator[Result]:
    import rdflib

    sh = rdflib.Namespace(SH)

    def text(node: Any) -> str | None:
        if node is None:
            return None
        if isinstance(node, rdflib.BNode):
            return f"_:{node}"
        if isinstance(node, rdflib.Literal):
            return node.n3()
        return str(node)

    for result in report.objects(None, sh.result):
        source = report.value(result, sh.sourceShape)
        source_name = _rdflib_shape_name(source)
        path = report.value(result, sh.resultPath)
        severity = _SEVERITIES.get(str(report.value(result, sh.resultSeverity)), Severity.ERROR)
        component = str(report.value(result, sh.sourceConstraintComponent) or "")
        messages = sorted(str(m) for m in report.objects(result, sh.resultMessage))
        value = report.value(result, sh.value)
        yield Result(
            text(report.value(result, sh.focusNode)) or "",
            str(path) if isinstance(path, rdflib.URIRef) else (
                None if path is None else "(a complex path)"),
            _value_text(value),
            parents.get(source_name, source_name),
            component.rpartition("#")[2],
            severity,
            messages[0] if messages else component.rpartition("#")[2])


def _rdflib_shape_name(node: Any) -> str:
    import rdflib

    return f"_:{node}" if isinstance(node, rdflib.BNode) else str(node)


def _value_text(value: Any) -> str | None:
    import rdflib

    if value is None:
        return None
    if isinstance(value, rdflib.URIRef):
        return str(value)
    if isinstance(value, rdflib.BNode):
        return f"_:{value}"
    return _term_text(pyoxigraph.Literal(str(value), language=value.language) if value.language
                      else pyoxigraph.Literal(str(value), datatype=pyoxigraph.NamedNode(
                          str(value.datatype or XSD + "string"))))


# --- the check's graph ----------------------------------------------------------------------


def task_quads(parameters: Mapping[str, str], envelope: Any) -> list[pyoxigraph.Quad]:
    """The task parameters as one node the shapes can target (``iop:TaskParameters``), and
    the check's links to it and to the envelope (its top node's term in the store)."""
    quads = [pyoxigraph.Quad(TASK, _RDF_TYPE, pyoxigraph.NamedNode(TASK_PARAMETERS), TASK_GRAPH),
             pyoxigraph.Quad(CHECK, pyoxigraph.NamedNode(IOP + "task"), TASK, TASK_GRAPH),
             pyoxigraph.Quad(CHECK, pyoxigraph.NamedNode(IOP + "envelope"), envelope,
                             TASK_GRAPH)]
    for name, value in sorted(parameters.items()):
        quads.append(pyoxigraph.Quad(TASK, pyoxigraph.NamedNode(IOPARAM + quote(name, safe="")),
                                     pyoxigraph.Literal(value), TASK_GRAPH))
    return quads


def constraint_findings(shapes: ProfileShapes, store: pyoxigraph.Store,
                        envelope: Any = None, triples: int = 0) -> list[Finding]:
    """The profile's shapes over one check's store, as reasons (see the module); ``envelope``
    is the top node's term, named "the envelope" in them; ``triples`` the number of the
    envelope's and the task's."""
    top = None if envelope is None else _term_text(envelope)
    try:
        results = shapes.results(store, triples)
    except Unevaluable as exc:
        return [*(as_finding(r, top) for r in exc.results), unevaluable(exc)]
    return [as_finding(r, top) for r in results]


def unevaluable(exc: Unevaluable) -> Finding:
    """The reason for shapes that could not be evaluated."""
    return finding("constraint.shape-unevaluable", "the profile's shapes could not be "
                   f"evaluated, so its required constraints are not known to hold: {exc}", "")


def as_finding(result: Result, envelope: str | None) -> Finding:
    focus = "the envelope" if result.focus == envelope else result.focus
    where = f"focus node {focus}"
    if result.path is not None:
        where += f", path {result.path}"
    if result.value is not None:
        where += f", value {'the envelope' if result.value == envelope else result.value}"
    message = (f"the profile shape {result.shape} ({result.component}) says: "
               f"{result.message} ({where})")
    path = result.focus if not result.focus.startswith("_:") else ""
    if result.severity is Severity.ERROR:
        return finding("constraint.shape-violated", message, path)
    return finding("constraint.shape-warning", message, path, severity=result.severity)




# What a shape may look at beyond its focus node's own values: a SPARQL query may read any
# node of the graph (a SPARQL-based constraint or component, a custom component declared
# in the files).
_NON_LOCAL = frozenset({"sparql", "select", "ask", "validator", "nodeValidator",
                        "propertyValidator", "SPARQLConstraint", "ConstraintComponent"})


def reads_beyond_focus(shapes: ProfileShapes) -> bool:
    """Whether some shape may read nodes other than its focus nodes and the values reached
    from them by paths (so a batch of registrations in one graph could change its results)."""
    for quad in shapes._quads:
        for term in (quad.predicate, quad.object):
            if isinstance(term, pyoxigraph.NamedNode) and term.value.startswith(SH) and (
                    term.value[len(SH):] in _NON_LOCAL):
                return True
    return False
