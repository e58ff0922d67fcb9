"""Contexts: every ``@context`` of a document held to the baseline before anything expands.

The 6.1 context is the receiver's: a sender may define only the terms it uses, and each
definition must equal the baseline's (contract rule 2). This stage checks every context in
the document against that policy, refuses remote contexts and ``@import`` unless a
retrieval policy allows them (rule 12; with one, what is fetched is held to the same
rules), and counts contexts and term definitions against their limits.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple, Protocol

from .. import data as _resources
from .._codes import finding
from .._exceptions import RetrievalError
from .._findings import Finding
from .._iri import iri_defect
from .._iri import iri_scheme as _rfc3987_scheme
from .._memo import BoundedCache


class ContextLoader(Protocol):
    """What fetches a remote context under a retrieval policy (a
    :class:`~ioa_semantic.sources.retrieval.Retriever`): pyld's document-loader form, raising
    :class:`~ioa_semantic.RetrievalError` when the policy or the network refuses."""

    def document_loader(self, url: str, options: Any = None) -> dict[str, Any]: ...


_KEYWORDS = frozenset({
    "@base", "@container", "@context", "@direction", "@graph", "@id", "@import", "@included",
    "@index", "@json", "@language", "@list", "@nest", "@none", "@prefix", "@propagate",
    "@protected", "@reverse", "@set", "@type", "@value", "@version", "@vocab",
})


# A document base no reference can legitimately resolve against (RFC 6761 .invalid).
NO_BASE = "https://no-document-base.invalid/"


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")


# Keys a term definition may carry without leaving what the baseline itself uses.
_SIMPLE_DEFINITION_KEYS = frozenset({"@id", "@type", "@container", "@protected", "@language"})


def baseline_context() -> dict[str, Any]:
    """The 6.1 inline context (the object under ``@context``)."""
    context: dict[str, Any] = _resources.read_json("contexts", "baseline.jsonld")["@context"]
    return context


def baseline_definition(term: str) -> str | dict[str, str] | None:
    """The baseline's definition of ``term`` with its IRIs written in full, which means the
    same in any context a sender writes (whatever prefixes it binds); None for a term the
    baseline does not define."""
    definition = _baseline().definitions.get(term)
    if definition is None or definition.iri is None:
        return None
    if definition.type is None:
        return definition.iri
    return {"@id": definition.iri, "@type": definition.type}


class Definition(NamedTuple):
    """A term definition reduced to what decides its meaning: IRI, coercion, container."""

    iri: str | None
    type: str | None = None
    container: str | None = None


class Resolved(NamedTuple):
    """What the judgement of one term definition reads of its context's prefixes: each
    string of the definition that names an IRI, expanded through them (None where the
    definition has no such string). A definition is judged from its term, its value and
    this alone, so that (term, value, Resolved) decides the judgement and may key a memo
    of it: two contexts that give a definition's strings the same expansions give it the
    same judgement, whatever the prefixes are called and wherever the definition stands."""

    value: str | None = None  # the definition, when it is a string
    id: str | None = None  # its @id, when a string
    type: str | None = None  # its @type, when a string
    own: str | None = None  # the term's own spelling (an object without @id maps the term to it)
    alone: str | None = None  # the term's own spelling by the other prefixes (a term spelled as an IRI)


def _resolved(key: str, value: Any, prefixes: Mapping[str, str]) -> Resolved:
    """The :class:`Resolved` strings of the definition ``key: value`` under ``prefixes``."""
    # A term spelled as an IRI or a compact IRI must expand to itself without its own
    # definition (JSON-LD 1.1, 4.2.2 step 14.2.4).
    alone = _resolve(key, {k: v for k, v in prefixes.items() if k != key}) if (
        ":" in key[1:-1] or "/" in key) else None
    # Built as a tuple (tuple.__new__): this runs for every definition of every context met.
    if isinstance(value, str):
        return _new_resolved(Resolved, (_resolve(value, prefixes), None, None, None, alone))
    if isinstance(value, dict):
        ident, coercion = value.get("@id"), value.get("@type")
        return _new_resolved(Resolved, (
            None,
            _resolve(ident, prefixes) if isinstance(ident, str) else None,
            _resolve(coercion, prefixes) if isinstance(coercion, str) else None,
            _resolve(key, prefixes) if "@id" not in value else None,
            alone))
    return _new_resolved(Resolved, (None, None, None, None, alone))


_new_resolved = tuple.__new__


def _as_definition(value: Any, prefixes: Mapping[str, str]) -> Definition | None:
    return _definition(value, _resolved("", value, prefixes))


def _definition(value: Any, strings: Resolved) -> Definition | None:
    if isinstance(value, str):
        return Definition(strings.value)
    if isinstance(value, dict):
        container = value.get("@container")
        if isinstance(container, list) and len(container) == 1:
            container = container[0]
        iri = value.get("@id")
        return Definition(
            strings.id if isinstance(iri, str) else None,
            value.get("@type"),
            container if isinstance(container, str) else None,
        )
    return None


def _resolve(value: str, prefixes: Mapping[str, str]) -> str:
    """A compact IRI expanded through the context's prefixes, a chain of them included (as
    many steps as there are prefixes: a cycle stops there, and pyld reports it)."""
    for _ in range(len(prefixes) + 1):
        prefix, sep, suffix = value.partition(":")
        if not sep or suffix.startswith("//") or prefix not in prefixes:
            break
        expanded = prefixes[prefix] + suffix
        if expanded == value:
            break
        value = expanded
    return value


def _same_meaning(sent: Definition, baseline: Definition) -> bool:
    # "@set" only shapes compaction: expansion gives the same set with or without it.
    def container(c: "str | None") -> "str | None":
        return None if c == "@set" else c

    return (sent.iri, sent.type, container(sent.container)) == (
        baseline.iri, baseline.type, container(baseline.container))


class ContextPolicy(NamedTuple):
    """What a sender's contexts may do, from the receiver's profile."""

    allow_vocab: bool = False
    allow_base: bool = False
    allowed_schemes: frozenset[str] = frozenset({"https", "http", "urn"})
    ignorable_terms: frozenset[str] = frozenset()
    # The properties that carry the profile's own declared task parameters: a
    # profileContext and a capability registration may hold them (docs/parameters.md).
    parameter_terms: frozenset[str] = frozenset()


class SenderTerms:
    """The sender's term map, used only to point findings at the member they concern."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[str, str | None] | None = None) -> None:
        self.terms: dict[str, str | None] = terms if terms is not None else {}

    def resolve(self, key: str) -> str | None:
        if key in self.terms:
            return self.terms[key]
        prefix, sep, suffix = key.partition(":")
        if sep and prefix in self.terms and self.terms[prefix] and not suffix.startswith("//"):
            return f"{self.terms[prefix]}{suffix}"
        return key if _SCHEME.match(key) else None


