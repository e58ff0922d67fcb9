"""Domain constraints: a profile's own SHACL shapes (draft 5.2, 5.4), judged in every check.

A profile names shape files (``iop:shapes``). Each top-level shape (one with a target) is
routed once, when the Checker is built:

* **compiled**: a node shape (``sh:NodeShape``) with ``sh:targetClass``, ``sh:targetNode``
  (IRIs and literals) or an implicit class target, whose constraints are all in the subset
  the baseline's compiler understands (``sh:property`` with a predicate ``sh:path`` and
  ``sh:minCount``, ``sh:maxCount``, ``sh:nodeKind``, ``sh:datatype``
  ``xsd:string``/``rdf:langString``, ``sh:pattern`` without flags, ``sh:hasValue`` an IRI or
  a string, ``sh:message``, and the non-validating ``sh:name``, ``sh:description``,
  ``sh:order``, ``sh:group``, ``sh:defaultValue``), that no other shape refers to and that
  activates no constraint component the files declare, is evaluated by
  :class:`CompiledShape` over the check's store;
* **pyshacl**: any other SHACL Core or SHACL-SPARQL shape goes to pySHACL, which validates
  the check's Oxigraph store in place (the union of its graphs), once per check for all of
  them together, never once per shape. pySHACL reads the shapes once (its ``ShapesGraph``,
  reused by every check's ``Validator``);
* **unsupported**: SHACL Advanced Features and SHACL-JS, recursive shapes (SHACL leaves
  them undefined), a SPARQL query SHACL-SPARQL cannot evaluate (``MINUS``, ``VALUES``,
  ``SERVICE``, a pre-bound variable bound again, or no SPARQL at all: ``pipeline/sparql.py``)
  and an ``sh:datatype`` the check's store does not keep (below) are not evaluated; every
  check under such a shape is indeterminate, its reason naming the shape and why.

``tests/test_constraints.py`` holds the compiled route to the pySHACL route on drawn shapes
and data; ``tests/test_shacl_suite.py`` runs the W3C SHACL suite through both, with what
pySHACL over Oxigraph does not do as the spec says (SPARQL pre-binding in nested groups,
SPARQL-based constraint components, a literal focus node of a property shape) written
down there.

Both read the same graph (see ``docs/constraints.md``): the expanded envelope, the check's
facts (``urn:ioa-semantic:check``) and the task parameters as one node
(``urn:ioa-semantic:task``, a ``iop:TaskParameters`` with one ``param:<name>`` literal a
parameter), the profile and its vocabulary, the offered registrations and artifacts. The
store is Oxigraph's, which keeps a literal it reads as a number normalised
(``"01"^^xsd:integer`` is ``"1"``, ``"5"^^xsd:int`` an ``xsd:integer``): shapes see that,
and a result's value is the store's term.

A result becomes a reason under a ``constraint.`` code: ``constraint.shape-violated``
(``incompatible``: a completed check found the conflict), ``constraint.shape-warning`` for
``sh:Warning``/``sh:Info`` (it decides nothing; a severity SHACL does not define is a
violation), ``constraint.shape-unevaluable`` (``indeterminate``: the shapes could not be
evaluated, pySHACL failed or reported SHACL's validation failure). A result's message is
the profile's ``sh:message``, or the parameter it fails with its values, the same in both
routes (pySHACL's own messages are not deterministic). ``sh:pattern`` is read as XPath
reads it in both routes: ``$`` matches at the end of the value only (pySHACL's Python
``re`` would also match before a final newline), so the shapes pySHACL sees have their
patterns translated first.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import hashlib
import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cache
from typing import Any, NamedTuple
from urllib.parse import quote, unquote

import pyoxigraph

from .._codes import finding
from .._exceptions import ConfigurationError, IoaSemanticError
from .._findings import Finding, Remedy, Severity
from .._iri import bidi_defect, shown_iri
from .._vocab import IOP, IOPARAM, RDF, RDF_LANGSTRING, RDF_TYPE, RDFS, SH, XSD
from . import bounded, sparql
from .remedies import SENDER, remedy
from .shapes import PatternNotTranslated, xpath_regex

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
_UNSUPPORTED = frozenset({"rule", "target", "js", "jsConstraint", "jsLibrary", "jsFunctionName",
                          "expression", "condition", "values", "filterShape"})

_TARGETS = ("targetClass", "targetNode", "targetSubjectsOf", "targetObjectsOf", "target")
_COMPILED_NODE_KEYS = frozenset({"targetClass", "targetNode", "property"})
_CLASSES = frozenset({RDFS + "Class", "http://www.w3.org/2002/07/owl#Class"})
# The parameters whose values are shapes (SHACL 4.5, 4.6, 4.7.3; lists by rdf:first).
_SHAPE_REFERENCES = frozenset({SH + "node", SH + "property", SH + "qualifiedValueShape",
                               SH + "not", SH + "and", SH + "or", SH + "xone",
                               RDF + "first"})
_COMPILED_PROPERTY_KEYS = frozenset({
    "path", "minCount", "maxCount", "nodeKind", "datatype", "pattern", "hasValue", "in",
    "message",
    # non-validating (SHACL 2.3.2): they change no result
    "name", "description", "order", "group", "defaultValue"})
_COMPILED_DATATYPES = frozenset({XSD + "string", RDF_LANGSTRING})
_NODE_KINDS = {
    SH + "IRI": frozenset({"iri"}),
    SH + "BlankNode": frozenset({"blank"}),
    SH + "Literal": frozenset({"literal"}),
    SH + "BlankNodeOrIRI": frozenset({"blank", "iri"}),
    SH + "BlankNodeOrLiteral": frozenset({"blank", "literal"}),
    SH + "IRIOrLiteral": frozenset({"iri", "literal"}),
}
# The datatypes whose values Oxigraph stores as another datatype (oxigraph/oxigraph#526):
# "5"^^xsd:int is read back "5"^^xsd:integer. sh:datatype cannot tell them over the check's
# store (a valid xsd:int would be reported as not one), so a shape that names one is not
# evaluated. (xsd:integer and xsd:dateTime themselves are kept: a value written with a
# derived type then passes as the base type it is a value of.)
_STORED_AS = {XSD + t: XSD + "integer" for t in (
    "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
    "nonPositiveInteger", "negativeInteger", "unsignedLong", "unsignedInt", "unsignedShort",
    "unsignedByte")} | {XSD + "dateTimeStamp": XSD + "dateTime"}
# pySHACL's log (what it made of a shape it reads leniently) goes to the application's
# logging configuration, if any: a library does not write to stderr.
_PYSHACL_LOG = logging.getLogger("ioa_semantic.pyshacl")
_PYSHACL_LOG.addHandler(logging.NullHandler())
# rdflib's label of a new blank node: "N" and a uuid4's 32 hex digits
_RDFLIB_BLANK = re.compile(r"\bN[0-9a-f]{32}\b")
_AS_WRITTEN = frozenset({XSD + "integer", XSD + "decimal", XSD + "boolean"})
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
    pattern: Any  # an RE2 expression (shapes.xpath_regex): linear in the value
    has_value: Any
    # sh:in's members, as a set: a value is a member by one lookup, whatever their number
    # (RDF term equality, as SHACL's: "en" is not "en"@en nor "EN")
    members: frozenset[Any] | None
    message: str | None
    # each component's message when the shape gives none, by the component's name
    # ("MinCount"): the pySHACL route's (see _default_message)
    defaults: Mapping[str, str]


class CompiledShape(NamedTuple):
    """A node shape in the compiled subset: its targets and property checks, evaluated over
    a store with one pattern lookup per focus node and property."""

    name: str
    target_classes: tuple[str, ...]
    properties: tuple[_PropertyCheck, ...]
    # sh:targetNode's IRIs and literals: focus nodes whether or not the data has them
    target_nodes: tuple[Any, ...] = ()

    def results(self, store: pyoxigraph.Store) -> Iterator[Result]:
        focus_nodes = _instances(store, self.target_classes) | set(self.target_nodes)
        for focus in sorted(focus_nodes, key=_term_text):
            for prop in self.properties:
                yield from _check_property(self.name, prop, store, focus)


def _instances(store: pyoxigraph.Store, classes: Sequence[str]) -> set[Any]:
    """SHACL instances of the classes in the store's union: of a class, or of a class that
    is an rdfs:subClassOf one of them (transitively), as the data graph says."""
    pending: list[Any] = [pyoxigraph.NamedNode(c) for c in classes]
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
    # several graphs hold. A literal (an sh:targetNode) is the subject of no triple. Oxigraph's
    # iterator is read into a list here, not handed to the comprehension, whose frame a
    # profiler may hold past its call (see pipeline.store.solutions_of): it may only be freed
    # on this thread.
    values: list[Any] = [] if isinstance(focus, pyoxigraph.Literal) else sorted(
        {q.object for q in list(store.quads_for_pattern(focus, prop.path, None, None))},
        key=_term_text)
    focus_text, path = _term_text(focus), prop.path.value

    def result(component: str, value: Any = None) -> Result:
        return Result(focus_text, path, None if value is None else _term_text(value), shape,
                      component, Severity.ERROR,
                      prop.message or prop.defaults[component.removesuffix("ConstraintComponent")])

    if prop.min_count is not None and len(values) < prop.min_count:
        yield result("MinCountConstraintComponent")
    if prop.max_count is not None and len(values) > prop.max_count:
        yield result("MaxCountConstraintComponent")
    if prop.has_value is not None and prop.has_value not in values:
        yield result("HasValueConstraintComponent")
    for value in values:
        kind = _kind(value)
        if prop.members is not None and value not in prop.members:
            yield result("InConstraintComponent", value)
        if prop.node_kind is not None and kind not in prop.node_kind:
            yield result("NodeKindConstraintComponent", value)
        if prop.datatype is not None and not (
                kind == "literal" and value.datatype.value == prop.datatype):
            yield result("DatatypeConstraintComponent", value)
        if prop.pattern is not None:
            text = None if kind == "blank" else value.value
            if text is None or not prop.pattern.search(text):
                yield result("PatternConstraintComponent", value)


# --- reading and routing --------------------------------------------------------------------


class _Shapes:
    """The triples of the shape files, by subject."""

    def __init__(self, quads: Sequence[pyoxigraph.Quad]) -> None:
        self.quads = quads
        self.by_subject: dict[Any, dict[str, list[Any]]] = {}
        # How often a node is the value of a parameter that takes a shape (or a member of a
        # list, as sh:or's are): a compiled shape's triples leave the graph pySHACL reads,
        # so no shape pySHACL evaluates may need them. Other references (a report's
        # sh:sourceShape, an instance's rdf:type of a shape that is a class) do not count.
        self.referenced: dict[Any, int] = {}
        for q in quads:
            self.by_subject.setdefault(q.subject, {}).setdefault(q.predicate.value, []).append(
                q.object)
            if not isinstance(q.object, pyoxigraph.Literal) and (
                    q.predicate.value in _SHAPE_REFERENCES
                    or not q.predicate.value.startswith((SH, RDF_TYPE))):
                self.referenced[q.object] = self.referenced.get(q.object, 0) + 1
        # The parameters of the SPARQL-based (or JS-based) constraint components the files
        # declare: a shape that has a value for one activates the component (SHACL 6.2), a
        # constraint the compiled checks know nothing of.
        self.components: dict[str, list[Any]] = {}
        kinds = {SH + "ConstraintComponent"} | {
            q.subject.value for q in quads if q.predicate.value == _SUBCLASS
            and q.object == pyoxigraph.NamedNode(SH + "ConstraintComponent")
            and isinstance(q.subject, pyoxigraph.NamedNode)}
        for subject in self.by_subject:
            if self.types(subject) & kinds:
                for parameter in self.get(subject, SH + "parameter"):
                    for path in self.get(parameter, SH + "path"):
                        if isinstance(path, pyoxigraph.NamedNode):
                            self.components.setdefault(path.value, []).append(subject)

    def get(self, subject: Any, predicate: str) -> list[Any]:
        return self.by_subject.get(subject, {}).get(predicate, [])

    def types(self, subject: Any) -> set[str]:
        return {t.value for t in self.get(subject, RDF_TYPE) if isinstance(t, pyoxigraph.NamedNode)}

    def custom_parameters(self, subject: Any) -> list[str]:
        """The parameters of declared constraint components the node has values for."""
        return sorted(p for p in self.by_subject.get(subject, {}) if p in self.components)

    def top_level(self) -> list[Any]:
        """The shapes with targets (explicit, or implicit: a node shape that is a class)."""
        tops = []
        for subject, props in self.by_subject.items():
            types = self.types(subject)
            explicit = any(SH + t in props for t in _TARGETS)
            implicit = bool(types & {SH + "NodeShape", SH + "PropertyShape"}) and bool(
                types & _CLASSES)
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
    if SH + "NodeShape" not in types:
        return "not declared a sh:NodeShape"
    extra = _sh_keys(props) - _COMPILED_NODE_KEYS
    if extra:
        return "uses " + ", ".join(f"sh:{k}" for k in sorted(extra))
    if graph.referenced.get(shape):
        return "another shape refers to it"
    custom = graph.custom_parameters(shape)
    if custom:
        return "activates a declared constraint component (" + ", ".join(custom) + ")"
    classes = []
    for cls in props.get(SH + "targetClass", []):
        if not isinstance(cls, pyoxigraph.NamedNode):
            return "a target class that is not an IRI"
        classes.append(cls.value)
    if types & _CLASSES:
        # An implicit class target (SHACL 2.1.3.3): the shape is a class.
        if not isinstance(shape, pyoxigraph.NamedNode):
            return "a blank node shape that is a class"
        classes.append(shape.value)
    nodes = props.get(SH + "targetNode", [])
    if any(isinstance(n, pyoxigraph.BlankNode) for n in nodes):
        # a blank node of the shapes graph is no node of the data graph
        return "a target node that is a blank node"
    checks = []
    for node in props.get(SH + "property", []):
        custom = graph.custom_parameters(node)
        if custom:
            return ("a property shape activates a declared constraint component ("
                    + ", ".join(custom) + ")")
        compiled = _compile_property(graph, node)
        if isinstance(compiled, str):
            return compiled
        checks.append(compiled)
    return CompiledShape(_term_text(shape), tuple(sorted(set(classes))),
                         tuple(sorted(checks, key=lambda c: (c.path.value, c.node))),
                         tuple(sorted(set(nodes), key=_term_text)))


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
        if not re.fullmatch(r"[+-]?[0-9]+", value.value):
            # Ill-typed: no SHACL processor can read the shape (shacl-shacl refuses it).
            raise ShapesUnreadable(f"the shape {_term_text(node)} has sh:{name} "
                                   f"{value.value!r}, which is not an integer")
        return int(value.value)

    try:
        min_count, max_count = count("minCount"), count("maxCount")
    except _NotCompiled as exc:
        return str(exc)
    why = _terms_outside(props)
    if why:
        return why
    kind, datatype = _single(props.get(SH + "nodeKind", [])), _single(props.get(SH + "datatype", []))
    pattern, message = _single(props.get(SH + "pattern", [])), _single(props.get(SH + "message", []))
    try:
        compiled_pattern = None if pattern is None else xpath_regex(pattern.value)
    except PatternNotTranslated:
        return "an sh:pattern RE2 cannot read"
    members = None
    listed = _single(props.get(SH + "in", []))
    if listed is not None:
        items = _list_items(graph, listed)
        if (listed != pyoxigraph.NamedNode(RDF + "nil") and not items) or not all(
                _comparable(v) for v in items):
            return "an sh:in that is not a list of IRIs and strings"
        members = frozenset(items)
    return _PropertyCheck(
        _term_text(node), path, min_count, max_count,
        _NODE_KINDS[kind.value] if kind is not None else None,
        datatype.value if datatype is not None else None, compiled_pattern,
        _single(props.get(SH + "hasValue", [])), members,
        message.value if message is not None else None,
        {name: _default_message(graph, node, f"{SH}{name}ConstraintComponent") for name in (
            "MinCount", "MaxCount", "HasValue", "In", "NodeKind", "Datatype", "Pattern")})


def _comparable(value: Any) -> bool:
    """A term the compiled checks compare as pySHACL does: an IRI or a string. A number or
    a date is stored normalised by Oxigraph ("01"^^xsd:integer as "1"), which pySHACL
    (rdflib normalises both sides) reads as equal and a term comparison would not."""
    return isinstance(value, pyoxigraph.NamedNode) or (
        isinstance(value, pyoxigraph.Literal) and value.datatype.value in _COMPILED_DATATYPES)


def _terms_outside(props: Mapping[str, list[Any]]) -> str | None:
    """Why a property shape's parameters are outside the compiled subset, if they are."""
    kind = _single(props.get(SH + "nodeKind", []))
    if kind is not None and (not isinstance(kind, pyoxigraph.NamedNode)
                             or kind.value not in _NODE_KINDS):
        return "an sh:nodeKind that is not one of SHACL's six"
    datatype = _single(props.get(SH + "datatype", []))
    if datatype is not None and (not isinstance(datatype, pyoxigraph.NamedNode)
                                 or datatype.value not in _COMPILED_DATATYPES):
        return "an sh:datatype whose lexical space the compiled checks do not test"
    for name in ("pattern", "message"):
        value = _single(props.get(SH + name, []))
        if value is not None and not isinstance(value, pyoxigraph.Literal):
            return f"an sh:{name} that is not a literal"
    value = _single(props.get(SH + "hasValue", []))
    if value is not None and not _comparable(value):
        # A blank node of the shapes graph is in no data graph; a number or a date: see
        # _comparable.
        return "an sh:hasValue that is not an IRI or a string"
    return None


