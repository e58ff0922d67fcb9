"""A profile's shape files, linted (``ioa-check lint --profile P``) and explained
(``ioa-check lint --explain``).

Lint reads each file the profile names (``iop:shapes``) as a check would, and reports what
would make the check refuse the profile or judge nothing: a file that cannot be read or is
not Turtle (with its line), SHACL that SHACL's own shapes reject (the W3C "shapes for
SHACL", shacl-shacl, as pySHACL ships it), a shape routed ``unsupported`` (every check under
the profile would be indeterminate), and, as a warning, a file in which no shape has a
target (it checks nothing by itself). The files are judged together, as the check routes
them: a property shape may live in another file than the node shape that uses it.

Explain lists, for every top-level shape, the engine that evaluates it and why
(:attr:`ProfileShapes.routes`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pyoxigraph

from .._exceptions import IoaSemanticError, ProfileError
from .._files import CONFIGURATION_BYTES, Unreadable, read_bounded
from .._findings import Severity
from .._vocab import RDF, RDFS, SH, XSD
from ..pipeline import bounded
from ..pipeline.bounded import SHAPE_TIMEOUT
from ..pipeline.constraints import ROUTE_UNSUPPORTED, ProfileShapes, ShapeRoute, ShapesUnreadable
from ..reporters.lint import NO_TOP_LEVEL, Explained, Linted, Problem
from ..sources.loader import Profile, ProfileUnavailable, ShapeFile, load_shape_files

_SHSH = "http://www.w3.org/ns/shacl-shacl#"


def shown(source: str) -> str:
    """A shape file's place as a report shows it: a local file relative to the working
    folder when it is under it, anything else as the loader names it."""
    if os.path.isabs(source):
        relative = os.path.relpath(source)
        if not relative.startswith(os.pardir):
            return relative
    return source


def read_shape_file(path: str) -> ShapeFile:
    """A shape file named on the command line. Raises :class:`ProfileError`."""
    try:
        data = read_bounded(path, CONFIGURATION_BYTES, "for a shape file")
    except Unreadable as exc:
        raise ProfileError(f"{path}: {exc}") from None
    return ShapeFile(path, path, data, hashlib.sha256(data).hexdigest())


def explain(files: Sequence[ShapeFile]) -> list[Explained]:
    """Each file's top-level shapes with their engine, routed together as a check routes
    them. Raises :class:`~ioa_semantic.pipeline.constraints.ShapesUnreadable`."""
    by_source = _routes_by_source(ProfileShapes(files))
    return [Explained(shown(f.source), f.reference, tuple(by_source.get(f.reference, ())))
            for f in files]


def lint_shape_files(profile: Profile, timeout: float = SHAPE_TIMEOUT) -> list[Linted]:
    """The profile's shape files, each with its problems (see the module); SHACL's own
    shapes are evaluated over them in a worker process, stopped after ``timeout`` seconds."""
    loaded: list[tuple[str, ShapeFile]] = []
    unloaded: dict[str, Problem] = {}
    for reference in profile.shapes:
        try:
            # One file at a time, so that each missing one is reported on its own.
            (file,) = load_shape_files(profile._replace(shapes=(reference,)))
        except ProfileUnavailable:
            unloaded[reference] = Problem("not checked: a remote shape file, and lint "
                                          "retrieves nothing", Severity.WARNING)
            continue
        except ProfileError as exc:
            unloaded[reference] = Problem(str(exc).removeprefix(f"{profile.source}: "))
            continue
        loaded.append((shown(file.source), file))

    problems: dict[str, list[Problem]] = {f.reference: [] for _, f in loaded}
    parsed: list[tuple[ShapeFile, list[pyoxigraph.Quad]]] = []
    for _, file in loaded:
        try:
            quads = _parse(file)
        except SyntaxError as exc:
            message = str(exc.msg)
            # pyoxigraph's message repeats the place first ("Parser error at line 5 between
            # columns 4 and 15: ..."): the line is given once, before it.
            where, _, reason = message.partition(": ")
            if where.startswith("Parser error") and reason:
                message = reason
            problems[file.reference].append(Problem(
                f"line {exc.lineno}: not valid Turtle: {message}", line=exc.lineno))
            continue
        except ValueError as exc:
            problems[file.reference].append(Problem(f"not valid Turtle: {exc}"))
            continue
        if any(isinstance(t, pyoxigraph.Triple) for q in quads for t in (q.subject, q.object)):
            # Turtle 1.2's <<( )>> and << >>: SHACL and pySHACL read RDF 1.1 graphs only.
            problems[file.reference].append(Problem(
                "holds an RDF 1.2 triple term (<<( ... )>> or << ... >>), which SHACL does not "
                "read: the shapes cannot be evaluated"))
            continue
        parsed.append((file, quads))
    if parsed:
        _judge(parsed, problems, timeout)
    reports = {file.reference: Linted(name, tuple(problems[file.reference]))
               for name, file in loaded}
    reports.update((ref, Linted(ref, (problem,))) for ref, problem in unloaded.items())
    return [reports[reference] for reference in profile.shapes]


def _parse(file: ShapeFile) -> list[pyoxigraph.Quad]:
    # As ProfileShapes parses them (the same blank nodes in the same order, hence the same
    # names for them).
    base = file.source if file.source.startswith(("http://", "https://")) else None
    return list(pyoxigraph.parse(file.data, pyoxigraph.RdfFormat.TURTLE, base_iri=base,
                                 without_named_graphs=True))


def _routes_by_source(shapes: ProfileShapes) -> dict[str, list[ShapeRoute]]:
    by_source: dict[str, list[ShapeRoute]] = {}
    for route in sorted(shapes.routes, key=lambda r: _natural(r.shape)):
        by_source.setdefault(route.source, []).append(route)
    return by_source


def _natural(name: str) -> list[Any]:
    """A sort key that puts ``#blank-2`` before ``#blank-10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _judge(parsed: Sequence[tuple[ShapeFile, list[pyoxigraph.Quad]]],
           problems: dict[str, list[Problem]], timeout: float) -> None:
    """The problems of the readable files, judged together, added to ``problems``."""
    files = [file for file, _ in parsed]
    try:
        routes = _routes_by_source(ProfileShapes(files))
    except ShapesUnreadable as exc:
        # A shape no SHACL processor can read (an ill-typed count): each file is said to
        # hold what cannot be read, since the routing judges the files together.
        for file in files:
            problems[file.reference].append(Problem(str(exc)))
        return
    nodes = _Nodes(parsed, {r.shape for rs in routes.values() for r in rs})
    for reference, found in _shacl_problems(nodes, files, timeout):
        problems[reference].append(found)
    for file in files:
        mine = routes.get(file.reference, [])
        for route in mine:
            if route.engine == ROUTE_UNSUPPORTED:
                problems[file.reference].append(Problem(
                    f"shape {route.shape} is never evaluated: it {route.why}, so every check "
                    "under this profile is indeterminate (constraint.shape-unevaluable)",
                    shape=route.shape))
        if not mine:
            problems[file.reference].append(Problem(NO_TOP_LEVEL, Severity.WARNING))


