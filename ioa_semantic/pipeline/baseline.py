"""The baseline stage: one document through intake, context review, expansion and shapes.

Envelopes and capability registrations share this path and differ only in their schema and
root shape. The result is either findings that reject the document (invalid, or
indeterminate when a remote context would be needed) or a clean expanded node ready for the
compatibility engine.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, NamedTuple

from .._codes import finding
from .._findings import Finding, Severity, Verdict
from .._memo import BoundedCache
from .._runtime import orjson_if_loaded
from .._vocab import IOA, RDF_TYPE
from .contexts import (
    NO_BASE,
    ContextLoader,
    ContextPolicy,
    ContextReview,
    SenderTerms,
    context_limit_findings,
    review_contexts,
    term_for,
)
from .expansion import (
    Expansion,
    ExpansionError,
    dropped_findings,
    expand,
    expansion_findings,
    structure_findings,
)
from .intake import (
    Limits,
    parse,
    value_findings,
)
from .shapes import Located, ShapeSet, Violation, iri_findings, located_nodes, shared_ids

Kind = Literal["envelope", "registration"]
# Another expansion of a document (its pyld result, or None to leave it to pyld).
Expander = Callable[[dict[str, Any], ContextPolicy], Expansion | None]
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
    retriever: ContextLoader | None = None,
    expand_with: Expander | None = None,
) -> Baseline:
    """Run the baseline stages on one envelope or registration.

    ``retriever`` (a :class:`~ioa_semantic.sources.retrieval.Retriever`) fetches remote contexts
    when a retrieval policy allows them; without one they are prohibited retrievals.
    ``expand_with`` is another expansion to try before pyld, for a document with no remote
    context and a context that passed its review: it gives pyld's result or declines with
    None (the compiled engine passes its restricted walk, held to pyld by the tests).
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
    over = over_limits(document, limits or Limits(), len(data))
    if over:
        return Baseline(over, document)

    found: list[Finding] = list(shapes.schema_findings(kind, document))
    found.extend(structure_findings(document))
    review = _reviewed(document, policy, retriever)
    found.extend(review.findings)
    if "@context" not in document or not review.expandable or any(
            f.effect is Verdict.INVALID for f in review.findings):
        return Baseline(_dedupe(found), document)

    try:
        # pyld ignores a context's @base when there is no document base; an allowed @base
        # gets a reserved base that nothing can mean, and what resolves against it is relative.
        walked = expand_with(document, policy) if (
            expand_with is not None and retriever is None and not review.findings) else None
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
    found.extend(finding("jsonld.shared-node-id",
                         f"this node object has the @id {ident}, as the one at "
                         f"{first.pointer or '/'} has: JSON-LD merges them into one node, "
                         "which is not the document the shapes judge", here.pointer)
                 for ident, first, here in shared_ids(located))
    found.extend(iri_findings(located, review.terms, policy.allowed_schemes))
    root_shape = shapes.envelope if kind == "envelope" else shapes.registration
    found.extend(_shape_findings(shapes.validate(root_shape, located, review.terms), policy))
    found.extend(extra_types(located, kind, permitted_types))
    if kind == "envelope":
        found.extend(ambiguous_bindings(located, review.terms))
    return Baseline(_dedupe(found), document, node, tuple(located))


def _shape_findings(violations: list[Violation], policy: ContextPolicy) -> Iterator[Finding]:
    """The baseline shapes' violations as reasons: a missing @type once, a profile's
    declared parameter term where it may stand not at all, an ignorable term a warning."""
    # SHACL reports a missing @type twice (minCount and hasValue); people need it once.
    missing_types = {(v.shape, v.pointer) for v in violations
                     if v.component == "MinCountConstraintComponent" and v.path == RDF_TYPE}
    for violation in violations:
        if violation.component == "HasValueConstraintComponent" and (
                violation.shape, violation.pointer) in missing_types:
            continue
        path = violation.path if violation.code.endswith(".unknown-property") else None
        if path and path in policy.parameter_terms and violation.shape in _CARRIERS:
            continue  # a task parameter the profile declares, where it may stand
        if path and (term_for(path) in policy.ignorable_terms or path in policy.ignorable_terms):
            yield finding("jsonld.ignored-term",
                          f"{term_for(path)} is not a baseline property; the "
                          "profile lets it be ignored as a descriptive term",
                          violation.pointer, severity=Severity.WARNING)
            continue
        yield finding(violation.code, violation.message, violation.pointer,
                      section=violation.section)


