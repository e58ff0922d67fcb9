"""The compiled shape checks agree with pyshacl on the normative shapes (shapes/baseline.ttl).

For a corpus of envelopes and registrations, each with one defect (or none), the set of
(constraint component, property path) results of the checker's compiled evaluation equals
pyshacl's over the RDF that pyld produces from the same document. Covers R-5.4-1, R-5.4-4
(no inference: pyshacl runs without a reasoner), R-5.4-5, R-6.2-2..R-6.2-7, R-6.3-1.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

pyshacl = pytest.importorskip("pyshacl")
rdflib = pytest.importorskip("rdflib")

from pyld import jsonld  # noqa: E402

from ioa_semantic import data as _resources  # noqa: E402
from ioa_semantic.pipeline.contexts import ContextPolicy, review_contexts  # noqa: E402
from ioa_semantic.pipeline.expansion import expand  # noqa: E402
from ioa_semantic.pipeline.shapes import ShapeSet, located_nodes  # noqa: E402

from support import envelope_62, registration_63  # noqa: E402

SH = "http://www.w3.org/ns/shacl#"
SHAPES = ShapeSet()
SHAPES_GRAPH = rdflib.Graph().parse(data=_resources.read_text("shapes", "baseline.ttl"),
                                    format="turtle")


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(doc: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        target: Any = doc
        for p in parents:
            target = target[int(p)] if isinstance(target, list) else target[p]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value
    return apply


_DELETE = object()

ENVELOPE_MUTATIONS: dict[str, list[Callable[[dict[str, Any]], None]]] = {
    "as-is": [],
    "version-empty": [_set("ontologyVersion", "")],
    "version-blank": [_set("ontologyVersion", "   ")],
    "version-number": [_set("ontologyVersion", 1.5)],
    "version-boolean": [_set("ontologyVersion", True)],
    "version-language": [_set("ontologyVersion", {"@value": "1.0", "@language": "en"})],
    "version-two": [_set("ontologyVersion", ["1.0", "1.1"])],
    "ontology-literal": [_set("ontologyId", {"@value": "https://example.org/onto/agent-core"})],
    "ontology-two": [_set("ontologyId", ["https://example.org/a", "https://example.org/b"])],
    "capabilities-empty": [_set("capabilityRefs", [])],
    "capabilities-number": [_set("capabilityRefs", ["cs:TechTranslation", 5])],
    "intent-two": [_set("intentRef", ["cs:TranslateTechDoc", "cs:Other"])],
    "intent-missing": [_set("intentRef", _DELETE)],
    "intent-literal": [_set("intentRef", {"@value": "cs:TranslateTechDoc"})],
    "type-capability": [_set("@type", "ioa:Capability")],
    "context-untyped": [_set("profileContext/@type", _DELETE)],
    "context-wrong-type": [_set("profileContext/@type", "ioa:TermBinding")],
    "binding-untyped": [_set("profileContext/termBindings/0/@type", _DELETE)],
    "binding-empty-term": [_set("profileContext/termBindings/0/term", "")],
    "binding-number-term": [_set("profileContext/termBindings/0/term", 7)],
    "binding-no-sense": [_set("profileContext/termBindings/0/sense", _DELETE)],
    "binding-two-senses": [_set("profileContext/termBindings/0/sense",
                                ["cs:LargeLanguageModel", "cs:Other"])],
    "extra-property": [_set("@context/note", "https://ext.example/note"), _set("note", "hi")],
    "profile-version-number": [_set("@context/profileVersion", "ioa:profileVersion"),
                               _set("profileVersion", 2)],
    "two-context-domains": [_set("profileContext/domain",
                                 ["cs:ComputerScience", "https://example.org/onto/law#Law"])],
}

REGISTRATION_MUTATIONS: dict[str, list[Callable[[dict[str, Any]], None]]] = {
    "as-is": [],
    "no-inputs": [_set("inputs", _DELETE)],
    "inputs-not-media-type": [_set("inputs", ["text"])],
    "outputs-number": [_set("outputs", [5])],
    "wrong-type": [_set("@type", "ioa:Intent")],
    "label-number": [_set("label", 3)],
    "outputs-empty": [_set("outputs", [])],
}


def _ours(doc: dict[str, Any], kind: str) -> set[tuple[str, str | None]]:
    policy = ContextPolicy()
    review = review_contexts(doc, policy)
    node = expand(doc).nodes[0]
    root = SHAPES.envelope if kind == "envelope" else SHAPES.registration
    located = located_nodes(node, doc, review.terms)
    return {(v.component, v.path) for v in SHAPES.validate(root, located, review.terms)}


def _pyshacl(doc: dict[str, Any], kind: str) -> set[tuple[str, str | None]]:
    nquads = jsonld.to_rdf(doc, {"base": None, "format": "application/n-quads"})
    data = rdflib.Graph().parse(data=nquads, format="nt") if nquads else rdflib.Graph()
    _, report, _ = pyshacl.validate(data, shacl_graph=SHAPES_GRAPH, inference="none")
    # The checker applies one family's shapes to a document: an envelope typed
    # ioa:Capability is a malformed envelope, not a registration.
    family = {s.name for s in SHAPES.shapes.values() if s.family == kind}
    family |= {p.name for s in SHAPES.shapes.values() if s.family == kind for p in s.properties}
    out = set()
    for result in report.subjects(rdflib.RDF.type, rdflib.URIRef(SH + "ValidationResult")):
        focus = report.value(result, rdflib.URIRef(SH + "focusNode"))
        if isinstance(focus, rdflib.Literal):
            # A literal where a node belongs is reported on the property that holds it.
            continue
        if str(report.value(result, rdflib.URIRef(SH + "sourceShape"))) not in family:
            continue
        component = str(report.value(result, rdflib.URIRef(SH + "sourceConstraintComponent")))
        path = report.value(result, rdflib.URIRef(SH + "resultPath"))
        out.add((component.rpartition("#")[2], str(path) if path is not None else None))
    return out


@pytest.mark.parametrize("name", sorted(ENVELOPE_MUTATIONS))
def test_envelope_shapes_agree_with_pyshacl(name: str) -> None:
    doc = envelope_62()
    doc["@context"]["profileVersion"] = "ioa:profileVersion"
    for mutate in ENVELOPE_MUTATIONS[name]:
        mutate(doc)
    # Registration shapes target subjects of ioa:inputs; envelopes here carry none.
    ours = _ours(doc, "envelope")
    theirs = _pyshacl(doc, "envelope")
    assert ours == theirs
    assert (name == "as-is") == (not ours)


@pytest.mark.parametrize("name", sorted(REGISTRATION_MUTATIONS))
def test_registration_shapes_agree_with_pyshacl(name: str) -> None:
    doc = registration_63()
    for mutate in REGISTRATION_MUTATIONS[name]:
        mutate(doc)
    ours = _ours(doc, "registration")
    theirs = _pyshacl(doc, "registration")
    if name == "wrong-type":
        # pyshacl targets the node only through ioa:inputs/outputs; so does the checker's root.
        rdf_type = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
        assert ("HasValueConstraintComponent", rdf_type) in ours
    assert ours == theirs
    assert (name == "as-is") == (not ours)


def test_corpus_covers_every_constraint_component_in_the_shapes() -> None:
    """The differential corpus exercises each kind of constraint the shapes use."""
    seen: set[str] = set()
    for mutations in ENVELOPE_MUTATIONS.values():
        doc = envelope_62()
        doc["@context"]["profileVersion"] = "ioa:profileVersion"
        for mutate in mutations:
            mutate(doc)
        seen |= {c for c, _ in _ours(doc, "envelope")}
    for mutations in REGISTRATION_MUTATIONS.values():
        doc = registration_63()
        for mutate in mutations:
            mutate(doc)
        seen |= {c for c, _ in _ours(doc, "registration")}
    assert {"MinCountConstraintComponent", "MaxCountConstraintComponent",
            "NodeKindConstraintComponent", "DatatypeConstraintComponent",
            "PatternConstraintComponent", "HasValueConstraintComponent",
            "ClosedConstraintComponent"} <= seen


def test_shapes_file_parses_as_json_ld_free_turtle() -> None:
    assert json.dumps(sorted(SHAPES.shapes))  # the compiled set is non-empty and named
    assert len(SHAPES.shapes) == 4