class _NotCompiled(Exception):
    pass


class ProfileShapes:
    """A profile's shapes, read and routed once per Checker (immutable once built)."""

    def __init__(self, files: Sequence[Any], timeout: float = bounded.SHAPE_TIMEOUT) -> None:
        if not timeout > 0:
            raise ConfigurationError(f"the shape timeout must be a positive number of "
                                     f"seconds, not {timeout!r}")
        self.files = tuple(files)
        self.timeout = float(timeout)
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
                _no_bidi(file.source, q)
                sources.setdefault(q.subject, file.reference)
                if isinstance(q.subject, pyoxigraph.BlankNode) and q.subject not in names:
                    names[q.subject] = f"{file.reference}#blank-{len(names) + 1}"
            quads.extend(parsed)
        graph = _Shapes(quads)
        self._graph = graph
        self._names = names
        routes, compiled, unsupported = [], [], []
        self._not_evaluated: list[str] = []
        for shape in graph.top_level():
            name, source = self.name_of(shape), sources.get(shape, "")
            features = _features(graph, shape)
            used = features & _UNSUPPORTED
            datatypes = sorted(f[len("datatype:"):] for f in features
                               if f.startswith("datatype:"))
            patterns = sorted(f[len("pattern:"):] for f in features if f.startswith("pattern:"))
            queries = sorted(f[len("sparql:"):] for f in features if f.startswith("sparql:"))
            why = ("uses " + ", ".join(f"sh:{k}" for k in sorted(used))
                   + " (SHACL Advanced Features or SHACL-JS)") if used else (
                "has a SPARQL query that SHACL-SPARQL cannot evaluate: "
                + "; ".join(queries)) if queries else (
                "has an sh:pattern that RE2 cannot read as XPath does: "
                + "; ".join(patterns)) if patterns else (
                "uses sh:datatype " + ", ".join(datatypes) + ", which the check's store "
                "cannot tell: Oxigraph keeps such a value as " + ", ".join(sorted(
                    {_STORED_AS[d] for d in datatypes})) + " (oxigraph/oxigraph#526)"
            ) if datatypes else _recursion(graph, shape, self.name_of)
            if why:
                routes.append(ShapeRoute(name, ROUTE_UNSUPPORTED, why, source))
                unsupported.append(name)
                self._not_evaluated.append(f"the shape {name} {why}")
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
        self._pyshacl_shapes: _PyshaclShapes | None = None
        self._lock = threading.Lock()
        self._permitted: dict[tuple[str, str | None, str], tuple[str, ...]] = {}
        self.digest = hashlib.sha256(b"".join(f.digest.encode() for f in self.files)).hexdigest()

    def name_of(self, subject: Any) -> str:
        """An IRI shape by its IRI; a blank one by its file and its place in it."""
        return self._names.get(subject) or _term_text(subject)

    def permitted(self, result: Result) -> list[str]:
        """The values a shape lists for the path of a result of it (sh:in, sh:hasValue), as
        their lexical forms or IRIs: what a renegotiation may propose. Empty where it lists
        none (a pattern, a count, a SPARQL constraint)."""
        parameter = {"InConstraintComponent": "in",
                     "HasValueConstraintComponent": "hasValue"}.get(result.component)
        if parameter is None:
            return []
        # Read once for each shape and path: a list of a thousand values, violated by every
        # check, costs its walk once (the cache holds no more than the shapes' parameters).
        key = (result.shape, result.path, parameter)
        if key not in self._permitted:
            self._permitted[key] = self._listed(result, parameter)
        return list(self._permitted[key])

    def _listed(self, result: Result, parameter: str) -> tuple[str, ...]:
        values: set[str] = set()
        graph = self._graph
        for subject in graph.by_subject:
            if self.name_of(subject) != result.shape:
                continue
            for node in (subject, *graph.get(subject, SH + "property")):
                paths = [_term_text(p) for p in graph.get(node, SH + "path")]
                if node != subject and paths != [result.path]:
                    continue
                for value in graph.get(node, SH + parameter):
                    items = _list_items(graph, value) if parameter == "in" else [value]
                    values.update(v.value for v in items if not isinstance(
                        v, pyoxigraph.BlankNode))
        return tuple(sorted(values))

    def pyshacl_names(self) -> list[str]:
        """The shapes pySHACL evaluates, by name."""
        return [r.shape for r in self.routes if r.engine == ROUTE_PYSHACL]

    @property
    def needs_pyshacl(self) -> bool:
        return any(r.engine == ROUTE_PYSHACL for r in self.routes)

    def dependencies(self) -> list[dict[str, str]]:
        return [{"reference": f.reference, "sha256": f.digest} for f in self.files]

    def shacl_graph(self) -> Any:
        """The shapes pySHACL evaluates, as an rdflib graph, built once: every triple of the
        files but those of compiled shapes, with sh:pattern translated (see the module)."""
        return self._pyshacl().graph

    def _pyshacl(self) -> "_PyshaclShapes":
        # Built at the first check that needs it (an explain or a profile whose shapes are
        # all compiled never imports pySHACL), once, whichever thread gets there first.
        with self._lock:
            if self._pyshacl_shapes is None:
                self._pyshacl_shapes = _PyshaclShapes(
                    [q for q in self._quads if q.subject not in self._compiled_nodes],
                    self.name_of, {r.shape for r in self.routes}, self._graph)
            return self._pyshacl_shapes

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
            raise Unevaluable("; ".join(self._not_evaluated) + ", which is not evaluated",
                              _ordered(results))
        if self.needs_pyshacl and triples > MAX_PYSHACL_TRIPLES:
            raise Unevaluable(
                f"the input brings {triples:,} triples, more than the "
                f"{MAX_PYSHACL_TRIPLES:,} the profile's pySHACL shapes are evaluated over "
                "(pySHACL's cost grows with them by milliseconds each)", _ordered(results))
        if self.needs_pyshacl:
            pyshacl = self.pyshacl_names()
            try:
                results.extend(bounded.run(
                    _worker_results,
                    # N-Quads, as Oxigraph writes and reads them (blank nodes keep their
                    # labels), cost a tenth of pickling the quads
                    (self.digest, store.dump(format=pyoxigraph.RdfFormat.N_QUADS)),
                    self.timeout, prepare=(_worker_prepare, (self.files,), self.digest)))
            except bounded.DeadlineExceeded as exc:
                raise Unevaluable(
                    f"the shape{'s' if len(pyshacl) > 1 else ''} {', '.join(pyshacl)} "
                    f"(evaluated by pySHACL) did not finish within the {self.timeout:g} s "
                    "bound on a shape evaluation, so the evaluation was stopped",
                    _ordered(results)) from exc
            except (Unevaluable, bounded.WorkerFailed) as exc:
                # pySHACL evaluates its shapes in one run, which fails as a whole: the
                # reason names the shapes of that run (the one at fault is among them).
                which = (f"the shape {pyshacl[0]}" if len(pyshacl) == 1 else
                         f"one of the shapes {', '.join(pyshacl)}")
                raise Unevaluable(f"{which} (evaluated by pySHACL) failed: {exc}",
                                  _ordered(results)) from exc
        # A result said twice (two property shapes of one shape with the same finding) is
        # one reason.
        return _ordered(results)