class ContextReview(NamedTuple):
    findings: tuple[Finding, ...]
    terms: SenderTerms
    expandable: bool


class _Baseline:
    """The baseline definitions, resolved once."""

    def __init__(self) -> None:
        context = baseline_context()
        self.prefixes = {k: v for k, v in context.items()
                         if isinstance(v, str) and not k.startswith("@") and v.endswith(("#", "/"))}
        self.definitions = {
            k: d for k, v in context.items() if not k.startswith("@")
            if (d := _as_definition(v, self.prefixes)) is not None
        }
        self.iri_to_term = {d.iri: k for k, d in self.definitions.items() if d.iri}


_BASELINE: _Baseline | None = None


def _baseline() -> _Baseline:
    global _BASELINE
    if _BASELINE is None:
        _BASELINE = _Baseline()
    return _BASELINE


def term_for(iri: str) -> str:
    """The baseline term that spells ``iri`` in compact form (or the IRI itself)."""
    return _baseline().iri_to_term.get(iri, iri)


# Members whose values are not node data: contexts are reviewed on their own, and a value
# object's content is a literal.
_OPAQUE = frozenset({"@context", "@value", "@json"})


def members(document: Any,
            prune: Callable[[str], bool] = lambda key: False) -> Iterator[tuple[str, str, Any]]:
    """``(pointer, key, value)`` of every object member of a compact document.

    Iterative, so depth costs no recursion. A member is not entered when it is opaque or
    when ``prune(key)`` says so (a member already reported as a whole).
    """
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        pointer, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                at = f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"
                yield at, key, item
                if key not in _OPAQUE and not prune(key):
                    stack.append((at, item))
        elif isinstance(value, list):
            stack.extend((f"{pointer}/{i}", item) for i, item in enumerate(value))


