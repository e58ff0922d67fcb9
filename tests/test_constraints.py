"""A profile's own SHACL shapes (draft 5.4; R-5.4-2, R-5.4-5): routing, the two routes held
to each other, and the reasons they become.

The compiled route (``CompiledShape``) is held to pySHACL: hypothesis draws node shapes in
the compiled subset (``sh:targetClass``/``sh:targetNode``, property shapes with
``sh:minCount``, ``sh:maxCount``, ``sh:nodeKind``, ``sh:datatype`` ``xsd:string`` or
``rdf:langString``, ``sh:pattern``, ``sh:hasValue``, ``sh:message``) and small data graphs
(typed nodes, subclasses, literals with and without a language, IRIs, blank nodes, strings
that end in a newline, one triple in two named graphs), and the results of the shapes as
they are (compiled) equal the results of the same shapes with ``sh:deactivated false`` on each
node shape, a parameter outside the compiled subset that changes no result (SHACL 2.1.5),
which sends them to pySHACL over the same store. That way the comparison is the project's
own pySHACL route (its translated patterns, its naming of shapes, its messages), not a
second harness around pySHACL.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

import pyoxigraph
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ioa_semantic import ConfigurationError
from ioa_semantic._findings import Severity
from ioa_semantic.pipeline.constraints import (
    ROUTE_COMPILED,
    ROUTE_PYSHACL,
    ROUTE_UNSUPPORTED,
    TASK,
    CompiledShape,
    ProfileShapes,
    Result,
    ShapesUnreadable,
    Unevaluable,
    constraint_findings,
    task_quads,
)
from ioa_semantic.sources.loader import ShapeFile

EX = "https://example.org/t#"
SH = "http://www.w3.org/ns/shacl#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
PREFIXES = f"""@prefix sh: <{SH}> .
@prefix xsd: <{XSD}> .
@prefix rdf: <{RDF}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix ex: <{EX}> .
"""


def shape_file(turtle: str, reference: str = "t.shapes.ttl") -> ShapeFile:
    data = (PREFIXES + turtle).encode()
    return ShapeFile(reference, f"/profiles/{reference}", data, hashlib.sha256(data).hexdigest())


def shapes_of(turtle: str) -> ProfileShapes:
    return ProfileShapes((shape_file(turtle),))


def store_of(trig: str) -> pyoxigraph.Store:
    store = pyoxigraph.Store()
    store.load((PREFIXES + trig).encode(), pyoxigraph.RdfFormat.TRIG)
    return store


def routes(shapes: ProfileShapes) -> dict[str, tuple[str, str]]:
    return {r.shape: (r.engine, r.why) for r in shapes.routes}


# --- the compiled route held to pySHACL ------------------------------------------------------

NODE_KINDS = ["sh:IRI", "sh:BlankNode", "sh:Literal", "sh:BlankNodeOrIRI",
              "sh:BlankNodeOrLiteral", "sh:IRIOrLiteral"]
# Patterns with anchors, classes and a "$" that a final newline would satisfy in Python's
# reading and not in XPath's.
PATTERNS = ['"^a"', '"a$"', '"^$"', '"b"', '"^a.*c$"', '"[0-9]"', '"^[a-z]+$"', '"^\\\\w+$"',
            '"^(a+)+$"']
# sh:in, compiled as a set of terms: a language tag and a datatype make another term
IN_LISTS = ['( ex:o1 "a" )', '( "a"@en "abc" )', '( )', '( "b"^^xsd:string ex:n1 "a\\n" )']
HAS_VALUES = ["ex:o1", '"a"', '"a"@en', '"b"^^xsd:string', '"a\\n"']
MESSAGES = ['"a message of the profile"', '"un message"@fr']

property_shapes = st.fixed_dictionaries(
    {"path": st.sampled_from(["ex:p", "ex:q"])},
    optional={
        "minCount": st.integers(0, 2).map(str),
        "maxCount": st.integers(0, 2).map(str),
        "nodeKind": st.sampled_from(NODE_KINDS),
        "datatype": st.sampled_from(["xsd:string", "rdf:langString"]),
        "pattern": st.sampled_from(PATTERNS),
        "hasValue": st.sampled_from(HAS_VALUES),
        "in": st.sampled_from(IN_LISTS),
        "message": st.sampled_from(MESSAGES),
    })
node_shapes = st.fixed_dictionaries(
    {"property": st.lists(property_shapes, min_size=1, max_size=3)},
    optional={
        "targetClass": st.lists(st.sampled_from(["ex:A", "ex:B"]), min_size=1, max_size=2,
                                unique=True),
        # (a literal target node: see test_a_literal_target_node_is_evaluated_by_the_spec)
        "targetNode": st.lists(st.sampled_from(["ex:n0", "ex:n1", "ex:absent"]),
                               min_size=1, max_size=2, unique=True),
    }).filter(lambda s: "targetClass" in s or "targetNode" in s)


def render(shapes: list[dict[str, Any]], *, to_pyshacl: bool) -> str:
    out = []
    for i, shape in enumerate(shapes):
        lines = [f"ex:S{i} a sh:NodeShape"]
        if to_pyshacl:
            lines.append("sh:deactivated false")
        lines += [f"sh:{key} {', '.join(shape[key])}" for key in ("targetClass", "targetNode")
                  if key in shape]
        for prop in shape["property"]:
            lines.append("sh:property [ " + " ; ".join(
                f"sh:{k} {v}" for k, v in prop.items()) + " ]")
        out.append(" ;\n    ".join(lines) + " .\n")
    return "".join(out)


def term(text: str) -> Any:
    if text.startswith("_:"):
        return pyoxigraph.BlankNode(text[2:])
    if text.startswith("ex:"):
        return pyoxigraph.NamedNode(EX + text[3:])
    return {
        "plain": pyoxigraph.Literal("a"),
        "abc": pyoxigraph.Literal("abc"),
        "empty": pyoxigraph.Literal(""),
        "newline": pyoxigraph.Literal("a\n"),
        "b-newline": pyoxigraph.Literal("b\n"),
        "word": pyoxigraph.Literal("a_b"),
        "english": pyoxigraph.Literal("a", language="en"),
        "french": pyoxigraph.Literal("abc", language="fr"),
        "digits": pyoxigraph.Literal("42"),
        "integer": pyoxigraph.Literal("7", datatype=pyoxigraph.NamedNode(XSD + "integer")),
        "token": pyoxigraph.Literal("b", datatype=pyoxigraph.NamedNode(XSD + "token")),
        "typed-string": pyoxigraph.Literal("b"),
    }[text]


SUBJECTS = ["ex:n0", "ex:n1", "ex:n2", "_:b0"]
OBJECTS = ["ex:o1", "ex:n1", "_:b1", "plain", "abc", "empty", "newline", "b-newline", "word",
           "english", "french", "digits", "integer", "token", "typed-string"]
GRAPHS = [pyoxigraph.DefaultGraph(), pyoxigraph.NamedNode("urn:g:1"),
          pyoxigraph.NamedNode("urn:g:2")]

types = st.tuples(st.sampled_from(SUBJECTS), st.sampled_from(["ex:A", "ex:B", "ex:C", "ex:D"]))
values = st.tuples(st.sampled_from(SUBJECTS), st.sampled_from(["ex:p", "ex:q"]),
                   st.sampled_from(OBJECTS))
data_graphs = st.fixed_dictionaries({
    "types": st.lists(types, max_size=5),
    "values": st.lists(values, max_size=8),
    # where each triple is: in one graph, or (True) in two
    "graphs": st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=13, max_size=13),
    # ex:C rdfs:subClassOf ex:A, ex:D rdfs:subClassOf ex:C
    "subclasses": st.booleans(),
})


def build_store(data: dict[str, Any]) -> pyoxigraph.Store:
    triples = [(term(s), pyoxigraph.NamedNode(RDF + "type"), term(c)) for s, c in data["types"]]
    triples += [(term(s), term(p), term(o)) for s, p, o in data["values"]]
    if data["subclasses"]:
        sub = pyoxigraph.NamedNode("http://www.w3.org/2000/01/rdf-schema#subClassOf")
        triples += [(term("ex:C"), sub, term("ex:A")), (term("ex:D"), sub, term("ex:C"))]
    store = pyoxigraph.Store()
    for (s, p, o), (graph, twice) in zip(triples, data["graphs"] * 2, strict=False):
        store.add(pyoxigraph.Quad(s, p, o, GRAPHS[graph]))
        if twice:
            store.add(pyoxigraph.Quad(s, p, o, GRAPHS[(graph + 1) % 3]))
    return store


def both_routes(shapes: list[dict[str, Any]]) -> tuple[ProfileShapes, ProfileShapes]:
    compiled = shapes_of(render(shapes, to_pyshacl=False))
    forced = shapes_of(render(shapes, to_pyshacl=True))
    assert {r.engine for r in compiled.routes} == {ROUTE_COMPILED}, compiled.routes
    assert {r.engine for r in forced.routes} == {ROUTE_PYSHACL}, forced.routes
    return compiled, forced


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(node_shapes, min_size=1, max_size=2), data_graphs)
def test_the_compiled_route_says_what_pyshacl_says(shapes: list[dict[str, Any]],
                                                   data: dict[str, Any]) -> None:
    compiled, forced = both_routes(shapes)
    store = build_store(data)
    assert compiled.results(store) == forced.results(store)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(node_shapes, min_size=1, max_size=3), data_graphs)
def test_the_compiled_route_says_what_pyshacl_says_at_length(
        shapes: list[dict[str, Any]], data: dict[str, Any]) -> None:
    compiled, forced = both_routes(shapes)
    store = build_store(data)
    assert compiled.results(store) == forced.results(store)


def test_the_differential_covers_what_it_says() -> None:
    """The examples the comparison rests on, written out: each kind of result the compiled
    route gives, found the same by both routes."""
    shapes = [{"targetClass": ["ex:A"], "property": [
        {"path": "ex:p", "minCount": "1", "maxCount": "1", "datatype": "xsd:string",
         "pattern": '"a$"', "nodeKind": "sh:Literal", "hasValue": '"abc"'},
        {"path": "ex:q", "minCount": "1", "message": '"un message"@fr'}]}]
    store = store_of("""
        ex:C rdfs:subClassOf ex:A .
        ex:n0 a ex:C ; ex:p "a\\n", _:x, "a"@en .
        _:b a ex:A ; ex:p "a" .
        GRAPH <urn:g:1> { _:b ex:p "a" . }
        GRAPH <urn:g:2> { _:b ex:p "a" . }
    """)
    compiled, forced = both_routes(shapes)
    results = compiled.results(store)
    assert results == forced.results(store)
    n0 = EX + "n0"
    found = {(r.focus, r.path, r.component, r.value) for r in results}
    assert (n0, EX + "p", "MaxCountConstraintComponent", None) in found
    assert (n0, EX + "p", "PatternConstraintComponent", '"a\\n"') in found  # XPath's "$"
    assert (n0, EX + "p", "DatatypeConstraintComponent", '"a"@en') in found
    assert (n0, EX + "p", "HasValueConstraintComponent", None) in found
    assert any(r.component == "NodeKindConstraintComponent" and r.value
               and r.value.startswith("_:") for r in results)
    assert {r.message for r in results if r.path == EX + "q"} == {"un message"}
    # the blank focus node's "a" is in three graphs, one value: no sh:maxCount result
    assert not any(r.focus.startswith("_:") and r.component == "MaxCountConstraintComponent"
                   for r in results)


# --- routing -----------------------------------------------------------------------------------


def test_a_node_shape_in_the_subset_is_compiled() -> None:
    shapes = shapes_of("""
        ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:targetNode ex:n ;
            sh:property [ sh:path ex:p ; sh:minCount 1 ; sh:name "p" ; sh:order 1 ] .
        ex:K a sh:NodeShape, rdfs:Class ; sh:property [ sh:path ex:p ; sh:maxCount 1 ] .
    """)
    assert routes(shapes) == {EX + "S": (ROUTE_COMPILED, "SHACL Core in the compiled subset"),
                              EX + "K": (ROUTE_COMPILED, "SHACL Core in the compiled subset")}
    assert not shapes.needs_pyshacl
    by_name = {c.name: c for c in shapes.compiled}
    assert isinstance(by_name[EX + "S"], CompiledShape)
    assert by_name[EX + "S"].target_nodes == (pyoxigraph.NamedNode(EX + "n"),)
    assert by_name[EX + "K"].target_classes == (EX + "K",)  # an implicit class target


@pytest.mark.parametrize(("turtle", "why"), [
    ("ex:S a sh:NodeShape ; sh:targetSubjectsOf ex:p ; sh:property [ sh:path ex:p ; "
     "sh:minCount 1 ] .", "uses sh:targetSubjectsOf"),
    ("ex:S sh:targetClass ex:A ; sh:property [ sh:path ex:p ; sh:minCount 1 ] .",
     "not declared a sh:NodeShape"),
    ("ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path ex:p ; "
     "sh:minLength 2 ] .", "a property shape uses sh:minLength"),
    ("ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path [ sh:inversePath "
     "ex:p ] ; sh:minCount 1 ] .", "a property shape whose sh:path is not one predicate"),
    ("ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path ex:p ; sh:datatype "
     "xsd:integer ] .", "an sh:datatype whose lexical space the compiled checks do not test"),
    ("ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path ex:p ; sh:hasValue "
     "1 ] .", "an sh:hasValue that is not an IRI or a string"),
    ("ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path ex:p ; sh:minCount "
     "\"1\" ] .", "sh:minCount that is not an xsd:integer"),
    ("ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path ex:p ; sh:message "
     "\"x\"@en, \"y\"@fr ] .", "a property shape with a parameter given more than once"),
    ("ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property ex:P .\n"
     "ex:T a sh:NodeShape ; sh:targetClass ex:B ; sh:property ex:P .\n"
     "ex:P sh:path ex:p ; sh:minCount 1 .", "a property shape that is shared or is also a "
     "node shape"),
    ("ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path ex:p ] .\n"
     "ex:T a sh:NodeShape ; sh:targetClass ex:B ; sh:node ex:S .", "another shape refers to it"),
    ("ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:targetNode [ ex:p 1 ] ; sh:property "
     "[ sh:path ex:p ] .", "a target node that is a blank node"),
    ("ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path ex:p ; ex:lang \"en\" ] "
     ".\nex:Lang a sh:ConstraintComponent ; sh:parameter [ sh:path ex:lang ] ; sh:validator "
     "[ a sh:SPARQLAskValidator ; sh:ask \"ASK { FILTER (lang($value) = $lang) }\" ] .",
     f"a property shape activates a declared constraint component ({EX}lang)"),
])
def test_a_shape_outside_the_subset_goes_to_pyshacl_saying_why(turtle: str, why: str) -> None:
    shapes = shapes_of(turtle)
    assert routes(shapes)[EX + "S"] == (ROUTE_PYSHACL, why)
    assert shapes.needs_pyshacl


def test_a_shape_referred_to_only_by_a_report_or_an_instance_is_still_compiled() -> None:
    # sh:sourceShape (a report's) and rdf:type (an instance of a shape that is a class) are
    # not references a pySHACL shape could need.
    shapes = shapes_of("""
        ex:K a sh:NodeShape, rdfs:Class ; sh:property [ sh:path ex:p ; sh:minCount 1 ] .
        ex:i a ex:K .
        [] sh:sourceShape ex:K .
    """)
    assert routes(shapes)[EX + "K"][0] == ROUTE_COMPILED


@pytest.mark.parametrize(("feature", "turtle"), [
    ("rule", "ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:rule [ a sh:TripleRule ] ."),
    ("target", "ex:S a sh:NodeShape ; sh:target [ a sh:SPARQLTarget ; sh:select \"SELECT "
     "?this WHERE { ?this ?p ?o }\" ] ."),
    ("js", "ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:js [ sh:jsFunctionName \"f\" ; "
     "sh:jsLibrary [ sh:jsLibraryURL \"https://example.org/f.js\" ] ] ."),
    ("jsFunctionName", "ex:S a sh:NodeShape ; sh:targetClass ex:A ; ex:flag true .\n"
     "ex:JsComponent a sh:ConstraintComponent ; sh:parameter [ sh:path ex:flag ] ; "
     "sh:validator [ a sh:JSValidator ; sh:jsFunctionName \"f\" ] ."),
])
def test_advanced_features_and_shacl_js_are_unsupported(feature: str, turtle: str) -> None:
    shapes = shapes_of(turtle)
    engine, why = routes(shapes)[EX + "S"]
    assert engine == ROUTE_UNSUPPORTED
    assert f"sh:{feature}" in why and "SHACL Advanced Features or SHACL-JS" in why
    with pytest.raises(Unevaluable, match=f"the shape {EX}S uses sh:{feature}"):
        shapes.results(pyoxigraph.Store())


@pytest.mark.parametrize(("turtle", "cycle"), [
    ("ex:S a sh:NodeShape ; sh:targetNode ex:n ; sh:node ex:S .", f"{EX}S -> {EX}S"),
    ("ex:S a sh:NodeShape ; sh:targetNode ex:n ; sh:or ( ex:U [ sh:node ex:T ] ) .\n"
     "ex:T sh:property [ sh:path ex:p ; sh:node ex:T ] .",
     f"{EX}T -> t.shapes.ttl#blank-4 -> {EX}T"),  # blank-1..3: the list, [ sh:node ]
])
def test_a_recursive_shape_is_not_evaluated(turtle: str, cycle: str) -> None:
    """SHACL leaves recursive shapes to each processor; pySHACL backs out after a few
    levels and calls the data valid, which would make the check compatible."""
    shapes = shapes_of(turtle)
    engine, why = routes(shapes)[EX + "S"]
    assert (engine, why) == (ROUTE_UNSUPPORTED, f"is recursive: {cycle} (SHACL leaves the "
                             "validation of recursive shapes undefined)")
    [finding] = constraint_findings(shapes, store_of("ex:n ex:p ex:n ."))
    assert finding.code == "constraint.shape-unevaluable"
    assert f"the shape {EX}S is recursive: {cycle}" in finding.message


def test_a_datatype_the_store_does_not_keep_is_not_evaluated() -> None:
    """Oxigraph stores "5"^^xsd:int as "5"^^xsd:integer: over the check's store, a valid
    xsd:int would be reported as not one."""
    shapes = shapes_of("ex:S a sh:NodeShape ; sh:targetNode ex:n ; "
                       "sh:property [ sh:path ex:p ; sh:datatype xsd:int ] .")
    assert routes(shapes)[EX + "S"] == (ROUTE_UNSUPPORTED, (
        f"uses sh:datatype {XSD}int, which the check's store cannot tell: Oxigraph keeps "
        f"such a value as {XSD}integer (oxigraph/oxigraph#526)"))
    store = store_of('ex:n ex:p "5"^^xsd:int .')
    assert [q.object for q in store] == [
        pyoxigraph.Literal("5", datatype=pyoxigraph.NamedNode(XSD + "integer"))]
    assert [f.code for f in constraint_findings(shapes, store)] == [
        "constraint.shape-unevaluable"]


def test_a_blank_top_level_shape_is_named_by_its_file_and_place() -> None:
    shapes = shapes_of("[] a sh:NodeShape ; sh:targetClass ex:A ; "
                       "sh:property [ sh:path ex:p ; sh:minCount 1 ] .")
    assert [r.shape for r in shapes.routes] == ["t.shapes.ttl#blank-1"]
    results = shapes.results(store_of("ex:n a ex:A ."))
    assert [r.shape for r in results] == ["t.shapes.ttl#blank-1"]


def test_the_routes_name_their_source_file() -> None:
    shapes = ProfileShapes((shape_file("ex:S a sh:NodeShape ; sh:targetClass ex:A .", "a.ttl"),
                            shape_file("ex:T a sh:NodeShape ; sh:targetNode ex:n .", "b.ttl")))
    assert {(r.shape, r.source) for r in shapes.routes} == {(EX + "S", "a.ttl"),
                                                            (EX + "T", "b.ttl")}
    assert shapes.dependencies() == [{"reference": f.reference, "sha256": f.digest}
                                     for f in shapes.files]


@pytest.mark.parametrize("data", [b"ex:S a sh:NodeShape", b"<not turtle", b"\xff\xfe"])
def test_a_malformed_shapes_file_is_a_configuration_error(data: bytes) -> None:
    file = ShapeFile("bad.shapes.ttl", "/profiles/bad.shapes.ttl", PREFIXES.encode() + data,
                     "0" * 64)
    with pytest.raises(ShapesUnreadable, match=r"/profiles/bad\.shapes\.ttl: not valid Turtle"):
        ProfileShapes((file,))
    assert issubclass(ShapesUnreadable, ConfigurationError)


def test_a_relative_iri_in_a_local_file_is_unreadable_and_resolves_in_a_retrieved_one() -> None:
    data = PREFIXES.encode() + b"<#S> a sh:NodeShape ; sh:targetClass ex:A ."
    with pytest.raises(ShapesUnreadable):
        ProfileShapes((ShapeFile("s.ttl", "/profiles/s.ttl", data, "0" * 64),))
    retrieved = ProfileShapes((ShapeFile("s.ttl", "https://example.org/p/s.ttl", data,
                                         "0" * 64),))
    assert [r.shape for r in retrieved.routes] == ["https://example.org/p/s.ttl#S"]


# --- the pySHACL route ---------------------------------------------------------------------------


def test_pyshacl_results_name_the_top_level_shape_and_read_the_union() -> None:
    shapes = shapes_of("""
        ex:S a sh:NodeShape ; sh:targetClass ex:A ;
            sh:property [ sh:path ex:p ; sh:maxCount 1 ; sh:in ("a" "b") ] .
    """)
    store = store_of("""
        ex:n a ex:A ; ex:p "a" .
        GRAPH <urn:g:1> { ex:n ex:p "a" . ex:n ex:p "c" . }
        GRAPH <urn:g:2> { ex:n ex:p "c" . }
    """)
    results = shapes.results(store)
    assert {(r.shape, r.component, r.value) for r in results} == {
        (EX + "S", "MaxCountConstraintComponent", None),
        (EX + "S", "InConstraintComponent", '"c"')}
    assert {r.message for r in results} == {"sh:maxCount 1 is not met",
                                            'sh:in ("a" "b") is not met'}


def test_a_nested_property_shapes_result_names_the_top_level_shape() -> None:
    shapes = shapes_of("""
        ex:S a sh:NodeShape ; sh:targetNode ex:n ; sh:property ex:P .
        ex:P sh:path ex:p ; sh:property ex:Q .
        ex:Q sh:path ex:q ; sh:minCount 1 .
    """)
    results = shapes.results(store_of("ex:n ex:p ex:m ."))
    assert [(r.shape, r.focus, r.component) for r in results] == [
        (EX + "S", EX + "m", "MinCountConstraintComponent")]


def test_pyshacl_messages_are_the_profiles_or_the_projects_never_pyshacls() -> None:
    """pySHACL's own messages write sets in hash order and blank nodes by this process's
    labels; a reason must read the same in every run."""
    shapes = shapes_of("""
        ex:S a sh:NodeShape ; sh:targetNode ex:n ;
            sh:property [ sh:path ex:p ; sh:in (ex:a ex:b ex:c) ] ;
            sh:property [ sh:path ex:q ; sh:class ex:K ; sh:message "q must be a K" ] ;
            sh:property [ sh:path ex:r ; sh:node [ sh:property [ sh:path ex:s ;
                                                                 sh:minCount 1 ] ] ] .
    """)
    results = shapes.results(store_of("ex:n ex:p ex:d ; ex:q ex:x ; ex:r ex:y ."))
    assert {r.component: r.message for r in results} == {
        "InConstraintComponent": f"sh:in (<{EX}a> <{EX}b> <{EX}c>) is not met".replace(
            "<", "").replace(">", ""),
        "ClassConstraintComponent": "q must be a K",
        "NodeConstraintComponent": "sh:node is not met"}


def test_pyshacl_literal_values_are_the_stores_terms() -> None:
    # rdflib reads "2011-01-01"^^xsd:dateTime (ill-typed) as "2011-01-01T00:00:00"
    shapes = shapes_of("ex:S a sh:NodeShape ; sh:targetNode ex:n ; "
                       "sh:property [ sh:path ex:p ; sh:datatype xsd:date ] .")
    results = shapes.results(store_of('ex:n ex:p "2011-01-01"^^xsd:dateTime .'))
    assert [r.value for r in results] == [f'"2011-01-01"^^<{XSD}dateTime>']


def test_a_literal_focus_node_is_written_as_a_term() -> None:
    for turtle in ("ex:S a sh:NodeShape ; sh:targetObjectsOf ex:p ; sh:datatype xsd:integer .",
                   "ex:S a sh:NodeShape ; sh:targetNode \"x\" ; sh:property [ sh:path ex:p ; "
                   "sh:minCount 1 ] ."):
        results = shapes_of(turtle).results(store_of('ex:n ex:p "x" .'))
        assert [r.focus for r in results] == ['"x"'], turtle


def test_a_literal_target_node_is_evaluated_by_the_spec() -> None:
    """A literal target node is a focus node with no values (SHACL 2.1.3.1). The compiled
    route says so; pySHACL over an Oxigraph store fails on it (it asks the store for the
    triples of a literal subject), so the same shape on that route is unevaluable."""
    turtle = ('ex:S a sh:NodeShape ; {} sh:targetNode "x" ; '
              'sh:property [ sh:path ex:p ; sh:minCount 1 ] .')
    compiled, forced = shapes_of(turtle.format("")), shapes_of(turtle.format(
        "sh:deactivated false ;"))
    store = store_of('ex:n ex:p "x" .')
    assert [(r.focus, r.component) for r in compiled.results(store)] == [
        ('"x"', "MinCountConstraintComponent")]
    with pytest.raises(Unevaluable, match="TypeError"):
        forced.results(store)


def test_severities_are_kept_and_warnings_decide_nothing() -> None:
    shapes = shapes_of("""
        ex:W a sh:NodeShape ; sh:targetNode ex:n ; sh:severity sh:Warning ; sh:maxLength 1 .
        ex:I a sh:NodeShape ; sh:targetNode ex:n ;
            sh:property [ sh:path ex:p ; sh:minCount 1 ; sh:severity sh:Info ] .
        ex:V a sh:NodeShape ; sh:targetNode ex:n ; sh:property [ sh:path ex:p ;
            sh:minCount 1 ; sh:severity ex:Custom ] .
    """)
    store = store_of("ex:n ex:q 1 .")
    assert {r.shape: r.severity for r in shapes.results(store)} == {
        EX + "W": Severity.WARNING, EX + "I": Severity.INFO,
        EX + "V": Severity.ERROR}  # a severity SHACL does not define decides
    findings = constraint_findings(shapes, store)
    assert sorted((f.code, f.severity) for f in findings) == [
        ("constraint.shape-violated", Severity.ERROR),
        ("constraint.shape-warning", Severity.INFO),
        ("constraint.shape-warning", Severity.WARNING)]


@pytest.mark.parametrize("query", [
    # pySHACL reports SHACL's failure (3.6.2) for a query the spec forbids
    "SELECT $this WHERE { $this ?p ?o . MINUS { $this ?p \"x\" } }",
    # and an error for one Oxigraph cannot parse
    "SELECT $this WHERE { $this ?p ?o . FILTER (",
    # or one with a prefix nobody declared
    "SELECT $this WHERE { $this undeclared:p ?o }",
])
def test_a_sparql_error_is_unevaluable(query: str) -> None:
    shapes = shapes_of(f'ex:S a sh:NodeShape ; sh:targetNode ex:n ; '
                       f'sh:sparql [ sh:select """{query}""" ] .')
    with pytest.raises(Unevaluable):
        shapes.results(store_of("ex:n ex:p 1 ."))
    [finding] = constraint_findings(shapes, store_of("ex:n ex:p 1 ."))
    assert finding.code == "constraint.shape-unevaluable"
    assert finding.message.startswith("the profile's shapes could not be evaluated")
    assert finding.path == ""


def test_pyshacls_errors_name_blank_shapes_as_the_routes_do() -> None:
    """pySHACL writes a blank node of the shapes by its rdflib label, new in every process:
    the reason names it by its place in the file instead."""
    shapes = shapes_of("ex:S a sh:NodeShape ; sh:targetNode ex:n ; "
                       "sh:property [ sh:minLength 1 ] .")
    with pytest.raises(Unevaluable) as caught:
        shapes.results(store_of("ex:n ex:p 1 ."))
    assert "'t.shapes.ttl#blank-1' exists but is not a well-formed SHACL PropertyShape" in str(
        caught.value)


def test_a_sparql_constraint_finds_its_violation() -> None:
    shapes = shapes_of("""
        ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:sparql [
            sh:message "{$this} has a value of ex:p that is not ex:o" ;
            sh:prefixes ex:Prefixes ;
            sh:select '''SELECT $this ?value WHERE {
                $this ex:p ?value . FILTER (?value != ex:o) }''' ] .
        ex:Prefixes sh:declare [ sh:prefix "ex" ;
                                 sh:namespace "https://example.org/t#"^^xsd:anyURI ] .
    """)
    results = shapes.results(store_of("ex:n a ex:A ; ex:p ex:x . ex:m a ex:A ; ex:p ex:o ."))
    assert [(r.focus, r.value, r.component) for r in results] == [
        (EX + "n", EX + "x", "SPARQLConstraintComponent")]
    assert results[0].message == f"{EX}n has a value of ex:p that is not ex:o"


def test_the_pyshacl_shapes_are_read_once_whichever_thread_asks() -> None:
    shapes = shapes_of("ex:S a sh:NodeShape ; sh:targetNode ex:n ; sh:property "
                       "[ sh:path ex:p ; sh:minLength 3 ] .")
    store = store_of('ex:n ex:p "ab" .')
    seen: list[Any] = []
    outcomes: list[list[Result]] = []

    def check() -> None:
        outcomes.append(shapes.results(store))
        seen.append(shapes.shacl_graph())

    threads = [threading.Thread(target=check) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outcomes) == 4 and all(o == outcomes[0] for o in outcomes) and outcomes[0]
    assert all(g is seen[0] for g in seen)


# --- the reasons -----------------------------------------------------------------------------


def test_a_reason_names_the_shape_focus_path_and_value() -> None:
    shapes = shapes_of("ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property "
                       "[ sh:path ex:p ; sh:datatype xsd:string ] .")
    store = store_of('ex:n a ex:A ; ex:p "x"@en . _:b a ex:A ; ex:p ex:o .')
    findings = constraint_findings(shapes, store)
    assert [f.code for f in findings] == ["constraint.shape-violated"] * 2
    by_path = {f.path: f.message for f in findings}
    assert set(by_path) == {EX + "n", ""}  # an IRI focus is the path; a blank one is not
    message = by_path[EX + "n"]
    assert message == (f"the profile shape {EX}S (DatatypeConstraintComponent) says: "
                       f"sh:datatype {XSD}string is not met (focus node {EX}n, path {EX}p, "
                       f'value "x"@en)')
    assert by_path[""].startswith(f"the profile shape {EX}S (DatatypeConstraintComponent)")
    assert "(focus node _:" in by_path[""] and f"value {EX}o)" in by_path[""]


def test_the_envelope_is_named_as_such() -> None:
    envelope = pyoxigraph.BlankNode("e0")
    store = pyoxigraph.Store()
    store.extend(task_quads((), envelope))
    shapes = shapes_of("ex:S a sh:NodeShape ; sh:targetNode <urn:ioa-semantic:check> ; "
                       "sh:property [ sh:path <https://ioa-semantic.org/ns/profile#envelope> ; "
                       "sh:nodeKind sh:IRI ] .")
    [finding] = constraint_findings(shapes, store, envelope)
    assert "value the envelope)" in finding.message
    assert finding.path == "urn:ioa-semantic:check"


def _text(term: Any) -> str:
    return str(term.value)


def test_task_quads_give_the_parameters_one_node() -> None:
    quads = task_quads([("a b", "x"), ("targetLang", "en")], pyoxigraph.NamedNode(EX + "e"))
    param = "https://ioa-semantic.org/ns/parameter#"
    assert {q.graph_name for q in quads} == {pyoxigraph.NamedNode("urn:ioa-semantic:graph:task")}
    assert {(_text(q.subject), _text(q.predicate), _text(q.object)) for q in quads} == {
        (TASK.value, RDF + "type", "https://ioa-semantic.org/ns/profile#TaskParameters"),
        ("urn:ioa-semantic:check", "https://ioa-semantic.org/ns/profile#task", TASK.value),
        ("urn:ioa-semantic:check", "https://ioa-semantic.org/ns/profile#envelope", EX + "e"),
        (TASK.value, param + "targetLang", "en"),
        (TASK.value, param + "a%20b", "x")}
    shapes = shapes_of("ex:S a sh:NodeShape ; "
                       "sh:targetClass <https://ioa-semantic.org/ns/profile#TaskParameters> ; "
                       f"sh:property [ sh:path <{param}targetLang> ; sh:pattern \"^(en|de)$\" ] .")
    store = pyoxigraph.Store()
    store.extend(quads)
    assert shapes.results(store) == []
    store = pyoxigraph.Store()
    store.extend(task_quads([("targetLang", "en\n")], pyoxigraph.NamedNode(EX + "e")))
    assert [r.value for r in shapes.results(store)] == ['"en\\n"']


def test_no_results_no_findings() -> None:
    shapes = shapes_of("ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property "
                       "[ sh:path ex:p ; sh:minCount 1 ] .")
    assert constraint_findings(shapes, store_of("ex:n a ex:A ; ex:p 1 .")) == []
    assert constraint_findings(shapes, store_of("ex:n a ex:B .")) == []


# --- the cost of a check -------------------------------------------------------------------


def test_pyshacl_runs_once_a_check_and_never_for_compiled_shapes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from ioa_semantic.pipeline import bounded

    runs: list[int] = []
    real_run = bounded.run

    def counted(*args: Any, **options: Any) -> Any:
        runs.append(1)  # one call to the worker: one pySHACL validation
        return real_run(*args, **options)

    monkeypatch.setattr(bounded, "run", counted)
    store = store_of('ex:n a ex:A ; ex:p "x" .')
    compiled = shapes_of("ex:S a sh:NodeShape ; sh:targetClass ex:A ; "
                         "sh:property [ sh:path ex:p ; sh:minCount 2 ] .")
    assert len(compiled.results(store)) == 1
    assert runs == []
    mixed = shapes_of("""
        ex:S a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path ex:p ; sh:minCount 2 ] .
        ex:T a sh:NodeShape ; sh:targetClass ex:A ; sh:property [ sh:path ex:p ; sh:minLength 2 ] .
        ex:U a sh:NodeShape ; sh:targetNode ex:n ; sh:property [ sh:path ex:p ; sh:maxLength 0 ] .
    """)
    assert {r.shape for r in mixed.results(store)} == {EX + "S", EX + "T", EX + "U"}
    assert runs == [1]  # one validation for the two shapes pySHACL has
    mixed.results(store)
    assert runs == [1, 1]


# --- sh:pattern read as XPath ---------------------------------------------------------------


@pytest.mark.parametrize(("pattern", "text", "matches"), [
    ("^.+$", "a\rb", False), ("^.+$", "a\u2028b", True),  # XPath's '.': all but \n and \r
    (r"^\s$", "\u00a0", False), (r"^\s$", "\t", True), (r"^\S+$", "\u00a0", True),
    (r"^\w+$", "a_b", False), (r"^\w+$", "ab\u00e9", True), (r"^\W$", "_", True),
    (r"^\p{Lu}\p{Ll}+$", "\u00c4bc", True), (r"^\P{N}+$", "a1", False),
    ("^[A-Z-[Q]]{2}$", "DE", True), ("^[A-Z-[Q]]{2}$", "QE", False),
    ("^[A-Z-[Q]]{2}$", "A]]", False), (r"^[\p{Ll}\d]+$", "\u00e41", True),
    ("^a$", "a\n", False), ("^(?:ab)+$", "abab", True),
    # what XPath has and RE2 runs in linear time: reluctant quantifiers, nested repetition
    (r"^a+?b$", "aab", True), ("^(a+)+$", "a" * 10_000 + "b", False),
])
def test_a_pattern_is_read_as_xpath_reads_it(pattern: str, text: str, matches: bool) -> None:
    from ioa_semantic.pipeline.shapes import xpath_regex

    assert bool(xpath_regex(pattern).search(text)) is matches


@pytest.mark.parametrize(("pattern", "flags", "text", "matches"), [
    ("a.b", "s", "a\nb", True), ("a.b", "", "a\nb", False), ("^B$", "i", "b", True),
    ("^b$", "m", "a\nb\nc", True), ("^b$", "", "a\nb\nc", False),
    ("a b [ ]", "x", "ab ", True), ("a.b", "q", "a.b", True), ("a.b", "q", "axb", False),
])
def test_sh_flags_are_read_as_xpath_reads_them(pattern: str, flags: str, text: str,
                                               matches: bool) -> None:
    from ioa_semantic.pipeline.shapes import xpath_regex

    assert bool(xpath_regex(pattern, flags).search(text)) is matches


@pytest.mark.parametrize("pattern", [r"\bword", r"\i\c*", r"^\p{IsBasicLatin}+$",
                                     r"[\w-]", r"(?i)abc", r"[a[b]]", "\\x41", "abc\\",
                                     # a back-reference: no linear-time engine matches it
                                     r"^(a)\1$", "(", "a{1001}"])
def test_a_pattern_with_no_xpath_translation_makes_its_shape_unsupported(pattern: str) -> None:
    shapes = shapes_of(f"""@prefix sh: <http://www.w3.org/ns/shacl#> .
<https://ex.org/S> a sh:NodeShape ; sh:targetClass <https://ex.org/C> ;
    sh:property [ sh:path <https://ex.org/p> ; sh:pattern {json.dumps(pattern)} ] .
""")
    (route,) = shapes.routes
    assert route.engine == "unsupported" and "sh:pattern" in route.why
