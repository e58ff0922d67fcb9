"""The compiled engine decides exactly as the reference engine (issue: the hot path).

The reference engine runs pyld, the SHACL shapes in full and the named SPARQL queries on
every check; the compiled engine answers the common case from compiled shapes and tables and
hands everything else to the reference path. Every data-driven case, every public
conformance case and hypothesis-generated envelopes (valid, mutated, remote and unusual
contexts) must get the same verdict and the same reasons from both. Covers R-5.4-1,
R-5.4-4, R-6.1-1, R-6.1-5, R-6.1-6, R-7.1-1.
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ioa_semantic import Checker, Decision
from ioa_semantic._checker import shapes
from ioa_semantic.compiled.engine import CompiledEngine, compiled_shapes, read_document_compiled
from ioa_semantic.pipeline.baseline import read_document
from ioa_semantic.pipeline.contexts import ContextPolicy

from support import CONFORMANCE, case_options, envelope_62, registration_63, run_python

CASES = Path(__file__).resolve().parent / "cases"
AT = datetime(2026, 6, 1, tzinfo=UTC)


def _summary(decision: Decision) -> tuple[Any, ...]:
    return (decision.verdict, [(f.code, f.severity, f.path, f.message) for f in decision.findings],
            decision.evidence, decision.excluded, decision.candidates)


def _case_folders() -> list[Path]:
    folders = sorted(p.parent for p in CASES.glob("*/*/case.json"))
    if CONFORMANCE.exists():
        folders += sorted(p.parent for p in CONFORMANCE.glob("*/case.json"))
    return folders


def _checkers(folder: Path, args: list[str]) -> tuple[Checker, Checker, dict[str, str], datetime]:
    profile, options, params, at = case_options(folder, args)
    return (Checker(profile, engine="compiled", cache_size=0, **options),
            Checker(profile, engine="reference", cache_size=0, **options), params, at)


@pytest.mark.parametrize("folder", _case_folders(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_case_gets_the_same_decision_from_both_engines(folder: Path) -> None:
    spec = json.loads((folder / "case.json").read_text())
    try:
        compiled, reference, params, at = _checkers(folder, spec["args"])
    except Exception:
        pytest.skip("a configuration-error case: no check runs")
    data = (folder / spec["envelope"]).read_bytes()
    assert _summary(compiled.check(data, params=params, at=at)) == \
        _summary(reference.check(data, params=params, at=at))


# --- generated envelopes ------------------------------------------------------------------

COMPILED = Checker("cs-translation", engine="compiled", cache_size=0)
REFERENCE = Checker("cs-translation", engine="reference", cache_size=0)
SHAPES = shapes()
SHAPE_CHECKS = compiled_shapes(SHAPES)
POLICY = ContextPolicy()

local_names = st.sampled_from(["TechTranslation", "TranslateTechDoc", "LargeLanguageModel",
                               "ComputerScience", "Other", "x", "Foo-1"])
references = st.one_of(
    local_names.map(lambda n: f"cs:{n}"),
    local_names.map(lambda n: f"https://example.org/onto/cs#{n}"),
    local_names.map(lambda n: f"law:{n}"),
    local_names.map(lambda n: f"xx:{n}"),
    local_names,                                    # relative
    local_names.map(lambda n: f"urn:example:{n}"),
    local_names.map(lambda n: f"_:{n}"),
    st.just("HTTPS://example.org/onto/cs#TechTranslation"),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.just(1.5), st.just(""),
                    st.just("  "), st.text(max_size=5))
values = st.one_of(references, scalars,
                   st.lists(references, max_size=3),
                   st.fixed_dictionaries({"@id": references}),
                   st.fixed_dictionaries({"@value": st.one_of(st.text(max_size=4), st.integers())}),
                   st.fixed_dictionaries({"@list": st.lists(references, max_size=2)}))
context_extras = st.dictionaries(
    st.sampled_from(["law", "xx", "note", "cs", "kind", "@vocab", "@base", "@language",
                     "capabilityRefs", "ioa", "extra"]),
    st.one_of(st.just("https://example.org/onto/law#"), st.just("https://ext.example/"),
              st.just("@type"), st.just("@id"), st.just("urn:x:"),
              st.just({"@id": "ioa:capabilityRefs"}),
              st.just({"@id": "ioa:capabilityRefs", "@type": "@id", "@container": "@set"}),
              st.just({"@id": "https://ext.example/x", "@type": "@id"}),
              st.just({"@id": "https://ext.example/x", "@context": {}}),
              st.just("https://example.org/ioa/semantic#")),
    max_size=3)
fields = st.sampled_from(["ontologyId", "ontologyVersion", "capabilityRefs", "intentRef",
                          "profileVersion", "alignmentRef", "note", "@id", "@type", "type",
                          "@foo", "@included", "ioa:intentRef", "extra"])


@st.composite
def envelopes(draw: st.DrawFn) -> Any:
    doc = envelope_62()
    context = doc["@context"]
    context.update(draw(context_extras))
    if draw(st.booleans()):
        context["profileVersion"] = "ioa:profileVersion"
        context["alignmentRef"] = {"@id": "ioa:alignmentRef", "@type": "@id"}
    for field, value in draw(st.dictionaries(fields, values, max_size=3)).items():
        doc[field] = value
    bindings = doc["profileContext"]["termBindings"]
    for _ in range(draw(st.integers(0, 2))):
        bindings.append({"@type": "ioa:TermBinding", "term": draw(st.sampled_from(["LLM", "X", ""])),
                         "sense": draw(references)})
    if draw(st.booleans()):
        doc["profileContext"]["domain"] = draw(st.one_of(references, st.lists(references, max_size=2)))
    shape = draw(st.sampled_from(["inline", "array", "remote", "nested", "array-remote"]))
    if shape == "array":
        doc["@context"] = [context, {"law": "https://example.org/onto/law#"}]
    elif shape == "remote":
        doc["@context"] = "https://example.org/ioa/context.jsonld"
    elif shape == "array-remote":
        doc["@context"] = ["https://example.org/ioa/context.jsonld", context]
    elif shape == "nested":
        doc["profileContext"]["@context"] = {"law": "https://example.org/onto/law#"}
    return doc


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(envelopes())
def test_generated_envelopes_get_the_same_decision(doc: Any) -> None:
    data = json.dumps(doc).encode()
    assert _summary(COMPILED.check(data, at=AT)) == _summary(REFERENCE.check(data, at=AT))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(envelopes())
def test_what_the_compiled_baseline_accepts_the_reference_finds_clean(doc: Any) -> None:
    """Where the compiled path answers, pyld gives the same expansion and the shapes no reason."""
    data = json.dumps(doc).encode()
    fast = read_document_compiled(data, "envelope", shapes=SHAPE_CHECKS, policy=POLICY)
    if fast is None:
        return
    slow = read_document(data, "envelope", shapes=SHAPES, policy=POLICY)
    assert slow.findings == ()
    assert fast.node == slow.node


def test_the_compiled_path_answers_the_draft_envelope() -> None:
    """Without this, every differential test above would pass by always falling back."""
    data = json.dumps(envelope_62()).encode()
    assert read_document_compiled(data, "envelope", shapes=SHAPE_CHECKS, policy=POLICY) is not None


def test_an_unknown_engine_is_a_configuration_error() -> None:
    from ioa_semantic import ConfigurationError

    with pytest.raises(ConfigurationError):
        Checker("cs-translation", engine="fast-and-loose")


@st.composite
def plausible_envelopes(draw: st.DrawFn) -> Any:
    """Well-formed envelopes in many spellings, so that the compiled path answers most."""
    doc = envelope_62()
    context = doc["@context"]
    prefix = draw(st.sampled_from(["cs", "c", "onto"]))
    if prefix != "cs":
        context[prefix] = context.pop("cs")

    def ref(local: str) -> str:
        return draw(st.sampled_from([f"{prefix}:{local}", f"https://example.org/onto/cs#{local}"]))

    doc["capabilityRefs"] = draw(st.sampled_from([
        [ref("TechTranslation")], ref("TechTranslation"), [ref("Summarize")],
        [ref("TechTranslation"), ref("Summarize")]]))
    doc["intentRef"] = draw(st.sampled_from([ref("TranslateTechDoc"), ref("Unknown")]))
    doc["ontologyVersion"] = draw(st.sampled_from(["1.0", "1.0", "1.1", "2.0"]))
    domain = draw(st.sampled_from([ref("ComputerScience"), "https://example.org/onto/law#Law"]))
    senses = draw(st.lists(st.sampled_from([
        ref("LargeLanguageModel"), "https://example.org/onto/law#MasterOfLaws", ref("Unknown")]),
        min_size=0, max_size=3))
    doc["profileContext"] = {
        "@type": "ioa:Context", "domain": domain,
        "termBindings": [{"@type": "ioa:TermBinding", "term": f"T{i}", "sense": s}
                         for i, s in enumerate(senses)]}
    if draw(st.booleans()):
        context["profileVersion"] = "ioa:profileVersion"
        doc["profileVersion"] = draw(st.sampled_from(["1", "2"]))
    if draw(st.booleans()):
        doc["@id"] = draw(st.sampled_from(["urn:uuid:1", "https://example.org/tasks/1"]))
    if draw(st.booleans()):
        doc["@context"] = [context, {"law": "https://example.org/onto/law#"}]
    if draw(st.booleans()):
        doc = dict(reversed(list(doc.items())))
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plausible_envelopes())
def test_plausible_envelopes_get_the_same_decision(doc: Any) -> None:
    data = json.dumps(doc).encode()
    assert _summary(COMPILED.check(data, at=AT)) == _summary(REFERENCE.check(data, at=AT))


def test_the_compiled_path_answers_most_plausible_envelopes() -> None:
    answered = []

    @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck),
              database=None)
    @given(plausible_envelopes())
    def probe(doc: Any) -> None:
        data = json.dumps(doc).encode()
        answered.append(read_document_compiled(data, "envelope", shapes=SHAPE_CHECKS,
                                               policy=POLICY) is not None)

    probe()
    assert sum(answered) >= 0.9 * len(answered)


def test_the_shape_compiler_refuses_what_it_does_not_support() -> None:
    from ioa_semantic.pipeline.shapes import ShapesError, compile_shapes

    with pytest.raises(ShapesError, match=r"sh:or"):
        compile_shapes("@prefix sh: <http://www.w3.org/ns/shacl#> .\n"
                       "<https://x.example/S> a sh:NodeShape ; sh:or ( <https://x.example/a> ) .")


# --- the compiled path's reader: orjson, proven strict by counting colons ----------------------
# orjson keeps the last of repeated member names; the compiled path must never answer for
# such a document, or a parser differential (draft 10, A.1 item 1) would pass as clean.


def _repeat_member(text: str, where: str, member: str) -> str:
    """``text`` with ``member`` (a '"name": value' pair) inserted after the first ``where``."""
    at = text.index(where) + len(where)
    return text[:at] + member + "," + text[at:]


ENVELOPE_TEXT = json.dumps(envelope_62())
REPEATS = {
    "top level": ('{', '"ontologyVersion": "1.0"'),
    "top level, same value": ('{', f'"intentRef": {json.dumps(envelope_62()["intentRef"])}'),
    "inside the context": ('"@context": {', '"ioa": "https://example.org/ioa/semantic#"'),
    "a name with colons": ('{', '"ioa:ontologyVersion": "1.0", "ioa:ontologyVersion": "2.0"'),
    "a nested node": ('"profileContext": {', '"domain": "cs:ComputerScience"'),
    "a value full of colons": ('{', '"ontologyId": "urn:a:b:c:d:e"'),
}


@pytest.mark.parametrize("name", sorted(REPEATS))
def test_a_repeated_member_name_is_never_answered_by_the_compiled_path(name: str) -> None:
    """Duplicate keys are invalid whichever engine reads them (the requirements' security
    hardening: no parser differentials; R-5.4-1 checks run only on what intake accepts)."""
    where, member = REPEATS[name]
    data = _repeat_member(ENVELOPE_TEXT, where, member).encode()
    assert read_document_compiled(data, "envelope", shapes=SHAPE_CHECKS, policy=POLICY) is None
    decision = COMPILED.check(data, at=AT)
    assert decision.verdict.value == "invalid"
    assert "json.duplicate-key" in {f.code for f in decision.findings}
    assert _summary(decision) == _summary(REFERENCE.check(data, at=AT))


def test_an_escaped_colon_sends_the_document_to_the_strict_parser() -> None:
    """An escaped colon would hide a repeated name from the count; such text is not taken."""
    doc = envelope_62()
    doc["profileVersion"] = "a:b"
    text = json.dumps(doc).replace('"a:b"', '"a\\u003ab"')
    text = _repeat_member(text, "{", '"ontologyVersion": "1.0"')
    data = text.encode()
    assert read_document_compiled(data, "envelope", shapes=SHAPE_CHECKS, policy=POLICY) is None
    assert "json.duplicate-key" in {f.code for f in COMPILED.check(data, at=AT).findings}


@settings(max_examples=300, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20))
def test_colons_in_counts_what_the_text_of_a_value_holds(value: Any) -> None:
    from ioa_semantic.compiled.reader import colons_in

    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=2)):
        assert text.count(":") == colons_in(value)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_where_the_compiled_path_reads_a_text_the_strict_parser_reads_the_same(
        data: st.DataObject) -> None:
    """Byte edits of the draft envelope (a colon, quote, brace or name repeated or dropped):
    whatever the compiled path answers for, the strict parser finds clean and equal."""
    from ioa_semantic.pipeline.intake import parse

    text = bytearray(ENVELOPE_TEXT.encode())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text) - 1))
        edit = data.draw(st.sampled_from(["drop", "repeat", "insert"]))
        piece = data.draw(st.sampled_from([b":", b'"', b",", b"{", b"}", b"\\", b"\xff",
                                           b'"ontologyVersion": "1.0",', b"1e400", b"NaN"]))
        if edit == "drop":
            del text[at]
        elif edit == "repeat":
            end = data.draw(st.integers(at, min(len(text), at + 40)))
            text[at:at] = text[at:end]
        else:
            text[at:at] = piece
    fast = read_document_compiled(bytes(text), "envelope", shapes=SHAPE_CHECKS, policy=POLICY)
    if fast is not None:
        strict = parse(bytes(text))
        assert strict.ok
        assert strict.document == fast.document


# --- the restricted walk inside the reference path ---------------------------------------------
# A document that fails only its shapes still expands in the common subset; the reference
# path then takes the walk's node instead of running pyld, so the two must agree exactly.

registration_fields = st.sampled_from(["@id", "@type", "inputs", "outputs", "label", "type",
                                       "ontologyId", "ontologyVersion", "providedBy", "extra"])


@st.composite
def registrations(draw: st.DrawFn) -> Any:
    doc = registration_63()
    doc["@context"].update(draw(context_extras))
    if draw(st.booleans()):
        doc["@context"]["ontologyId"] = {"@id": "ioa:ontologyId", "@type": "@id"}
        doc["@context"]["providedBy"] = {"@id": "ioa:providedBy", "@type": "@id"}
    for field in draw(st.lists(registration_fields, max_size=3)):
        if draw(st.booleans()):
            doc.pop(field, None)
        else:
            doc[field] = draw(st.one_of(values, st.lists(st.sampled_from(
                ["text/plain", "text", "", "application/json; charset=utf-8"]), max_size=3)))
    return dict(reversed(list(doc.items()))) if draw(st.booleans()) else doc


def _walked(doc: Any) -> Any:
    from ioa_semantic.compiled.engine import restricted_expansion

    if not isinstance(doc, dict) or "@context" not in doc:
        return None
    return restricted_expansion(doc, POLICY)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(envelopes(), plausible_envelopes(), registrations()))
def test_where_the_walk_expands_a_document_pyld_gives_the_same_node_in_the_same_order(
        doc: Any) -> None:
    from ioa_semantic.pipeline.expansion import expand

    walked = _walked(doc)
    if walked is None:
        return
    reference = expand(doc)
    assert sorted(map(str, walked.dropped)) == sorted(map(str, reference.dropped))
    assert json.dumps(walked.nodes) == json.dumps(reference.nodes)


def _malformed_registrations() -> list[tuple[int, bytes]]:
    """Registrations of 60 real-traffic senders, each sender's in every invalid class of
    the audit benchmarks (a missing or relative @id, a scheme not allowed, a number for a
    media type, a member no term defines...), with each sender's JSON writer."""
    import random
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import traffic

    rng = random.Random(20261201)
    out = []
    for number in range(60):
        sender = traffic.sender(traffic.SEED, number)
        for klass in range(traffic.INVALID_CLASSES):
            doc = sender.registration(number, rng)
            traffic._invalidate(sender, doc, klass)
            out.append((klass, sender.dumps(doc)))
    return out