def _contexts(document: Any) -> Iterator[tuple[str, Any]]:
    """Every ``@context`` member in the document with its JSON Pointer."""
    return ((at, value) for at, key, value in members(document) if key == "@context")


def context_limit_findings(document: Any, max_contexts: int,
                           max_terms: int) -> tuple[Finding, ...]:
    """The finding of a document with more context objects (a string naming a remote
    context counts as one) or term definitions than the limits allow, or whose terms expand
    to IRIs longer than :data:`MAX_TERM_IRI`, or none: pyld's work grows with their
    product, and a term defined through another (``"p2": "p1:x/"``) grows with the chain,
    so they are counted before any context is reviewed or expanded."""
    contexts = terms = 0
    for pointer, value in _contexts(document):
        items = value if isinstance(value, list) else (value,)
        for item in items:
            contexts += 1
            if isinstance(item, dict):
                terms += sum(1 for key in item if not key.startswith("@"))
            if contexts > max_contexts:
                return (finding("jsonld.too-many-contexts",
                                f"the document has more than {max_contexts} context objects; "
                                "the limit is --max-contexts", pointer),)
            if terms > max_terms:
                return (finding("jsonld.too-many-terms",
                                f"the document's contexts define more than {max_terms} terms; "
                                "the limit is --max-terms", pointer),)
        longest = longest_term_iri(items)
        if longest is not None:
            return (finding("jsonld.term-iri-too-long",
                            f"the term {longest!r} expands to an IRI of more than "
                            f"{MAX_TERM_IRI:,} characters through the context's other terms; "
                            "the limit of a term's IRI is fixed", pointer),)
    return ()


def _definition_strings(objects: Iterable[Any]) -> dict[str, str]:
    """Each term of the context ``objects`` with the string that defines its IRI (the
    definition, or its ``@id``), the last definition of a term counting."""
    values: dict[str, str] = {}
    for obj in objects:
        if isinstance(obj, dict):
            for key, value in obj.items():
                if isinstance(value, dict):
                    value = value.get("@id")
                if isinstance(key, str) and not key.startswith("@") and isinstance(value, str):
                    values[key] = value
    return values


# The longest IRI a term or prefix may expand to. Longer ones come from terms defined
# through one another in a chain (each IRI holding all the earlier ones, so that a context
# within every other limit expands to gigabytes) or from one huge prefix that every compact
# reference would copy.
MAX_TERM_IRI = 8192


def longest_term_iri(objects: Iterable[Any]) -> str | None:
    """A term of the context ``objects`` whose IRI, expanded through the context's other
    terms, is longer than :data:`MAX_TERM_IRI`, or None; lengths are added up, no IRI is
    built (a chain of a thousand terms is a thousand steps)."""
    # A term's IRI is at most its chain's definitions together, each term once on it: a
    # context whose definitions are short together (every context met in practice) has
    # no term to find.
    values = _definition_strings(objects)
    if sum(map(len, values.values())) <= MAX_TERM_IRI:
        return None
    lengths: dict[str, int] = {}
    for term in values:
        chain: list[str] = []
        on_chain: set[str] = set()
        here = term
        while here not in lengths:
            prefix, sep, suffix = values[here].partition(":")
            if (sep and not suffix.startswith("//") and prefix in values
                    and prefix not in on_chain and prefix != here):
                chain.append(here)
                on_chain.add(here)
                here = prefix
            else:
                lengths[here] = len(values[here])
        for link in reversed(chain):
            prefix, _, suffix = values[link].partition(":")
            lengths[link] = lengths[prefix] + len(suffix)
        for link in (*chain, here):
            if lengths[link] > MAX_TERM_IRI:
                return link
    return None


