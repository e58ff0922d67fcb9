"""The store: an embedded Oxigraph dataset per check, queried with named SPARQL queries.

What a Checker is built with (the profile and its vocabulary, the offered registrations and
artifacts) is turned into quads once; each check copies them into a fresh in-memory store
beside the envelope's triples, the task parameters and the check's own facts. A fresh store
per check keeps checks independent (no state accumulates between them) and safe to run from
several threads. Every decision-relevant join is one of the ``queries/*.rq`` files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyoxigraph

from .. import _vocab as vocab
from .. import data as _resources
from .._exceptions import IoaSemanticError
from .._vocab import IOP

ENVELOPE_GRAPH = pyoxigraph.NamedNode("urn:ioa-semantic:graph:envelope")
CHECK_GRAPH = pyoxigraph.NamedNode("urn:ioa-semantic:graph:check")
CHECK = pyoxigraph.NamedNode("urn:ioa-semantic:check")
RDF_TYPE = pyoxigraph.NamedNode(vocab.RDF_TYPE)

QUERY_NAMES = (
    "ontology_acceptance",
    "binding_senses",
    "context_domains",
    "intent_requirements",
    "intent_domains",
    "requested_capabilities",
    "mapping_candidates",
    "rule_conditions",
)


class UnloadableTerm(IoaSemanticError, ValueError):
    """The envelope holds a value Oxigraph refuses as an RDF term (pyoxigraph's ValueError,
    mapped here, the one place the envelope meets it). The baseline lets none through that
    it judges; a descriptive member the profile lets be ignored is not judged."""


def envelope_quads(node: dict[str, Any], graph: pyoxigraph.NamedNode = ENVELOPE_GRAPH,
                   blanks: str = "e", nodes: dict[str, Any] | None = None
                   ) -> list[pyoxigraph.Quad]:
    """The expanded envelope (already shape-checked) as quads in the envelope graph (or in
    ``graph``, its blank nodes labelled ``<blanks><n>``: several documents in one store);
    ``nodes``, when given, gets each blank node's label and the node object it stands for.

    Raises :class:`UnloadableTerm` for a value Oxigraph refuses.
    """
    try:
        return _envelope_quads(node, graph, blanks, nodes)
    except ValueError as exc:
        raise UnloadableTerm(str(exc)) from exc


def _envelope_quads(node: dict[str, Any], graph: pyoxigraph.NamedNode,  # noqa: C901
                    blanks: str, nodes: dict[str, Any] | None) -> list[pyoxigraph.Quad]:
    quads: list[pyoxigraph.Quad] = []
    counter = iter(range(1 << 30))

    def subject_of(obj: dict[str, Any]) -> pyoxigraph.NamedNode | pyoxigraph.BlankNode:
        ident = obj.get("@id")
        if isinstance(ident, str) and not ident.startswith("_:"):
            return pyoxigraph.NamedNode(ident)
        label = f"{blanks}{next(counter)}"
        if nodes is not None:
            nodes[label] = obj
        return pyoxigraph.BlankNode(label)

    def term(value: Any) -> Any:
        if isinstance(value, dict) and "@value" in value:
            raw = value["@value"]
            if "@language" in value:
                return pyoxigraph.Literal(str(raw), language=value["@language"])
            if isinstance(value.get("@type"), str) and value["@type"] != "@json":
                return pyoxigraph.Literal(str(raw), datatype=pyoxigraph.NamedNode(value["@type"]))
            if isinstance(raw, bool):
                return pyoxigraph.Literal("true" if raw else "false", datatype=pyoxigraph.NamedNode(
                    vocab.XSD + "boolean"))
            if isinstance(raw, (int, float)):
                return pyoxigraph.Literal(repr(raw), datatype=pyoxigraph.NamedNode(
                    vocab.XSD + (
                        "integer" if isinstance(raw, int) else "double")))
            return pyoxigraph.Literal(str(raw))
        if isinstance(value, dict) and set(value) == {"@id"}:
            ident = value["@id"]
            if ident.startswith("_:"):
                # The document's own label; after a prefix of the document's when several
                # share one store ("" for an envelope: the compiled tables read it so).
                return pyoxigraph.BlankNode(ident[2:] if blanks == "e" else f"{blanks}_{ident[2:]}")
            return pyoxigraph.NamedNode(ident)
        if isinstance(value, dict) and "@list" not in value:
            return emit(value)
        return None

    def emit(obj: dict[str, Any]) -> Any:
        subject = subject_of(obj)
        for t in obj.get("@type", []):
            quads.append(pyoxigraph.Quad(subject, RDF_TYPE, pyoxigraph.NamedNode(t), graph))
        for prop, values in obj.items():
            if prop.startswith("@"):
                continue
            predicate = pyoxigraph.NamedNode(prop)
            for value in values:
                obj_term = term(value)
                if obj_term is not None:
                    quads.append(pyoxigraph.Quad(subject, predicate, obj_term, graph))
        return subject

    emit(node)
    return quads


def envelope_subject(node: dict[str, Any]) -> pyoxigraph.NamedNode | pyoxigraph.BlankNode:
    """The term :func:`envelope_quads` gives the top node: its @id, or the first blank node."""
    ident = node.get("@id")
    if isinstance(ident, str) and not ident.startswith("_:"):
        return pyoxigraph.NamedNode(ident)
    return pyoxigraph.BlankNode("e0")


def check_quads(ontology: tuple[str, str] | None) -> list[pyoxigraph.Quad]:
    """Facts about this check: the ontology version the envelope is read under."""
    if ontology is None:
        return []
    return [
        pyoxigraph.Quad(CHECK, pyoxigraph.NamedNode(IOP + "ontologyId"),
                        pyoxigraph.NamedNode(ontology[0]), CHECK_GRAPH),
        pyoxigraph.Quad(CHECK, pyoxigraph.NamedNode(IOP + "ontologyVersion"),
                        pyoxigraph.Literal(ontology[1]), CHECK_GRAPH),
    ]


class Dataset:
    """One check's store: the Checker's fixed quads plus this envelope's."""

    def __init__(self, fixed: Sequence[pyoxigraph.Quad], *extra: Iterable[pyoxigraph.Quad]) -> None:
        self.store = pyoxigraph.Store()
        self.store.bulk_extend(fixed)
        for quads in extra:
            self.store.bulk_extend(quads)

    def read_as(self, ontology: tuple[str, str]) -> None:
        """Record the ontology id and version the envelope is read under."""
        self.store.bulk_extend(check_quads(ontology))

    def select(self, name: str) -> list[dict[str, Any]]:
        """Run a named query; each row maps variable names to plain Python values."""
        variables, solutions = solutions_of(self.store, name)
        rows = []
        for solution in solutions:
            rows.append({name: _plain(solution[name]) for name in variables})
        return rows


