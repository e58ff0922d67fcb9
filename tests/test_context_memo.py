"""The per-definition memo of context reviews (issue 20, item 2): a remembered judgement is
the one the definition would get afresh.

A term definition is judged once per (term, value, the expansions of its strings under its
context's prefixes) and remembered process-wide; the compiled engine's active
context remembers the RFC 3987 scheme of each IRI it expands. A key that left out anything
the judgement reads would answer one context with another's judgement: these tests review
contexts after others that share their definitions under other bindings (a prefix of the
same name meaning another IRI, fewer schemes allowed, a value equal in Python but not in
JSON) and hold every answer (findings with their messages and pointers, the sender's terms,
the active context) to the answer given with every memo empty.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ioa_semantic import cache_bytes
from ioa_semantic._memo import BoundedCache
from ioa_semantic.compiled import engine, walk
from ioa_semantic.compiled.engine import cached_active_context as _active_context
from ioa_semantic.compiled.engine import restricted_expansion
from ioa_semantic.pipeline import contexts
from ioa_semantic.pipeline.baseline import serialized_context
from ioa_semantic.pipeline.contexts import ContextPolicy, review_contexts
from ioa_semantic.pipeline.intake import Limits

from support import registration_63

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import traffic  # the real-traffic corpora's senders

IOA = "https://example.org/ioa/semantic#"
POLICY = ContextPolicy()
POLICIES = (POLICY, ContextPolicy(allow_vocab=True, allow_base=True),
            ContextPolicy(allowed_schemes=frozenset({"https"})),
            ContextPolicy(allowed_schemes=frozenset({"https", "http", "urn", "ftp"})))


@contextlib.contextmanager
def _no_memo() -> Iterator[None]:
    """Every memo of a context empty and remembering nothing, for the time of the block:
    what a context's review and active context are without them."""
    saved = contexts._DEFINITIONS, walk._SCHEMES, engine._CONTEXTS
    contexts._DEFINITIONS, walk._SCHEMES, engine._CONTEXTS = (
        BoundedCache(0), BoundedCache(0), BoundedCache(0))
    try:
        yield
    finally:
        contexts._DEFINITIONS, walk._SCHEMES, engine._CONTEXTS = saved


def _review(context: Any, policy: ContextPolicy = POLICY) -> tuple[Any, ...]:
    review = review_contexts({"@context": context}, policy)
    return review.findings, dict(review.terms.terms), review.expandable


def _active(context: Any, policy: ContextPolicy = POLICY) -> Any:
    reviewed = _active_context(context, policy)
    if reviewed is None:
        return None
    active = reviewed.active
    return dict(active.terms), active.coerced, dict(active.prefixes), reviewed.colons


def _fresh(function: Any, *args: Any) -> Any:
    with _no_memo():
        return function(*args)


def _clean(context: Any, policy: ContextPolicy = POLICY) -> bool | None:
    return contexts.inline_context_clean(context, policy)


def _remembered_and_fresh(context: Any, policy: ContextPolicy = POLICY) -> None:
    """The review and the compiled active context of ``context`` with the memos as they
    stand equal those with every memo empty (the whole-context cache left aside, so that
    the definitions are what is asked), and the compiled engine's review by the members'
    judgements alone says what the whole review says."""
    engine._CONTEXTS.resize(0)
    engine._CONTEXTS.resize(64 << 20)
    review = _review(context, policy)
    assert review == _fresh(_review, context, policy)
    assert _active(context, policy) == _fresh(_active, context, policy)
    clean = _clean(context, policy)
    assert clean == _fresh(_clean, context, policy)
    assert clean is None or clean == (not review[0] and review[2])


# --- the same definitions under other bindings ----------------------------------------------