def review_contexts(document: dict[str, Any], policy: ContextPolicy,  # noqa: C901
                    retriever: ContextLoader | None = None) -> ContextReview:
    """Hold every ``@context`` in ``document`` to the baseline and the policy (rule 2, 12).

    Without a retriever a remote context is a prohibited retrieval. With one, it is fetched
    under the retriever's policy (which also follows what it names) and its content is held
    to the same rules as an inline context: a remote context cannot say what an inline one
    may not. Findings inside a remote context point at ``URL#/@context/...``.
    """
    baseline = _baseline()
    findings: list[Finding] = []
    # Only what the sender defines: a baseline term it uses without defining is dropped.
    terms = SenderTerms()
    expandable = True
    objects: list[tuple[str, dict[str, Any]]] = []

    def fetch(pointer: str, reference: str, base: "str | None", what: str) -> Any:
        """The context a remote reference names, or None after recording why not."""
        nonlocal expandable
        if retriever is None:
            expandable = False
            findings.append(finding(
                "retrieval.prohibited",
                f"{what} {reference!r} is not retrieved: remote retrieval is off by policy",
                pointer, subject=reference if iri_scheme(reference) else None))
            return None
        from pyld import iri_resolver

        url = iri_resolver.resolve(reference, base) if base else reference
        if iri_scheme(url) is None:
            expandable = False
            findings.append(finding(
                "jsonld.relative-iri",
                f"{what} {reference!r} is relative and there is no document base", pointer))
            return None
        try:
            loaded = retriever.document_loader(url)
        except RetrievalError as exc:
            expandable = False
            findings.append(finding(exc.code, exc.message, pointer, subject=exc.url or url))
            return None
        remote = loaded["document"]
        if not isinstance(remote, dict) or "@context" not in remote:
            expandable = False
            findings.append(finding("jsonld.context-invalid",
                                    f"{what} {url} is not a JSON-LD context document", pointer))
            return None
        return loaded["documentUrl"], remote["@context"]

    def visit(pointer: str, value: Any, base: "str | None" = None) -> None:
        nonlocal expandable
        if isinstance(value, str):
            fetched = fetch(pointer, value, base, "remote context")
            if fetched is not None:
                url, content = fetched
                visit(f"{url}#/@context", content, url)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                visit(f"{pointer}/{i}", item, base)
        elif isinstance(value, dict):
            objects.append((pointer, value))
            imported = value.get("@import")
            if isinstance(imported, str) and retriever is not None:
                fetched = fetch(f"{pointer}/@import", imported, base, "@import of")
                if fetched is not None:
                    url, content = fetched
                    if isinstance(content, dict):
                        visit(f"{url}#/@context", content, url)
                    else:
                        expandable = False
                        findings.append(finding("jsonld.context-invalid",
                                                f"@import of {url} is not a context object",
                                                f"{pointer}/@import"))
        else:
            expandable = False
            what = "null, which would clear the baseline" if value is None else repr(value)
            findings.append(finding("jsonld.context-invalid", f"@context is {what}", pointer))

    for pointer, value in _contexts(document):
        visit(pointer, value)

    prefixes = _prefixes([obj for _, obj in objects], baseline)
    for pointer, obj in objects:
        for key, value in obj.items():
            if key == "@import" and retriever is not None:
                continue  # fetched and reviewed above
            if key.startswith("@"):
                problem = _review_keyword(key, value, policy)
            else:
                problem, iri = _judged(key, value, prefixes, baseline)
                if problem is None:
                    terms.terms[key] = iri
            if problem is None:
                continue
            code, message = problem
            subject = None
            if code == "retrieval.prohibited":
                expandable = False
                subject = value if isinstance(value, str) and iri_scheme(value) else None
            findings.append(finding(
                code, message, f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}",
                subject=subject))
    return ContextReview(tuple(findings), terms, expandable)


def _prefixes(objects: list[dict[str, Any]], baseline: _Baseline) -> dict[str, str]:
    """What a context's strings are expanded by: the baseline's prefixes, then every term
    the context defines as a string (the first definition of a name counts). Collected
    before any definition is judged, so that a definition may use a prefix defined after
    it."""
    prefixes = dict(baseline.prefixes)
    for obj in objects:
        for key, value in obj.items():
            if not key.startswith("@") and isinstance(value, str) and not value.startswith("@"):
                prefixes.setdefault(key, value)
    return prefixes


