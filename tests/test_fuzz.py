"""Fuzzing the whole pipeline with JSON-LD's own machinery (issue: adversarial hardening).

Generators put keywords where senders could: contexts as strings, arrays and objects, with
@protected, @propagate, @vocab, @base, @import, scoped and type-scoped contexts, keyword
aliases; values with @graph, @included, @reverse, @nest, @list, @set, @json, @language maps.
Invariants: nothing raises, the same input gets the same decision, both engines agree, a
check answers in bounded time, and an envelope using a feature the context policy refuses is
never compatible. The default run keeps a small budget; ``pytest -m slow`` (CI runs it as a
step of its own) runs a large one. Covers R-6.1-3, R-6.1-5, R-6.1-6, R-6.4-6, R-7.1-11.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from operations import operations

from ioa_semantic import Checker, Verdict

from support import envelope_62

AT = datetime(2026, 6, 1, tzinfo=UTC)
COMPILED = Checker("cs-translation", engine="compiled", cache_size=0)
REFERENCE = Checker("cs-translation", engine="reference", cache_size=0)
# "A check answers in bounded work": the worst of 600 derandomized draws counted 671,004
# operations (tests/operations.py; the 6.2 envelope itself 3,455), so a draw over seven times
# that is a blow-up, whatever the machine's load. Counted, never timed.
OPERATIONS_BUDGET = 5_000_000
# What the context policy refuses in a sender's context (docs/architecture.md, "How a check runs").
REFUSED_CONTEXT_KEYWORDS = frozenset({"@vocab", "@base", "@import", "@language", "@direction",
                                      "@propagate"})
REFUSED_DEFINITION_KEYS = frozenset({"@context", "@reverse", "@nest", "@prefix", "@index",
                                     "@language", "@direction"})

iris = st.sampled_from(["https://example.org/x", "cs:TechTranslation", "ioa:capabilityRefs",
                        "relative", "_:b0", "urn:x:1", "xx:y", "https://example.org/onto/cs#"])
keywords = st.sampled_from(["@id", "@type", "@vocab", "@graph", "@list", "@set", "@json",
                            "@none", "@index", "@language", "@value"])
term_definitions = st.one_of(
    iris,
    keywords,
    st.none(),
    st.fixed_dictionaries({"@id": st.one_of(iris, keywords)}, optional={
        "@type": st.one_of(st.just("@id"), st.just("@vocab"), st.just("@json"), iris),
        "@container": st.sampled_from(["@set", "@list", "@language", "@index", "@graph",
                                       "@id", "@type", ["@graph", "@index"]]),
        "@protected": st.booleans(),
        "@reverse": iris,
        "@nest": st.just("@nest"),
        "@prefix": st.booleans(),
        "@context": st.fixed_dictionaries({"sense": iris}),
    }))
context_objects = st.dictionaries(
    st.one_of(st.sampled_from(["capabilityRefs", "intentRef", "sense", "term", "ioa", "cs",
                               "type", "id", "extra", "profileContext"]),
              st.sampled_from(["@vocab", "@base", "@protected", "@propagate", "@import",
                               "@version", "@language"])),
    st.one_of(term_definitions, st.booleans(), st.just(1.1), st.just("en")),
    max_size=4)
contexts = st.one_of(context_objects, iris,
                     st.lists(st.one_of(context_objects, iris, st.none()), max_size=3))
values = st.recursive(
    st.one_of(iris, st.integers(), st.booleans(), st.none(), st.text(max_size=4)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(keywords, st.sampled_from(["@reverse", "@included", "@nest",
                                                             "@context", "en", "x"])),
                        inner, max_size=3)),
    max_leaves=6)


@st.composite
def hostile_envelopes(draw: st.DrawFn) -> Any:
    doc: Any = envelope_62()
    for _ in range(draw(st.integers(0, 3))):
        place = draw(st.sampled_from(["top", "context", "binding", "field"]))
        if place == "top":
            doc["@context"] = [doc["@context"], draw(contexts)]
        elif place == "context":
            doc["profileContext"]["@context"] = draw(contexts)
        elif place == "binding":
            doc["profileContext"]["termBindings"][0][draw(st.sampled_from(
                ["@context", "sense", "term", "@type", "@reverse"]))] = draw(values)
        else:
            doc[draw(st.sampled_from(["@graph", "@included", "@reverse", "@nest", "capabilityRefs",
                                      "intentRef", "ontologyVersion", "@type", "@id"]))] = draw(values)
    return doc


def _decide(doc: Any) -> tuple[Any, ...]:
    data = json.dumps(doc).encode()
    checked = []
    assert operations(lambda: checked.append(COMPILED.check(data, at=AT))) < OPERATIONS_BUDGET
    first = checked[0]
    again = COMPILED.check(data, at=AT)
    reference = REFERENCE.check(data, at=AT)
    summary = (first.verdict, [(f.code, f.path) for f in first.findings])
    assert summary == (again.verdict, [(f.code, f.path) for f in again.findings])
    assert summary == (reference.verdict, [(f.code, f.path) for f in reference.findings])
    return summary


def _refused(context: Any) -> bool:
    """Whether a context value uses something the policy refuses (remote ones included)."""
    if isinstance(context, list):
        return any(_refused(c) for c in context)
    if not isinstance(context, dict):
        return context is not None  # a string is a remote context: never compatible offline
    for key, value in context.items():
        if key in REFUSED_CONTEXT_KEYWORDS:
            return True
        if key.startswith("@"):
            continue
        if isinstance(value, str) and value.startswith("@"):
            return True  # a keyword alias
        if isinstance(value, dict) and (set(value) & REFUSED_DEFINITION_KEYS or str(
                value.get("@id", "")).startswith("@")):
            return True
    return False


def _uses_refused_context_feature(doc: Any) -> bool:
    return _refused(doc.get("@context")) or _refused(
        doc.get("profileContext", {}).get("@context") if isinstance(
            doc.get("profileContext"), dict) else None)


def _invariants(doc: Any) -> None:
    verdict, _ = _decide(doc)
    if _uses_refused_context_feature(doc):
        assert verdict is not Verdict.COMPATIBLE


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(hostile_envelopes())
def test_hostile_envelopes(doc: Any) -> None:
    _invariants(doc)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(hostile_envelopes())
def test_hostile_envelopes_large_budget(doc: Any) -> None:
    _invariants(doc)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(hostile_envelopes())
def test_hostile_envelopes_through_the_command_line(doc: Any) -> None:
    """The installed command answers every hostile envelope with one verdict, never a crash."""
    import subprocess

    from support import IOA_CHECK

    proc = subprocess.run([IOA_CHECK, "-", "--profile", "cs-translation", "--at",
                           "2026-06-01T00:00:00Z", "--format", "json"],
                          input=json.dumps(doc).encode(), capture_output=True, timeout=60)
    assert proc.returncode in (0, 1, 3, 4), proc.stderr
    (result,) = [json.loads(x) for x in proc.stdout.splitlines()]
    assert result["verdict"] == _decide(doc)[0].value