class _Nodes:
    """The parsed files' nodes: where each is written, its name as the check's reports name
    it, and the top-level shape it belongs to."""

    def __init__(self, parsed: Sequence[tuple[ShapeFile, list[pyoxigraph.Quad]]],
                 top_level_names: set[str]) -> None:
        self.quads = [q for _, quads in parsed for q in quads]
        self.home: dict[Any, str] = {}
        self.names: dict[Any, str] = {}
        referrers: dict[Any, set[Any]] = {}
        for file, quads in parsed:
            for q in quads:
                self.home.setdefault(_key(q.subject), file.reference)
                # ProfileShapes's names for blank nodes: the file's reference and the node's
                # place among the blank subjects of all the files, in order.
                if isinstance(q.subject, pyoxigraph.BlankNode) and q.subject not in self.names:
                    self.names[q.subject] = f"{file.reference}#blank-{len(self.names) + 1}"
                referrers.setdefault(_key(q.object), set()).add(q.subject)
        for file, quads in parsed:  # a node no file describes: where it is referred to
            for q in quads:
                self.home.setdefault(_key(q.object), file.reference)
        self.referrers = referrers
        self.top_level = {s for s in {q.subject for q in self.quads}
                          if self.name(s) in top_level_names}
        self._top_level_keys = {_key(s) for s in self.top_level}

    def name(self, term: Any) -> str:
        if isinstance(term, pyoxigraph.NamedNode):
            return term.value
        if isinstance(term, pyoxigraph.BlankNode):
            return self.names.get(term, "an empty blank node")
        return _literal_text(term.value, term.language, term.datatype.value)

    def owner(self, key: Any) -> Any:
        """The top-level shape (first by name) the node belongs to, if it is not one."""
        if key in self._top_level_keys:
            return None
        pending, seen, found = [key], {key}, []
        while pending:
            for subject in self.referrers.get(pending.pop(), ()):
                if subject in self.top_level:
                    found.append(subject)
                elif _key(subject) not in seen:
                    seen.add(_key(subject))
                    pending.append(_key(subject))
        return min(found, key=lambda s: _natural(self.name(s))) if found else None