def test_a_prefix_of_the_same_name_meaning_another_iri_is_another_judgement() -> None:
    good = {"p": IOA, "accepts": "p:inputs", "inputs": {"@id": "p:inputs"}}
    other = {"p": "https://other.example/ns#", "accepts": "p:inputs",
             "inputs": {"@id": "p:inputs"}}
    broken = {"p": "https://bad example/", "accepts": "p:inputs"}
    assert _review(good)[0] == ()
    assert _review(good)[1]["accepts"] == IOA + "inputs"
    findings, terms, _ = _review(other)
    # The baseline's term under another IRI is a redefinition; the sender's own term means
    # the other IRI.
    assert [(f.code, f.path) for f in findings] == [("jsonld.term-redefinition",
                                                      "/@context/inputs")]
    assert terms["accepts"] == "https://other.example/ns#inputs"
    codes = [(f.code, f.path) for f in _review(broken)[0]]
    assert ("jsonld.invalid-iri", "/@context/accepts") in codes
    for context in (good, other, broken):
        _remembered_and_fresh(context)


def test_a_term_spelled_as_a_compact_iri_expands_to_itself_under_one_prefix_only() -> None:
    """``"p:inputs": IOA + "inputs"`` is fine where ``p`` is the ioa namespace and an invalid
    IRI mapping where it is another: the same definition, refused in one context."""
    fine = {"p": IOA, "p:inputs": IOA + "inputs"}
    refused = {"p": "https://other.example/ns#", "p:inputs": IOA + "inputs"}
    assert _review(fine)[0] == ()
    assert [f.code for f in _review(refused)[0]] == ["jsonld.term-definition"]
    # Keys by the term's own spelling too: without @id a definition maps the term to it.
    bare_fine = {"p": IOA, "p:x": {"@type": "@id"}}
    bare_blank = {"p": "_:", "p:x": {"@type": "@id"}}
    assert _review(bare_fine)[0] == ()
    assert ("jsonld.term-definition", "/@context/p:x") in [
        (f.code, f.path) for f in _review(bare_blank)[0]]
    for context in (fine, refused, bare_fine, bare_blank):
        _remembered_and_fresh(context)


def test_a_terms_own_spelling_is_keyed_with_and_without_its_own_definition() -> None:
    """Resolving ``p:x`` through a cycle of prefixes ends where the number of prefixes says:
    with its own string definition (another object's) counted or not, the same term maps to
    itself or not, and the definition is fine in one context and refused in the other."""
    cycle = [{"p:x": "zz"}, {"p": "q:", "q": "p:", "p:x": {"@type": "@id"}}]
    plain = {"p": "q:", "p:x": {"@type": "@id"}}
    assert _review(plain)[0] == ()
    assert ("jsonld.term-definition", "/@context/1/p:x") in [
        (f.code, f.path) for f in _review(cycle)[0]]
    for context in (plain, cycle, plain):
        _remembered_and_fresh(context)


def test_a_definition_fine_in_one_context_is_refused_in_another() -> None:
    definition = {"@id": "p:ref", "@type": "q:Kind"}
    contexts_of_it = [
        {"p": IOA, "q": "https://kinds.example/", "ref": definition},
        {"p": IOA, "q": "https://bad kinds.example/", "ref": definition},  # @type no IRI
        {"p": "_:", "q": "https://kinds.example/", "ref": definition},  # a blank node
        {"p": "https://e.example/%zz/", "q": "https://kinds.example/", "ref": definition},
        {"p": "q:sub/", "q": "https://kinds.example/", "ref": definition},  # a chain
        {"p": "q:sub/", "q": "p:x/", "ref": definition},  # a cycle
        {"p": "q:sub/", "q": "p:x/", "z": "https://z.example/", "ref": definition},
    ]
    judged = [_review(c)[0] for c in contexts_of_it]
    assert judged[0] == ()
    assert judged[1] and judged[2] and judged[3]
    assert _review(contexts_of_it[4])[1]["ref"] == "https://kinds.example/sub/ref"
    for context in contexts_of_it:
        _remembered_and_fresh(context)
    # In every order and with every prefix renamed, reviewed after all of them.
    for context in contexts_of_it:
        renamed = json.loads(json.dumps(context).replace('"p', '"pp').replace('"q', '"qq'))
        for shuffled in (renamed, dict(reversed(list(renamed.items())))):
            _remembered_and_fresh(shuffled)