class _PyshaclShapes:
    """The shapes of the pySHACL route, read by pySHACL once: the rdflib graph, and
    pySHACL's :class:`~pyshacl.ShapesGraph` over it with its shapes harvested, which every
    check's validation reuses (pySHACL's ``validate`` would read them anew each time)."""

    def __init__(self, quads: Sequence[pyoxigraph.Quad], name_of: Callable[[Any], str],
                 top_level: set[str], source: "_Shapes") -> None:
        import rdflib
        from pyshacl import ShapesGraph

        self.graph, blanks = _rdflib_graph(quads)
        self.source = source
        self.blanks = {str(b): pyoxigraph.BlankNode(k) for k, b in blanks.items()}
        self.name_of = name_of
        # A result names its shape by the rdflib node pySHACL read: back to this set's
        # names, a property shape by the top-level shape it belongs to (through property
        # shapes of property shapes, whose results SHACL reports as they are; the first
        # owner in the file when several share one).
        names: dict[str, str] = {
            f"_:{b}": name_of(pyoxigraph.BlankNode(k)) for k, b in blanks.items()}

        def name(node: Any) -> str:
            key = _rdflib_shape_name(node)
            return names.get(key, key)

        owners: dict[str, str] = {}
        for subject, node in self.graph.subject_objects(rdflib.URIRef(SH + "property")):
            owners.setdefault(name(node), name(subject))
        self.parents: dict[str, str] = {}  # a result's sh:sourceShape -> the shape it names
        for key in {*names, *owners}:
            shape = names.get(key, key)
            seen = {shape}
            while shape not in top_level and owners.get(shape, shape) not in seen:
                shape = owners[shape]
                seen.add(shape)
            self.parents[key] = shape
        self.shapes = ShapesGraph(self.graph, logger=_PYSHACL_LOG)
        try:
            # The harvest, here rather than in the first check: it is the part of pySHACL's
            # work that depends on the shapes alone.
            list(self.shapes.shapes)
            self.shapes.custom_constraints  # noqa: B018 - a lazy property, read to fill it
            self.error: Unevaluable | None = None
        except Exception as exc:  # pySHACL's errors, mapped at this one boundary
            self.error = Unevaluable(self.stable(f"pySHACL cannot read the shapes: "
                                                 f"{type(exc).__name__}: {exc}"))

    def stable(self, text: str) -> str:
        """pySHACL's text with the rdflib labels of this process's blank nodes (which it
        writes in its errors) replaced by the shapes' names: a reason reads the same in
        every run."""
        return _RDFLIB_BLANK.sub(lambda m: self.name_of(self.blanks[m[0]]) if m[0] in self.blanks
                                 else "a blank node", text)

    def authored(self, shape: Any, constraint: Any, component: str) -> bool:
        """Whether a result's messages are the profile's own (an ``sh:message`` of its
        shape, of its SPARQL constraint, of its declared component or one of the
        component's validators) rather than pySHACL's. pySHACL's own messages are not
        kept: they write lists and shapes in set order and blank nodes by labels of this
        process, so the same check would not read the same twice."""
        import rdflib

        message = rdflib.URIRef(SH + "message")
        nodes = [shape, constraint]
        if component and not component.startswith(SH):
            node = rdflib.URIRef(component)
            nodes.append(node)
            for kind in ("validator", "nodeValidator", "propertyValidator"):
                nodes.extend(self.graph.objects(node, rdflib.URIRef(SH + kind)))
        return any(n is not None and (n, message, None) in self.graph for n in nodes)

    def default_message(self, shape: Any, component: str) -> str:
        """A result's message when the profile gives none (see :func:`_default_message`),
        read from the shapes as the files have them (the rdflib graph's sh:pattern is
        translated)."""
        import rdflib

        term: Any = None
        if isinstance(shape, rdflib.URIRef):
            term = pyoxigraph.NamedNode(str(shape))
        elif isinstance(shape, rdflib.BNode):
            term = self.blanks.get(str(shape))
        return _default_message(self.source, term, component)

    def results(self, store: pyoxigraph.Store) -> Iterator[Result]:
        import rdflib
        from pyshacl import Validator
        from pyshacl.errors import ValidationFailure

        if self.error is not None:
            raise self.error
        try:
            # The Validator makes a ShapesGraph of the graph it is given, adding two triples
            # to it: an empty graph of its own, so that the shapes' graph, which checks on
            # other threads read, is never written after it is built. Then the shapes read
            # once take its place.
            validator = Validator(_data_graph(store),
                                  shacl_graph=rdflib.Graph(),
                                  options={"inplace": True, "allow_warnings": True,
                                           "allow_infos": True, "logger": _PYSHACL_LOG})
            validator.shacl_graph = self.shapes
            _, report, _ = validator.run()  # type: ignore[no-untyped-call]
        except ValidationFailure as exc:
            # SHACL 3.6.2's failure: the shapes could not be evaluated over this data (a
            # SPARQL query the spec forbids, a recursion pySHACL refuses).
            raise Unevaluable(self.stable(f"pySHACL reported a validation failure: {exc}")
                              ) from exc
        except Exception as exc:  # pySHACL's errors, mapped at this one boundary
            raise Unevaluable(self.stable(f"{type(exc).__name__}: {exc}")) from exc
        yield from _report_results(report, self, store)


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


