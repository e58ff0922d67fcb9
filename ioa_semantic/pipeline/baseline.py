"""The baseline stage: one document through intake, context review, expansion and shapes.

Envelopes and capability registrations share this path and differ only in their schema and
root shape. The result is either findings that reject the document (invalid, or
indeterminate when a remote context would be needed) or a clean expanded node ready for the
compatibility engine.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    from ..sources.retrieval import Retriever

from .._codes import finding
from .._findings import Finding, Severity, Verdict
from .._memo import BoundedCache
from .._vocab import IOA, RDF_TYPE
from .expansion import (
    MEMO_BYTES,
    NO_BASE,
    ActiveContext,
    ContextPolicy,
    ContextReview,
    Expansion,
    ExpansionError,
    SenderTerms,
    _member_plan,
    active_context,
    context_limit_findings,
    dropped_findings,
    expand,
    expand_restricted,
    expansion_findings,
    reference_expander,
    review_contexts,
    structure_findings,
    term_for,
)
from .intake import (
    Limits,
    colons_in,
    escapes_a_colon,
    orjson_if_loaded,
    orjson_module,
    parse,
    read_unproven,
    value_findings,
)
from .shapes import Located, ShapeSet, iri_findings, located_nodes

Kind = Literal["envelope", "registration"]
_NESTED_TYPES = frozenset({IOA + "Context", IOA + "TermBinding"})
_REQUIRED_TYPE = {"envelope": IOA + "SemanticProfile", "registration": IOA + "Capability"}
_TERM_BINDINGS, _TERM, _SENSE = IOA + "termBindings", IOA + "term", IOA + "sense"


class Baseline(NamedTuple):
    """A document after the baseline stage."""

    findings: tuple[Finding, ...]
    document: Any = None
    node: dict[str, Any] | None = None
    located: tuple[Located, ...] = ()

    @property
    def rejected(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)


def read_document(
    data: bytes | str | dict[str, Any],
    kind: Kind,
    *,
    shapes: ShapeSet,
    policy: ContextPolicy,
    permitted_types: frozenset[str] = frozenset(),
    limits: Limits | None = None,
    retriever: "Retriever | None" = None,
    walk: bool = False,
) -> Baseline:
    """Run the baseline stages on one envelope or registration.

    ``retriever`` (a :class:`~ioa_semantic.sources.retrieval.Retriever`) fetches remote contexts
    when a retrieval policy allows them; without one they are prohibited retrievals. With
    ``walk`` (the compiled engine), a document the restricted walk can expand is not given
    to pyld; the reference engine always runs pyld.
    """
    if isinstance(data, dict):
        # An already parsed document still passes the limits; its duplicate keys are gone.
        try:
            data = json.dumps(data, ensure_ascii=False, allow_nan=False)
        except RecursionError:
            return Baseline((finding("json.too-deep", "the object nests too deeply"),))
        except (ValueError, TypeError) as exc:
            return Baseline((finding("json.syntax", f"the object is not JSON data: {exc}"),))
    intake = parse(data, limits)
    if not intake.ok:
        return Baseline(intake.findings)
    document: Any = intake.document
    if not isinstance(document, dict):
        return Baseline((finding("json.not-object", "the document is not one JSON object"),))
    over = _over_limits(document, limits or Limits(), len(data))
    if over:
        return Baseline(over, document)

    found: list[Finding] = list(shapes.schema_findings(kind, document))
    found.extend(structure_findings(document))
    review = _reviewed(document, data, policy, retriever)
    found.extend(review.findings)
    if "@context" not in document or not review.expandable or any(
            f.effect is Verdict.INVALID for f in review.findings):
        return Baseline(_dedupe(found), document)

    try:
        # pyld ignores a context's @base when there is no document base; an allowed @base
        # gets a reserved base that nothing can mean, and what resolves against it is relative.
        walked = _expanded_restricted(document, review.findings, policy, retriever) if walk \
            else None
        expansion = walked or expand(
            document, base=NO_BASE if policy.allow_base else None,
            document_loader=retriever.document_loader if retriever else None)
    except ExpansionError as exc:
        found.append(expansion_findings(exc))
        return Baseline(_dedupe(found), document)
    # A legacy id/type key is already reported as such; it is not also a dropped term.
    legacy = frozenset(f.path for f in found if f.code.endswith(".legacy-key"))
    found.extend(dropped_findings(document, expansion.dropped, review.terms, policy,
                                  skip=legacy))

    nodes = expansion.nodes
    if any(f.code == "jsonld.node-structure" for f in found):
        return Baseline(_dedupe(found), document)
    if len(nodes) != 1 or not isinstance(nodes[0], dict) or (
            {"@graph", "@included", "@reverse"} & set(nodes[0])):
        found.append(finding(
            "jsonld.node-structure",
            f"the document must be exactly one top-level node; expansion gives {len(nodes)}, "
            "or uses @graph, @included or @reverse", ""))
        return Baseline(_dedupe(found), document)
    node = nodes[0]
    located = located_nodes(node, document, review.terms)
    found.extend(iri_findings(located, review.terms, policy.allowed_schemes))
    root_shape = shapes.envelope if kind == "envelope" else shapes.registration
    violations = shapes.validate(root_shape, located, review.terms)
    # SHACL reports a missing @type twice (minCount and hasValue); people need it once.
    missing_types = {(v.shape, v.pointer) for v in violations
                     if v.component == "MinCountConstraintComponent" and v.path == RDF_TYPE}
    for violation in violations:
        if violation.component == "HasValueConstraintComponent" and (
                violation.shape, violation.pointer) in missing_types:
            continue
        if violation.code.endswith(".unknown-property") and violation.path and (
                term_for(violation.path) in policy.ignorable_terms
                or violation.path in policy.ignorable_terms):
            found.append(finding("jsonld.ignored-term",
                                 f"{term_for(violation.path)} is not a baseline property; the "
                                 "profile lets it be ignored as a descriptive term",
                                 violation.pointer, severity=Severity.WARNING))
            continue
        found.append(finding(violation.code, violation.message, violation.pointer,
                             section=violation.section))
    found.extend(_extra_types(located, kind, permitted_types))
    if kind == "envelope":
        found.extend(_ambiguous_bindings(located, review.terms))
    return Baseline(_dedupe(found), document, node, tuple(located))


# Reviews of inline contexts by (policy, context): senders repeat their context on every
# envelope, and a context that passed once passes again under the same policy. Each entry
# weighs a few times its context's text (the active context and its bounded memos).
_CONTEXTS: BoundedCache[tuple[ContextPolicy, bytes], Any] = BoundedCache(64 << 20)
_REFUSED = object()  # what _CONTEXTS remembers of a context the compiled path cannot use

# Reviews of whole documents' contexts by (policy, context), for documents whose one context
# is the top-level one: a malformed registration in an audit repeats its sender's context,
# and reviewing it again was a quarter of reporting it.
_REVIEWS: BoundedCache[tuple[ContextPolicy, bytes], ContextReview] = BoundedCache(64 << 20)


def _weight(serialized: bytes | str) -> int:
    """What a cached context is counted as weighing: its text, what is derived from it (a
    few times the text), and the memos an active context fills (bounded in _expansion)."""
    return 4 * len(serialized) + MEMO_BYTES


def cache_bytes(contexts: int | None = None, reviews: int | None = None) -> dict[str, int]:
    """Set the byte bounds of the process-wide context caches (when given) and return them:
    ``contexts`` (the compiled engine's active contexts) and ``reviews`` (the reporting path's
    reviews of whole documents' contexts). Both default to 64 MiB."""
    if contexts is not None:
        _CONTEXTS.resize(contexts)
    if reviews is not None:
        _REVIEWS.resize(reviews)
    return {"contexts": _CONTEXTS.max_bytes, "reviews": _REVIEWS.max_bytes}


def _over_limits(document: dict[str, Any], limits: Limits, size: int,
                 top_context_only: bool = False) -> tuple[Finding, ...]:
    """What a document asks beyond the limits of the work it may cost (refused before any
    stage that is superlinear in it runs). ``size`` is the text's length (a text too short
    to hold that many values is not walked for them). With ``top_context_only`` (the
    compiled path, whose walk declines any nested context) only the top ``@context`` is
    counted, not found by a walk of every member."""
    counted = {"@context": document["@context"]} if top_context_only else document
    return value_findings(document, limits, size) or context_limit_findings(
        counted, limits.max_contexts, limits.max_terms)


def _reviewed(document: dict[str, Any], data: bytes | str, policy: ContextPolicy,
              retriever: "Retriever | None") -> ContextReview:
    """:func:`review_contexts` of ``document``, remembered when the text shows that its
    top-level context is its only one: without an escape, every ``@context`` member name
    is spelled as such, and the text spells it once."""
    if retriever is not None or "@context" not in document:
        return review_contexts(document, policy, retriever)
    if isinstance(data, bytes):
        alone = b"\\" not in data and data.count(b'"@context"') == 1
    else:
        alone = "\\" not in data and data.count('"@context"') == 1
    serialized = _serialized(document["@context"]) if alone else None
    if serialized is None:
        return review_contexts(document, policy, retriever)
    key = (policy, serialized)
    review = _REVIEWS.get(key)
    if review is None:
        review = review_contexts(document, policy)
        _REVIEWS.put(key, review, _weight(serialized))
    return review


def _serialized(context: Any) -> bytes | None:
    """A context as the caches of reviews key it, or None (not JSON data)."""
    # A serialization is an exact key of parsed JSON (member order included: a reordered
    # context is only a cache miss); orjson's is the cheapest, once something loaded it.
    orjson = orjson_if_loaded()
    try:
        return orjson.dumps(context) if orjson is not None else json.dumps(
            context, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    except (ValueError, TypeError, RecursionError):  # orjson's JSONEncodeError is a TypeError
        return None


def _active_context(context: Any, policy: ContextPolicy) -> tuple[ActiveContext, int] | None:
    """The active context of a clean inline context, and its colons (see read_unproven)."""
    serialized = _serialized(context)
    if serialized is None:
        return None
    key = (policy, serialized)
    found = _CONTEXTS.get(key)
    if found is not None:
        return None if found is _REFUSED else found
    review = review_contexts({"@context": context}, policy)
    active = None if review.findings or not review.expandable else active_context(context)
    reviewed = None if active is None else (active, colons_in(context))
    _CONTEXTS.put(key, _REFUSED if reviewed is None else reviewed, _weight(serialized))
    return reviewed


def _expanded_restricted(document: dict[str, Any], reviewed: tuple[Finding, ...],
                         policy: ContextPolicy, retriever: "Retriever | None") -> Expansion | None:
    """pyld's expansion of a document the restricted walk can expand, or None.

    A document that fails only its shapes (a missing member, a wrong media type) still
    expands in the common subset, and pyld costs most of reporting it; the tests hold the
    walk's node to pyld's, member order included.
    """
    if retriever is not None or reviewed:
        return None
    context = _active_context(document["@context"], policy)
    if context is None:
        return None
    expanded = expand_restricted(document, context[0], policy.allowed_schemes, ordered=True)
    if expanded is None or set(expanded[0]) <= {"@id"}:
        # A top-level node with nothing but an @id (or nothing) is no node to JSON-LD:
        # expansion drops it, and the document has none (pyld's answer, reported as such).
        return None
    return Expansion([expanded[0]], ())


def read_document_compiled(
    data: bytes | str | dict[str, Any],
    kind: Kind,
    *,
    shapes: ShapeSet,
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
    if _over_limits(document, limits or Limits(), len(data), top_context_only=True):
        return None
    reviewed = _active_context(document["@context"], policy)
    if reviewed is None:
        return None
    active, context_colons = reviewed
    expanded = expand_restricted(document, active, policy.allowed_schemes,
                                 shapes.single_valued[kind])
    if expanded is None:
        return None
    node, nodes, member_colons, reached = expanded
    if colons is not None and member_colons + context_colons != colons:
        return None  # a member name repeated: the strict parser reports it
    root_shape = shapes.envelope if kind == "envelope" else shapes.registration
    if not shapes.conforms(root_shape, reached):
        return None
    located = tuple(map(Located._make, nodes))
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
    if any(len(n.get("@type", ())) > 1 for n, _ in reached) and _extra_types(
            located, kind, permitted_types):
        return True
    return kind == "envelope" and any(
        len(n.get(_TERM_BINDINGS, ())) > 1 for n, _ in reached) and bool(
        _ambiguous_bindings(located, SenderTerms()))


def _extra_types(located: Sequence[Located], kind: Kind,
                 permitted: frozenset[str]) -> list[Finding]:
    """Classes beside each node's baseline class, unless the profile permits them (rule 2)."""
    out = []
    for index, here in enumerate(located):
        types = here.node.get("@type")
        if not types:
            continue  # the shapes report the missing class
        if index == 0:
            required = _REQUIRED_TYPE[kind]
            if required not in types:
                continue
        else:
            for required in types:  # the first nested baseline class is the one
                if required in _NESTED_TYPES:
                    break
            else:
                continue
        if len(types) == 1:
            continue  # the baseline class alone: nearly every node
        extra = [t for t in types if t != required and t not in permitted]
        if extra:
            out.append(finding(
                f"{kind}.type-not-permitted",
                f"@type holds {', '.join(extra)}, which the profile does not permit beside "
                f"{required}", f"{here.pointer}/@type" if "@type" in here.compact else here.pointer))
    return out


def _ambiguous_bindings(located: Sequence[Located], terms: SenderTerms) -> list[Finding]:
    senses: dict[tuple[int, str], set[str]] = defaultdict(set)
    holders = {}
    for index, here in enumerate(located):
        for binding in here.node.get(_TERM_BINDINGS, ()):
            for term in binding.get(_TERM, ()) if isinstance(binding, dict) else ():
                for sense in binding.get(_SENSE, ()):
                    if isinstance(term, dict) and isinstance(sense, dict) and "@id" in sense:
                        senses[(index, str(term.get("@value")))].add(sense["@id"])
                        holders[index] = here
    if not senses:
        return []
    found = [(holders[index].member_pointer(_TERM_BINDINGS, terms), term, s)
             for (index, term), s in senses.items() if len(s) > 1]
    return [finding("envelope.ambiguous-binding",
                    f"the term {term!r} is bound to {len(s)} different senses "
                    f"({', '.join(sorted(s))}); ask the sender to correct or renegotiate", pointer)
            for pointer, term, s in sorted(found, key=lambda item: (item[0], item[1]))]


def _dedupe(findings: list[Finding]) -> tuple[Finding, ...]:
    """The findings less those the JSON Schema and SHACL both report: a wrong JSON type or
    an empty string at one place is one defect, whoever finds it. Missing members all point
    at their parent and differ in the member they name: each is a reason of its own."""
    seen: set[tuple[str, str]] = set()
    out = []
    for f in findings:
        if f.code.split(".", 1)[1] in ("type", "empty"):
            key = (f.code, f.path)
            if key in seen:
                continue
            seen.add(key)
        out.append(f)
    return tuple(out)


# --- registrations by kind: the batch audit -------------------------------------------------


class _KindPlan(NamedTuple):
    """How documents of one layout and one context are told apart: the members a clean
    judgement does not depend on (``@id`` first, then plain strings any string satisfies)
    and the others, whose values make up a kind."""

    expand_id: Callable[[str], str | None]  # the walk's expansion of an @id
    masked: tuple[str, ...]
    kept: tuple[str, ...]
    kinds: dict[bytes, tuple[int, Any]]  # kept values -> (colons besides masked, remembered)


class Unknown(NamedTuple):
    """A registration of a kind not known yet, and the compiled path's baseline of it (None
    unless that path found it clean): :meth:`remember` what is judged of a clean one."""

    kinds: "Kinds"
    plan: _KindPlan
    values: bytes
    colons: int
    compiled: Baseline | None

    def remember(self, value: Any) -> None:
        if self.compiled is not None and self.kinds.spend(len(self.values)):
            self.plan.kinds[self.values] = (self.colons, value)


class Kinds:
    """Registrations judged by kind, for an audit: a kind is everything the compiled
    baseline's judgement of a registration depends on, so that registrations of a kind
    judged clean once are clean.

    Two registrations are of one kind when they have the same members in the same order
    with values of the same types, the same context (as orjson writes it) and the same
    values everywhere but ``@id`` and the members whose one string value any string meets
    (:meth:`ShapeSet.any_string`; never one of ``keep``, what the caller remembers is read
    from those). A registration of a kind remembered clean is clean when its text passes
    the intake's limits and the colon proof of :func:`read_document_compiled` (its own
    colons: the masked strings' are counted, the rest are the kind's) and its ``@id``
    expands as the walk expands it; it then needs none of the walk, the shapes or the
    reporting. Anything else (a kind not remembered, any finding) is for the caller to judge
    in full. Only a registration the compiled path answers clean is remembered, and the
    tests hold every answer to the full judgement's.
    """

    def __init__(self, options: dict[str, Any], keep: frozenset[str]) -> None:
        """``options``: what :func:`read_document_compiled` is given besides the document
        (shapes, policy, permitted types, limits), as a Checker gives it."""
        self.options = options
        shapes: ShapeSet = options["shapes"]
        self.policy, self.limits = options["policy"], options["limits"]
        self.any_string = shapes.any_string("registration") - keep
        self.single_valued = shapes.single_valued["registration"]
        self.plans: dict[tuple[Any, ...], _KindPlan | None] = {}
        self.asked = self.answered = 0
        self.room = _KINDS_BYTES

    def judged(self, data: bytes) -> tuple[str, Any] | Unknown | None:
        """``(the expanded @id, what was remembered)`` for a registration of a kind judged
        clean; for one of a kind not known yet, its compiled baseline and what remembers it;
        or None (judge it in full)."""
        self.asked += 1
        if self.asked > _KINDS_TRIAL and self.answered * 4 < self.asked:
            # Kinds answer fewer than a quarter of the registrations (each of its own kind,
            # say): telling them apart costs more than it saves, and nothing else changes.
            return None
        # The intake's limits but the nesting: a registration of a kind nests as the kind
        # does (what it masks are strings), and any other is judged in full.
        if len(data) > self.limits.max_bytes:
            return None
        if escapes_a_colon(data):
            return None
        orjson = orjson_module()

        try:
            document = orjson.loads(data)
            if type(document) is not dict:
                return None
            layout = (tuple(document), orjson.dumps(document["@context"]))
            try:
                plan = self.plans[layout]
            except KeyError:
                plan = self._plan(document, layout)
            if plan is None:
                return None
            values = orjson.dumps([document[key] for key in plan.kept])
        except (KeyError, TypeError, ValueError):  # not JSON, no context, an integer too large
            return None
        masked = 0
        for key in plan.masked:
            value = document[key]
            if type(value) is not str:
                return None
            masked += value.count(":")
        known = plan.kinds.get(values)
        if known is None:
            return Unknown(self, plan, values, data.count(b":") - masked,
                           read_document_compiled(data, "registration", **self.options))
        if data.count(b":") != known[0] + masked:
            return None  # a member name repeated: the full judgement reports it
        ident = plan.expand_id(document["@id"])
        if ident is None:
            return None
        self.answered += 1
        return ident, known[1]

    def _plan(self, document: dict[str, Any], layout: tuple[Any, ...]) -> _KindPlan | None:
        reviewed = _active_context(document["@context"], self.policy)
        schemes = self.policy.allowed_schemes
        plan = None
        if reviewed is not None and type(document.get("@id")) is str:
            masked, kept = ["@id"], []
            for key, value in document.items():
                if key in ("@id", "@context"):
                    continue
                member = _member_plan(key, reviewed[0], schemes, self.single_valued)
                if type(value) is str and type(member) is tuple and not member[1] and (
                        member[0] in self.any_string):
                    masked.append(key)
                else:
                    kept.append(key)
            plan = _KindPlan(reference_expander(reviewed[0], False, schemes), tuple(masked),
                             tuple(kept), {})
        if self.spend(len(layout[1]) + sum(map(len, layout[0]))):
            self.plans[layout] = plan
        return plan

    def spend(self, size: int) -> bool:
        """Whether there is room to remember ``size`` more bytes (and they are counted)."""
        if self.room < size:
            return False
        self.room -= size
        return True


# Bytes of the layouts, contexts and kinds a process remembers, as their keys count them (a
# kind of 6.3's shape keeps tens of bytes); past them, a registration not known yet is
# judged in full.
_KINDS_BYTES = 64 << 20
# Registrations asked about before kinds may be found not worth asking.
_KINDS_TRIAL = 4096

