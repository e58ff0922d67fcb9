"""The compiled engine: each stage of a check answered from compiled forms, or declined.

:class:`CompiledEngine` is a :class:`~ioa_semantic.pipeline.engine.ReferenceEngine` that
asks its compiled forms first at each of the three points where they apply and falls back
to the reference stage where they decline:

* the baseline of a document (:func:`read_document_compiled`): orjson with the colon proof,
  the restricted expansion under a cached active context, the conformance functions; a
  document it cannot show clean is reported by the reference stages, with the restricted
  walk offered as their expansion;
* the decision of an envelope with a clean baseline (:class:`.decision.CompiledDecision`);
* the queries of every other decision, answered from tables (:class:`.tables.TableDataset`).
"""

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import pyoxigraph

from .._memo import BoundedCache
from .._runtime import Lock
from .._vocab import IOA
from ..pipeline.baseline import (
    Baseline,
    Kind,
    ambiguous_bindings,
    extra_types,
    read_document,
    review_cache_bytes,
    serialized_context,
)
from ..pipeline.contexts import (
    ContextLoader,
    ContextPolicy,
    SenderTerms,
    definition_cache_bytes,
    inline_context_clean,
    longest_term_iri,
    review_contexts,
)
from ..pipeline.decision import Outcome, Task, evaluate
from ..pipeline.engine import DocumentInput, ReferenceEngine
from ..pipeline.expansion import Expansion
from ..pipeline.intake import Limits, parse, value_findings
from ..pipeline.shapes import Located, ShapeSet, shared_ids
from ..sources.loader import Artifact, Profile, Registration
from .conformance import CompiledShapes
from .decision import CompiledDecision
from .reader import colons_in, read_unproven
from .tables import CompiledTables, TableDataset
from .walk import ActiveContext, active_context, expand_restricted, scheme_cache_bytes

if TYPE_CHECKING:
    from ..pipeline.constraints import ProfileShapes

_TERM_BINDINGS = IOA + "termBindings"


# Reviews of inline contexts by (policy, context): senders repeat their context on every
# envelope, and a context that passed once passes again under the same policy. Each entry
# weighs a few times its context's text (the active context and its bounded memos).
_CONTEXTS: BoundedCache[tuple[ContextPolicy, bytes], Any] = BoundedCache(64 << 20)


_REFUSED = object()  # what _CONTEXTS remembers of a context the compiled path cannot use


def cache_bytes(contexts: int | None = None, reviews: int | None = None,
                definitions: int | None = None) -> dict[str, int]:
    """Set the byte bounds of the process-wide context caches (when given) and return them:
    ``contexts`` (the compiled engine's active contexts) and ``reviews`` (the reporting path's
    reviews of whole documents' contexts), 64 MiB each by default, and ``definitions`` (the
    judgements of single term definitions, and the schemes of the IRIs the active contexts
    expand to: each that many, 16 MiB by default)."""
    if contexts is not None:
        _CONTEXTS.resize(contexts)
    scheme_cache_bytes(definitions)
    return {"contexts": _CONTEXTS.max_bytes, "reviews": review_cache_bytes(reviews),
            "definitions": definition_cache_bytes(definitions)}


def _weight(serialized: bytes, active: ActiveContext | None) -> int:
    """What a cached active context is counted as weighing: its text and what is derived
    from it (a few times the text), and what its memos have been charged for (see
    :func:`cached_active_context`)."""
    return 4 * len(serialized) + (0 if active is None else active.charged)


# The bytes a context's memos are charged for ahead of what they hold, so that the cache of
# active contexts is told again only every few kilobytes of growth.
_CHARGE_STEP = 4 << 10


class ReviewedContext(NamedTuple):
    """A clean inline context as the compiled engine keeps it: its active context, its
    colons (see read_unproven), and its context objects and term definitions as
    :func:`~ioa_semantic.pipeline.contexts.context_limit_findings` counts them."""

    active: ActiveContext
    colons: int
    objects: int
    definitions: int

    def within(self, limits: Limits) -> bool:
        return self.objects <= limits.max_contexts and self.definitions <= limits.max_terms


def _definitions(objects: Sequence[Any]) -> int:
    """The term definitions of a top ``@context``'s objects when it holds no other context
    (all the compiled path answers), as context_limit_findings counts them."""
    return sum(1 for obj in objects if type(obj) is dict for key in obj if not key.startswith("@"))