# In a worker process: the profiles' shapes it has read, by their files' digest.
_WORKER_SHAPES: dict[str, ProfileShapes] = {}


def _worker_prepare(files: Sequence[Any]) -> None:
    """In a worker (``bounded.run``'s preparation, once a worker for each set of files): the
    shapes read, and pySHACL's reading of them, outside any check's deadline."""
    shapes = ProfileShapes(files)
    shapes._pyshacl()
    _WORKER_SHAPES[shapes.digest] = shapes


def _worker_results(digest: str, quads: bytes) -> list[Result]:
    """In a worker process (``bounded.run``): the pySHACL shapes' results over a store of
    ``quads`` (N-Quads), the shapes those prepared under ``digest``."""
    shapes = _WORKER_SHAPES[digest]
    store = pyoxigraph.Store()
    store.bulk_extend(pyoxigraph.parse(quads, pyoxigraph.RdfFormat.N_QUADS))
    return list(shapes._pyshacl().results(store))


# The triples a check (the envelope and its task) or a registration may bring to a store
# that pySHACL validates: its Core constraints cost about a millisecond a focus node and a
# value, so an envelope within the input limits (16,384 values) could hold a check for
# seconds. Past it the pySHACL shapes are not evaluated (constraint.shape-unevaluable, which
# names the limit); compiled shapes, linear and cheap, always are.
MAX_PYSHACL_TRIPLES = 2000