def test_the_reporting_walk_gives_pyld_answer_on_malformed_registrations() -> None:
    """What the reporting path's walk keeps as written, drops or makes a value object is
    what pyld does (node, member order and dropped names), and the reasons reported are
    those of the reporting path with pyld alone; the walk answers most of these."""
    from ioa_semantic.compiled.engine import restricted_expansion
    from ioa_semantic.pipeline.expansion import expand

    answered = set()
    for klass, data in _malformed_registrations():
        doc = json.loads(data)
        walked = restricted_expansion(doc, POLICY)
        if walked is not None:
            answered.add(klass)
            reference = expand(doc)
            assert sorted(map(str, walked.dropped)) == sorted(map(str, reference.dropped))
            assert json.dumps(walked.nodes) == json.dumps(reference.nodes), data
        with_walk = read_document(data, "registration", shapes=SHAPES, policy=POLICY,
                                  expand_with=restricted_expansion)
        alone = read_document(data, "registration", shapes=SHAPES, policy=POLICY)
        assert with_walk == alone, data
    # The relative and the disallowed @id, the number and the undefined member included.
    assert {1, 2, 7, 8} <= answered, answered


def _review(review: Any) -> Any:
    return review.findings, review.terms.terms, review.expandable


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(envelopes(), plausible_envelopes(), registrations()))
def test_a_remembered_context_review_is_the_documents_own(doc: Any) -> None:
    """The reporting path remembers the review of a document whose only context is its
    top-level one: what it answers is what reviewing the document answers."""
    from ioa_semantic.pipeline.baseline import _reviewed
    from ioa_semantic.pipeline.contexts import review_contexts

    if not isinstance(doc, dict):
        return
    for _ in range(2):  # the second is answered from memory where the first was remembered
        assert _review(_reviewed(doc, POLICY, None)) == _review(review_contexts(doc, POLICY))