# The nodes that carry a profile's declared task parameters: the task context and a
# capability registration (docs/parameters.md).
_CARRIERS = frozenset({"https://ioa-semantic.org/ns/shapes#ContextShape",
                       "https://ioa-semantic.org/ns/shapes#RegistrationShape"})


# Reviews of whole documents' contexts by (policy, context), for documents whose one context
# is the top-level one: a malformed registration in an audit repeats its sender's context,
# and reviewing it again was a quarter of reporting it.
_REVIEWS: BoundedCache[tuple[ContextPolicy, bytes], ContextReview] = BoundedCache(64 << 20)


def _weight(serialized: bytes) -> int:
    """What a cached review is counted as weighing: its text and what is derived from it (a
    few times the text: the sender's terms and the findings)."""
    return 4 * len(serialized) + 1024


def review_cache_bytes(max_bytes: int | None = None) -> int:
    """Set the byte bound of the process-wide cache of context reviews (when given; 64 MiB by
    default) and return it."""
    if max_bytes is not None:
        _REVIEWS.resize(max_bytes)
    return _REVIEWS.max_bytes


def over_limits(document: dict[str, Any], limits: Limits, size: int) -> tuple[Finding, ...]:
    """What a document asks beyond the limits of the work it may cost (refused before any
    stage that is superlinear in it runs). ``size`` is the text's length (a text too short
    to hold that many values is not walked for them)."""
    return value_findings(document, limits, size) or context_limit_findings(
        document, limits.max_contexts, limits.max_terms)


def _reviewed(document: dict[str, Any], policy: ContextPolicy,
              retriever: ContextLoader | None) -> ContextReview:
    """:func:`review_contexts` of ``document``, remembered when its top-level context is its
    only one (then the review is that context's alone, at ``/@context``)."""
    if retriever is not None or "@context" not in document or not _one_context(document):
        return review_contexts(document, policy, retriever)
    serialized = serialized_context(document["@context"])
    if serialized is None:
        return review_contexts(document, policy, retriever)
    key = (policy, serialized)
    review = _REVIEWS.get(key)
    if review is None:
        review = review_contexts(document, policy)
        _REVIEWS.put(key, review, _weight(serialized))
    return review


def _one_context(document: dict[str, Any]) -> bool:
    """Whether no object of the parsed document but the top one has an ``@context`` member
    (however the text spelled its name), the top context's own value aside."""
    stack = [value for key, value in document.items() if key != "@context"]
    while stack:
        value = stack.pop()
        if type(value) is dict:
            if "@context" in value:
                return False
            stack.extend(value.values())
        elif type(value) is list:
            stack.extend(value)
    return True


def serialized_context(context: Any) -> bytes | None:
    """A context as the caches of contexts key it (the reviews here, the compiled engine's
    active contexts), or None (not JSON data): a serialization is an exact key of parsed
    JSON (member order included: a reordered context is only a miss). orjson's is the
    cheapest, once something loaded it (a key only finds what was put under a key of the
    same writer: a process that loads orjson midway misses once a context, no more)."""
    orjson = orjson_if_loaded()
    try:
        return orjson.dumps(context) if orjson is not None else json.dumps(
            context, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    except (ValueError, TypeError, RecursionError):  # orjson's JSONEncodeError is a TypeError
        return None


def extra_types(located: Sequence[Located], kind: Kind,
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


def ambiguous_bindings(located: Sequence[Located], terms: SenderTerms) -> list[Finding]:
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


