"""A profile's shapes in an audit: applied to every valid registration, a batch at a time.

Issue 23, item 3: one evaluation over a batch's graph, each result mapped back to its
registration, the same as one evaluation per registration; a registration that violates a
shape is ``invalid`` (an audit has no ``incompatible``) and not indexed for conflicts; one
whose shapes cannot be evaluated is ``indeterminate``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyoxigraph
import pytest

import ioa_semantic.audit.constraints as audit_constraints
from ioa_semantic import Checker
from ioa_semantic.audit.inputs import pieces
from ioa_semantic.audit.run import Audit
from ioa_semantic.audit.workers import kinds_for

from support import IOA_CHECK, registration_63, shipped_profile_text

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import traffic  # noqa: E402

PREFIXES = """@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ioa: <https://example.org/ioa/semantic#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix ex: <https://example.org/house-rules#> .
"""
# A compiled shape (a label), a pySHACL one (sh:in with sh:severity, which the compiled
# subset does not take) and one with two parameters.
HOUSE_RULES = PREFIXES + """
ex:Labelled a sh:NodeShape ; sh:targetClass ioa:Capability ;
    sh:property [ sh:path rdfs:label ; sh:minCount 1 ; sh:message "a registration needs a label" ] .
ex:PlainTextIn a sh:NodeShape ; sh:targetClass ioa:Capability ;
    sh:property [ sh:path ioa:inputs ; sh:in ("text/plain" "text/markdown") ;
                  sh:severity sh:Violation ; sh:message "inputs are plain text or Markdown" ] .
ex:ShortLabel a sh:NodeShape ; sh:targetClass ioa:Capability ;
    sh:property [ sh:path rdfs:label ; sh:maxLength 20 ; sh:severity sh:Warning ;
                  sh:message "a label of at most 20 characters reads best" ] .
"""
# Reads beyond its focus: another node with the same label (in a batch, other registrations).
SAME_LABEL = PREFIXES + """
ex:UniqueLabel a sh:NodeShape ; sh:targetClass ioa:Capability ;
    sh:sparql [ sh:message "another node has this label" ; sh:prefixes ex: ;
        sh:select \"\"\"SELECT $this ?value WHERE { $this rdfs:label ?value .
            ?other rdfs:label ?value . FILTER (?other != $this) }\"\"\" ] .