def test_values_equal_in_python_but_not_in_json_are_other_definitions() -> None:
    """``True == 1 == 1.0`` in Python; ``@protected: 1`` is no boolean to JSON-LD."""
    judged = [_review({"p": IOA, "flag": {"@id": "p:flag", "@protected": value}})[0]
              for value in (True, 1, 1.0, False, 0)]
    assert judged[0] == () and judged[3] == ()
    assert [f.code for f in judged[1]] == ["jsonld.term-definition"]
    assert judged[1] == judged[2] == judged[4] or all(judged[i] for i in (1, 2, 4))
    for value in (1, True, 1.0, 0, False):
        _remembered_and_fresh({"p": IOA, "flag": {"@id": "p:flag", "@protected": value}})
    for container in (["@set"], "@set", ["@list"], "@index", ["@set", "@list"], 1, None):
        _remembered_and_fresh({"p": IOA, "c": {"@id": "p:c", "@container": container}})


def test_a_finding_points_at_its_definition_wherever_it_stands() -> None:
    bad = {"accepts": "p:inputs"}
    prefixes = {"p": "https://bad example/"}
    one = _review([prefixes, bad])[0]
    other = _review([bad, prefixes])[0]
    assert "/@context/1/accepts" in [f.path for f in one]
    assert "/@context/0/accepts" in [f.path for f in other]
    for context in ([prefixes, bad], [bad, prefixes], {**bad, **prefixes}):
        _remembered_and_fresh(context)


def test_the_same_definitions_under_a_policy_of_fewer_schemes() -> None:
    """A definition's judgement does not read the policy (it is not given it, and the memo
    is not keyed by it); the walk's expansion of a reference reads the schemes after its
    memo has answered: under each policy, the answer is that policy's, remembered or not."""
    registration = registration_63()
    registration["@context"]["f"] = "ftp://files.example/caps/"
    registration["@id"] = "f:cap1"
    answers, compiled = {}, {}
    for policy in (*POLICIES, *reversed(POLICIES)):
        for context in (registration["@context"], [registration["@context"],
                                                    {"@vocab": IOA}]):
            _remembered_and_fresh(context, policy)
        walked = restricted_expansion(registration, policy)
        assert (walked is None) == (_fresh(restricted_expansion, registration, policy) is None)
        answers[policy] = walked is not None
        if walked is not None:
            assert walked.nodes == _fresh(restricted_expansion, registration, policy).nodes
        # The compiled path's walk expands the ftp @id where ftp is allowed and nowhere else.
        reviewed = _active_context(registration["@context"], policy)
        assert reviewed is not None
        strict = walk.expand_restricted(registration, reviewed.active, policy.allowed_schemes)
        compiled[policy] = strict is not None
    assert [compiled[p] for p in POLICIES] == [False, False, False, True]
    # The reporting walk gives pyld's node wherever no @base is allowed and the properties'
    # schemes are (rdfs:label is http, which the https-only policy refuses): the @id as pyld
    # keeps it, for the reporting stages to refuse its scheme where it is not allowed.
    assert [answers[p] for p in POLICIES] == [True, False, False, True]
    walked = restricted_expansion(registration, POLICY)
    assert walked is not None and walked.nodes[0]["@id"] == "ftp://files.example/caps/cap1"


def test_an_iri_with_the_reserved_base_is_a_term_but_no_reference() -> None:
    """A prefix naming the reserved no-base IRI: its terms are IRIs to RFC 3987, its compact
    references relative to the walk, however the scheme memo was filled."""
    from ioa_semantic.compiled.walk import _expand_reference, active_context
    from ioa_semantic.pipeline.contexts import NO_BASE

    active = active_context({"b": NO_BASE, "t": "b:x"})
    assert active is not None and active.terms["t"] == NO_BASE + "x"
    assert _expand_reference("b:x", active, False, POLICY.allowed_schemes) is None
    assert _fresh(_expand_reference, "b:x", active, False, POLICY.allowed_schemes) is None