def _key(term: Any) -> Any:
    """A node the same whether pyoxigraph or rdflib holds it."""
    if isinstance(term, pyoxigraph.NamedNode):
        return ("iri", term.value)
    if isinstance(term, pyoxigraph.BlankNode):
        return ("blank", term.value)
    if isinstance(term, pyoxigraph.Literal):
        return ("literal", term.value, term.language or "",
                "" if term.language else term.datatype.value)
    import rdflib

    if isinstance(term, rdflib.URIRef):
        return ("iri", str(term))
    if isinstance(term, rdflib.BNode):
        return ("blank", str(term))
    return ("literal", str(term), term.language or "",
            "" if term.language else str(term.datatype or XSD + "string"))


def _literal_text(value: str, language: str | None, datatype: str) -> str:
    import json

    if language:
        return f"{json.dumps(value, ensure_ascii=False)}@{language}"
    if datatype == XSD + "string":
        return json.dumps(value, ensure_ascii=False)
    return f"{json.dumps(value, ensure_ascii=False)}^^{_curie(datatype)}"


def _curie(iri: str) -> str:
    for prefix, namespace in (("sh", SH), ("rdf", RDF), ("rdfs", RDFS), ("xsd", XSD),
                              ("shsh", _SHSH)):
        if iri.startswith(namespace):
            return f"{prefix}:{iri[len(namespace):]}"
    return f"<{iri}>"