def inline_context_clean(context: Any, policy: ContextPolicy) -> bool | None:
    """Whether :func:`review_contexts` finds nothing in ``{"@context": context}`` and can
    expand it, told from its members' judgements alone; None for a context that is not
    one object or an array of objects (review it whole).

    Such a context holds no remote reference and nothing :func:`review_contexts` reports
    but its members' problems (the pointers and the sender's terms are what this leaves
    out), so it is clean exactly when no member has one; the tests hold the two together.
    """
    if type(context) is dict:
        objects = [context]
    elif type(context) is list and all(type(obj) is dict for obj in context):
        objects = context
    else:
        return None
    baseline = _baseline()
    prefixes = _prefixes(objects, baseline)
    for obj in objects:
        for key, value in obj.items():
            if key.startswith("@"):
                if _review_keyword(key, value, policy) is not None:
                    return False
            elif _judged(key, value, prefixes, baseline)[0] is not None:
                return False
    return True


# A definition's judgement: the problem with it or None, and the IRI it gives its term.
Judgement = tuple[tuple[str, str] | None, str | None]


# Judgements of term definitions by (term, the value as written, Resolved): the same
# definitions recur in thousands of senders' contexts under other prefix names and in
# another order, and what a new sender's context costs is then the judgement of its new
# definitions only. The key holds everything _review_definition is given (the baseline is
# the package's own, read once), so a remembered judgement is the one it would give. The
# policy is no part of it: a term definition's judgement does not read it (keyword members
# do, and they are judged every time), and _review_definition is not given it; a judgement
# that came to read the policy would have to be given it, and keyed by it here.
_DEFINITIONS: BoundedCache[tuple[Any, ...], Judgement] = BoundedCache(16 << 20)


def definition_cache_bytes(max_bytes: int | None = None) -> int:
    """Set the byte bound of the process-wide memo of term definitions' judgements (when
    given; 16 MiB by default) and return it."""
    if max_bytes is not None:
        _DEFINITIONS.resize(max_bytes)
    return _DEFINITIONS.max_bytes


def _judged(key: str, value: Any, prefixes: Mapping[str, str], baseline: _Baseline) -> Judgement:
    """The judgement of the term definition ``key: value`` in a context of ``prefixes``
    (``key`` not a keyword): remembered by what decides it."""
    strings = _resolved(key, value, prefixes)
    written = _written(value)
    if written is None or type(key) is not str:
        return _review_definition(key, value, strings, baseline)
    # A flat tuple of strings (and of tuples of strings) that the cyclic collector stops
    # following once it has seen it: a Resolved (a tuple subclass) or a policy (frozensets)
    # in it would keep every remembered key tracked, and each full collection walking them.
    memo_key = (key, written, *strings)
    judgement = _DEFINITIONS.get(memo_key)
    if judgement is None:
        judgement = _review_definition(key, value, strings, baseline)
        _DEFINITIONS.put(memo_key, judgement, _judgement_weight(key, written, strings, judgement))
    return judgement


def _judgement_weight(key: str, written: Any, strings: Resolved, judgement: Judgement) -> int:
    """What a remembered judgement is counted as weighing: the strings of its key and of
    the judgement, and a few hundred bytes for the tuples and the cache's bookkeeping."""
    if type(written) is str:
        size = len(written)
    elif written is _AN_IRI:
        size = 0
    elif written[:1] == ("json",):
        size = len(written[1])
    else:
        size = sum(len(k) + (len(v) if type(v) is str else 0) for k, v in written)
    problem, iri = judgement
    return (512 + size + len(key) + sum(len(s) for s in strings if s)
            + (len(problem[1]) if problem else 0) + len(iri or ""))


# Stands in a memo key for a string of a definition that names an IRI (the definition
# itself, or its @id, not starting with "@"): its judgement reads nothing of that string but
# its expansion, which the key holds (Resolved), so that "sem:inputs" and "ioa:inputs" are
# one definition wherever the two prefixes mean one IRI.
# Typed as a tuple of any length, which is always one object: mypyc holds a tuple of fixed
# length unboxed and boxes it anew where it is read, so `is _AN_IRI` would never hold.
_AN_IRI: tuple[str, ...] = ("an IRI",)