def solutions_of(store: pyoxigraph.Store, name: str,
                 ) -> tuple[list[str], list[pyoxigraph.QuerySolution]]:
    """The named query's variables and its solutions, read whole.

    pyoxigraph's ``QuerySolutions`` may only be freed on the thread that made it (freed on
    another, it is kept for good and a traceback goes to stderr), and a frame can outlive its
    call: a sampling profiler holds the frames it samples (a Dask worker's does, from its
    event loop, for the threads running tasks), and a frame still held when its call returns
    keeps that call's locals. So the solutions are let go here, before the call returns, and
    no comprehension's frame ever holds them."""
    solutions = store.query(_resources.query(name))
    try:
        assert isinstance(solutions, pyoxigraph.QuerySolutions), name
        return [v.value for v in solutions.variables], list(solutions)
    finally:
        del solutions


def _plain(term: Any) -> Any:
    if term is None:
        return None
    if isinstance(term, pyoxigraph.Literal):
        if term.datatype.value == vocab.XSD + "boolean":
            return term.value == "true"
        return term.value
    if isinstance(term, pyoxigraph.NamedNode):
        return term.value
    return str(term)


def group(rows: Iterable[Mapping[str, Any]], key: str) -> dict[Any, list[Mapping[str, Any]]]:
    out: dict[Any, list[Mapping[str, Any]]] = {}
    for row in rows:
        out.setdefault(row[key], []).append(row)
    return out