ex: sh:declare [ sh:prefix "rdfs" ;
    sh:namespace "http://www.w3.org/2000/01/rdf-schema#"^^<http://www.w3.org/2001/XMLSchema#anyURI> ] .
"""
RULE = PREFIXES + """
ex:Inferred a sh:NodeShape ; sh:targetClass ioa:Capability ;
    sh:rule [ a sh:TripleRule ; sh:subject sh:this ; sh:predicate rdfs:comment ; sh:object "x" ] .
"""


def profile(tmp_path: Path, shapes: str) -> Path:
    (tmp_path / "house.shapes.ttl").write_text(shapes)
    anchor = "    iop:trustedIssuer <https://example.org/mapping-authority> ."
    text = shipped_profile_text()
    assert anchor in text
    text = text.replace(anchor, anchor[:-2] + ' ;\n    iop:shapes "house.shapes.ttl" .')
    path = tmp_path / "house.ttl"
    path.write_text(text.replace("<https://example.org/profiles/cs-translation>",
                                 "<https://example.org/profiles/house>"))
    return path


def corpus(tmp_path: Path, size: int = 400, senders: int = 40) -> Path:
    path = tmp_path / "registrations.jsonl"
    traffic.write(path, traffic.registrations(size, senders))
    return path


def audited(profile_path: Path, corpus_path: Path) -> list[str]:
    checker = Checker(str(profile_path))
    run = Audit(checker, None)
    return [batch.lines for batch in run.batches(
        pieces([str(corpus_path)], limits=checker.limits), jobs=1,
        render=lambda r: json.dumps(r.as_dict(), sort_keys=True) + "\n")]


def test_a_batch_evaluated_together_reports_what_each_registration_alone_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, registrations = profile(tmp_path, HOUSE_RULES), corpus(tmp_path)
    together = audited(path, registrations)
    monkeypatch.setattr(audit_constraints, "reads_beyond_focus", lambda shapes: True)
    alone = audited(path, registrations)
    assert together == alone
    results = [json.loads(line) for text in together for line in text.splitlines()]
    codes = [r["code"] for result in results for r in result["reasons"]]
    # The corpus's senders write other media types and labels of every length: the rules
    # decide some registrations and warn about others, so the comparison is not vacuous.
    assert codes.count("constraint.shape-violated") > 10
    assert codes.count("constraint.shape-warning") > 10
    assert any(r["status"] == "valid" for r in results)


def test_a_shape_that_reads_other_nodes_sees_each_registration_alone(tmp_path: Path) -> None:
    first, second = registration_63(), registration_63()
    second["@id"] = first["@id"] + "-twin"
    for doc in (first, second):
        doc["label"] = "Twin translation"  # no node of the profile's vocabulary has it
    lines = tmp_path / "twins.jsonl"
    lines.write_text("".join(json.dumps(d) + "\n" for d in (first, second)))
    results = audited(profile(tmp_path, SAME_LABEL), lines)
    # Together, each twin's label would be the other's; alone neither is.
    assert "constraint.shape-violated" not in "".join(results)


def test_registrations_that_name_each_other_are_not_batched() -> None:
    a, b = pyoxigraph.NamedNode("https://example.org/a"), pyoxigraph.NamedNode("https://example.org/b")
    p = pyoxigraph.NamedNode("https://example.org/p")
    g = pyoxigraph.DefaultGraph()
    loaded = {0: [pyoxigraph.Quad(a, p, b, g)], 1: [pyoxigraph.Quad(b, p, pyoxigraph.Literal("x"), g)],
              2: [pyoxigraph.Quad(pyoxigraph.NamedNode("https://example.org/c"), p, a, g)]}
    loaded[3] = [pyoxigraph.Quad(pyoxigraph.NamedNode("https://example.org/d"), p,
                                 pyoxigraph.Literal("y"), g)]
    assert audit_constraints._groups(loaded, alone=False) == [[3], [0], [1], [2]]
    assert audit_constraints._groups(loaded, alone=True) == [[0], [1], [2], [3]]


def run_audit(tmp_path: Path, shapes: str, docs: list[dict[str, Any]]) -> tuple[int, list[Any]]:
    path = profile(tmp_path, shapes)
    lines = tmp_path / "in.jsonl"
    lines.write_text("".join(json.dumps(d) + "\n" for d in docs))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run([IOA_CHECK, "audit", str(lines), "--profile", str(path), "--format",
                           "json"], cwd=elsewhere, capture_output=True, timeout=120)
    assert b"Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, [json.loads(x) for x in proc.stdout.splitlines()]


def test_the_command_reports_a_violation_as_invalid_and_indexes_no_conflict(tmp_path: Path) -> None:
    good, bad = registration_63(), registration_63()
    bad["inputs"] = ["application/pdf"]  # the same @id, another declaration
    good["label"] = bad["label"] = "Translation"  # short: no warning
    # An IRI the profile's vocabulary does not describe (the shapes would see its triples
    # about cs:TechTranslation too: the graph is the union).
    good["@id"] = bad["@id"] = "https://example.org/onto/cs#HouseTranslation"
    status, out = run_audit(tmp_path, HOUSE_RULES, [good, bad])
    assert status == 1
    assert [r["status"] for r in out[:2]] == ["valid", "invalid"]
    assert [r["code"] for r in out[1]["reasons"]] == ["constraint.shape-violated"]
    assert "ex:PlainTextIn" not in out[1]["reasons"][0]["message"]
    assert "https://example.org/house-rules#PlainTextIn" in out[1]["reasons"][0]["message"]
    # Invalid by the profile's rule, so not a conflicting declaration of a valid one.
    assert out[-1]["summary"]["conflicts"] == 0
    assert out[-1]["summary"]["codes"] == {"constraint.shape-violated": 1}


def test_shapes_that_cannot_be_evaluated_make_every_registration_indeterminate(
        tmp_path: Path) -> None:
    status, out = run_audit(tmp_path, RULE, [registration_63()])
    assert status == 3
    assert out[0]["status"] == "indeterminate"
    assert [r["code"] for r in out[0]["reasons"]] == ["constraint.shape-unevaluable"]


def test_registrations_are_not_judged_by_kind_under_a_profile_with_shapes(tmp_path: Path) -> None:
    assert kinds_for(Checker("cs-translation")) is not None
    assert kinds_for(Checker(str(profile(tmp_path, HOUSE_RULES)))) is None


def test_a_registration_past_the_bound_is_indeterminate_alone(tmp_path: Path) -> None:
    from ioa_semantic.pipeline.constraints import MAX_PYSHACL_TRIPLES

    big, small = registration_63(), registration_63()
    big["@id"] = "https://example.org/onto/cs#Big"
    big["inputs"] = [f"text/x-kind{i}" for i in range(MAX_PYSHACL_TRIPLES + 1)]
    small["@id"], small["inputs"] = "https://example.org/onto/cs#Small", ["application/pdf"]
    status, out = run_audit(tmp_path, HOUSE_RULES, [big, small])
    assert status == 1
    assert out[0]["status"] == "indeterminate"
    # The compiled shape (a label) is still evaluated for it; pySHACL's are not.
    assert [r["code"] for r in out[0]["reasons"]] == ["constraint.shape-unevaluable"]
    assert f"{MAX_PYSHACL_TRIPLES:,}" in out[0]["reasons"][0]["message"]
    assert out[1]["status"] == "invalid"
    assert "constraint.shape-violated" in [r["code"] for r in out[1]["reasons"]]


COMPILED_ONLY = PREFIXES + "@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .\n" + """
ex:Labelled a sh:NodeShape ; sh:targetClass ioa:Capability ;
    sh:property [ sh:path rdfs:label ; sh:minCount 1 ; sh:maxCount 1 ; sh:datatype rdf:langString ] ;
    sh:property [ sh:path ioa:inputs ; sh:maxCount 1 ; sh:pattern "^text/" ] .
"""


def test_compiled_shapes_over_the_indexed_union_report_what_an_oxigraph_store_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ioa_semantic.compiled.constraints as compiled_constraints

    path, registrations = profile(tmp_path, COMPILED_ONLY), corpus(tmp_path)
    indexed = audited(path, registrations)

    def oxigraph_store(*parts: Any) -> pyoxigraph.Store:
        store = pyoxigraph.Store()
        for quads in parts:
            store.bulk_extend(quads)
        return store

    monkeypatch.setattr(compiled_constraints, "indexed_union", oxigraph_store)
    assert audited(path, registrations) == indexed
    assert "constraint.shape-violated" in "".join(indexed)