def test_a_second_context_is_never_answered_from_memory() -> None:
    """A nested context, whatever the text spelled its member name with, is reviewed: its
    findings are not those remembered for the top-level context alone; a document whose
    text has escapes elsewhere is still answered from memory."""
    from ioa_semantic.pipeline.baseline import _reviewed
    from ioa_semantic.pipeline.contexts import review_contexts

    plain = registration_63()
    assert _review(_reviewed(plain, POLICY, None))[0] == ()
    nested = registration_63()
    nested["providedBy"] = {"@context": {"@vocab": "https://example.org/v#"}, "@id": "cs:A"}
    expected = _review(review_contexts(nested, POLICY))
    assert expected[0], "the nested @vocab is a finding"
    text = json.dumps(nested)
    escaped = text.replace('{"@context": {"@vocab"', '{"\\u0040context": {"@vocab"')
    assert escaped != text and json.loads(escaped) == nested
    for spelled in (text, escaped):
        assert _review(_reviewed(json.loads(spelled), POLICY, None)) == expected
    from ioa_semantic.pipeline import baseline

    escaped_label = registration_63()
    escaped_label["label"] = "café / thé"
    text = json.dumps(escaped_label, ensure_ascii=True).replace("/", "\\/")
    assert "\\u00e9" in text and "\\/" in text
    parsed = json.loads(text)
    _reviewed(parsed, POLICY, None)
    assert baseline._one_context(parsed) and baseline._REVIEWS.get(
        (POLICY, baseline.serialized_context(parsed["@context"]) or b"")) is not None
    assert not baseline._one_context(nested)
    deep = registration_63()
    deep["x"] = [[{"y": {"@context": None}}]]
    assert not baseline._one_context(deep)