def cached_active_context(context: Any, policy: ContextPolicy,
                          limits: Limits | None = None) -> ReviewedContext | None:
    """The active context of a clean inline context, or None; with ``limits``, None as well
    for a context with more objects or definitions than they allow (never built: the
    reference reports it)."""
    serialized = serialized_context(context)
    if serialized is None:
        return None
    key = (policy, serialized)
    found = _CONTEXTS.get(key)
    if found is not None:
        if found is _REFUSED or (limits is not None and not found.within(limits)):
            return None
        active = found.active
        if active.remembered > active.charged:
            # Its memos grew past what the cache counts: count them, so that the cache's
            # bound holds what the contexts hold (within one walk's growth apiece).
            active.charged = active.remembered + _CHARGE_STEP
            _CONTEXTS.put(key, found, _weight(serialized, active))
        return found  # type: ignore[no-any-return]
    items = context if type(context) is list else (context,)
    objects, definitions = len(items), _definitions(items)
    if limits is not None and (objects > limits.max_contexts or definitions > limits.max_terms):
        return None  # counted before anything is built from it
    if longest_term_iri(items) is not None:
        return None  # its IRIs would be built at a cost past the limit: the reference refuses it
    # The active context first: a context it declines is refused whatever its review says,
    # and the review is the dearer of the two.
    built = active_context(context)
    if built is not None:
        clean = inline_context_clean(context, policy)
        if clean is None:
            review = review_contexts({"@context": context}, policy)
            clean = not review.findings and review.expandable
        if not clean:
            built = None
    reviewed = None if built is None else ReviewedContext(built, colons_in(context), objects,
                                                          definitions)
    if built is not None:
        built.charged = _CHARGE_STEP
    _CONTEXTS.put(key, _REFUSED if reviewed is None else reviewed, _weight(serialized, built))
    return reviewed


def restricted_expansion(document: dict[str, Any], policy: ContextPolicy) -> Expansion | None:
    """pyld's expansion of a document the restricted walk can expand, or None.

    A document that fails only its shapes (a missing member, a wrong media type) still
    expands in the common subset, and pyld costs most of reporting it; the tests hold the
    walk's node to pyld's, member order included.
    """
    context = cached_active_context(document["@context"], policy)
    if context is None:
        return None
    # What pyld drops or keeps as written, the walk does likewise (expand_restricted's
    # ``dropped``), unless a relative reference would be resolved against a base.
    dropped: list[str] | None = None if policy.allow_base else []
    expanded = expand_restricted(document, context.active, policy.allowed_schemes, ordered=True,
                                 dropped=dropped)
    if expanded is None or set(expanded[0]) <= {"@id"}:
        # A top-level node with nothing but an @id (or nothing) is no node to JSON-LD:
        # expansion drops it, and the document has none (pyld's answer, reported as such).
        return None
    return Expansion([expanded[0]], tuple(dropped or ()))


def read_document_compiled(
    data: bytes | str | dict[str, Any],
    kind: Kind,
    *,
    shapes: CompiledShapes,
    policy: ContextPolicy,
    permitted_types: frozenset[str] = frozenset(),
    limits: Limits | None = None,
    strict: bool = False,
) -> Baseline | None:
    """The baseline stage for a well-formed document in the common subset, or None.

    It answers only when it can show the document clean: intake proven strict (orjson, and
    every colon of the text accounted for on the walk; with ``strict``, the stdlib's strict
    parser, which is slower but needs no proof and no orjson import), an inline context
    that passes the review, the restricted expansion, and no shape violation, extra type or
    ambiguous binding. Anything else (including every malformed document) returns None, and
    the caller runs :func:`read_document`, which reports every reason.
    """
    if isinstance(data, dict):
        return None
    colons: int | None
    if strict:
        intake = parse(data, limits)
        if not intake.ok:
            return None
        document, colons = intake.document, None
    else:
        unproven = read_unproven(data, limits or Limits())
        if unproven is None:
            return None
        document, colons = unproven
    if type(document) is not dict or "@context" not in document:
        return None
    limits = limits or Limits()
    if value_findings(document, limits, len(data)):
        return None
    reviewed = cached_active_context(document["@context"], policy, limits)
    if reviewed is None:
        return None
    active, context_colons = reviewed.active, reviewed.colons
    expanded = expand_restricted(document, active, policy.allowed_schemes,
                                 shapes.single_valued[kind])
    if expanded is None:
        return None
    node, nodes, member_colons, reached = expanded
    if colons is not None and member_colons + context_colons != colons:
        return None  # a member name repeated: the strict parser reports it
    root_shape = shapes.shapes.envelope if kind == "envelope" else shapes.shapes.registration
    if not shapes.conforms(root_shape, reached):
        return None
    located = tuple(map(Located._make, nodes))
    if len(located) > 1 and next(shared_ids(located), None) is not None:
        return None  # node objects merged by their @id: the reference reports them
    if _beyond_the_shapes(located, reached, kind, permitted_types):
        return None
    return Baseline((), document, node, located)


