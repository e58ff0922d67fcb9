"""Compiled tables: the store's named queries answered by lookups, for many checks.

Everything a check's store holds besides the envelope (the profile and its vocabulary, the
offered registrations and artifacts) is fixed for a Checker. :meth:`CompiledTables.build`
loads those quads into one Oxigraph store once and runs the ``queries/compile_*.rq`` queries,
each the fixed side of a named query (its profile, registration and artifact patterns, with
the envelope and check patterns taken out), into tables keyed by the variables a check joins
on. A :class:`TableDataset` then answers the eight named queries for one envelope by reading
its facts from the expanded node and looking them up in those tables: no store, no SPARQL.

Its rows are the rows :class:`~ioa_semantic._store.Dataset` gives: the same variables, values
and Python types, the same multiplicity (bag semantics) and the order of each query's
ORDER BY. To keep that exact, RDF terms are compared the way Oxigraph compares them (see
:data:`Term`), and the envelope is read exactly as ``_store.envelope_quads`` turns it into
quads, down to the blank nodes it invents and the graph-agnostic artifact pattern of
``mapping_candidates`` and ``rule_conditions``, which an envelope can match too.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NamedTuple, TypeAlias

import pyoxigraph

from . import _resources
from ._store import ENVELOPE_GRAPH

IOA = "https://example.org/ioa/semantic#"
IOAA = "https://ioa-semantic.org/ns/alignment#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
XSD_STRING = XSD + "string"
XSD_BOOLEAN = XSD + "boolean"
XSD_INTEGER = XSD + "integer"
XSD_DOUBLE = XSD + "double"

# An RDF term as a hashable value that is equal exactly when Oxigraph holds the same term:
# an IRI is its string; a blank node is "_:" and its id, as str(BlankNode) prints it (no IRI
# starts with "_:", and Oxigraph keeps blank node ids as given, so the ids of the fixed quads
# are the ones the reference store returns); a literal is (lexical form, datatype IRI,
# language), in the canonical lexical form Oxigraph stores.
Literal: TypeAlias = tuple[str, str, str | None]
Term: TypeAlias = str | Literal
OrderKey: TypeAlias = tuple[int, str, str, str]
Row: TypeAlias = dict[str, Any]

_ENVELOPE = ENVELOPE_GRAPH.value
_NO_ORDER: OrderKey = (0, "", "", "")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_I64 = range(-(1 << 63), 1 << 63)

# mapping_candidates' VALUES: each direction an artifact may declare, read forward and, only
# where it is "bidirectional", in reverse (7.2). (direction, reverse, the requested side)
_READINGS = (
    ("source-to-target", False, "source"),
    ("target-to-source", False, "target"),
    ("bidirectional", False, "source"),
    ("bidirectional", True, "target"),
)


def _term(term: Any) -> Term:
    """The key of a term the fixed store returned."""
    if isinstance(term, pyoxigraph.Literal):
        return (term.value, term.datatype.value, term.language)
    if isinstance(term, pyoxigraph.NamedNode):
        return str(term.value)
    return str(term)


def plain(term: Term | None) -> Any:
    """The value ``Dataset.select`` gives for a term (``_store._plain``)."""
    if term is None or isinstance(term, str):
        return term
    if term[1] == XSD_BOOLEAN:
        return term[0] == "true"
    return term[0]


def order(term: Term | None) -> OrderKey:
    """Where ORDER BY puts a term: unbound, blank nodes, IRIs, then literals (spareval).

    Blank nodes and IRIs compare by their strings. Literals compare by lexical form, then
    datatype and language; that is SPARQL's order for the strings and booleans these queries
    sort, not for numbers (no query sorts a numeric literal in data the loader accepts).
    """
    if term is None:
        return _NO_ORDER
    if isinstance(term, str):
        return (1, term[2:], "", "") if term.startswith("_:") else (2, term, "", "")
    return (3, term[0], term[1], term[2] or "")


def _flag(term: Term | None) -> bool:
    """A boolean a compile query computed with BIND(EXISTS ...) or BOUND."""
    return plain(term) is True


# --- the fixed side, compiled once -----------------------------------------------------------


class RuleReading(NamedTuple):
    """One reading of one mapping rule (mapping_candidates without the check's ontology)."""

    graph: Term
    rule: Term
    requested: Term
    offered: Term
    reverse: bool
    requested_id: Term
    requested_version: Term
    # Whether ``requested_version = "<plain string>"`` is true or false rather than an error.
    comparable: bool
    registration: Term | None
    trusted: bool


@dataclass(frozen=True, slots=True)
class CompiledTables:
    """What the compile queries derive from a Checker's fixed quads, keyed for lookups."""

    acceptance: dict[tuple[Term, Term], tuple[tuple[Term, Term | None, Term | None], ...]]
    permitted_domains: frozenset[Term]
    senses: dict[Term, tuple[tuple[bool, Term | None, bool | None], ...]]
    intents: dict[Term, tuple[tuple[bool, Term | None], ...]]
    intent_domains: dict[Term, tuple[tuple[Term, bool], ...]]
    capabilities: dict[Term, tuple[tuple[bool, Term | None, Term | None], ...]]
    registrations: dict[tuple[Term, Term, Term], tuple[Term, ...]]
    trusted_issuers: frozenset[Term]
    readings: dict[Term, tuple[RuleReading, ...]]
    conditions: tuple[tuple[Term, Term, Term, Term], ...]

    @classmethod
    def build(cls, fixed_quads: Sequence[pyoxigraph.Quad]) -> CompiledTables:
        """Run every compile query once over the fixed quads."""
        store = pyoxigraph.Store()
        store.bulk_extend(fixed_quads)

        def select(name: str) -> list[tuple[Any, ...]]:
            solutions = store.query(_resources.query(name))
            assert isinstance(solutions, pyoxigraph.QuerySolutions), name
            variables = [v.value for v in solutions.variables]
            return [tuple(None if s[v] is None else _term(s[v]) for v in variables)
                    for s in solutions]

        acceptance: dict[tuple[Term, Term], list[tuple[Term, Term | None, Term | None]]] = {}
        for ontology, version, read_as, relationship, scope in select(
                "compile_ontology_acceptance"):
            acceptance.setdefault((ontology, version), []).append((read_as, relationship, scope))
        senses: dict[Term, list[tuple[bool, Term | None, bool | None]]] = {}
        for sense, known, domain, permitted in select("compile_concepts"):
            senses.setdefault(sense, []).append(
                (_flag(known), domain, None if permitted is None else _flag(permitted)))
        intents: dict[Term, list[tuple[bool, Term | None]]] = {}
        for intent, known, required in select("compile_intent_requirements"):
            intents.setdefault(intent, []).append((_flag(known), required))
        intent_domains: dict[Term, list[tuple[Term, bool]]] = {}
        for intent, domain, permitted in select("compile_intent_domains"):
            intent_domains.setdefault(intent, []).append((domain, _flag(permitted)))
        capabilities: dict[Term, list[tuple[bool, Term | None, Term | None]]] = {}
        for capability, known, inputs, outputs in select("compile_capabilities"):
            capabilities.setdefault(capability, []).append((_flag(known), inputs, outputs))
        registrations: dict[tuple[Term, Term, Term], list[Term]] = {}
        for graph, capability, ontology, version in select("compile_registrations"):
            registrations.setdefault((capability, ontology, version), []).append(graph)
        trusted = frozenset(issuer for issuer, in select("compile_trusted_issuers"))
        frozen_registrations = _freeze(registrations)
        rules = [(*row[:-2], _flag(row[-2]), _flag(row[-1]))
                 for row in select("compile_mapping_rules")]
        readings: dict[Term, list[RuleReading]] = {}
        for reading in _readings(rules, frozen_registrations, trusted):
            readings.setdefault(reading.requested, []).append(reading)
        return cls(
            acceptance=_freeze(acceptance),
            permitted_domains=frozenset(domain for domain, in select("compile_permitted_domains")),
            senses=_freeze(senses),
            intents=_freeze(intents),
            intent_domains=_freeze(intent_domains),
            capabilities=_freeze(capabilities),
            registrations=frozen_registrations,
            trusted_issuers=trusted,
            readings=_freeze(readings),
            conditions=tuple((graph, rule, parameter, value) for graph, rule, parameter, value
                             in select("compile_rule_conditions")),
        )


def _freeze(table: dict[Any, list[Any]]) -> dict[Any, tuple[Any, ...]]:
    return {key: tuple(values) for key, values in table.items()}


def _readings(rules: Iterable[Sequence[Any]],
              registrations: dict[tuple[Term, Term, Term], tuple[Term, ...]],
              trusted: frozenset[Term]) -> Iterator[RuleReading]:
    """Each rule in each direction its artifact declares, as mapping_candidates reads it.

    ``rules`` are compile_mapping_rules rows: (graph, direction, issuer, rule, from, to,
    source id, source version, target id, target version, source version comparable, target
    version comparable).
    """
    for (graph, direction, issuer, rule, source, target, source_id, source_version,
         target_id, target_version, source_comparable, target_comparable) in rules:
        for declared, reverse, requested_side in _READINGS:
            if direction != (declared, XSD_STRING, None):
                continue
            if requested_side == "source":
                requested = (source_id, source_version, source_comparable)
                offered_id, offered_version = target_id, target_version
            else:
                requested = (target_id, target_version, target_comparable)
                offered_id, offered_version = source_id, source_version
            offered = source if reverse else target
            for registration in registrations.get((offered, offered_id, offered_version),
                                                  (None,)):
                yield RuleReading(graph, rule, target if reverse else source, offered, reverse,
                                  requested[0], requested[1], requested[2], registration,
                                  issuer in trusted)


# --- the envelope, read as _store.envelope_quads reads it -------------------------------------


def _double(value: float) -> str:
    """Oxigraph's canonical lexical form of an xsd:double: shortest digits, no exponent."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "INF" if value > 0 else "-INF"
    text = format(Decimal(repr(value)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _value(value: dict[str, Any]) -> Literal:
    """The literal ``envelope_quads`` makes of a value object, in Oxigraph's lexical form.

    JSON values (strings, booleans, numbers) are exact. A value with an explicit non-string
    ``@type`` keeps its lexical form as given; Oxigraph would canonicalize a few XSD datatypes
    (such a value passes the shapes only under an ignorable term).
    """
    raw = value["@value"]
    if "@language" in value:
        return (str(raw), RDF_LANG_STRING, str(value["@language"]).lower())
    datatype = value.get("@type")
    if isinstance(datatype, str) and datatype != "@json":
        return (str(raw), datatype, None)
    if isinstance(raw, bool):
        return ("true" if raw else "false", XSD_BOOLEAN, None)
    if isinstance(raw, int):
        return (repr(raw), XSD_INTEGER, None)
    if isinstance(raw, float):
        return (_double(raw), XSD_DOUBLE, None)
    return (str(raw), XSD_STRING, None)


def envelope_triples(node: dict[str, Any]) -> list[tuple[Term, str, Term]]:
    """The envelope graph as ``_store.envelope_quads`` builds it, as term keys.

    A node object gets a fresh blank node ``_:e<n>`` unless it has an IRI, numbered in the
    same walk order; a reference ``{"@id": "_:x"}`` is the blank node ``_:x``.
    """
    triples: list[tuple[Term, str, Term]] = []
    counter = itertools.count()

    def subject_of(obj: dict[str, Any]) -> str:
        ident = obj.get("@id")
        if isinstance(ident, str) and not ident.startswith("_:"):
            return ident
        return f"_:e{next(counter)}"

    def term(value: Any) -> Term | None:
        if isinstance(value, dict) and "@value" in value:
            return _value(value)
        if isinstance(value, dict) and set(value) == {"@id"}:
            return str(value["@id"])
        if isinstance(value, dict) and "@list" not in value:
            return emit(value)
        return None

    def emit(obj: dict[str, Any]) -> str:
        subject = subject_of(obj)
        for t in obj.get("@type", []):
            triples.append((subject, RDF_TYPE, t))
        for prop, values in obj.items():
            if prop.startswith("@"):
                continue
            for value in values:
                obj_term = term(value)
                if obj_term is not None:
                    triples.append((subject, prop, obj_term))
        return subject

    emit(node)
    return triples


def _compares_with_string(term: Term) -> bool:
    """Whether ``term = "<plain string>"`` is true or false (not an error) in spareval.

    Only a literal of a datatype SPARQL does not know (or an ill-formed integer) makes it an
    error; explicit datatypes other than the JSON ones are taken as known.
    """
    if isinstance(term, str) or term[1] != XSD_INTEGER:
        return True
    return _INTEGER.fullmatch(term[0]) is not None and int(term[0]) in _I64


# --- one check ------------------------------------------------------------------------------


class TableDataset:
    """One check's answers to the named queries: the envelope's facts joined with the tables.

    Same interface as :class:`~ioa_semantic._store.Dataset` for the decision: ``select`` and
    ``read_as``. ``read_as`` may be called more than once; as in the store, the check graph
    then holds every id and every version given, and the queries read every pair of them.
    """

    def __init__(self, tables: CompiledTables, envelope_node: dict[str, Any]) -> None:
        self._tables = tables
        self._ontology_ids: dict[Term, None] = {}
        self._versions: dict[Term, None] = {}
        objects: dict[tuple[Term, str], list[Term]] = {}
        by_predicate: dict[str, list[tuple[Term, Term]]] = {}
        # The store is a set: a fact stated twice is one triple.
        for s, p, o in dict.fromkeys(envelope_triples(envelope_node)):
            objects.setdefault((s, p), []).append(o)
            by_predicate.setdefault(p, []).append((s, o))
        none: list[Term] = []
        no_pairs: list[tuple[Term, Term]] = []

        def values(subject: Term, predicate: str) -> list[Term]:
            return objects.get((subject, predicate), none)

        self._profiles = [
            (ontology, version)
            for subject, kind in by_predicate.get(RDF_TYPE, no_pairs)
            if kind == IOA + "SemanticProfile"
            for ontology in values(subject, IOA + "ontologyId")
            for version in values(subject, IOA + "ontologyVersion")]
        contexts = by_predicate.get(IOA + "profileContext", no_pairs)
        self._bindings = [
            (term, sense)
            for _, context in contexts
            for binding in values(context, IOA + "termBindings")
            for term in values(binding, IOA + "term")
            for sense in values(binding, IOA + "sense")]
        self._context_domains = [
            (subject, domain)
            for subject, context in contexts
            for domain in values(context, IOA + "domain")]
        self._intents = by_predicate.get(IOA + "intentRef", no_pairs)
        self._capabilities = by_predicate.get(IOA + "capabilityRefs", no_pairs)
        self._declared = {(s, c) for s, c in self._capabilities}
        self._in_context = {(s, d) for s, d in self._context_domains}
        # An envelope that states mapping rules itself (only possible through ignorable
        # terms) matches the artifact pattern, whose graph is a variable, in its own graph.
        self._own_readings: dict[Term, list[RuleReading]] = {}
        self._own_conditions: list[tuple[Term, Term, Term, Term]] = []
        rules = by_predicate.get(IOAA + "mappingRule")
        if rules:
            self._read_own_rules(rules, values)
        self._queries: dict[str, Callable[[], list[Row]]] = {
            "ontology_acceptance": self._ontology_acceptance,
            "binding_senses": self._binding_senses,
            "context_domains": self._context_domains_rows,
            "intent_requirements": self._intent_requirements,
            "intent_domains": self._intent_domains,
            "requested_capabilities": self._requested_capabilities,
            "mapping_candidates": self._mapping_candidates,
            "rule_conditions": self._rule_conditions,
        }

    def _read_own_rules(self, rules: list[tuple[Term, Term]],
                        values: Callable[[Term, str], list[Term]]) -> None:
        found = [
            (_ENVELOPE, direction, issuer, rule, source, target, source_id, source_version,
             target_id, target_version, _compares_with_string(source_version),
             _compares_with_string(target_version))
            for artifact, rule in rules
            for direction in values(artifact, IOAA + "direction")
            for issuer in values(artifact, IOAA + "assertedBy")
            for source_id in values(artifact, IOAA + "sourceOntologyId")
            for source_version in values(artifact, IOAA + "sourceOntologyVersion")
            for target_id in values(artifact, IOAA + "targetOntologyId")
            for target_version in values(artifact, IOAA + "targetOntologyVersion")
            for source in values(rule, IOAA + "from")
            for target in values(rule, IOAA + "to")]
        for reading in _readings(found, self._tables.registrations, self._tables.trusted_issuers):
            self._own_readings.setdefault(reading.requested, []).append(reading)
        self._own_conditions = [
            (_ENVELOPE, rule, parameter, value)
            for _, rule in rules
            for condition in values(rule, IOAA + "condition")
            for parameter in values(condition, IOAA + "parameter")
            for value in values(condition, IOAA + "value")]

    def read_as(self, ontology: tuple[str, str]) -> None:
        """Record the ontology id and version the envelope is read under."""
        self._ontology_ids[ontology[0]] = None
        self._versions[(ontology[1], XSD_STRING, None)] = None

    def select(self, name: str) -> list[Row]:
        """The rows ``Dataset.select(name)`` gives for this envelope."""
        return self._queries[name]()

    # --- the eight named queries ---------------------------------------------------------

    def _ontology_acceptance(self) -> list[Row]:
        acceptance = self._tables.acceptance
        return [{"readAs": plain(read_as), "relationship": plain(relationship),
                 "scope": plain(scope)}
                for key in self._profiles
                for read_as, relationship, scope in acceptance.get(key, ())]

    def _binding_senses(self) -> list[Row]:
        senses = self._tables.senses
        rows = [((order(term), order(sense), order(domain)),
                 {"term": plain(term), "sense": plain(sense), "known": known,
                  "domain": plain(domain), "permitted": permitted})
                for term, sense in self._bindings
                for known, domain, permitted in senses.get(sense, _UNKNOWN_SENSE)]
        return _ordered(rows)

    def _context_domains_rows(self) -> list[Row]:
        permitted = self._tables.permitted_domains
        return _ordered([((order(domain),),
                          {"domain": plain(domain), "permitted": domain in permitted})
                         for _, domain in self._context_domains])

    def _intent_requirements(self) -> list[Row]:
        intents = self._tables.intents
        declared = self._declared
        return _ordered([
            ((order(required),),
             {"intent": plain(intent), "known": known, "required": plain(required),
              "declared": None if required is None else (subject, required) in declared})
            for subject, intent in self._intents
            for known, required in intents.get(intent, _UNKNOWN_INTENT)])

    def _intent_domains(self) -> list[Row]:
        intent_domains = self._tables.intent_domains
        in_context = self._in_context
        return _ordered([
            ((order(domain),),
             {"domain": plain(domain), "permitted": permitted,
              "inContext": (subject, domain) in in_context})
            for subject, intent in self._intents
            for domain, permitted in intent_domains.get(intent, ())])

    def _requested_capabilities(self) -> list[Row]:
        capabilities = self._tables.capabilities
        registrations = self._tables.registrations
        return _ordered([
            ((order(capability), order(registration)),
             {"capability": plain(capability), "known": known, "input": plain(inputs),
              "output": plain(outputs), "registration": plain(registration)})
            for _, capability in self._capabilities
            for ontology in self._ontology_ids
            for version in self._versions
            for known, inputs, outputs in capabilities.get(capability, _UNKNOWN_CAPABILITY)
            for registration in registrations.get((capability, ontology, version), (None,))])

    def _mapping_candidates(self) -> list[Row]:
        readings = self._tables.readings
        own = self._own_readings
        rows = []
        for _, capability in self._capabilities:
            found = readings.get(capability, ())
            if own:
                found = (*found, *own.get(capability, ()))
            for ontology in self._ontology_ids:
                for version in self._versions:
                    for r in found:
                        # ?requestedId = ?ontology && ?requestedVersion = ?version, where
                        # the second comparison may be an error (unbound).
                        if r.requested_id != ontology:
                            matches: bool | None = False
                        elif not r.comparable:
                            matches = None
                        else:
                            matches = r.requested_version == version
                        rows.append((
                            (order(r.graph), order(capability), order(r.rule),
                             order(("true" if r.reverse else "false", XSD_BOOLEAN, None)),
                             order(r.registration)),
                            {"artifactGraph": plain(r.graph), "capability": plain(capability),
                             "rule": plain(r.rule), "offered": plain(r.offered),
                             "reverse": r.reverse, "versionsMatch": matches,
                             "registration": plain(r.registration), "trusted": r.trusted}))
        return _ordered(rows)

    def _rule_conditions(self) -> list[Row]:
        rows = [{"artifactGraph": plain(graph), "rule": plain(rule),
                 "parameter": plain(parameter), "value": plain(value)}
                for graph, rule, parameter, value in self._tables.conditions]
        if not self._own_conditions:
            return rows  # already in ORDER BY order
        return _ordered([((order(graph), order(rule), order(parameter)),
                          {"artifactGraph": plain(graph), "rule": plain(rule),
                           "parameter": plain(parameter), "value": plain(value)})
                         for graph, rule, parameter, value in (
                             *self._tables.conditions, *self._own_conditions)])


_UNKNOWN_SENSE: tuple[tuple[bool, Term | None, bool | None], ...] = ((False, None, None),)
_UNKNOWN_INTENT: tuple[tuple[bool, Term | None], ...] = ((False, None),)
_UNKNOWN_CAPABILITY: tuple[tuple[bool, Term | None, Term | None], ...] = ((False, None, None),)


def _ordered(rows: Sequence[tuple[tuple[OrderKey, ...], Row]]) -> list[Row]:
    """The rows in ORDER BY order; a stable sort, like spareval's, keeps ties as they came."""
    if len(rows) > 1:
        rows = sorted(rows, key=_sort_key)
    return [row for _, row in rows]


def _sort_key(pair: tuple[tuple[OrderKey, ...], Row]) -> tuple[OrderKey, ...]:
    return pair[0]