def test_the_review_by_members_declines_what_is_not_objects() -> None:
    """A remote context, null, a number or a nested array is no inline context of objects:
    the compiled engine leaves it to the whole review, and its active context declines it."""
    declined: list[Any] = ["https://example.org/context.jsonld", None, 5, [[{"p": IOA}]],
                           [{"p": IOA}, "https://example.org/context.jsonld"], [{"p": IOA}, None]]
    for context in declined:
        assert _clean(context) is None
        assert _review(context)[0] or context == [[{"p": IOA}]]
        assert _active_context(context, POLICY) is None
    refused: list[Any] = [{"@import": "https://example.org/c.jsonld"}, [{"p": IOA}, {"@vocab": IOA}],
                          {"p": IOA, "@protected": False}, [{}, {"ioa": "https://other.example/"}]]
    for context in refused:
        assert _clean(context) is False
        _remembered_and_fresh(context)
    assert _clean([{}, {"@version": 1.1, "p": IOA, "x": "p:x"}]) is True


# --- the memo is used, and bounded ----------------------------------------------------------

def test_a_context_of_definitions_met_before_is_judged_by_lookups(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without this the tests above could pass by the memo never answering. A definition
    judged is one the memo did not hold, and each is remembered: the terms of the memo's new
    keys are the definitions judged (read from the memo, not by patching the judge, which
    compiled code calls directly); the others were looked up."""
    memo: BoundedCache[tuple[Any, ...], Any] = BoundedCache(1 << 20)
    monkeypatch.setattr(contexts, "_DEFINITIONS", memo)

    def judged(context: dict[str, Any]) -> tuple[list[str], Any]:
        before, misses = set(memo.remembered_keys()), memo.misses
        review = _review(context)
        new = sorted(key[0] for key in memo.remembered_keys() if key not in before)
        assert memo.misses - misses == len(new)  # every definition judged was remembered
        return new, review

    first = {"@version": 1.1, "sem": IOA, "accepts": "sem:inputs",
             "produces": {"@id": "sem:outputs", "@container": "@set"}, "inputs": "sem:inputs"}
    assert judged(first)[0] == ["accepts", "inputs", "produces", "sem"]
    # Another sender: another prefix name for the same namespace (a term of its own: the
    # baseline's ioa, held to the baseline), another order, one namespace of its own. The
    # definitions that use the prefix are the first sender's, whatever it is called.
    second = {"ioa": IOA, "inputs": "ioa:inputs", "mine": "https://s2.example/ns#",
              "produces": {"@id": "ioa:outputs", "@container": "@set"}, "accepts": "ioa:inputs"}
    hits = memo.hits
    new, review = judged(second)
    assert review[0] == ()
    assert new == ["ioa", "mine"]
    assert memo.hits - hits == 3  # inputs, produces and accepts: looked up
    third = {"accepts": "i:inputs", "i": IOA, "inputs": {"@id": "i:inputs"},
             "produces": {"@id": "i:outputs", "@container": "@set"}}
    hits = memo.hits
    new, review = judged(third)
    assert review[0] == ()
    assert new == ["i", "inputs"]  # a string and an object are two definitions
    assert memo.hits - hits == 2


def test_the_scheme_memo_answers_a_new_senders_iris(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without this the walk's memo could be dead code: a second sender's terms and compact
    references, expanding to IRIs met before, are not checked again: an IRI is checked
    when its lookup misses (read from the memo, not by patching the check, which compiled
    code calls directly)."""
    memo: BoundedCache[str, str] = BoundedCache(1 << 20)
    monkeypatch.setattr(walk, "_SCHEMES", memo)
    registration = registration_63()
    assert restricted_expansion(registration, POLICY) is not None
    checked, misses = memo.remembered_keys(), memo.misses
    assert checked and misses == len(checked)
    context = registration["@context"]
    registration["@context"] = {("ioa2" if k == "ioa" else k): v.replace("ioa:", "ioa2:")
                                if isinstance(v, str) else v for k, v in context.items()}
    registration["@type"] = "ioa2:Capability"
    assert restricted_expansion(registration, POLICY) is not None
    assert memo.misses == misses and memo.hits > 0
    assert sorted(memo.remembered_keys()) == sorted(checked)


def test_the_definition_memo_stays_within_its_bytes() -> None:
    before = cache_bytes()
    cache_bytes(definitions=64 << 10)
    try:
        assert cache_bytes()["definitions"] == 64 << 10
        for i in range(400):
            context = {"p": f"https://s{i}.example/ns#", f"t{i}": f"p:t{i}",
                       f"u{i}": {"@id": f"p:u{i}", "@type": "@id"}}
            _review(context)
            engine.cached_active_context(context, POLICY)
            assert contexts._DEFINITIONS.size <= 64 << 10
            assert walk._SCHEMES.size <= 64 << 10
        assert len(contexts._DEFINITIONS) < 3 * 400
    finally:
        cache_bytes(**before)
    assert cache_bytes() == before


def test_the_context_cache_counts_what_an_active_contexts_memos_come_to_hold() -> None:
    """A cached active context is counted as its text and what its memos hold, charged again
    as they grow, so that the cache's bound holds without counting every context at the
    most its memos might hold (which let a 64 MiB cache keep a few hundred senders)."""
    context = {"p": "https://memo.example/ns#", "ref": {"@id": "p:ref", "@type": "@id"}}
    engine._CONTEXTS.resize(0)
    engine._CONTEXTS.resize(64 << 20)
    reviewed = engine.cached_active_context(context, POLICY)
    assert reviewed is not None
    active = reviewed.active
    first = engine._CONTEXTS.size
    assert first < 8 << 10 and active.charged >= active.remembered
    for i in range(2 * walk._MEMO_LIMIT):  # references the walk remembers, then no more
        document = {"@context": context, "@id": f"p:node{i}", "ref": f"p:target{i}",
                    "@type": "p:Thing"}
        assert walk.expand_restricted(document, active, POLICY.allowed_schemes) is not None
    assert active.remembered > first  # the memos grew past their first charge
    assert engine.cached_active_context(context, POLICY) is not None
    assert active.charged >= active.remembered
    assert engine._CONTEXTS.size == 4 * len(serialized_context(context) or b"") + active.charged
    grown = active.remembered
    assert engine.cached_active_context(context, POLICY) is not None
    assert active.remembered == grown and engine._CONTEXTS.size <= 64 << 20
    # Each memo is bounded: the top @id is not remembered, the rest at most _MEMO_LIMIT apiece.
    assert all(len(memo) <= walk._MEMO_LIMIT for memo in active.memo.values())
    assert not any(f"node{i}" in key for memo in active.memo.values() for key in memo
                   for i in range(2 * walk._MEMO_LIMIT))


def test_a_context_over_the_limits_is_counted_before_it_is_built() -> None:
    """Given the limits, the compiled engine counts a new context's objects and definitions
    before it builds or reviews anything of it, and a cached context over another
    Checker's limits is declined too (the reference reports it)."""
    context = [{"a": IOA + "a", "b": IOA + "b"}, {"c": IOA + "c", "@version": 1.1}]
    engine._CONTEXTS.resize(0)
    engine._CONTEXTS.resize(64 << 20)
    assert engine.cached_active_context(context, POLICY, Limits(max_terms=2)) is None
    assert engine.cached_active_context(context, POLICY, Limits(max_contexts=1)) is None
    assert len(engine._CONTEXTS) == 0  # nothing was built, nothing remembered
    reviewed = engine.cached_active_context(context, POLICY, Limits(max_terms=3, max_contexts=2))
    assert reviewed is not None and (reviewed.objects, reviewed.definitions) == (2, 3)
    assert engine.cached_active_context(context, POLICY, Limits(max_terms=2)) is None
    finding = contexts.context_limit_findings({"@context": context}, 2, 2)
    assert [f.code for f in finding] == ["jsonld.too-many-terms"]
    assert not contexts.context_limit_findings({"@context": context}, 2, 3)


def test_what_is_not_plain_json_is_judged_afresh() -> None:
    """A definition of a value no JSON text gives (a subclass, a tuple) has no key: it is
    judged every time, as it always was."""

    class Text(str):
        pass

    assert contexts._written(Text("p:x")) is None
    assert contexts._written({"@id": Text("p:x")}) is None
    assert contexts._written({"@id": "p:x", "@container": ("@set",)}) is None
    assert contexts._written({"@id": "p:x", "@protected": True}) != contexts._written(
        {"@id": "p:x", "@protected": 1})
    assert contexts._written([1]) != contexts._written([1.0]) != contexts._written([True])
    context = {"p": IOA, "x": Text("p:x"), "y": {"@id": "p:y", "@container": ("@set",)}}
    assert _review(context) == _fresh(_review, context)


# --- generated contexts ---------------------------------------------------------------------

NAMESPACES = [IOA, IOA, "https://other.example/ns#", "https://bad example/", "_:", "urn:x:",
              "https://e.example/%zz/", "ftp://files.example/", "q:sub/", "p:x/",
              "https://no-document-base.invalid/", "rdfs:"]
PREFIX_NAMES = ["p", "q", "ioa", "rdfs", "x", "https"]
# Definitions with their prefixes as placeholders ({p}, {q}): the same definitions are met
# under other names and other bindings.
DEFINITIONS: list[tuple[str, Any]] = [
    ("inputs", "{p}:inputs"), ("inputs", {"@id": "{p}:inputs"}),
    ("outputs", {"@id": "{p}:outputs", "@container": "@set"}), ("outputs", "{q}:outputs"),
    ("accepts", "{p}:inputs"), ("accepts", {"@id": "{p}:inputs", "@type": "@id"}),
    ("label", "{q}:label"), ("label", "rdfs:label"),
    ("ontologyId", {"@id": "{p}:ontologyId", "@type": "@id"}),
    ("capabilityRefs", {"@id": "{p}:capabilityRefs", "@type": "@id", "@container": ["@set"]}),
    ("{p}:inputs", IOA + "inputs"), ("{p}:x", {"@type": "@id"}), ("{q}:y", "{p}:y"),
    ("ref", {"@id": "{p}:ref", "@type": "{q}:Kind"}), ("ref", {"@id": "{p}:ref", "@type": "@vocab"}),
    ("flag", {"@id": "{p}:flag", "@protected": True}), ("flag", {"@id": "{p}:flag", "@protected": 1}),
    ("gone", {"@id": None}), ("list", {"@id": "{p}:list", "@container": "@list"}),
    ("index", {"@id": "{p}:index", "@container": "@index"}), ("alias", "@id"),
    ("scoped", {"@id": "{p}:scoped", "@context": {}}), ("blank", "_:b0"),
    ("full", "https://full.example/x"), ("spaced", "{p}:in puts"), ("number", 5),
    ("lang", {"@id": "{p}:lang", "@language": "en"}), ("null", None),
]


def _render(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.replace("{p}", names["p"]).replace("{q}", names["q"])
    if isinstance(value, dict):
        return {_render(k, names): _render(v, names) for k, v in value.items()}
    return value


@st.composite
def generated_contexts(draw: st.DrawFn) -> Any:
    names = {"p": draw(st.sampled_from(PREFIX_NAMES)), "q": draw(st.sampled_from(PREFIX_NAMES))}
    members: list[tuple[str, Any]] = []
    for name in dict.fromkeys(names.values()):
        if draw(st.integers(0, 5)):  # now and then a prefix is used and not defined
            members.append((name, draw(st.sampled_from(NAMESPACES))))
    for key, value in draw(st.lists(st.sampled_from(DEFINITIONS), max_size=6)):
        members.append((_render(key, names), _render(value, names)))
    if draw(st.booleans()):
        members.append(("@version", 1.1))
    if draw(st.booleans()):
        members.append(draw(st.sampled_from([("@protected", True), ("@vocab", IOA),
                                             ("@protected", False), ("@base", IOA)])))
    members = draw(st.permutations(members))
    if draw(st.integers(0, 3)) == 0 and len(members) > 1:
        cut = draw(st.integers(1, len(members) - 1))
        return [dict(members[:cut]), dict(members[cut:])]
    return dict(members)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated_contexts(), st.sampled_from(POLICIES))
def test_a_generated_context_is_judged_as_with_no_memo(context: Any,
                                                       policy: ContextPolicy) -> None:
    """Contexts made of a few definitions under renamed and rebound prefixes, in any order
    and split into arrays: each is reviewed after many that share its definitions, and every
    answer is the one given with no memo."""
    _remembered_and_fresh(context, policy)
    # The same definitions again in another order: the memo answers, and answers the same.
    if isinstance(context, dict):
        _remembered_and_fresh(dict(reversed(list(context.items()))), policy)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated_contexts(), st.sampled_from(POLICIES),
       st.sampled_from(["{p}:Capability", "{q}:Cap", "https://caps.example/c", "ftp:x",
                        "{p}:in puts", "{q}:"]))
