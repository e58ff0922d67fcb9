"""A profile's compiled shapes in the compiled engine, held to the reference engine.

Under a profile whose shapes are all in the compiled subset, the compiled engine keeps its
own decision and evaluates the shapes over an index of the reference's store (the fixed
quads, the envelope, the check's facts and the task); every decision must equal the
reference's, reasons and all. Under a profile with a pySHACL shape it defers to the
reference (issue 23, item 2).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ioa_semantic import Checker
from ioa_semantic.reporters.check import REPORTERS

from support import shipped_profile_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import traffic

AT = datetime(2026, 6, 1, tzinfo=UTC)
PREFIXES = """@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ioa: <https://example.org/ioa/semantic#> .
@prefix iop: <https://ioa-semantic.org/ns/profile#> .
@prefix param: <https://ioa-semantic.org/ns/parameter#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix ex: <https://example.org/house-rules#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
"""
COMPILED = PREFIXES + """
ex:FewCapabilities a sh:NodeShape ; sh:targetClass ioa:SemanticProfile ;
    sh:property [ sh:path ioa:capabilityRefs ; sh:minCount 1 ; sh:maxCount 3 ; sh:nodeKind sh:IRI ;
                  sh:message "at most three capabilities" ] .
ex:Target a sh:NodeShape ; sh:targetClass iop:TaskParameters ;
    sh:property [ sh:path param:targetLang ; sh:minCount 1 ; sh:pattern "^[a-z]{2}$" ] ;
    sh:property [ sh:path param:jurisdiction ; sh:maxCount 1 ;
                  sh:datatype xsd:string ] .
ex:Bindings a sh:NodeShape ; sh:targetClass ioa:TermBinding ;
    sh:property [ sh:path ioa:sense ; sh:hasValue <https://example.org/onto/cs#LargeLanguageModel> ] .
ex:VocabularyLabelled a sh:NodeShape ; sh:targetClass ioa:Capability ;
    sh:property [ sh:path rdfs:label ; sh:minCount 1 ] .
"""
PYSHACL = COMPILED + """
ex:EuropeanTarget a sh:NodeShape ; sh:targetClass iop:TaskParameters ;
    sh:property [ sh:path param:targetLang ; sh:in ("en" "de" "fr") ;
                  sh:severity sh:Violation ] .  # sh:severity: pySHACL's
"""


def profile(tmp: Path, shapes: str) -> str:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "house.shapes.ttl").write_text(shapes)
    anchor = "    iop:trustedIssuer <https://example.org/mapping-authority> ."
    text = shipped_profile_text()
    assert anchor in text
    path = tmp / "house.ttl"
    path.write_text(text.replace(anchor, anchor[:-2] + ' ;\n    iop:shapes "house.shapes.ttl" .'))
    return str(path)


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Checker]:
    path = profile(tmp_path_factory.mktemp("compiled"), COMPILED)
    return {engine: Checker(path, engine=engine, cache_size=0)
            for engine in ("compiled", "reference")}


ENVELOPES = [*traffic.envelopes(60, traffic.ENVELOPE_STREAMS["300 layouts"]),
             *traffic.envelopes(60, None)]
PARAMETERS = st.dictionaries(st.sampled_from(["targetLang", "jurisdiction", "sourceLang"]),
                             st.sampled_from(["en", "de", "zh", "EN", "e n", "en\n", "AT"]),
                             max_size=3)


def more_capabilities(data: bytes, extra: int) -> bytes:
    """The envelope with ``extra`` more capability references (each a compact or full IRI)."""
    document = json.loads(data)
    # Each sender names the member its own way; it is the one that references the capability.
    key = next(k for k, v in document.items() if "TechTranslation" in json.dumps(v)
               and not isinstance(v, dict) and k != "@context")
    refs = document[key] if isinstance(document[key], list) else [document[key]]
    document[key] = refs + [f"https://example.org/onto/cs#Extra{i}" for i in range(extra)]
    return json.dumps(document, ensure_ascii=False).encode()


def line(decision: Any) -> str:
    import io

    out = io.StringIO()
    REPORTERS["json"]([decision], out)
    return out.getvalue()


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.sampled_from(ENVELOPES), st.integers(0, 4), PARAMETERS)
def test_the_compiled_engine_evaluates_compiled_shapes_as_the_reference_does(
        engines: dict[str, Checker], data: bytes, extra: int, params: dict[str, str]) -> None:
    envelope = more_capabilities(data, extra) if extra else data
    compiled, reference = (engines[e].check(envelope, params=params, at=AT)
                           for e in ("compiled", "reference"))
    assert line(compiled) == line(reference)


def test_the_compiled_engine_keeps_its_decision_only_when_every_shape_is_compiled(
        engines: dict[str, Checker], tmp_path: Path) -> None:
    compiled = engines["compiled"]
    assert compiled.constraints is not None and not compiled.constraints.needs_pyshacl
    assert compiled.stages._shapes_store is not None  # type: ignore[attr-defined]
    deferring = Checker(profile(tmp_path, PYSHACL))
    assert deferring.stages._shapes_store is None  # type: ignore[attr-defined]
    # The shapes decide something on this input set: the comparison above is not vacuous.
    verdicts = {compiled.check(more_capabilities(d, 4), params={"targetLang": "EN"},
                               at=AT).verdict.value for d in ENVELOPES[:5]}
    assert verdicts == {"incompatible"}


def test_past_the_bound_pyshacl_is_not_asked_and_the_check_is_indeterminate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyshacl

    from ioa_semantic.pipeline.constraints import MAX_PYSHACL_TRIPLES

    from support import envelope_62

    checker = Checker(profile(tmp_path, PYSHACL), cache_size=0)
    document = envelope_62()
    binding = document["profileContext"]["termBindings"][0]
    # Each binding brings four triples (its type, term, sense and the link to it).
    document["profileContext"]["termBindings"] = [
        dict(binding, term=f"T{i}") for i in range(MAX_PYSHACL_TRIPLES // 4 + 1)]
    document["capabilityRefs"] = [f"https://example.org/onto/cs#C{i}" for i in range(5)]

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("pySHACL was asked about an input past the bound")

    monkeypatch.setattr(pyshacl, "validate", refuse)
    decision = checker.check(json.dumps(document).encode(), params={"targetLang": "en"}, at=AT)
    codes = [f.code for f in decision.findings if f.code.startswith("constraint.")]
    # The compiled shapes are still evaluated (five capabilities: more than three), and a
    # violation they find outranks the shapes not evaluated.
    assert codes == ["constraint.shape-violated", "constraint.shape-unevaluable"]
    assert decision.verdict.value == "incompatible"
    (unevaluated,) = [f for f in decision.findings if f.code == "constraint.shape-unevaluable"]
    assert f"{MAX_PYSHACL_TRIPLES:,}" in unevaluated.message