def _ordered(results: Iterable[Result]) -> list[Result]:
    return sorted(set(results), key=lambda r: (r.shape, r.focus, r.path or "", r.component,
                                               r.value or "", r.message))


class Unevaluable(IoaSemanticError):
    """The shapes could not be evaluated over a check's store (an unsupported feature, a
    recursive shape, a SPARQL error, SHACL's validation failure, an input past
    MAX_PYSHACL_TRIPLES): the check is indeterminate (``constraint_findings`` says so).
    ``results`` are those of the compiled shapes, which were evaluated."""

    def __init__(self, message: str, results: Sequence["Result"] = ()) -> None:
        super().__init__(message)
        self.results = tuple(results)


def _base_of(source: str) -> str | None:
    return source if source.startswith(("http://", "https://")) else None


def _features(graph: _Shapes, shape: Any) -> set[str]:
    """The SHACL terms a shape uses, with those of every node it reaches; a datatype the
    check's store cannot tell apart as ``datatype:<IRI>``."""
    used: set[str] = set()
    pending, seen = [shape], {shape}
    while pending:
        node = pending.pop()
        for predicate, values in graph.by_subject.get(node, {}).items():
            if predicate.startswith(SH):
                used.add(predicate[len(SH):])
            if predicate == SH + "datatype":
                used.update(f"datatype:{v.value}" for v in values
                            if isinstance(v, pyoxigraph.NamedNode) and v.value in _STORED_AS)
            if predicate in (SH + "select", SH + "ask"):
                for value in values:
                    text = value.value if isinstance(value, pyoxigraph.Literal) else ""
                    # Both the text's rules and the parsed query's forms: the parse is
                    # the authority on what SPARQL would run.
                    unparsed = sparql.parse_problem(text, {})
                    problems = [*sparql.problems(text), *([unparsed] if unparsed else [])]
                    used.update(f"sparql:{p}" for p in problems)
            if predicate == SH + "pattern":
                # SHACL reads one sh:flags beside the patterns (pySHACL the first one)
                flags = graph.get(node, SH + "flags")
                flag_text = flags[0].value if flags and isinstance(
                    flags[0], pyoxigraph.Literal) else ""
                for value in values:
                    try:
                        xpath_regex(value.value if isinstance(value, pyoxigraph.Literal)
                                    else "", flag_text)
                    except PatternNotTranslated as exc:
                        used.add(f"pattern:{exc}")
            # A declared component the node activates is used too (its validators may be
            # SHACL-JS).
            for value in [*values, *graph.components.get(predicate, ())]:
                if value in graph.by_subject and value not in seen:
                    seen.add(value)
                    pending.append(value)
    return used