def _beyond_the_shapes(located: Sequence[Located],
                       reached: Sequence[tuple[dict[str, Any], str | None]], kind: Kind,
                       permitted_types: frozenset[str]) -> bool:
    """Whether a conforming document still has a class the profile does not permit or an
    ambiguous binding (the compiled path's last checks)."""
    # A node of one class has none beside its baseline class (nearly every node); and the
    # shapes allow one term and one sense a binding, so only a node holding two bindings or
    # more can bind a term twice.
    if any(len(n.get("@type", ())) > 1 for n, _ in reached) and extra_types(
            located, kind, permitted_types):
        return True
    return kind == "envelope" and any(
        len(n.get(_TERM_BINDINGS, ())) > 1 for n, _ in reached) and bool(
        ambiguous_bindings(located, SenderTerms()))


class CompiledEngine(ReferenceEngine):
    """The reference engine with its compiled forms asked first: each method answers what
    they can show and otherwise returns the reference's answer (``super()``)."""

    name = "compiled"

    def __init__(self, *, profile: Profile, registrations: Sequence[Registration],
                 artifacts: Sequence[Artifact], fixed: Sequence[pyoxigraph.Quad],
                 shapes: ShapeSet, policy: ContextPolicy, limits: Limits,
                 constraints: "ProfileShapes | None" = None) -> None:
        super().__init__(profile=profile, registrations=registrations, artifacts=artifacts,
                         fixed=fixed, shapes=shapes, policy=policy, limits=limits,
                         constraints=constraints)
        self.compiled_shapes = compiled_shapes(self.shapes)
        # The named queries answered from tables derived once, with the compile queries,
        # from the same quads the reference engine loads on every check.
        self.tables = CompiledTables.build(self.fixed)
        self.decision = CompiledDecision(self.tables, self.profile, self.registrations,
                                         self.artifacts)
        self._read_before = False
        # Shapes all in the compiled subset are evaluated here, beside the compiled decision;
        # one pySHACL (or unsupported) shape sends the check to the reference.
        self._shapes_store: Any = None
        if constraints is not None and not (constraints.needs_pyshacl or constraints.unsupported):
            from .constraints import ShapesStore

            self._shapes_store = ShapesStore(self.fixed)

    def baseline(self, data: DocumentInput, kind: Kind,
                 retriever: ContextLoader | None = None) -> Baseline:
        if retriever is None:
            # The first document is read with the stdlib's strict parser: importing orjson
            # costs more than it saves on one document, and one is a command line's whole run.
            compiled = self.compiled_baseline(data, kind, strict=not self._read_before)
            self._read_before = True
            if compiled is not None:
                return compiled
        return self.reported(data, kind, retriever)

    def compiled_baseline(self, data: DocumentInput, kind: Kind, *,
                          strict: bool = False) -> Baseline | None:
        """The compiled baseline alone: a clean document's, or None."""
        return read_document_compiled(data, kind, shapes=self.compiled_shapes,
                                      policy=self.policy,
                                      permitted_types=self.profile.permitted_types,
                                      limits=self.limits, strict=strict)

    def reported(self, data: DocumentInput, kind: Kind,
                 retriever: ContextLoader | None = None) -> Baseline:
        # A document that fails only its shapes still expands in the restricted subset, and
        # pyld would cost most of reporting it.
        return read_document(data, kind, shapes=self.shapes, policy=self.policy,
                             permitted_types=self.profile.permitted_types, limits=self.limits,
                             retriever=retriever, expand_with=restricted_expansion)

    def outcome(self, node: dict[str, Any], task: Task, at: datetime, *,
                clean: bool, fetched: Sequence[Artifact] = (),
                located: Sequence[Any] = ()) -> Outcome:
        if fetched or (self.constraints is not None and self._shapes_store is None):
            # The profile's shapes need pySHACL over the check's store: the reference decides.
            return super().outcome(node, task, at, clean=clean, fetched=fetched,
                                   located=located)
        answered = self.decision.evaluate(node, task, at) if clean else None
        # (a clean baseline's nodes hold only the shapes' properties)
        out = answered if answered is not None else evaluate(
            TableDataset(self.tables, node), node, self.profile, self.registrations,
            self.artifacts, task, at)
        if self._shapes_store is not None and "readAs" in out.ontology:
            assert self.constraints is not None
            findings, proposed = self._shapes_store.outcome(
                self.constraints, node, task, (out.ontology["id"], out.ontology["readAs"]),
                located)
            out.findings.extend(findings)
            out.remedies.extend(proposed)
        return out


_COMPILED_SHAPES: dict[int, CompiledShapes] = {}
_COMPILED_SHAPES_LOCK = Lock()


def compiled_shapes(shapes: ShapeSet) -> CompiledShapes:
    """The conformance functions of ``shapes``, compiled once per process."""
    with _COMPILED_SHAPES_LOCK:
        found = _COMPILED_SHAPES.get(id(shapes))
        if found is None or found.shapes is not shapes:
            found = _COMPILED_SHAPES[id(shapes)] = CompiledShapes(shapes)
        return found