@pytest.mark.parametrize("member", [("inputs", ["text"]), ("outputs", []), ("@type", "ioa:Intent"),
                                    ("@type", ["ioa:Capability", "ioa:Intent"])])
def test_a_registration_failing_only_its_shapes_is_expanded_by_the_walk(
        member: tuple[str, Any]) -> None:
    """Without this the test above could pass by the walk never answering."""
    doc = registration_63()
    doc[member[0]] = member[1]
    assert _walked(doc) is not None
    result = read_document(json.dumps(doc).encode(), "registration", shapes=SHAPES, policy=POLICY)
    assert result.rejected


# --- the compact-form schemas: jsonschema-rs reports what jsonschema reports -------------------


def _findings_by_jsonschema(kind: str, doc: Any) -> list[Any]:
    from jsonschema import Draft202012Validator

    from ioa_semantic.pipeline.shapes import SchemaError, schema_error_findings

    _, schema = SHAPES.schema(kind)
    errors = (SchemaError(e.validator, e.validator_value, tuple(e.absolute_path), e.instance)
              for e in Draft202012Validator(schema).iter_errors(doc))
    return sorted(schema_error_findings(schema, errors))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(envelopes().map(lambda d: ("envelope", d)),
                 registrations().map(lambda d: ("registration", d)),
                 st.tuples(st.sampled_from(["envelope", "registration"]),
                           st.dictionaries(fields | registration_fields, values, max_size=4))))
def test_the_schema_findings_are_those_jsonschema_reports(case: tuple[str, Any]) -> None:
    kind, doc = case
    assert sorted(SHAPES.schema_findings(kind, doc)) == _findings_by_jsonschema(kind, doc)


def test_the_schema_findings_name_what_is_wrong() -> None:
    """A fixed example, so the property above cannot pass on two empty lists."""
    doc = registration_63()
    del doc["@context"]
    doc["outputs"], doc["type"] = [5], "Capability"
    found = {(f.code, f.path) for f in SHAPES.schema_findings("registration", doc)}
    # An item of the wrong type is named at its place, not as its array (which is allowed).
    assert found == {("registration.missing", ""), ("registration.type", "/outputs/0"),
                     ("registration.legacy-key", "/type")}
    assert sorted(SHAPES.schema_findings("registration", doc)) == \
        _findings_by_jsonschema("registration", doc)


@pytest.mark.parametrize("text", ["", " ", "\t\n", "\x1c", "\x1f", "\x85", "\u00a0", "\u3000",
                                  "\ufeff", "\u180e", "1.0", " 1 "])
