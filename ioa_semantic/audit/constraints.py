"""A profile's shapes applied to registrations in an audit, a batch at a time.

Each registration valid on its own is loaded into one store with the others of its batch,
each in a graph of its own, beside the receiver's fixed quads (the profile and its
vocabulary, the offered registrations and artifacts). One evaluation of the shapes serves
the batch, and each result goes back to every registration that names its focus node (as a
subject or as an object). That is the same as one evaluation per registration as long as no
registration can see another's nodes, so a batch is shared only when

* no shape reads beyond its focus nodes and the values paths reach from them, or finds its
  focus nodes by what points at them (no SPARQL, no inverse path, no target but classes:
  :func:`~ioa_semantic.pipeline.constraints.reads_beyond_focus`), and
* no registration's node is named in another registration of the batch (an ``sh:class`` or
  a path through it would otherwise read the other's triples);

a registration that fails the second test is evaluated alone, as every registration is when
the first fails. A result whose focus node no registration names (the profile's vocabulary,
say) belongs to none.

In an audit a registration that violates a shape is ``invalid`` (an audit has no
``incompatible``: the registration does not meet the profile's required constraints, 5.4)
and is not indexed for conflicts; one whose shapes could not be evaluated is
``indeterminate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyoxigraph

from .._findings import Finding, Severity, sort_key
from ..pipeline.constraints import (
    MAX_PYSHACL_TRIPLES,
    ProfileShapes,
    Unevaluable,
    as_finding,
    reads_beyond_focus,
    unevaluable,
)
from ..pipeline.constraints import (
    Result as ShapeResult,
)
from ..pipeline.store import UnloadableTerm, envelope_quads
from .judge import Result

Judgement = tuple[Result, "tuple[Any, ...] | None", "dict[str, Any] | None"]

_GRAPH = "urn:ioa-semantic:graph:registration:"


def constrained(shapes: ProfileShapes, fixed: Sequence[pyoxigraph.Quad],
                judged: Sequence[Judgement]) -> list[tuple[Result, tuple[Any, ...] | None]]:
    """``judged`` (each registration's result, declaration and expanded node) with the
    profile's shapes applied to every valid one, in the same order."""
    loaded: dict[int, list[pyoxigraph.Quad]] = {}
    for i, (result, _, node) in enumerate(judged):
        if result.status != "valid" or node is None:
            continue
        try:
            loaded[i] = envelope_quads(node, pyoxigraph.NamedNode(f"{_GRAPH}{i}"), f"r{i}e")
        except UnloadableTerm:
            continue  # the baseline lets no such value through; a registration keeps its result
    groups = _groups(loaded, alone=reads_beyond_focus(shapes))
    found: dict[int, list[Finding]] = {}
    for group in groups:
        found.update(_evaluate(shapes, fixed, {i: loaded[i] for i in group}))
    out = []
    for i, (result, declaration, _) in enumerate(judged):
        findings = found.get(i)
        if not findings:
            out.append((result, declaration))
            continue
        out.append(_with(result, declaration, findings))
    return out


def _groups(loaded: dict[int, list[pyoxigraph.Quad]], *, alone: bool) -> list[list[int]]:
    if alone:
        return [[i] for i in loaded]
    # A registration past the bound on what pySHACL is asked about is judged alone: its
    # reason is its own, and the batch is evaluated without it.
    large = [i for i, quads in loaded.items() if len(quads) > MAX_PYSHACL_TRIPLES]
    loaded = {i: quads for i, quads in loaded.items() if i not in large}
    own = {i: {q.subject for q in quads} for i, quads in loaded.items()}
    owner: dict[Any, int] = {}
    clashing: set[int] = set()
    for i, subjects in own.items():
        for subject in subjects:
            if owner.setdefault(subject, i) != i:
                clashing.update((i, owner[subject]))
    for i, quads in loaded.items():
        for q in quads:
            other = owner.get(q.object)
            if other is not None and other != i:
                clashing.update((i, other))
    shared = [i for i in loaded if i not in clashing]
    return ([shared] if shared else []) + [[i] for i in sorted({*clashing, *large})]


def _evaluate(shapes: ProfileShapes, fixed: Sequence[pyoxigraph.Quad],
              batch: dict[int, list[pyoxigraph.Quad]]) -> dict[int, list[Finding]]:
    # A result belongs to each registration that names its focus node (as a subject, or as
    # the object of one of its triples): one evaluated alone would have found it too.
    mentions: dict[str, set[int]] = {}
    for i, quads in batch.items():
        for q in quads:
            mentions.setdefault(_text(q.subject), set()).add(i)
            if not isinstance(q.object, pyoxigraph.Literal):
                mentions.setdefault(_text(q.object), set()).add(i)
    store: Any
    if shapes.needs_pyshacl or shapes.unsupported:
        store = pyoxigraph.Store()
        store.bulk_extend(fixed)
        for quads in batch.values():
            store.bulk_extend(quads)
    else:  # compiled shapes only: the union indexed, as the compiled engine reads a check's
        from ..compiled.constraints import indexed_union

        store = indexed_union(fixed, [q for quads in batch.values() for q in quads])
    findings: dict[int, list[Finding]] = {}
    try:
        results: Sequence[ShapeResult] = shapes.results(store, max(map(len, batch.values()),
                                                               default=0))
    except Unevaluable as exc:
        results = exc.results
        findings = {i: [unevaluable(exc)] for i in batch}
    for result in results:
        for i in sorted(mentions.get(result.focus, ())):
            findings.setdefault(i, []).append(as_finding(result, None))
    return findings


def _text(term: Any) -> str:
    return term.value if isinstance(term, pyoxigraph.NamedNode) else f"_:{term.value}"


def _with(result: Result, declaration: tuple[Any, ...] | None,
          findings: list[Finding]) -> tuple[Result, tuple[Any, ...] | None]:
    reasons = tuple(sorted((*result.reasons, *findings), key=sort_key))
    codes = {f.code for f in findings if f.severity is Severity.ERROR}
    if "constraint.shape-violated" in codes:
        return result._replace(status="invalid", reasons=reasons), None
    if "constraint.shape-unevaluable" in codes:
        return result._replace(status="indeterminate", reasons=reasons), None
    return result._replace(reasons=reasons), declaration
