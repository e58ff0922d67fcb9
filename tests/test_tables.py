"""The compiled tables answer every named query as the store does.

:class:`ioa_semantic.compiled.tables.TableDataset` stands in for the per-check store
(:class:`ioa_semantic.pipeline.store.Dataset`), so for every case folder whose envelope reaches the
decision stage (``tests/cases/*/*`` and the shared conformance cases), and for a Checker
offered many artifacts and registrations at once, each of the eight named queries must give
the store's rows: the same variables, values and Python types, the same multiplicity, and
the same order. That holds before ``read_as`` (when the queries that join the check graph
have no rows), after reading the envelope under the ontology it declares, after reading it
under a second version as well, and under the second version alone.

Order is compared through each query's ORDER BY: the sequences of ORDER BY keys must be
equal, and within a run of equal keys (a tie, which SPARQL leaves in any order) the rows are
compared as multisets. Where the ORDER BY fully determines the order (every case folder
except a few ties: duplicate envelope facts, several media types of one capability), that is
plain list equality. ``ontology_acceptance`` has no ORDER BY and is compared as a multiset.

The decision over both must also agree: the same findings, evidence, exclusions and
candidates.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyoxigraph
import pytest

from ioa_semantic import Checker, ConfigurationError
from ioa_semantic._checker import shapes
from ioa_semantic.compiled.tables import CompiledTables, TableDataset
from ioa_semantic.data import read_text, shipped_profiles
from ioa_semantic.pipeline.baseline import read_document
from ioa_semantic.pipeline.decision import evaluate, task_from
from ioa_semantic.pipeline.store import QUERY_NAMES, Dataset, envelope_quads

from support import CONFORMANCE
from test_cases import Case, arguments

CASES = Path(__file__).parent / "cases"
MAPPING = CASES / "compatibility" / "accepted-mapping"
IOA = "https://example.org/ioa/semantic#"
IOAA = "https://ioa-semantic.org/ns/alignment#"
AT = datetime(2026, 6, 1, tzinfo=UTC)
PARAMS = {"sourceLang": "zh", "targetLang": "en"}

ORDER_BY: dict[str, tuple[str, ...]] = {
    "ontology_acceptance": (),
    "binding_senses": ("term", "sense", "domain"),
    "context_domains": ("domain",),
    "intent_requirements": ("required",),
    "intent_domains": ("domain",),
    "requested_capabilities": ("capability", "registration"),
    "mapping_candidates": ("artifactGraph", "capability", "rule", "reverse", "registration"),
    "rule_conditions": ("artifactGraph", "rule", "parameter"),
}


def test_every_named_query_is_compared() -> None:
    assert tuple(ORDER_BY) == QUERY_NAMES


# --- comparing rows -------------------------------------------------------------------------


def sparql_order(value: Any) -> tuple[int, str]:
    """Where ORDER BY puts a value as ``Dataset.select`` shows it: unbound, blank nodes, IRIs,
    literals. Each sorted column holds one kind of term, so strings compare as strings."""
    if value is None:
        return (0, "")
    if isinstance(value, bool):
        return (3, "true" if value else "false")
    if value.startswith("_:"):
        return (1, value[2:])
    return (2, value)


def shown(row: dict[str, Any]) -> list[tuple[str, str, str]]:
    """A row with the type of each value, so that True and "true" differ."""
    return sorted((name, type(value).__name__, repr(value)) for name, value in row.items())


def runs(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> list[Any]:
    """The rows as runs of equal ORDER BY keys, each run a multiset."""
    return [(key, sorted(shown(row) for row in run)) for key, run in itertools.groupby(
        rows, key=lambda row: tuple(sparql_order(row[c]) for c in columns))]


def assert_same_rows(reference: Dataset, compiled: TableDataset, when: str) -> None:
    for name in QUERY_NAMES:
        expected, got = reference.select(name), compiled.select(name)
        assert runs(got, ORDER_BY[name]) == runs(expected, ORDER_BY[name]), (
            f"{name} {when}:\nstore:  {expected}\ntables: {got}")


def declared_ontology(node: dict[str, Any]) -> tuple[str, str]:
    return node[IOA + "ontologyId"][0]["@id"], node[IOA + "ontologyVersion"][0]["@value"]


def assert_same_answers(checker: Checker, node: dict[str, Any], params: dict[str, str],
                        at: datetime) -> None:
    """Rows before and after read_as, and the decision, from the store and from the tables."""
    tables = CompiledTables.build(checker.stages.fixed)
    declared = declared_ontology(node)
    other = (declared[0], "2.0" if declared[1] != "2.0" else "1.0")

    reference, compiled = Dataset(checker.stages.fixed, envelope_quads(node)), TableDataset(tables, node)
    assert_same_rows(reference, compiled, "before read_as")
    for ontology in (declared, other):
        reference.read_as(ontology)
        compiled.read_as(ontology)
        assert_same_rows(reference, compiled, f"after read_as up to {ontology}")
    reference, compiled = Dataset(checker.stages.fixed, envelope_quads(node)), TableDataset(tables, node)
    reference.read_as(other)
    compiled.read_as(other)
    assert_same_rows(reference, compiled, f"read only as {other}")

    task = task_from(node, params)
    outcomes = [evaluate(dataset, node, checker.profile, checker.registrations,
                         checker.artifacts, task, at)
                for dataset in (Dataset(checker.stages.fixed, envelope_quads(node)),
                                TableDataset(tables, node))]
    expected, got = outcomes
    assert [(f.code, f.severity, f.message, f.path) for f in got.findings] == [
        (f.code, f.severity, f.message, f.path) for f in expected.findings]
    assert got.evidence == expected.evidence
    assert got.excluded == expected.excluded
    assert got.candidates == expected.candidates
    assert got.ontology == expected.ontology


def baseline_node(checker: Checker, envelope: bytes) -> dict[str, Any] | None:
    """The expanded envelope, if the baseline stage lets it through to the decision."""
    result = read_document(envelope, "envelope", shapes=shapes(), policy=checker.policy,
                           permitted_types=checker.profile.permitted_types,
                           limits=checker.limits)
    return None if result.rejected else result.node


# --- every case folder ---------------------------------------------------------------------


def _cases() -> Iterator[Any]:
    # An envelope a case expects to be invalid never reaches the queries.
    for path in sorted(CASES.glob("*/*/case.json")):
        spec = json.loads(path.read_text())
        if spec["expect"]["verdict"] != "invalid":
            case = Case(path.parent.parent.name, path.parent, spec)
            yield pytest.param(case, id=case.id)
    if not CONFORMANCE.exists():
        yield pytest.param(None, id="conformance", marks=pytest.mark.skip(
            reason="../shared is not present"))
        return
    for path in sorted(CONFORMANCE.glob("*/case.json")):
        case = Case("conformance", path.parent, json.loads(path.read_text()))
        yield pytest.param(case, id=case.id)


@pytest.mark.parametrize("case", list(_cases()))
def test_the_tables_answer_as_the_store_for_every_case(case: Case) -> None:
    args = arguments(case)
    try:
        checker = Checker(args.profile, capabilities=args.capabilities,
                          alignments=args.alignments, limits=args.limits)
    except ConfigurationError as exc:
        pytest.skip(f"the case's Checker cannot be built: {exc}")
    node = baseline_node(checker, case.envelope.read_bytes())
    if node is None:
        pytest.skip("the baseline stage rejects the envelope: no query runs")
    assert_same_answers(checker, node, args.params, args.at)


def test_the_comparison_sees_rows_of_every_query() -> None:
    """Equal empty answers would prove nothing: the mapping case fills every query."""
    checker = Checker("cs-translation", capabilities=[MAPPING / "provider.jsonld"],
                      alignments=[MAPPING / "align0.json"])
    node = baseline_node(checker, (MAPPING / "envelope.jsonld").read_bytes())
    assert node is not None
    compiled = TableDataset(CompiledTables.build(checker.stages.fixed), node)
    compiled.read_as(declared_ontology(node))
    assert all(compiled.select(name) for name in QUERY_NAMES)


# --- many artifacts and registrations at once ----------------------------------------------


def _artifact(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((MAPPING / "align0.json").read_text())
    rule = changes.pop("rule", {})
    doc.update(changes)
    doc["mappingRules"][0].update(rule)
    return doc


CS = "https://example.org/onto/cs#"
DOC = "https://example.net/onto/doc#"
REVERSED = {"from": DOC + "TranslateText", "to": CS + "TechTranslation"}
OFFERED = {
    "applicable": _artifact(),
    "untrusted": _artifact(assertedBy="https://elsewhere.example/issuer"),
    "expired": _artifact(validUntil="2026-05-31T00:00:00Z"),
    "source-version": _artifact(sourceOntologyVersion="1.1"),
    "target-version": _artifact(targetOntologyVersion="2.1"),
    "other-from": _artifact(rule={"from": CS + "Other"}),
    "other-to": _artifact(rule={"to": DOC + "Other"}),
    "reverse-only": _artifact(direction="target-to-source"),
    "bidirectional": _artifact(direction="bidirectional"),
    "bidirectional-reversed": _artifact(
        direction="bidirectional", rule=REVERSED,
        sourceOntologyId="https://example.net/onto/doc", sourceOntologyVersion="2.0",
        targetOntologyId="https://example.org/onto/agent-core", targetOntologyVersion="1.0"),
    "condition-false": _artifact(rule={"conditions": {"targetLang": "fr"}}),
    "no-conditions": _artifact(rule={"conditions": {}}),
    "two-rules": _artifact(mappingRules=[
        {"from": CS + "TechTranslation", "to": DOC + "TranslateText",
         "conditions": {"sourceLang": "zh"}},
        {"from": CS + "TechTranslation", "to": DOC + "Summarize",
         "conditions": {"targetLang": "en", "domain": CS + "ComputerScience"}}]),
    "malformed": _artifact(revision=""),
}


def _offered(tmp_path: Path) -> list[Path]:
    paths = []
    for copy_index in range(3):
        for name, doc in OFFERED.items():
            doc = copy.deepcopy(doc)
            doc["artifactId"] = f"https://example.org/align/{name}-{copy_index}"
            path = tmp_path / f"{name}-{copy_index}.json"
            path.write_text(json.dumps(doc))
            paths.append(path)
    return [*paths, MAPPING / "align0.json", MAPPING / "align0.json"]


def _registrations(tmp_path: Path, direct: bool) -> list[Path]:
    provider = json.loads((MAPPING / "provider.jsonld").read_text())
    variants = [("TranslateText", version) for version in ("1.0", "2.0", "2.1", "3.0")]
    variants += [("TranslateText", "2.0"), ("Summarize", "2.0")]
    paths = []
    for index, (local, version) in enumerate(variants):
        doc = copy.deepcopy(provider)
        doc["@id"], doc["ontologyVersion"] = f"doc:{local}", version
        paths.append(tmp_path / f"registration-{index}.jsonld")
        paths[-1].write_text(json.dumps(doc))
    if direct:  # the requested capability itself, under the envelope's ontology
        doc = copy.deepcopy(provider)
        doc["@id"], doc["ontologyId"], doc["ontologyVersion"] = (
            "cs:TechTranslation", "https://example.org/onto/agent-core", "1.0")
        paths.append(tmp_path / "registration-direct.jsonld")
        paths[-1].write_text(json.dumps(doc))
    return paths


@pytest.mark.parametrize("direct", [False, True], ids=["mapped", "direct"])
def test_many_artifacts_and_registrations_at_once(tmp_path: Path, direct: bool) -> None:
    checker = Checker("cs-translation", capabilities=_registrations(tmp_path, direct),
                      alignments=_offered(tmp_path))
    assert sum(not a.malformed for a in checker.artifacts) == 3 * (len(OFFERED) - 1) + 2
    node = baseline_node(checker, (MAPPING / "envelope.jsonld").read_bytes())
    assert node is not None
    assert_same_answers(checker, node, PARAMS, AT)


# --- what the comparison rests on, and envelopes that stretch it ---------------------------


def test_blank_node_ids_are_the_same_in_every_store_of_the_same_quads() -> None:
    """?rule is a blank node; the tables' store and each check's store must name it alike."""
    checker = Checker("cs-translation", alignments=[MAPPING / "align0.json"] * 2)
    query = f"SELECT ?rule WHERE {{ GRAPH ?g {{ ?a <{IOAA}mappingRule> ?rule }} }}"
    named = []
    for _ in range(2):
        store = pyoxigraph.Store()
        store.bulk_extend(checker.stages.fixed)
        solutions = store.query(query)
        assert isinstance(solutions, pyoxigraph.QuerySolutions)
        named.append(sorted(str(s["rule"]) for s in solutions))
    given = sorted(str(q.object) for q in checker.stages.fixed if q.predicate.value == IOAA + "mappingRule")
    assert named[0] == named[1] == given
    assert len(set(given)) == 2  # the same artifact offered twice has its own rule node


def _profile(tmp_path: Path, extra: str) -> str:
    path = tmp_path / "profile.ttl"
    path.write_text(read_text("profiles", shipped_profiles()["cs-translation"]) + extra)
    return str(path)


def _envelope(**members: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((MAPPING / "envelope.jsonld").read_text())
    doc.update(members)
    return doc


def test_repeated_facts_relationships_and_many_media_types(tmp_path: Path) -> None:
    """Bag semantics: duplicate envelope facts, relationships, OPTIONAL products."""
    profile = _profile(tmp_path, """