@pytest.mark.parametrize("kind", ["envelope", "registration"])
def test_a_blank_ontology_version_is_blank_to_both_validators_as_python_reads_it(
        kind: str, text: str) -> None:
    """JSON Schema patterns are ECMA-262, whose white space differs from Python's at U+FEFF,
    U+001C-U+001F and U+0085; the schemas spell the class out so that nothing changed when
    jsonschema-rs took over, and the shapes (Python's re) agree."""
    import re

    doc = envelope_62() if kind == "envelope" else registration_63()
    if kind == "registration":
        doc["@context"]["ontologyVersion"] = "ioa:ontologyVersion"
    doc["ontologyVersion"] = text
    empty = ("envelope.empty" if kind == "envelope" else "registration.empty", "/ontologyVersion")
    found = {(f.code, f.path) for f in SHAPES.schema_findings(kind, doc)}
    assert (empty in found) == (re.search(r"\S", text) is None)
    assert sorted(SHAPES.schema_findings(kind, doc)) == _findings_by_jsonschema(kind, doc)


# --- the generated conformance functions against the shape evaluator ---------------------------


def _set(path: tuple[str | int, ...], value: Any) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        target: Any = doc
        for step in path[:-1]:
            target = target[step]
        if value is _DROP:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = value
    return edit


_DROP = object()
# Edits the walk still expands, each against one constraint kind of the shapes: counts,
# hasValue, node kind, datatype, pattern, closed.
ENVELOPE_EDITS = [
    _set(("ontologyId",), ["cs:A", "cs:B"]), _set(("ontologyVersion",), ["1.0", "2.0"]),
    _set(("ontologyVersion",), " "), _set(("ontologyVersion",), "\u3000"),
    _set(("intentRef",), ["cs:X", "cs:Y"]), _set(("intentRef",), _DROP),
    _set(("capabilityRefs",), []), _set(("capabilityRefs",), _DROP),
    _set(("@type",), ["ioa:SemanticProfile", "ioa:Context"]), _set(("@type",), "ioa:Context"),
    _set(("@type",), _DROP), _set(("@id",), "urn:task:1"),
    _set(("profileContext", "domain"), ["cs:A", "cs:B"]),
    _set(("profileContext", "@type"), _DROP), _set(("profileContext", "@type"), "ioa:TermBinding"),
    _set(("profileContext", "termBindings", 0, "term"), ""),
    _set(("profileContext", "termBindings", 0, "term"), ["A", "B"]),
    _set(("profileContext", "termBindings", 0, "sense"), _DROP),
    _set(("profileContext", "termBindings", 0, "@type"), _DROP),
    _set(("profileContext", "termBindings"), []),
    _set(("profileContext", "intentRef"), "cs:X"),
    _set(("ontologyVersion",), {"@id": "cs:V"}),
]
REGISTRATION_EDITS = [
    _set(("inputs",), ["text"]), _set(("inputs",), []), _set(("inputs",), _DROP),
    _set(("outputs",), "text/plain"), _set(("outputs",), ["text/plain", "a b/c"]),
    _set(("outputs",), ["text/plain; charset=utf-8"]), _set(("label",), ["a", "b"]),
    _set(("label",), {"@id": "cs:L"}), _set(("@type",), ["ioa:Capability", "ioa:Intent"]),
    _set(("@type",), _DROP), _set(("@id",), _DROP), _set(("@id",), "urn:cap:1"),
    _set(("inputs",), [{"@id": "cs:Text"}]),
]


@st.composite
def shape_edits(draw: st.DrawFn) -> tuple[str, Any]:
    kind = draw(st.sampled_from(["envelope", "registration"]))
    doc = envelope_62() if kind == "envelope" else registration_63()
    edits = ENVELOPE_EDITS if kind == "envelope" else REGISTRATION_EDITS
    for edit in draw(st.lists(st.sampled_from(edits), max_size=3)):
        with contextlib.suppress(KeyError, IndexError, TypeError):
            edit(doc)  # an earlier edit may have removed what this one changes
    return kind, doc


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(envelopes().map(lambda d: ("envelope", d)),
                 plausible_envelopes().map(lambda d: ("envelope", d)),
                 registrations().map(lambda d: ("registration", d)), shape_edits()))
def test_every_generated_conformance_function_agrees_with_the_shape_evaluator(
        case: tuple[str, Any]) -> None:
    """For every node the walk expands and every shape of its family: the compiled function
    says it conforms exactly when the evaluator that reports violations finds none."""
    from ioa_semantic.compiled.conformance import compile_conformance
    from ioa_semantic.pipeline.contexts import SenderTerms
    from ioa_semantic.pipeline.shapes import evaluate_node, located_nodes

    kind, doc = case
    walked = _walked(doc)
    if walked is None:
        return
    terms = SenderTerms()
    for here in located_nodes(walked.nodes[0], doc, terms):
        for shape in SHAPES.shapes.values():
            if shape.family != kind:
                continue
            clean = not list(evaluate_node(shape, here, terms))
            assert compile_conformance(shape)(here.node) == clean, (shape.name, here.node)