def _no_bidi(source: str, quad: pyoxigraph.Quad) -> None:
    """A shape file's IRIs held to RFC 3987 (4.1) as a profile's are (Turtle allows a
    bidirectional formatting character; a shape's name goes into every finding it makes)."""
    for term in (quad.subject, quad.predicate, quad.object):
        if isinstance(term, pyoxigraph.NamedNode) and (bidi := bidi_defect(term.value)):
            raise ShapesUnreadable(f"{source}: the IRI <{shown_iri(term.value)}> has "
                                   f"{bidi.describe()}")


def _recursion(graph: _Shapes, shape: Any, name_of: Callable[[Any], str]) -> str:
    """Why the shape is recursive ("" when it is not): it reaches a shape that refers back
    through the shape-expecting parameters (SHACL 3.4.3, which leaves such validation to
    each processor; pySHACL backs out after a few levels and calls the data valid)."""
    path: list[Any] = []
    done: set[Any] = set()

    def references(node: Any) -> Iterator[Any]:
        for parameter in ("node", "property", "qualifiedValueShape", "not"):
            yield from graph.get(node, SH + parameter)
        for parameter in ("and", "or", "xone"):
            for head in graph.get(node, SH + parameter):
                seen = set()
                while head in graph.by_subject and head not in seen:
                    seen.add(head)
                    yield from graph.get(head, RDF + "first")
                    head = _single(graph.get(head, RDF + "rest"))

    # The walk keeps its own stack (each node on the path with the references it has yet to
    # visit), not Python's: a profile chooses how deep its shapes refer, and a chain of a few
    # thousand would pass the interpreter's recursion limit.
    on_path: set[Any] = set()
    stack: list[tuple[Any, Iterator[Any]]] = []

    def enter(node: Any) -> str:
        if node in on_path:
            return "is recursive: " + " -> ".join(
                name_of(n) for n in [*path[path.index(node):], node]) + (
                " (SHACL leaves the validation of recursive shapes undefined)")
        if node not in done:
            path.append(node)
            on_path.add(node)
            stack.append((node, references(node)))
        return ""

    found = enter(shape)
    while stack and not found:
        node, pending = stack[-1]
        reference = next(pending, _END)
        if reference is _END:
            stack.pop()
            path.pop()
            on_path.discard(node)
            done.add(node)
        else:
            found = enter(reference)
    return found


_END = object()  # a walk's references exhausted


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

    # sh:pattern as written: the worker's pySHACL compiles it with RE2 (bounded.prepare_worker)
    for q in quads:
        graph.add((term(q.subject), term(q.predicate), term(q.object)))
    return graph, blanks