def _shacl_problems(nodes: _Nodes, files: Sequence[ShapeFile],
                    timeout: float) -> Iterable[tuple[str, Problem]]:
    """What SHACL's own shapes (shacl-shacl) find wrong in the files, each with its file."""
    try:
        import pyshacl  # noqa: F401 - installed, or the check is skipped with a warning
        import rdflib
    except ImportError as exc:
        for file in files:
            yield file.reference, Problem(
                f"not checked against SHACL's own shapes: pySHACL is not installed ({exc}); "
                "install ioa-semantic[shacl]", Severity.WARNING)
        return

    try:
        # In a worker, killed past the bound: shacl-shacl's list shapes cost the square of
        # a long sh:in, so lint of a profile could otherwise run for minutes.
        triples = bounded.run(_meta_report, (nodes.quads,), timeout)
    except bounded.DeadlineExceeded:
        for file in files:
            yield file.reference, Problem(
                "not checked against SHACL's own shapes: the check did not finish within the "
                f"{timeout:g} s bound on a shape evaluation (--shape-timeout), so it was "
                "stopped; a check under this profile may stop the same way", Severity.WARNING)
        return
    except IoaSemanticError as exc:  # pySHACL's errors, mapped in the worker
        for file in files:
            yield file.reference, Problem(
                f"SHACL's own shapes could not be evaluated over it: {exc}")
        return
    report = rdflib.Graph()
    for triple in triples:
        report.add(triple)

    sh = rdflib.Namespace(SH)
    found: dict[tuple[str, Any], list[tuple[str, str, Problem]]] = {}
    for result in report.objects(None, sh.result):
        focus = report.value(result, sh.focusNode)
        focus_key = _key(focus)
        component = str(report.value(result, sh.sourceConstraintComponent) or "")
        component = component.rpartition("#")[2]
        source = str(report.value(result, sh.sourceShape) or "")
        path = report.value(result, sh.resultPath)
        value = report.value(result, sh.value)
        messages = sorted(str(m) for m in report.objects(result, sh.resultMessage))
        name = _name_of_key(nodes, focus, focus_key)
        owner = nodes.owner(focus_key)
        where = name if owner is None else f"{name} (in shape {nodes.name(owner)})"
        what = []
        if isinstance(path, rdflib.URIRef):
            what.append(_curie(str(path)))
        if value is not None and _key(value) != focus_key:
            what.append(_name_of_key(nodes, value, _key(value)))
        detail = f"{' '.join(what)}: " if what else ""
        text = (f"shape {where}: {detail}{messages[0] if messages else component} "
                f"[shacl-shacl {component}]")
        home = nodes.home.get(focus_key, files[0].reference)
        xone = source == _SHSH + "ShapeShape" and component == "XoneConstraintComponent"
        found.setdefault((home, focus_key), []).append(
            ("xone" if xone else "", text, Problem(text, shape=name)))
    for (home, _), results in sorted(found.items(), key=lambda kv: (kv[0][0], kv[1][0][1])):
        # "neither a node shape nor a property shape" follows from any other result on the
        # same node; said alone, it is the whole problem.
        specific = [r for r in results if not r[0]] or results
        for problem in sorted({r[2] for r in specific}, key=lambda p: p.message):
            yield home, problem


def _meta_report(quads: Sequence[pyoxigraph.Quad]) -> list[tuple[Any, Any, Any]]:
    """In a worker (``bounded.run``): pySHACL's meta_shacl run, its report's triples (rdflib
    terms pickle with their blank nodes' labels, which name the shapes' nodes).
    What pySHACL's meta_shacl option runs, with the report kept: its baked-in shacl-shacl
    graph (no network), over the shapes as they are written (no inference, as the check's
    validation uses none)."""
    import rdflib
    from pyshacl.entrypoints import meta_validate

    def term(t: Any) -> Any:
        if isinstance(t, pyoxigraph.NamedNode):
            return rdflib.URIRef(t.value)
        if isinstance(t, pyoxigraph.BlankNode):
            return rdflib.BNode(t.value)  # the same label: a result's node maps back
        if t.language:
            return rdflib.Literal(t.value, lang=t.language)
        return rdflib.Literal(t.value, datatype=rdflib.URIRef(t.datatype.value))

    graph = rdflib.Graph()
    for q in quads:
        graph.add((term(q.subject), term(q.predicate), term(q.object)))
    try:
        _, report, _ = meta_validate(graph, inference=None, allow_warnings=True,
                                     allow_infos=True)
    except Exception as exc:  # pySHACL's errors, mapped here: the check would map them too
        raise IoaSemanticError(f"{type(exc).__name__}: {exc}") from exc
    return list(report)


def _name_of_key(nodes: _Nodes, node: Any, key: Any) -> str:
    import rdflib

    if isinstance(node, rdflib.URIRef):
        return str(node)
    if isinstance(node, rdflib.BNode):
        return nodes.name(pyoxigraph.BlankNode(str(node)))
    return _literal_text(str(node), node.language,
                         "" if node.language else str(node.datatype or XSD + "string"))