<https://example.org/profiles/cs-translation>
    iop:acceptsOntology [ iop:ontologyId <https://example.org/onto/agent-core> ;
                          iop:ontologyVersion "1.2" ] ;
    iop:versionRelationship
        [ iop:ontologyId <https://example.org/onto/agent-core> ; iop:version "1.1" ;
          iop:readAs "1.0" ; iop:appliesToIntent cs:TranslateTechDoc, cs:Other ] ,
        [ iop:ontologyId <https://example.org/onto/agent-core> ; iop:version "1.1" ;
          iop:readAs "1.2" ] ;
    iop:permittedBindingDomain law:Law .
cs:TechTranslation ioa:inputs "text/html", "text/markdown" ; ioa:outputs "text/html" .
cs:LargeLanguageModel ioa:inDomain law:Law .
cs:TranslateTechDoc ioa:requiresCapability cs:Summarize ; ioa:appliesToDomain law:Law .
""")
    provider = json.loads((MAPPING / "provider.jsonld").read_text())
    registrations = []
    for index in range(2):
        doc = copy.deepcopy(provider)
        doc["@id"], doc["ontologyId"], doc["ontologyVersion"] = (
            "cs:TechTranslation", "https://example.org/onto/agent-core", "1.0")
        registrations.append(tmp_path / f"registration-{index}.jsonld")
        registrations[-1].write_text(json.dumps(doc))
    checker = Checker(profile, capabilities=registrations, alignments=[MAPPING / "align0.json"])
    binding = {"@type": "ioa:TermBinding", "term": "LLM", "sense": "cs:LargeLanguageModel"}
    for version in ("1.0", "1.1"):
        doc = _envelope(ontologyVersion=version,
                        capabilityRefs=["cs:TechTranslation", "cs:TechTranslation", "cs:Unknown"])
        doc["profileContext"]["termBindings"] = [binding, dict(binding),
                                                 {**binding, "term": "ML", "sense": "cs:Nothing"}]
        node = baseline_node(checker, json.dumps(doc).encode())
        assert node is not None, version
        assert_same_answers(checker, node, PARAMS, AT)


def test_an_envelope_that_states_mapping_rules_itself(tmp_path: Path) -> None:
    """The artifact pattern's graph is a variable, so the envelope's own graph can match it
    (the terms pass the shapes only as ignorable terms). Its numbers, booleans and typed values
    are literals in Oxigraph's canonical form, and a version of an unknown datatype leaves
    versionsMatch unbound."""
    alignment_terms = ("mappingRule", "direction", "assertedBy", "sourceOntologyId",
                       "sourceOntologyVersion", "targetOntologyId", "targetOntologyVersion",
                       "from", "to", "condition", "parameter", "value")
    ignorable = ", ".join(f'"{IOAA}{term}"' for term in alignment_terms)
    profile = _profile(tmp_path, f"<https://example.org/profiles/cs-translation> "
                                 f"iop:ignorableTerm {ignorable} .\n")
    checker = Checker(profile, capabilities=[MAPPING / "provider.jsonld"],
                      alignments=[MAPPING / "align0.json"])

    def typed(value: str, datatype: str) -> dict[str, str]:
        iri = datatype if ":" in datatype else f"http://www.w3.org/2001/XMLSchema#{datatype}"
        return {"@value": value, "@type": iri}

    doc = _envelope(
        direction=["source-to-target", "bidirectional"],
        assertedBy=["https://example.org/mapping-authority", "https://elsewhere.example/x"],
        sourceOntologyId="https://example.org/onto/agent-core",
        sourceOntologyVersion=["1.0", 10, 123456789012345678901234567890,
                               typed("1.0", "urn:example:version"), typed("2026-06-01", "date")],
        targetOntologyId="https://example.net/onto/doc",
        targetOntologyVersion=["2.0", 2.0, True, {"@value": "2.0", "@language": "EN"},
                               typed("2.0", "urn:example:version"), typed("x", "integer")],
        mappingRule=[
            {"from": "cs:TechTranslation", "to": "https://example.net/onto/doc#TranslateText",
             "condition": [{"parameter": "sourceLang", "value": "zh"},
                           {"parameter": "n", "value": [1.5, 1e300, 1e-7, -0.0, 3, False]},
                           {"parameter": "t", "value": [
                               typed("01", "int"), typed("1", "boolean"), typed("1e5", "double"),
                               typed("-INF", "double"), typed("x", "urn:example:type")]}]},
            {"from": "https://example.net/onto/doc#TranslateText", "to": "cs:TechTranslation",
             "condition": {"parameter": "targetLang", "value": "en"}}])
    context = doc["@context"]
    context["ioaa"] = IOAA
    for term in alignment_terms:
        coerced = term in ("assertedBy", "sourceOntologyId", "targetOntologyId", "from", "to")
        context[term] = {"@id": f"ioaa:{term}", "@type": "@id"} if coerced else f"ioaa:{term}"
    node = baseline_node(checker, json.dumps(doc).encode())
    assert node is not None
    compiled = TableDataset(CompiledTables.build(checker.stages.fixed), node)
    compiled.read_as(declared_ontology(node))
    assert {r["artifactGraph"] for r in compiled.select("mapping_candidates")} >= {
        "urn:ioa-semantic:graph:envelope"}
    assert_same_answers(checker, node, PARAMS, AT)