def _report_results(report: Any, route: "_PyshaclShapes",
                    store: pyoxigraph.Store) -> Iterator[Result]:
    import rdflib

    sh = rdflib.Namespace(SH)
    for result in report.objects(None, sh.result):
        source = report.value(result, sh.sourceShape)
        source_name = _rdflib_shape_name(source)
        focus = report.value(result, sh.focusNode)
        path = report.value(result, sh.resultPath)
        severity = _SEVERITIES.get(str(report.value(result, sh.resultSeverity)), Severity.ERROR)
        component = str(report.value(result, sh.sourceConstraintComponent) or "")
        constraint = report.value(result, sh.sourceConstraint)
        messages = sorted(str(m) for m in report.objects(result, sh.resultMessage))
        if not (messages and route.authored(source, constraint, component)):
            messages = [route.default_message(source, component)]
        focus_term = _store_term(store, focus)
        yield Result(
            _value_text(focus) or "",
            str(path) if isinstance(path, rdflib.URIRef) else (
                None if path is None else "(a complex path)"),
            _value_text(report.value(result, sh.value), focus_term,
                        path if isinstance(path, rdflib.URIRef) else None, store),
            route.parents.get(source_name, source_name),
            component.rpartition("#")[2],
            severity,
            messages[0])


def _default_message(graph: "_Shapes", shape: Any, component: str) -> str:
    """A result's message when the profile gives none, the same whichever route found it:
    the parameter the value or focus node fails, with its values when they are IRIs or
    literals (a list or a shape is not written out)."""
    if not component.startswith(SH):
        return f"the constraint component {component} is not met"
    name = component[len(SH):].removesuffix("ConstraintComponent")
    parameter = "sparql" if name == "SPARQL" else name[:1].lower() + name[1:]
    texts = [_parameter_text(graph, v) for v in (
        graph.get(shape, SH + parameter) if shape is not None else [])]
    if texts and None not in texts:
        return f"sh:{parameter} " + ", ".join(sorted(t for t in texts if t)) + " is not met"
    return f"sh:{parameter} is not met"


def _list_items(graph: "_Shapes", head: Any) -> list[Any]:
    """The members of an RDF list (none for a malformed one)."""
    items, seen = [], set()
    while head != pyoxigraph.NamedNode(RDF + "nil"):
        first, rest = graph.get(head, RDF + "first"), graph.get(head, RDF + "rest")
        if head in seen or len(first) != 1 or len(rest) != 1:
            return []
        seen.add(head)
        items.append(first[0])
        head = rest[0]
    return items


def _parameter_text(graph: "_Shapes", value: Any) -> str | None:
    """A parameter's value as a message writes it: a term, or a list of terms in its
    order (sh:in); None for a shape or a list of anything else."""
    if isinstance(value, pyoxigraph.Literal) and value.datatype.value in _AS_WRITTEN:
        return value.value  # 1, not "1"^^<...#integer>, as Turtle writes it
    if not isinstance(value, pyoxigraph.BlankNode):
        return _term_text(value)
    items, seen = [], set()
    while value != pyoxigraph.NamedNode(RDF + "nil"):
        first, rest = graph.get(value, RDF + "first"), graph.get(value, RDF + "rest")
        if value in seen or len(first) != 1 or len(rest) != 1 or isinstance(
                first[0], pyoxigraph.BlankNode):
            return None
        seen.add(value)
        items.append(_parameter_text(graph, first[0]) or "")
        value = rest[0]
    return "(" + " ".join(items) + ")"


def _rdflib_shape_name(node: Any) -> str:
    import rdflib

    return f"_:{node}" if isinstance(node, rdflib.BNode) else str(node)


def _rdflib_term(term: Any) -> Any:
    """A pyoxigraph term as pySHACL reads it (rdflib normalises a literal's lexical form:
    "2011-01-01"^^xsd:dateTime becomes "2011-01-01T00:00:00")."""
    import rdflib

    if isinstance(term, pyoxigraph.NamedNode):
        return rdflib.URIRef(term.value)
    if isinstance(term, pyoxigraph.BlankNode):
        return rdflib.BNode(term.value)
    if term.language:
        return rdflib.Literal(term.value, lang=term.language)
    return rdflib.Literal(term.value, datatype=rdflib.URIRef(term.datatype.value))


def _store_term(store: pyoxigraph.Store, node: Any) -> Any:
    """The store's term for a focus node of pySHACL's report, when it is not a literal
    (pySHACL keeps a blank node's label)."""
    import rdflib

    if isinstance(node, rdflib.URIRef):
        return pyoxigraph.NamedNode(str(node))
    if isinstance(node, rdflib.BNode):
        return pyoxigraph.BlankNode(str(node))
    return None


def _value_text(value: Any, focus: Any = None, path: Any = None,
                store: pyoxigraph.Store | None = None) -> str | None:
    """A term of pySHACL's report as this module writes terms. A literal is written as the
    data has it, not as rdflib normalised it: the value of ``path`` from ``focus`` that
    rdflib reads as the reported literal."""
    import rdflib

    if value is None:
        return None
    if isinstance(value, rdflib.URIRef):
        return str(value)
    if isinstance(value, rdflib.BNode):
        return f"_:{value}"
    if store is not None and focus is not None and path is not None:
        literals = {q.object for q in store.quads_for_pattern(
            focus, pyoxigraph.NamedNode(str(path)), None, None)
            if isinstance(q.object, pyoxigraph.Literal)}
        same = [v for v in literals if _rdflib_term(v) == value]
        if len(same) == 1:
            return _term_text(same[0])
    return _term_text(pyoxigraph.Literal(str(value), language=value.language) if value.language
                      else pyoxigraph.Literal(str(value), datatype=pyoxigraph.NamedNode(
                          str(value.datatype or XSD + "string"))))


# --- the check's graph ----------------------------------------------------------------------