def _conforming_nodes() -> list[tuple[str, dict[str, Any]]]:
    """Every node of the draft envelope and of a registration using every optional member,
    as the walk expands them: each conforms to every shape that targets it."""
    from ioa_semantic.pipeline.contexts import SenderTerms
    from ioa_semantic.pipeline.shapes import located_nodes

    registration = registration_63()
    registration["@context"].update({
        "ontologyId": {"@id": "ioa:ontologyId", "@type": "@id"},
        "ontologyVersion": "ioa:ontologyVersion", "sourceLang": "ioa:sourceLang",
        "providedBy": {"@id": "ioa:providedBy", "@type": "@id"}})
    registration.update({"ontologyId": "https://example.org/onto/agent-core",
                         "ontologyVersion": "1.0", "sourceLang": "zh",
                         "providedBy": "cs:Agent"})
    found = []
    for kind, doc in (("envelope", envelope_62()), ("registration", registration)):
        walked = _walked(doc)
        assert walked is not None
        found += [(kind, here.node) for here in located_nodes(walked.nodes[0], doc,
                                                              SenderTerms())]
    return found


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_generated_conformance_functions_agree_on_every_value_form(
        data: st.DataObject) -> None:
    """One member of a conforming node replaced by values of every form, including those
    the walk never yields (blank nodes, typed and language-tagged literals, numbers)."""
    import copy

    from ioa_semantic._vocab import RDF_TYPE
    from ioa_semantic.compiled.conformance import compile_conformance
    from ioa_semantic.pipeline.contexts import SenderTerms
    from ioa_semantic.pipeline.shapes import Located, evaluate_node

    kind, node = data.draw(st.sampled_from(_CONFORMING))
    node = copy.deepcopy(node)
    family = [s for s in SHAPES.shapes.values() if s.family == kind]
    paths = sorted({p.path for s in family for p in s.properties} - {RDF_TYPE} | {"@type"})
    iris = st.sampled_from(["https://example.org/onto/cs#A", "urn:x:1", "_:b0", "relative",
                            "https://example.org/ioa/semantic#Capability",
                            "https://example.org/ioa/semantic#SemanticProfile",
                            "https://example.org/ioa/semantic#Context",
                            "https://example.org/ioa/semantic#TermBinding"])
    literal = st.one_of(
        st.fixed_dictionaries({"@value": st.sampled_from(["", " ", "1.0", "text/plain", "zh",
                                                          "a b/c", "\u3000", "x"])}),
        st.fixed_dictionaries({"@value": st.one_of(st.integers(), st.booleans())}),
        st.fixed_dictionaries({"@value": st.just("zh"), "@language": st.just("en")}),
        st.fixed_dictionaries({"@value": st.just("1.0"), "@type": st.sampled_from(
            ["http://www.w3.org/2001/XMLSchema#string",
             "http://www.w3.org/2001/XMLSchema#integer"])}))
    value = st.one_of(literal, st.fixed_dictionaries({"@id": iris}),
                      st.fixed_dictionaries({"@id": iris, paths[-1]: st.just([{"@value": "x"}])}))
    for path in data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=2)):
        if data.draw(st.booleans()):
            node.pop(path, None)
        elif path == "@type":
            node[path] = data.draw(st.lists(iris, max_size=2))
        else:
            node[path] = data.draw(st.lists(value, max_size=2))
    here = Located(node, {}, "")
    for shape in family:
        clean = not list(evaluate_node(shape, here, SenderTerms()))
        assert compile_conformance(shape)(node) == clean, (shape.name, node)


_CONFORMING = _conforming_nodes()
_VALUE_FORMS: list[Any] = [
    {"@id": "https://example.org/onto/cs#A"}, {"@id": "urn:x:1"}, {"@id": "_:b0"},
    {"@id": "relative"}, {"@id": "https://example.org/ioa/semantic#Capability"},
    {"@value": ""}, {"@value": " "}, {"@value": "\u3000"}, {"@value": "1.0"},
    {"@value": "text/plain"}, {"@value": "a b/c"}, {"@value": "zh"}, {"@value": 5},
    {"@value": True}, {"@value": "zh", "@language": "en"},
    {"@value": "1.0", "@type": "http://www.w3.org/2001/XMLSchema#string"},
    {"@value": "1", "@type": "http://www.w3.org/2001/XMLSchema#integer"},
    {"@id": "_:b1", "https://example.org/ioa/semantic#term": [{"@value": "x"}]},
]


def test_every_single_member_change_is_judged_alike_by_both() -> None:
    """Each member of each conforming node set to one value of each form, one at a time
    (and @type to each class or blank node): the compiled functions and the evaluator agree."""
    import copy

    from ioa_semantic._vocab import RDF_TYPE
    from ioa_semantic.compiled.conformance import compile_conformance
    from ioa_semantic.pipeline.contexts import SenderTerms
    from ioa_semantic.pipeline.shapes import Located, evaluate_node

    compiled = {name: compile_conformance(shape) for name, shape in SHAPES.shapes.items()}
    checked = 0
    for kind, conforming in _CONFORMING:
        family = [s for s in SHAPES.shapes.values() if s.family == kind]
        paths = sorted({p.path for s in family for p in s.properties} - {RDF_TYPE})
        changes = [(path, [form]) for path in paths for form in _VALUE_FORMS]
        changes += [("@type", [form["@id"]]) for form in _VALUE_FORMS if "@id" in form]
        changes += [(path, []) for path in [*paths, "@type"]]
        for path, values in changes:
            node = copy.deepcopy(conforming)
            node[path] = values
            here = Located(node, {}, "")
            for shape in family:
                clean = not list(evaluate_node(shape, here, SenderTerms()))
                assert compiled[shape.name](node) == clean, (shape.name, path, values)
                checked += 1
    assert checked > 1000


def test_a_per_value_constraint_on_rdf_type_is_compiled_as_the_evaluator_reads_it() -> None:
    """The shipped shapes constrain @type by count and hasValue only; a node kind and a
    pattern on rdf:type take a branch of the compiler of their own."""
    from ioa_semantic.compiled.conformance import compile_conformance
    from ioa_semantic.pipeline.contexts import SenderTerms
    from ioa_semantic.pipeline.shapes import Located, compile_shapes, evaluate_node

    shape = next(iter(compile_shapes("""
        @prefix sh: <http://www.w3.org/ns/shacl#> .
        @prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
        @prefix ioash: <https://ioa-semantic.org/ns/shapes#> .
        ioash:TypedShape a sh:NodeShape ; ioash:family "registration" ; ioash:section "6.3" ;
            sh:targetClass <https://x.example/Thing> ; sh:property ioash:TypedType .
        ioash:TypedType sh:path rdf:type ; sh:nodeKind sh:IRI ; sh:pattern "Thing$" ;
            ioash:section "6.3" ; sh:message "types are IRIs ending in Thing" .
        """).values()))
    conforms = compile_conformance(shape)
    for types, expected in ((["https://x.example/Thing"], True), (["https://x.example/Other"], False),
                            (["_:Thing"], False), ([], True)):
        node = {"@id": "urn:x:1", "@type": types}
        assert conforms(node) is expected, types
        violations = list(evaluate_node(shape, Located(node, {}, ""), SenderTerms()))
        assert (not violations) is expected, types