def test_a_registration_under_a_generated_context_is_walked_as_with_no_memo(
        context: Any, policy: ContextPolicy, ident: str) -> None:
    registration = registration_63()
    registration["@context"] = [registration["@context"], context] if isinstance(
        context, dict) else context
    registration["@id"] = _render(ident, {"p": "p", "q": "q"})
    walked = restricted_expansion(registration, policy)
    fresh = _fresh(restricted_expansion, registration, policy)
    assert (None if walked is None else walked.nodes) == (None if fresh is None else fresh.nodes)


def test_the_traffic_senders_contexts_are_judged_as_with_no_memo() -> None:
    """The contexts of the real-traffic corpora's senders (bench/traffic.py), each reviewed
    after hundreds of others with the same definitions under other prefix names."""
    seen = []
    for number in range(300):
        seen.append(traffic.Sender(traffic.SEED, 1_000_000 + number).context)
        seen.append(traffic.EnvelopeSender(traffic.SEED, 1 + number).context)
    for context in seen:
        _review(context)
        _active(context)
    for context in seen[::7]:
        _remembered_and_fresh(context)
        assert _review(context)[0] == ()


@pytest.mark.parametrize("senders", ["one", "each its own"])
def test_a_documents_own_id_is_not_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              senders: str) -> None:
    """Each registration's ``@id`` is its own, met once: the scheme memo keeps the IRIs met
    again (a sender's terms), and neither registrations answered by their kind (one sender)
    nor registrations each walked in full (each sender with a prefix of its own) push them
    out with an ``@id`` apiece (a uniform audit spent a fifth of its time so)."""
    from ioa_semantic import Checker
    from ioa_semantic.audit.inputs import pieces
    from ioa_semantic.audit.run import Audit

    memo: BoundedCache[str, str] = BoundedCache(1 << 20)
    monkeypatch.setattr(walk, "_SCHEMES", memo)
    path = tmp_path / "r.jsonl"
    lines = []
    for n in range(60):
        registration = registration_63()
        prefix = "cs" if senders == "one" else f"cs{n}"
        if prefix != "cs":  # a sender of its own: a context never seen, walked in full
            registration["@context"][prefix] = registration["@context"]["cs"]
        registration["@id"] = f"{prefix}:OwnCapability{n}"
        lines.append(json.dumps(registration) + "\n")
    path.write_text("".join(lines))
    audit = Audit(Checker("cs-translation"))
    judged = list(audit.batches(pieces([str(path)]), jobs=1))
    assert sum(batch.size for batch in judged) == 60 and audit.statuses["valid"] == 60
    assert [key for key in memo.remembered_keys() if "OwnCapability" in key] == []
    assert memo.remembered_keys()  # the memo is in use: the terms' IRIs are remembered