def task_quads(parameters: Iterable[tuple[str, str]], envelope: Any,
               kinds: Mapping[str, str] | None = None) -> list[pyoxigraph.Quad]:
    """The task parameters as one node the shapes can target (``iop:TaskParameters``), and
    the check's links to it and to the envelope (its top node's term in the store). A
    parameter ``kinds`` declares an integer, a decimal or a date-time is a literal of that
    datatype (6.4: values compare by the profile's types, never as strings, so a shape's
    ``sh:maxInclusive 2048`` reads 300 as a number); the others are plain strings."""
    kinds = kinds or {}
    quads = [pyoxigraph.Quad(TASK, _RDF_TYPE, pyoxigraph.NamedNode(TASK_PARAMETERS), TASK_GRAPH),
             pyoxigraph.Quad(CHECK, pyoxigraph.NamedNode(IOP + "task"), TASK, TASK_GRAPH),
             pyoxigraph.Quad(CHECK, pyoxigraph.NamedNode(IOP + "envelope"), envelope,
                             TASK_GRAPH)]
    for name, value in parameters:
        try:
            quads.append(pyoxigraph.Quad(
                TASK, pyoxigraph.NamedNode(IOPARAM + quote(name, safe="")),
                _task_literal(value, _TYPED.get(kinds.get(name, ""))), TASK_GRAPH))
        except (UnicodeError, ValueError) as exc:
            # A lone surrogate (bytes a command line could not decode): no RDF term holds
            # it, so the shapes cannot read the task. Raised as the shapes' own failure.
            raise Unevaluable(f"the task parameter {name!a} is not Unicode text, so the "
                              "shapes cannot read it") from exc
    return quads


# The declared datatypes whose values the shapes see typed (the others, strings, IRIs,
# languages and media types, stay plain literals, as the shipped shapes read them).
_TYPED = {"integer": XSD + "integer", "decimal": XSD + "decimal",
          "dateTime": XSD + "dateTime"}


def _task_literal(value: str, datatype: str | None) -> pyoxigraph.Literal:
    if datatype is None:
        return pyoxigraph.Literal(value)
    return pyoxigraph.Literal(value, datatype=pyoxigraph.NamedNode(datatype))


def constraint_findings(shapes: ProfileShapes, store: pyoxigraph.Store,
                        envelope: Any = None, triples: int = 0) -> list[Finding]:
    """The profile's shapes over one check's store, as reasons (see the module); ``envelope``
    is the top node's term, named "the envelope" in them; ``triples`` the number of the
    envelope's and the task's."""
    return constraint_outcome(shapes, store, envelope, triples)[0]


def places(blanks: Mapping[str, Any], located: Iterable[Any]) -> dict[str, str]:
    """Where each blank node of the envelope's graph is in the input: its label (as
    ``_:<label>``) to the JSON Pointer of the node object it stands for, from the
    baseline's located nodes (expanded node, compact object, pointer)."""
    pointers = {id(node): pointer for node, _, pointer in located}
    return {f"_:{label}": pointers[id(obj)] for label, obj in blanks.items()
            if id(obj) in pointers}


def constraint_outcome(shapes: ProfileShapes, store: pyoxigraph.Store, envelope: Any = None,
                       triples: int = 0, places: Mapping[str, str] | None = None
                       ) -> tuple[list[Finding], list[Remedy]]:
    """:func:`constraint_findings`, with the remedies they propose: for each violated shape,
    ``renegotiate`` by the sender, its ``field`` the parameter (or property) in conflict and
    ``permitted`` the values the shape lists for it (sh:in, sh:hasValue), where it does."""
    top = None if envelope is None else _term_text(envelope)
    try:
        results = shapes.results(store, triples)
        missing: list[Finding] = []
    except Unevaluable as exc:
        results, missing = list(exc.results), [unevaluable(exc)]
    findings = [as_finding(r, top, places) for r in results]
    proposed = [remedy("renegotiate", SENDER, ("constraint.shape-violated",),
                       **_field(r), shape=r.shape, permitted=shapes.permitted(r))
                for r in results if r.severity is Severity.ERROR]
    return findings + missing, proposed


def _field(result: Result) -> dict[str, str]:
    """The remedy's ``field``: the task parameter's name for a path in the parameter
    namespace, else the path; none for a constraint on the node itself (a SHACL-SPARQL
    constraint, a count of the node's own): the ``shape`` member names what to meet."""
    if result.path is None:
        return {}
    if result.path.startswith(IOPARAM):
        return {"field": unquote(result.path[len(IOPARAM):])}
    return {"field": result.path}


def unevaluable(exc: Unevaluable) -> Finding:
    """The reason for shapes that could not be evaluated."""
    return finding("constraint.shape-unevaluable", "the profile's shapes could not be "
                   f"evaluated, so its required constraints are not known to hold: {exc}", "")


def as_finding(result: Result, envelope: str | None,
               places: Mapping[str, str] | None = None) -> Finding:
    focus = "the envelope" if result.focus == envelope else result.focus
    where = f"focus node {focus}"
    if result.path is not None:
        where += f", path {result.path}"
    if result.value is not None:
        where += f", value {'the envelope' if result.value == envelope else result.value}"
    message = (f"the profile shape {result.shape} ({result.component}) says: "
               f"{result.message} ({where})")
    # An IRI focus node is where the reason points (contract 2: an IRI where one applies); a
    # blank node of the envelope at the JSON Pointer of its object; a literal (a focus of
    # sh:targetNode or sh:targetObjectsOf) or another blank node is no place of its own,
    # so the reason is about the document.
    blank_or_literal = result.focus.startswith(("_:", '"'))
    path = (places or {}).get(result.focus, "") if blank_or_literal else result.focus
    if result.severity is Severity.ERROR:
        return finding("constraint.shape-violated", message, path)
    return finding("constraint.shape-warning", message, path, severity=result.severity)




# What a shape may look at beyond its focus node's own values: a SPARQL query may read any
# node of the graph (a SPARQL-based constraint or component, a custom component declared
# in the files); and what makes focus nodes or values of nodes a registration only names.
_NON_LOCAL = frozenset({"sparql", "select", "ask", "validator", "nodeValidator",
                        "propertyValidator", "SPARQLConstraint", "ConstraintComponent",
                        # An inverse path walks back to whatever names a node, and these
                        # targets find focus nodes by what points at them or by name: in a
                        # batch, another registration's triples could be among them.
                        "inversePath", "targetObjectsOf", "targetSubjectsOf", "targetNode"})


def reads_beyond_focus(shapes: ProfileShapes) -> bool:
    """Whether some shape may read nodes other than its focus nodes and the values reached
    from them by paths (so a batch of registrations in one graph could change its results)."""
    for quad in shapes._quads:
        for term in (quad.predicate, quad.object):
            if isinstance(term, pyoxigraph.NamedNode) and term.value.startswith(SH) and (
                    term.value[len(SH):] in _NON_LOCAL):
                return True
    return False