def test_a_checkers_first_document_is_read_without_orjson_and_judged_alike() -> None:
    """The first document takes the stdlib's strict parser (orjson's import would cost a
    one-envelope command more than it saves); later ones take orjson. Same decision."""

    script = (
        "import sys\n"
        "from datetime import UTC, datetime\n"
        "from ioa_semantic import Checker\n"
        "data = open('examples/envelope-6.2.jsonld', 'rb').read()\n"
        "at = datetime(2026, 6, 1, tzinfo=UTC)\n"
        "checker = Checker('cs-translation', cache_size=0)\n"
        "first = checker.check(data, at=at)\n"
        "before = 'orjson' in sys.modules\n"
        "second = checker.check(data, at=at)\n"
        "print(before, 'orjson' in sys.modules, first == second, first.verdict.value)\n")
    proc = run_python(script)
    assert proc.stdout.decode().split() == ["False", "True", "True", "compatible"], proc.stderr


def test_the_strict_read_answers_what_the_proven_read_answers() -> None:
    data = ENVELOPE_TEXT.encode()
    strict = read_document_compiled(data, "envelope", shapes=SHAPE_CHECKS, policy=POLICY, strict=True)
    proven = read_document_compiled(data, "envelope", shapes=SHAPE_CHECKS, policy=POLICY)
    assert strict is not None and proven is not None
    assert strict.node == proven.node and strict.located == proven.located
    for where, member in REPEATS.values():
        repeated = _repeat_member(ENVELOPE_TEXT, where, member).encode()
        assert read_document_compiled(repeated, "envelope", shapes=SHAPE_CHECKS, policy=POLICY,
                                      strict=True) is None


def _compiled_runs() -> dict[str, Any]:
    from ioa_semantic.audit.judge import judge

    folder = CONFORMANCE / "draft-12.1-accepted-mapping"
    case = Checker("cs-translation", cache_size=0, capabilities=[folder / "provider.jsonld"],
                   alignments=[folder / "align0.json"])
    case_data = (folder / "envelope.jsonld").read_bytes()
    envelope = ENVELOPE_TEXT.encode()
    registration = json.dumps(registration_63()).encode()
    return {
        "envelope": lambda: COMPILED.check(envelope, at=AT),
        "case 12.1": lambda: case.check(case_data, at=AT,
                                        params={"sourceLang": "zh", "targetLang": "en"}),
        "registration": lambda: judge(COMPILED, registration, "r.jsonld", None),
    }


@pytest.mark.parametrize("kind", ["envelope", "case 12.1", "registration"])
def test_a_compiled_check_leaves_no_cyclic_garbage(kind: str) -> None:
    """Everything a compiled check allocates is freed by reference counting: garbage in
    cycles waits for the collector, whose passes then set the hot path's p99 (a recursive
    closure in the walk once left 41 objects a check)."""
    import gc

    if not CONFORMANCE.exists() and kind == "case 12.1":
        pytest.skip("needs ../shared")
    run = _compiled_runs()[kind]
    for _ in range(3):
        run()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run()
        found = gc.collect()
        garbage = [type(o).__name__ for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert found == 0, garbage


# --- the compiled decision ------------------------------------------------------------------

CASE_121 = CONFORMANCE / "draft-12.1-accepted-mapping"


def _fields(outcome: Any) -> tuple[Any, ...]:
    return (outcome.findings, outcome.evidence, outcome.excluded, outcome.candidates,
            outcome.ontology)


def _both_decisions(checker: Checker, data: bytes, params: dict[str, str],
                    at: datetime = AT) -> tuple[Any, Any] | None:
    """The compiled decision's Outcome and evaluate's over a TableDataset, for a clean baseline."""
    from ioa_semantic.compiled.tables import TableDataset
    from ioa_semantic.pipeline.decision import evaluate, task_from

    baseline = checker.baseline(data, "envelope")
    if baseline.findings or baseline.node is None:
        return None
    task = task_from(baseline.node, params)
    engine = checker.stages
    assert isinstance(engine, CompiledEngine)
    fast = engine.decision.evaluate(baseline.node, task, at)
    full = evaluate(TableDataset(engine.tables, baseline.node), baseline.node, checker.profile,
                    checker.registrations, checker.artifacts, task, at)
    return fast, full


def _case_checker() -> Checker:
    return Checker("cs-translation", cache_size=0, capabilities=[CASE_121 / "provider.jsonld"],
                   alignments=[CASE_121 / "align0.json"])


@pytest.mark.skipif(not CONFORMANCE.exists(), reason="needs ../shared")
def test_the_compiled_decision_answers_the_draft_envelopes() -> None:
    """R-7.1-1: the common envelope is judged from the tables, and judged as evaluate does."""
    for checker, data, params, evidence in (
            (COMPILED, ENVELOPE_TEXT.encode(), {}, 0),
            (_case_checker(), (CASE_121 / "envelope.jsonld").read_bytes(),
             {"sourceLang": "zh", "targetLang": "en"}, 1)):
        pair = _both_decisions(checker, data, params)
        assert pair is not None and pair[0] is not None
        assert _fields(pair[0]) == _fields(pair[1])
        assert pair[0].ontology["readAs"] == "1.0"
        assert len(pair[0].evidence) == evidence  # 12.1: established through the artifact


task_parameters = st.fixed_dictionaries({}, optional={
    "sourceLang": st.sampled_from(["zh", "ZH", "en", "fr"]),
    "targetLang": st.sampled_from(["en", "EN", "zh"]),
    "inputMediaType": st.sampled_from(["text/plain", "TEXT/Plain", "text/html"]),
    "domain": st.sampled_from(["https://example.org/onto/cs#ComputerScience", "x"]),
})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plausible_envelopes(), task_parameters,
       st.sampled_from([None, "https://example.org/align/cs-doc-v1", "https://example.org/other"]),
       st.sampled_from([AT, datetime(2027, 6, 1, tzinfo=UTC)]))