def _written(value: Any) -> Any:
    """A definition's value as a memo key, equal only for values the judgement cannot tell
    apart (with their Resolved strings), or None.

    A string naming an IRI, or an object's @id naming one, is _AN_IRI; a keyword alias is
    itself (its message quotes it); an object of string members is its members in order
    (the common definition); anything else is its JSON text (``1``, ``1.0`` and ``true`` are
    equal in Python, never in JSON). Only values made of JSON's own types are keyed:
    anything else is judged afresh every time.
    """
    if type(value) is str:
        return value if value.startswith("@") else _AN_IRI
    if type(value) is dict:
        members = []
        for k, v in value.items():
            if type(k) is not str or type(v) is not str:
                break
            members.append((k, _AN_IRI) if k == "@id" and not v.startswith("@") else (k, v))
        else:
            return tuple(members)
    if not _plain_json(value):
        return None
    try:
        return ("json", json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    except (ValueError, TypeError, RecursionError):
        return None


def _plain_json(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is made of JSON's own types (no subclass, no other type)."""
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return True
    if depth > 64:
        return False
    if kind is list:
        return all(_plain_json(item, depth + 1) for item in value)
    if kind is dict:
        return all(type(k) is str and _plain_json(v, depth + 1) for k, v in value.items())
    return False


def _review_keyword(key: str, value: Any, policy: ContextPolicy) -> tuple[str, str] | None:
    """The problem with a keyword member of a sender's context, or None."""
    if key == "@version":
        return None if value == 1.1 else ("jsonld.context-invalid", "@version must be 1.1")
    if key == "@protected":
        if value is True:
            return None
        # The 6.1 baseline is protected; a sender does not unprotect definitions (and pyld
        # 3.3 fails on any "@protected": false with a misleading cyclic-mapping error).
        return ("jsonld.context-keyword",
                "@protected may only be true in a sender's context: the baseline's terms stay "
                "protected") if value is False else (
            "jsonld.context-invalid", "@protected must be true or false")
    if key == "@import":
        return ("retrieval.prohibited",
                f"@import of {value!r} is a remote retrieval, which is off by policy")
    if key in ("@vocab", "@base"):
        allowed = policy.allow_vocab if key == "@vocab" else policy.allow_base
        return None if allowed else (
            "jsonld.context-keyword",
            f"{key} is not allowed by the profile: it hides dropped terms or makes relative "
            "references absolute")
    return ("jsonld.context-keyword", f"{key} in a sender's context is not allowed")


def _review_definition(key: str, value: Any, strings: Resolved, baseline: _Baseline) -> Judgement:
    """The judgement of the term definition ``key: value`` (a term, not a keyword), whose
    strings expand as ``strings`` say, against the baseline. It reads nothing else: what it
    is given keys it (see _DEFINITIONS)."""
    problem = _definition_problem(key, value, strings, baseline)
    if problem is not None:
        return problem, None
    definition = _definition(value, strings)
    return None, definition.iri if definition else None


def _definition_problem(key: str, value: Any, strings: Resolved,
                        baseline: _Baseline) -> tuple[str, str] | None:
    if key in baseline.definitions:
        sent = _definition(value, strings)
        if sent is None or not _same_meaning(sent, baseline.definitions[key]):
            return ("jsonld.term-redefinition",
                    f"{key!r} is defined differently from the baseline 6.1 context")
        if isinstance(value, dict) and set(value) - _SIMPLE_DEFINITION_KEYS:
            return ("jsonld.term-redefinition",
                    f"{key!r} carries {sorted(set(value) - _SIMPLE_DEFINITION_KEYS)}, "
                    "which the baseline definition does not")
        if key in baseline.prefixes and isinstance(value, dict):
            # JSON-LD 1.1 uses a term as a prefix only when its definition is a string (or
            # says "@prefix": true, refused above): the baseline's prefix written as
            # {"@id": ...} names the same IRI but leaves every compact IRI through it
            # unexpanded, another meaning of the document (rule 2).
            return ("jsonld.term-redefinition",
                    f"{key!r} is a prefix of the baseline 6.1 context; as an expanded term "
                    f"definition it is no prefix in JSON-LD 1.1, and {key}:... would not "
                    "expand")
        return None
    if value is None:
        return None
    if isinstance(value, str):
        if value.startswith("@"):
            return ("jsonld.keyword-alias",
                    f"{key!r} aliases {value}; @id and @type are used directly (6.1)")
        assert strings.value is not None  # resolved for every string definition
        return _iri_mapping_problem(key, strings.value, strings)
    if isinstance(value, dict):
        ident = value.get("@id")
        if isinstance(ident, str) and ident.startswith("@"):
            return ("jsonld.keyword-alias",
                    f"{key!r} aliases {value['@id']}; @id and @type are used directly (6.1)")
        extra = set(value) - _SIMPLE_DEFINITION_KEYS
        if extra:
            return ("jsonld.term-definition",
                    f"the definition of {key!r} uses {sorted(extra)}, which envelopes may not use")
        problem = _definition_members_problem(key, value, strings)
        if problem is not None:
            return problem
        if ident is None and "@id" in value:
            return None  # "@id": null keeps the term from expanding: its members are dropped
        # Without @id, the term's own spelling is its IRI (JSON-LD 1.1, 4.2.2 step 14-16).
        iri = strings.own if ident is None else strings.id
        assert iri is not None  # resolved for an object without @id, and for a string @id
        return _iri_mapping_problem(key, iri, strings)
    return ("jsonld.context-invalid", f"the definition of {key!r} is not a string or an object")


_COERCIONS = frozenset({"@id", "@vocab", "@json", "@none"})


def _definition_members_problem(key: str, value: dict[str, Any],
                                strings: Resolved) -> tuple[str, str] | None:
    """What JSON-LD 1.1 (4.2.2, Create Term Definition) rejects in an expanded definition's
    members, said before pyld meets it (pyld fails on some of these with a TypeError)."""
    ident = value.get("@id")
    if ident is not None and not isinstance(ident, str):
        return ("jsonld.term-definition",
                f"the @id of {key!r} is {json_kind(ident)}; JSON-LD requires a string "
                "(an invalid IRI mapping)")
    if "@type" in value:
        coercion = value["@type"]
        if not isinstance(coercion, str) or (  # a string @type is resolved (strings.type)
                coercion not in _COERCIONS and iri_defect(strings.type or "")):
            return ("jsonld.term-definition",
                    f"the @type of {key!r} is {coercion!r}: JSON-LD requires @id, @vocab, "
                    "@json, @none or an absolute IRI (an invalid type mapping)")
    if "@protected" in value and not isinstance(value["@protected"], bool):
        return ("jsonld.term-definition",
                f"the @protected of {key!r} is {json_kind(value['@protected'])}, not a boolean")
    if "@language" in value and not (value["@language"] is None
                                     or isinstance(value["@language"], str)):
        return ("jsonld.term-definition",
                f"the @language of {key!r} is {json_kind(value['@language'])}, not a string")
    container = value.get("@container")
    if container not in (None, "@set", "@list", ["@set"], ["@list"]):
        return ("jsonld.term-definition",
                f"the definition of {key!r} uses container {container!r}")
    return None


def _iri_mapping_problem(key: str, iri: str, strings: Resolved) -> tuple[str, str] | None:
    """Whether a term's IRI (expanded) is an absolute IRI (RFC 3987), and a term spelled as
    an IRI or a compact IRI expands to itself (JSON-LD 1.1, 4.2.2 step 14.2.4: anything else
    is an invalid IRI mapping, which some processors apply nonetheless)."""
    if iri.startswith("_:"):
        return ("jsonld.term-definition",
                f"{key!r} is mapped to the blank node identifier {iri!r}; a term names an IRI")
    defect = iri_defect(iri)
    if defect is not None:
        return ("jsonld.invalid-iri",
                f"the IRI of {key!r}, {iri!r}, is not an absolute IRI (RFC 3987): "
                f"{defect.describe()}")
    if ":" in key[1:-1] or "/" in key:
        own = strings.alone
        if own != iri:
            return ("jsonld.term-definition",
                    f"{key!r} has the form of an IRI or a compact IRI, which must expand to "
                    f"itself ({own}), but the context maps it to {iri}")
    return None


def json_kind(value: Any) -> str:
    """What JSON type a value has, as a message says it (\"an empty array\", \"a number\")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an empty array" if not value else "an array"
    return "an empty object" if not value else "an object"


def iri_scheme(iri: str) -> str | None:
    """The scheme of an absolute IRI (lower case, RFC 3987), or None for anything else: a
    relative reference (one resolved against the reserved base is still one), a blank node,
    or a string RFC 3987 does not call an IRI."""
    if iri.startswith(NO_BASE):
        return None
    return _rfc3987_scheme(iri)
