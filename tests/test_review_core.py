"""What a third hostile review of 2026-12-01 found (the envelope check attacked with JSON-LD
features a sender controls), held as behaviour: each test failed when it was written and
passes since the fix; each docstring says what went wrong before and why it matters.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from ioa_semantic import Checker, Verdict, build_kind

from support import envelope_62

AT = datetime(2026, 6, 1, tzinfo=UTC)
ENGINES = ("compiled", "reference")


def _check(doc: dict[str, Any], engine: str) -> Any:
    return Checker("cs-translation", engine=engine, cache_size=0).check(
        json.dumps(doc).encode(), at=AT)


def _merged(case: str) -> dict[str, Any]:
    doc = envelope_62()
    context = doc["profileContext"]
    binding = context["termBindings"][0]
    if case == "envelope-is-its-profileContext":
        doc["@id"] = "cs:E"
        context["@id"] = "cs:E"
    elif case == "envelope-is-its-term-binding":
        doc["@id"] = "cs:E"
        binding["@id"] = "cs:E"
    elif case == "profileContext-is-its-term-binding":
        context["@id"] = "cs:C"
        binding["@id"] = "cs:C"
    elif case == "two-term-bindings-one-node":
        binding["@id"] = "cs:B"
        context["termBindings"].append({**binding, "term": "GPU"})
    return doc


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", ["envelope-is-its-profileContext",
                                  "envelope-is-its-term-binding",
                                  "profileContext-is-its-term-binding",
                                  "two-term-bindings-one-node"])
def test_nodes_merged_by_a_shared_id_are_not_compatible(case: str, engine: str) -> None:
    """Wrong acceptance, both engines. The shape checks run over the expanded JSON-LD *tree*,
    one located node at a time, but JSON-LD's data model is a graph: two node objects with
    the same ``@id`` are one node. Giving the envelope and its ``profileContext`` the same
    ``@id`` ("cs:E") makes the envelope its own context: in the graph, cs:E is both an
    ioa:SemanticProfile and an ioa:Context, has ``ioa:profileContext cs:E``, and carries
    ``domain``/``termBindings`` on the envelope and ``intentRef``/``capabilityRefs`` on the
    context. Two term bindings with one ``@id`` ("cs:B", terms "LLM" and "GPU") are one binding
    with two terms. The normative shapes (``shapes/baseline.ttl``, closed, ``sh:maxCount 1`` on
    ``ioa:term``) reject all four cases under pyshacl over pyld's RDF (ClosedConstraint /
    MaxCountConstraint violations), and the checker itself rejects the same members written
    inline (``"intentRef"`` inside ``profileContext`` is ``envelope.unknown-property``); yet
    both engines answer ``compatible`` with no reason. Why it matters: ``shapes.py`` claims
    its evaluation agrees with pyshacl on the normative shapes, and contract rule 1 says
    malformed is invalid and never compatible (7.1); a receiver that loads the envelope as
    RDF sees a different, malformed envelope from the one that was judged."""
    decision = _check(_merged(case), engine)
    assert decision.verdict is not Verdict.COMPATIBLE, (
        f"{engine}: {case} is compatible; reasons {[r.code for r in decision.reasons]}")


@pytest.mark.parametrize("engine", ENGINES)
def test_chained_prefix_definitions_are_refused_before_any_context_is_built(
        engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was slow (and memory-hungry), both engines. One context, 1,000 term definitions (under the
    1,024 limit), ~300 KB (under 1 MiB), no term used in the body: each prefix is defined
    through the previous one, ``"p0": "https://example.org/"``, ``"p{i}": "p{i-1}:xxx…x/"``
    (300 x's). Every expanded IRI contains all earlier ones, so expanding the definitions
    is quadratic: measured on this machine (``Checker.check``, one engine per process),
    segment 100: 2.6 s / 2.8 s (reference / compiled) and 165 MiB; segment 500 (518 KB):
    12.9 s / 15.9 s and ~600 MiB RSS, against 0.01 s for the 6.2 envelope. Why it matters:
    the README's "Limits and guarantees" promise work that grows at most n log n and memory
    that grows linearly in the input, with anything that could be superlinear refused
    before it runs; a sender can hold a receiver's worker for many seconds and hundreds of
    MiB per envelope with a document that no limit refuses, and the answer is
    ``compatible``. Now refused by its length alone (jsonld.term-iri-too-long), before any
    context is reviewed, built or expanded: held here by those stages failing if called, so
    that no wall-clock bound is needed."""
    from ioa_semantic.compiled import engine as compiled_engine
    from ioa_semantic.pipeline import baseline

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a context past the bound was reviewed, built or expanded")

    # Compiled, those stages' callers call them directly and take no patch: there the
    # outcome alone is held, and the pure build's run holds that they are never called.
    if build_kind() == "pure":
        for module, name in ((baseline, "review_contexts"), (baseline, "expand"),
                             (compiled_engine, "active_context"),
                             (compiled_engine, "inline_context_clean"),
                             (compiled_engine, "review_contexts")):
            monkeypatch.setattr(module, name, never)
    doc = envelope_62()
    context = doc["@context"]
    for i in range(1000):
        context[f"p{i}"] = f"p{i - 1}:{'x' * 300}/" if i else f"https://example.org/{engine}/"
    assert len(json.dumps(doc)) < 1 << 20
    decision = _check(doc, engine)
    assert decision.verdict is Verdict.INVALID
    assert [r.code for r in decision.reasons] == ["jsonld.term-iri-too-long"]


def test_the_longest_term_iri_is_found_from_lengths_alone() -> None:
    """The bound on a term's expanded IRI: a chain past it is found (whichever order the
    terms come in), many short terms together are not one long IRI, and a cycle of prefixes
    ends."""
    from ioa_semantic.pipeline.contexts import MAX_TERM_IRI, longest_term_iri

    chain = {"p0": "https://example.org/"}
    for i in range(1, 40):
        chain[f"p{i}"] = f"p{i - 1}:" + "x" * 300 + "/"
    assert longest_term_iri([chain]) is not None
    assert longest_term_iri([dict(reversed(list(chain.items())))]) is not None
    assert longest_term_iri([dict(list(chain.items())[:20])]) is None  # 6,000 characters
    many = {f"t{i}": f"https://example.org/{'y' * 90}/{i}" for i in range(200)}
    assert sum(map(len, many.values())) > MAX_TERM_IRI and longest_term_iri([many]) is None
    cycle = {"a": "b:" + "z" * 5000, "b": "a:" + "z" * 5000}
    assert longest_term_iri([cycle]) is not None  # a:→b:→(a again: stops) is past the bound
    assert longest_term_iri([{"a": "a:x"}]) is None