def test_where_the_compiled_decision_answers_it_gives_evaluates_outcome(
        doc: Any, params: dict[str, str], alignment: str | None, at: datetime) -> None:
    """R-7.1-1, R-7.3-1: with and without an offered provider and artifact, for every
    parameter, alignmentRef and instant; where it does not answer, evaluate decides."""
    if alignment is not None:
        context = doc["@context"][0] if isinstance(doc["@context"], list) else doc["@context"]
        context["alignmentRef"] = {"@id": "ioa:alignmentRef", "@type": "@id"}
        doc["alignmentRef"] = alignment
    data = json.dumps(doc).encode()
    checkers = [COMPILED, CASE_CHECKER] if CASE_CHECKER is not None else [COMPILED]
    for checker in checkers:
        pair = _both_decisions(checker, data, params, at)
        if pair is not None and pair[0] is not None:
            assert _fields(pair[0]) == _fields(pair[1])


CASE_CHECKER = _case_checker() if CONFORMANCE.exists() else None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plausible_envelopes())
def test_the_compiled_decision_answers_every_clean_compatible_envelope(doc: Any) -> None:
    """The hot path's guard: an envelope the reference engine finds compatible without a
    single reason is never left to the slower evaluate."""
    data = json.dumps(doc).encode()
    decision = REFERENCE.check(data, at=AT)
    if decision.verdict.value == "compatible" and not decision.findings:
        pair = _both_decisions(COMPILED, data, {})
        assert pair is not None and pair[0] is not None


DISCRIMINATING_PROFILE = """
@prefix iop: <https://ioa-semantic.org/ns/profile#> .
@prefix ioa: <https://example.org/ioa/semantic#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix cs: <https://example.org/onto/cs#> .
@prefix law: <https://example.org/onto/law#> .
@prefix ext: <https://ext.example/ns#> .

<https://example.org/profiles/test/two-domains> a iop:Profile ;
    rdfs:label "permits two domains; intents and senses of every kind" ;
    iop:revision "1" ;
    iop:acceptsOntology [ iop:ontologyId <https://example.org/onto/agent-core> ;
                          iop:ontologyVersion "1.0" ] ;
    iop:permittedDomain cs:ComputerScience, law:Law .

cs:ComputerScience a ioa:Domain .
law:Law a ioa:Domain .
ext:Elsewhere a ioa:Domain .
cs:LargeLanguageModel a ioa:Concept ; ioa:inDomain cs:ComputerScience .
law:MasterOfLaws a ioa:Concept ; ioa:inDomain law:Law .
ext:Vague a ioa:Concept .
ext:Alien a ioa:Concept ; ioa:inDomain ext:Elsewhere .
cs:TechTranslation a ioa:Capability ; ioa:inputs "text/plain" ; ioa:outputs "text/plain" .
ext:Summarize a ioa:Capability .
cs:TranslateTechDoc a ioa:Intent ; ioa:requiresCapability cs:TechTranslation ;
    ioa:appliesToDomain cs:ComputerScience .
ext:Roam a ioa:Intent ; ioa:requiresCapability cs:TechTranslation .
ext:Legal a ioa:Intent ; ioa:appliesToDomain law:Law .
ext:Abroad a ioa:Intent ; ioa:appliesToDomain ext:Elsewhere .
"""


@pytest.fixture(scope="module", params=[False, True], ids=["bindings-restricted", "cross-domain"])
def discriminating(request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> tuple[Checker, Checker]:
    path = tmp_path_factory.mktemp("profile") / "profile.ttl"
    text = DISCRIMINATING_PROFILE
    if request.param:
        text = text.replace('iop:revision "1" ;', 'iop:revision "1" ; iop:crossDomainBindings true ;')
    path.write_text(text)
    return (Checker(str(path), engine="compiled", cache_size=0),
            Checker(str(path), engine="reference", cache_size=0))


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["cs:TranslateTechDoc", "ext:Roam", "ext:Legal", "ext:Abroad", "ext:No"]),
       st.sampled_from([None, "cs:ComputerScience", "law:Law", "ext:Elsewhere"]),
       st.lists(st.sampled_from(["cs:LargeLanguageModel", "law:MasterOfLaws", "ext:Vague",
                                 "ext:Alien", "ext:Unknown"]), max_size=2),
       st.sampled_from([["cs:TechTranslation"], ["cs:TechTranslation", "ext:Other"], ["ext:Other"],
                        ["ext:Summarize"], ["ext:Summarize", "cs:TechTranslation"]]))
def test_each_step_the_compiled_decision_passes_is_one_evaluate_passes(
        discriminating: tuple[Checker, Checker], intent: str, domain: str | None,
        senses: list[str], capabilities: list[str]) -> None:
    """Every condition of the compiled decision on its own: a profile with two permitted domains,
    intents with and without requirements and domains, and senses without or outside a
    domain, so that no failed step is masked by another."""
    compiled, reference = discriminating
    doc = envelope_62()
    doc["@context"]["ext"] = "https://ext.example/ns#"
    doc["@context"]["law"] = "https://example.org/onto/law#"
    doc["intentRef"] = intent
    doc["capabilityRefs"] = capabilities
    doc["profileContext"] = {"@type": "ioa:Context", "termBindings": [
        {"@type": "ioa:TermBinding", "term": f"T{i}", "sense": s} for i, s in enumerate(senses)]}
    if domain is not None:
        doc["profileContext"]["domain"] = domain
    data = json.dumps(doc).encode()
    pair = _both_decisions(compiled, data, {})
    assert pair is not None
    if pair[0] is not None:
        assert _fields(pair[0]) == _fields(pair[1])
    else:
        assert pair[1].findings  # it gave way only where evaluate has something to say
    assert _summary(compiled.check(data, at=AT)) == _summary(reference.check(data, at=AT))
