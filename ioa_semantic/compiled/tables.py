"""Compiled tables: the store's named queries answered by lookups, for many checks.

Everything a check's store holds besides the envelope (the profile and its vocabulary, the
offered registrations and artifacts) is fixed for a Checker. :meth:`CompiledTables.build`
loads those quads into one Oxigraph store once and runs the ``queries/compile_*.rq`` queries,
each the fixed side of a named query (its profile, registration and artifact patterns, with
the envelope and check patterns taken out), into tables keyed by the terms a check joins on.
A :class:`TableDataset` then answers the eight named queries for one envelope by reading its
facts from the expanded node and looking them up in those tables: no store, no SPARQL.

Its rows are the rows :class:`~ioa_semantic.pipeline.store.Dataset` gives: the same variables, values
and Python types, the same multiplicity (bag semantics) and the order of each query's
ORDER BY. To keep that exact, terms are compared the way Oxigraph compares them (see
:data:`Term`), and the envelope is read exactly as ``_store.envelope_quads`` turns it into
quads, down to the blank nodes it invents. That includes the one place where the envelope's
graph can meet the artifacts' patterns: ``mapping_candidates`` and ``rule_conditions`` match
mapping rules in any graph, so an envelope that states rules itself (through ignorable terms)
contributes rows under the envelope graph, as it does in the store.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TypeAlias

import pyoxigraph

from .._vocab import IOA, IOAA, RDF_LANGSTRING, RDF_TYPE, XSD
from ..pipeline.store import ENVELOPE_GRAPH, solutions_of

XSD_STRING = XSD + "string"
XSD_BOOLEAN = XSD + "boolean"
XSD_INTEGER = XSD + "integer"
XSD_DOUBLE = XSD + "double"

# An RDF term as a hashable value that is equal exactly when Oxigraph holds the same term:
# an IRI is its string; a blank node is "_:" and its id, as str(BlankNode) prints it (no IRI
# starts with "_:"; Oxigraph keeps blank node ids as given, so a store built from the same
# quads returns the same ids); a literal is (lexical form, datatype IRI, language), in the
# canonical lexical form Oxigraph stores.
Literal: TypeAlias = tuple[str, str, str | None]
Term: TypeAlias = str | Literal
OrderKey: TypeAlias = tuple[int, str, str, str]
Row: TypeAlias = dict[str, Any]

_ENVELOPE = ENVELOPE_GRAPH.value
_SEMANTIC_PROFILE = IOA + "SemanticProfile"
_ONTOLOGY_ID = IOA + "ontologyId"
_ONTOLOGY_VERSION = IOA + "ontologyVersion"
_PROFILE_CONTEXT = IOA + "profileContext"
_TERM_BINDINGS = IOA + "termBindings"
_TERM = IOA + "term"
_SENSE = IOA + "sense"
_DOMAIN = IOA + "domain"
_INTENT_REF = IOA + "intentRef"
_CAPABILITY_REFS = IOA + "capabilityRefs"
_MAPPING_RULE = IOAA + "mappingRule"
_UNBOUND: OrderKey = (0, "", "", "")
# Compiled by re when a typed literal is first met (see _typed: rarely), not with the module.
_INTEGER_LEXICAL = r"[+-]?[0-9]+"
_DOUBLE_LEXICAL = r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([Ee][+-]?[0-9]+)?|[+-]?INF|NaN"
_I64 = range(-(1 << 63), 1 << 63)
_BOOLEANS = {"true": "true", "1": "true", "false": "false", "0": "false"}
# The datatypes spareval reads as numbers, booleans, strings, dates and durations.
_INTEGER_TYPES = frozenset(XSD + name for name in (
    "integer", "byte", "short", "int", "long", "unsignedByte", "unsignedShort", "unsignedInt",
    "unsignedLong", "positiveInteger", "negativeInteger", "nonPositiveInteger",
    "nonNegativeInteger"))
_COMPARABLE_TYPES = _INTEGER_TYPES | {RDF_LANGSTRING} | frozenset(XSD + name for name in (
    "string", "boolean", "float", "double", "decimal", "dateTime", "dateTimeStamp", "time",
    "date", "gYearMonth", "gYear", "gMonthDay", "gDay", "gMonth", "duration",
    "yearMonthDuration", "dayTimeDuration"))

# mapping_candidates' VALUES: each direction an artifact may declare, read forward and, only
# where it is "bidirectional", in reverse (7.2): (direction, reverse, the requested side).
_READINGS = (
    (("source-to-target", XSD_STRING, None), False, "source"),
    (("target-to-source", XSD_STRING, None), False, "target"),
    (("bidirectional", XSD_STRING, None), False, "source"),
    (("bidirectional", XSD_STRING, None), True, "target"),
)


def _term(term: Any) -> Term | None:
    """The key of a term the fixed store returned (None: unbound)."""
    if term is None:
        return None
    if isinstance(term, pyoxigraph.Literal):
        return (term.value, term.datatype.value, term.language)
    if isinstance(term, pyoxigraph.NamedNode):
        return str(term.value)
    return str(term)


def _or_unbound(terms: "list[Term]") -> "list[Term | None]":
    """An OPTIONAL's bindings: its terms, or one unbound row when it matches none."""
    return [*terms] if terms else [None]


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
    datatype and language: SPARQL's order for the strings and booleans these queries sort,
    not for numbers, which SPARQL sorts by value (a sorted variable holds a number only if
    a profile's vocabulary names a number as a domain or a required capability).
    """
    if term is None:
        return _UNBOUND
    if isinstance(term, str):
        return (1, term[2:], "", "") if term.startswith("_:") else (2, term, "", "")
    return (3, term[0], term[1], term[2] or "")


def _shown(term: Term) -> tuple[OrderKey, Any]:
    """A term's ORDER BY key and the value a row shows for it."""
    if isinstance(term, str) and not term.startswith("_:"):
        return (2, term, "", ""), term
    return order(term), plain(term)


def _flag(term: Term | None) -> bool:
    """A boolean a compile query computed with BIND(EXISTS ...) or BOUND."""
    return plain(term) is True


def _group(pairs: Iterable[tuple[Any, Any]]) -> dict[Any, tuple[Any, ...]]:
    grouped: dict[Any, list[Any]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return {key: tuple(values) for key, values in grouped.items()}


# --- the fixed side, compiled once -----------------------------------------------------------


class RuleReading(NamedTuple):
    """One reading of one mapping rule: a mapping_candidates row before the check's ontology.

    Terms the row shows are kept as ``Dataset.select`` gives them, next to their ORDER BY keys.
    """

    requested: Term
    requested_id: Term
    requested_version: Term
    # Whether ``requested_version = "<plain string>"`` is true or false, not an error.
    comparable: bool
    graph: str
    rule: Any
    offered: Any
    reverse: bool
    registration: str | None
    trusted: bool
    graph_order: OrderKey
    rule_order: OrderKey
    reverse_order: OrderKey
    registration_order: OrderKey


class CompiledTables(NamedTuple):
    """What the compile queries derive from a Checker's fixed quads, ready for lookups.

    Each table is keyed by the terms a named query joins on and holds the rest of its rows
    already as ``Dataset.select`` shows them (dicts shared by every check: each row is a
    copy), with the ORDER BY keys of the variables the query sorts by.
    """

    # (ontology id, version) -> {readAs, relationship, scope}
    acceptance: dict[tuple[Term, Term], tuple[Row, ...]]
    # iop:permittedDomain
    permitted_domains: frozenset[Term]
    # sense -> (order of ?domain, {known, domain, permitted})
    senses: dict[Term, tuple[tuple[OrderKey, Row], ...]]
    # intent -> (order of ?required, ?required, {known, required})
    intents: dict[Term, tuple[tuple[OrderKey, Term | None, Row], ...]]
    # intent -> (?domain, order of ?domain, {domain, permitted})
    intent_domains: dict[Term, tuple[tuple[Term, OrderKey, Row], ...]]
    # capability -> {known, input, output}
    capabilities: dict[Term, tuple[Row, ...]]
    # (capability, ontology id, version) -> (order of ?registration, ?registration)
    registrations: dict[tuple[Term, Term, Term], tuple[tuple[OrderKey, str], ...]]
    trusted_issuers: frozenset[Term]
    # requested capability -> its readings
    readings: dict[Term, tuple[RuleReading, ...]]
    # rule_conditions, in order: (ORDER BY keys, row)
    conditions: tuple[tuple[tuple[OrderKey, ...], Row], ...]

    @classmethod
    def build(cls, fixed_quads: Sequence[pyoxigraph.Quad]) -> "CompiledTables":
        """Run every compile query once over the fixed quads."""
        return _built_tables(fixed_quads)


def _built_tables(fixed_quads: Sequence[pyoxigraph.Quad]) -> CompiledTables:
    # A function of the module, not the classmethod's body: mypyc cannot compile a closure
    # (select's, the generators') inside a method of a NamedTuple.
    store = pyoxigraph.Store()
    store.bulk_extend(fixed_quads)

    def select(name: str) -> "list[tuple[Any, ...]]":
        # Read whole, Oxigraph's iterator let go on this thread (see solutions_of).
        variables, solutions = solutions_of(store, name)
        return [tuple(_term(s[v]) for v in variables) for s in solutions]

    registrations = _group(
        ((capability, ontology, version), (order(graph), plain(graph)))
        for graph, capability, ontology, version in select("compile_registrations"))
    trusted = frozenset(issuer for issuer, in select("compile_trusted_issuers"))
    rules = [(*row[:-2], _flag(row[-2]), _flag(row[-1]))
             for row in select("compile_mapping_rules")]
    return CompiledTables(
        acceptance=_group(
            ((ontology, version),
             {"readAs": plain(read_as), "relationship": plain(relationship),
              "scope": plain(scope)})
            for ontology, version, read_as, relationship, scope
            in select("compile_ontology_acceptance")),
        permitted_domains=frozenset(
            domain for domain, in select("compile_permitted_domains")),
        senses=_group(
            (sense, (order(domain), {
                "known": _flag(known), "domain": plain(domain),
                "permitted": None if permitted is None else _flag(permitted)}))
            for sense, known, domain, permitted in select("compile_concepts")),
        intents=_group(
            (intent, (order(required), required,
                      {"known": _flag(known), "required": plain(required)}))
            for intent, known, required in select("compile_intent_requirements")),
        intent_domains=_group(
            (intent, (domain, order(domain),
                      {"domain": plain(domain), "permitted": _flag(permitted)}))
            for intent, domain, permitted in select("compile_intent_domains")),
        capabilities=_group(
            (capability, {"known": _flag(known), "input": plain(inputs),
                          "output": plain(outputs)})
            for capability, known, inputs, outputs in select("compile_capabilities")),
        registrations=registrations,
        trusted_issuers=trusted,
        readings=_group((r.requested, r) for r in _readings(rules, registrations, trusted)),
        conditions=tuple(
            ((order(graph), order(rule), order(parameter), order(value), order(unit)),
             {"artifactGraph": plain(graph), "rule": plain(rule),
              "parameter": plain(parameter), "value": plain(value), "unit": plain(unit)})
            for graph, rule, parameter, value, unit in select("compile_rule_conditions")),
    )


def _readings(rules: Iterable[Sequence[Any]],
              registrations: dict[tuple[Term, Term, Term], tuple[tuple[OrderKey, str], ...]],
              trusted: frozenset[Term]) -> Iterator[RuleReading]:
    """Each rule in each direction its artifact declares, as mapping_candidates reads it.

    ``rules`` are compile_mapping_rules rows: (graph, direction, issuer, rule, from, to,
    source id, source version, target id, target version, whether each version compares
    with a plain string).
    """
    unregistered = ((_UNBOUND, None),)
    for (graph, direction, issuer, rule, source, target, source_id, source_version,
         target_id, target_version, source_comparable, target_comparable) in rules:
        for declared, reverse, requested_side in _READINGS:
            if direction != declared:
                continue
            if requested_side == "source":
                requested = (source_id, source_version, source_comparable)
                offered_id, offered_version = target_id, target_version
            else:
                requested = (target_id, target_version, target_comparable)
                offered_id, offered_version = source_id, source_version
            offered = source if reverse else target
            for registration_order, registration in registrations.get(
                    (offered, offered_id, offered_version), unregistered):
                yield RuleReading(
                    target if reverse else source, *requested,
                    graph=plain(graph), rule=plain(rule), offered=plain(offered),
                    reverse=reverse, registration=registration, trusted=issuer in trusted,
                    graph_order=order(graph), rule_order=order(rule),
                    reverse_order=order(("true" if reverse else "false", XSD_BOOLEAN, None)),
                    registration_order=registration_order)


# --- the envelope, read as _store.envelope_quads reads it -------------------------------------


def _double(value: float) -> str:
    """Oxigraph's canonical lexical form of an xsd:double (pyoxigraph 0.5): the shortest
    digits that read back as the same number, written out without an exponent."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "INF" if value > 0 else "-INF"
    from decimal import Decimal  # only for a double the envelope states itself

    text = format(Decimal(repr(value)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _literal(value: dict[str, Any]) -> Literal:
    """The literal ``envelope_quads`` makes of a value object, in Oxigraph's lexical form."""
    raw = value["@value"]
    if "@language" in value:
        return (str(raw), RDF_LANGSTRING, str(value["@language"]).lower())
    datatype = value.get("@type")
    if isinstance(datatype, str) and datatype != "@json":
        return _typed(str(raw), datatype)
    if isinstance(raw, bool):
        return ("true" if raw else "false", XSD_BOOLEAN, None)
    if isinstance(raw, int):
        return (repr(raw), XSD_INTEGER, None)
    if isinstance(raw, float):
        return (_double(raw), XSD_DOUBLE, None)
    return (str(raw), XSD_STRING, None)


def _typed(lexical: str, datatype: str) -> Literal:
    """An explicitly typed literal as Oxigraph stores it.

    Booleans, integers and doubles are canonicalized as Oxigraph does ("01" as an xsd:int is
    "1"); other datatypes keep the lexical form as given, where Oxigraph would canonicalize a
    few more (decimals, dates, durations). Only an ignorable term carries such a value past
    the shapes, and only mapping rules an envelope states itself read one.
    """
    if datatype in _INTEGER_TYPES and _is_integer(lexical):
        lexical = str(int(lexical))
    elif datatype == XSD_BOOLEAN and lexical in _BOOLEANS:
        lexical = _BOOLEANS[lexical]
    elif datatype == XSD_DOUBLE and re.fullmatch(_DOUBLE_LEXICAL, lexical):
        lexical = _double(float(lexical))
    return (lexical, datatype, None)


def _is_integer(lexical: str) -> bool:
    """An integer lexical form Oxigraph reads: 64 bits."""
    return re.fullmatch(_INTEGER_LEXICAL, lexical) is not None and int(lexical) in _I64


# The envelope graph by predicate, then subject: the objects of each (a set, as in the store).
# The objects of each (predicate, subject) are an insertion-ordered set (dict keys): an
# envelope may repeat a property tens of thousands of times, and list membership made
# indexing quadratic.
Index: TypeAlias = dict[str, dict[Term, dict[Term, None]]]


def _index(node: dict[str, Any]) -> Index:
    """The envelope graph as ``_store.envelope_quads`` builds it.

    A node object is a fresh blank node ``_:e<n>`` unless it has an IRI, numbered in the
    same walk order; a reference ``{"@id": "_:x"}`` is the blank node ``_:x``.
    """
    index: Index = {}
    _emit(node, index, [0])
    return index


def _emit(obj: dict[str, Any], index: Index, counter: list[int]) -> str:
    ident = obj.get("@id")
    if isinstance(ident, str) and not ident.startswith("_:"):
        subject = ident
    else:
        subject = f"_:e{counter[0]}"
        counter[0] += 1
    for prop, values in obj.items():
        is_type = prop == "@type"
        if is_type:
            prop = RDF_TYPE
        elif prop[:1] == "@":
            continue
        by_subject = index.get(prop)
        if by_subject is None:
            by_subject = index[prop] = {}
        found = by_subject.get(subject)
        if found is None:
            found = by_subject[subject] = {}
        for value in values:
            if is_type:
                term: Term = value
            elif not isinstance(value, dict):
                continue
            elif "@value" in value:
                raw = value["@value"]
                term = ((raw, XSD_STRING, None) if len(value) == 1 and type(raw) is str
                        else _literal(value))
            elif len(value) == 1 and "@id" in value:
                term = value["@id"]
            elif "@list" in value:
                continue
            else:
                term = _emit(value, index, counter)
            found[term] = None
    return subject


def _compares_with_string(term: Term) -> bool:
    """Whether ``term = "<plain string>"`` is true or false, not an error, in spareval.

    It is an error for a literal of a datatype SPARQL does not know, or one whose lexical
    form is not of its datatype (checked for integers and booleans, the ones a JSON value
    can give; taken as valid for the other known datatypes).
    """
    if isinstance(term, str):
        return True
    lexical, datatype, _ = term
    if datatype in _INTEGER_TYPES:
        return _is_integer(lexical)
    if datatype == XSD_BOOLEAN:
        return lexical in _BOOLEANS
    return datatype in _COMPARABLE_TYPES


# --- one check ------------------------------------------------------------------------------


class TableDataset:
    """One check's answers to the named queries: the envelope's facts joined with the tables.

    The interface of :class:`~ioa_semantic.pipeline.store.Dataset` that the decision uses: ``select``
    and ``read_as``. As in the store, ``read_as`` adds to the check graph, so after several
    calls the queries read every pair of the ids and versions given. In every query,
    ?envelope is any subject of the envelope graph that has the pattern's properties.
    """

    def __init__(self, tables: CompiledTables, envelope_node: dict[str, Any]) -> None:
        self._tables = tables
        self._ontology_ids: dict[Term, None] = {}
        self._versions: dict[Term, None] = {}
        self._index = index = _index(envelope_node)
        self._selected: dict[str, list[Row]] = {}
        self._own_readings: dict[Term, tuple[RuleReading, ...]] = {}
        self._own_conditions: tuple[tuple[tuple[OrderKey, ...], Row], ...] = ()
        if _MAPPING_RULE in index:
            self._read_own_rules(index)

    def _read_own_rules(self, index: Index) -> None:
        """The mapping rules the envelope states itself, matched in the envelope graph."""

        def values(subject: Term, predicate: str) -> "list[Term]":
            return list(index.get(predicate, {}).get(subject, {}))

        rules = [(artifact, rule) for artifact, found in index[_MAPPING_RULE].items()
                 for rule in found]
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
        self._own_readings = _group(
            (r.requested, r) for r in _readings(found, self._tables.registrations,
                                                self._tables.trusted_issuers))
        self._own_conditions = tuple(
            ((order(_ENVELOPE), order(rule), order(parameter), order(value), order(unit)),
             {"artifactGraph": _ENVELOPE, "rule": plain(rule), "parameter": plain(parameter),
              "value": plain(value), "unit": plain(unit)})
            for _, rule in rules
            for condition in values(rule, IOAA + "condition")
            for parameter in values(condition, IOAA + "parameter")
            for value in values(condition, IOAA + "value")
            for unit in _or_unbound(values(condition, IOAA + "unit")))

    def read_as(self, ontology: tuple[str, str]) -> None:
        """Record the ontology id and version the envelope is read under."""
        self._ontology_ids[ontology[0]] = None
        self._versions[(ontology[1], XSD_STRING, None)] = None
        self._selected.clear()

    def select(self, name: str) -> list[Row]:
        """The rows ``Dataset.select(name)`` gives for this envelope.

        Answers are kept until ``read_as`` changes what they read: the decision asks for
        the task context's domains twice. Its steps read rows and never change them.
        """
        found = self._selected.get(name)
        if found is None:
            found = self._selected[name] = _QUERIES[name](self)
        return found

    # --- the eight named queries ---------------------------------------------------------

    def _ontology_acceptance(self) -> list[Row]:
        acceptance = self._tables.acceptance
        classes = self._index.get(RDF_TYPE, _NOTHING)
        versions = self._index.get(_ONTOLOGY_VERSION, _NOTHING)
        return [dict(part)
                for envelope, ontologies in self._index.get(_ONTOLOGY_ID, _NOTHING).items()
                if _SEMANTIC_PROFILE in classes.get(envelope, ())
                for ontology in ontologies
                for version in versions.get(envelope, ())
                for part in acceptance.get((ontology, version), ())]

    def _binding_senses(self) -> list[Row]:
        senses = self._tables.senses
        term_bindings = self._index.get(_TERM_BINDINGS, _NOTHING)
        terms = self._index.get(_TERM, _NOTHING)
        binding_senses = self._index.get(_SENSE, _NOTHING)
        return _ordered([
            ((term_order, sense_order, domain_order), {"term": term, "sense": sense, **part})
            for contexts in self._index.get(_PROFILE_CONTEXT, _NOTHING).values()
            for context in contexts
            for binding in term_bindings.get(context, ())
            for term_order, term in map(_shown, terms.get(binding, ()))
            for key in binding_senses.get(binding, ())
            for sense_order, sense in (_shown(key),)
            for domain_order, part in senses.get(key, _UNKNOWN_SENSE)])

    def _context_domains_rows(self) -> list[Row]:
        permitted = self._tables.permitted_domains
        domains = self._index.get(_DOMAIN, _NOTHING)
        return _ordered([
            ((domain_order,), {"domain": domain, "permitted": key in permitted})
            for contexts in self._index.get(_PROFILE_CONTEXT, _NOTHING).values()
            for context in contexts
            for key in domains.get(context, ())
            for domain_order, domain in (_shown(key),)])

    def _intent_requirements(self) -> list[Row]:
        intents = self._tables.intents
        declared = self._index.get(_CAPABILITY_REFS, _NOTHING)
        return _ordered([
            ((required_order,), {
                "intent": plain(intent), **part,
                "declared": None if required is None
                else required in declared.get(envelope, ())})
            for envelope, envelope_intents in self._index.get(_INTENT_REF, _NOTHING).items()
            for intent in envelope_intents
            for required_order, required, part in intents.get(intent, _UNKNOWN_INTENT)])

    def _intent_domains(self) -> list[Row]:
        intent_domains = self._tables.intent_domains
        contexts = self._index.get(_PROFILE_CONTEXT, _NOTHING)
        domains = self._index.get(_DOMAIN, _NOTHING)
        return _ordered([
            ((domain_order,), {**part, "inContext": any(
                domain in domains.get(context, ()) for context in contexts.get(envelope, ()))})
            for envelope, envelope_intents in self._index.get(_INTENT_REF, _NOTHING).items()
            for intent in envelope_intents
            for domain, domain_order, part in intent_domains.get(intent, ())])

    def _requested_capabilities(self) -> list[Row]:
        capabilities = self._tables.capabilities
        registrations = self._tables.registrations
        return _ordered([
            ((capability_order, registration_order),
             {"capability": capability, **part, "registration": registration})
            for refs in self._index.get(_CAPABILITY_REFS, _NOTHING).values()
            for key in refs
            for capability_order, capability in (_shown(key),)
            for ontology in self._ontology_ids
            for version in self._versions
            for part in capabilities.get(key, _UNKNOWN_CAPABILITY)
            for registration_order, registration in registrations.get(
                (key, ontology, version), _UNREGISTERED)])

    def _mapping_candidates(self) -> list[Row]:
        readings = self._tables.readings
        own = self._own_readings
        rows: list[tuple[tuple[OrderKey, ...], Row]] = []
        if not self._ontology_ids:
            return []
        for refs in self._index.get(_CAPABILITY_REFS, _NOTHING).values():
            for key in refs:
                found = readings.get(key, ())
                if own:
                    found = (*found, *own.get(key, ()))
                if found:
                    rows.extend(candidate_rows(found, key, self._ontology_ids, self._versions))
        return _ordered(rows)

    def _rule_conditions(self) -> list[Row]:
        if not self._own_conditions:
            return [dict(row) for _, row in self._tables.conditions]  # already in order
        return _ordered([(keys, dict(row)) for keys, row in (
            *self._tables.conditions, *self._own_conditions)])


def candidate_rows(found: Iterable[RuleReading], key: Term, ontology_ids: Iterable[Term],
                   versions: Iterable[Term]) -> Iterator[tuple[tuple[OrderKey, ...], Row]]:
    """mapping_candidates' rows for one requested capability, with their ORDER BY keys."""
    capability_order, capability = _shown(key)
    for ontology in ontology_ids:
        for version in versions:
            for r in found:
                # ?requestedId = ?ontology && ?requestedVersion = ?version; the second
                # comparison can be an error, which leaves it unbound.
                matches = (False if r.requested_id != ontology
                           else None if not r.comparable
                           else r.requested_version == version)
                yield ((r.graph_order, capability_order, r.rule_order, r.reverse_order,
                        r.registration_order),
                       {"artifactGraph": r.graph, "capability": capability, "rule": r.rule,
                        "offered": r.offered, "reverse": r.reverse, "versionsMatch": matches,
                        "registration": r.registration, "trusted": r.trusted})


def candidates_in_order(found: Iterable[RuleReading], key: Term, ontology_ids: Iterable[Term],
                        versions: Iterable[Term]) -> list[Row]:
    """:func:`candidate_rows` for one requested capability, in ORDER BY order."""
    return _ordered(list(candidate_rows(found, key, ontology_ids, versions)))


_QUERIES: dict[str, Callable[[TableDataset], list[Row]]] = {
    "ontology_acceptance": TableDataset._ontology_acceptance,
    "binding_senses": TableDataset._binding_senses,
    "context_domains": TableDataset._context_domains_rows,
    "intent_requirements": TableDataset._intent_requirements,
    "intent_domains": TableDataset._intent_domains,
    "requested_capabilities": TableDataset._requested_capabilities,
    "mapping_candidates": TableDataset._mapping_candidates,
    "rule_conditions": TableDataset._rule_conditions,
}
_NOTHING: dict[Term, list[Term]] = {}
# What a query reads for a term the tables do not know: no concept, intent or capability.
_UNKNOWN_SENSE: tuple[tuple[OrderKey, Row], ...] = (
    (_UNBOUND, {"known": False, "domain": None, "permitted": None}),)
_UNKNOWN_INTENT: tuple[tuple[OrderKey, Term | None, Row], ...] = (
    (_UNBOUND, None, {"known": False, "required": None}),)
_UNKNOWN_CAPABILITY: tuple[Row, ...] = ({"known": False, "input": None, "output": None},)
_UNREGISTERED: tuple[tuple[OrderKey, str | None], ...] = ((_UNBOUND, None),)


def _ordered(rows: list[tuple[tuple[OrderKey, ...], Row]]) -> list[Row]:
    """The rows in ORDER BY order; a stable sort, as in spareval, keeps ties as they came."""
    if len(rows) < 2:
        return [row for _, row in rows]
    rows.sort(key=_sort_key)
    return [row for _, row in rows]


def _sort_key(pair: tuple[tuple[OrderKey, ...], Row]) -> tuple[OrderKey, ...]:
    return pair[0]
