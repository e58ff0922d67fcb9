"""Expansion: the sender's JSON-LD contexts are held to the baseline, then expanded by pyld.

The 6.1 context is the receiver's: a sender may define only the terms it uses, and each
definition must equal the baseline's (contract rule 2). This stage checks every ``@context``
in the document against that policy before anything is expanded, refuses remote contexts
and ``@import`` (retrieval is off; rule 12), expands with no document base so that a
relative reference stays relative (rule 1), reports every member that expansion drops
(rule 3), and checks that every IRI in the result is absolute and of an allowed scheme.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ..sources.retrieval import Retriever

from .. import data as _resources
from .._codes import finding
from .._exceptions import IoaSemanticError
from .._findings import Finding, Severity
from .._iri import iri_defect
from .._iri import iri_scheme as _rfc3987_scheme

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


class Definition(NamedTuple):
    """A term definition reduced to what decides its meaning: IRI, coercion, container."""

    iri: str | None
    type: str | None = None
    container: str | None = None


def _as_definition(value: Any, prefixes: Mapping[str, str]) -> Definition | None:
    if isinstance(value, str):
        return Definition(_resolve(value, prefixes))
    if isinstance(value, dict):
        container = value.get("@container")
        if isinstance(container, list) and len(container) == 1:
            container = container[0]
        iri = value.get("@id")
        return Definition(
            _resolve(iri, prefixes) if isinstance(iri, str) else None,
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
    context counts as one) or term definitions than the limits allow, or none: pyld's work
    grows with their product, so they are counted before any context is reviewed."""
    contexts = terms = 0
    for pointer, value in _contexts(document):
        for item in value if isinstance(value, list) else (value,):
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
    return ()


def review_contexts(document: dict[str, Any], policy: ContextPolicy,  # noqa: C901
                    retriever: "Retriever | None" = None) -> ContextReview:
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
                pointer))
            return None
        from pyld import iri_resolver

        url = iri_resolver.resolve(reference, base) if base else reference
        if iri_scheme(url) is None:
            expandable = False
            findings.append(finding(
                "jsonld.relative-iri",
                f"{what} {reference!r} is relative and there is no document base", pointer))
            return None
        from ..sources.retrieval import RetrievalError

        try:
            loaded = retriever.document_loader(url)
        except RetrievalError as exc:
            expandable = False
            findings.append(finding(exc.code, exc.message, pointer))
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

    # Prefixes are collected first so that a definition may use a prefix defined after it.
    prefixes = dict(baseline.prefixes)
    for _, obj in objects:
        for key, value in obj.items():
            if not key.startswith("@") and isinstance(value, str) and not value.startswith("@"):
                prefixes.setdefault(key, value)

    for pointer, obj in objects:
        for key, value in obj.items():
            at = f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"
            if key == "@import" and retriever is not None:
                continue  # fetched and reviewed above
            problem = _review_entry(key, value, prefixes, baseline, policy)
            if problem is None:
                if not key.startswith("@"):
                    definition = _as_definition(value, prefixes)
                    terms.terms[key] = definition.iri if definition else None
                continue
            code, message = problem
            if code == "retrieval.prohibited":
                expandable = False
            findings.append(finding(code, message, at))
    return ContextReview(tuple(findings), terms, expandable)


def _review_entry(  # noqa: C901
    key: str, value: Any, prefixes: Mapping[str, str], baseline: _Baseline, policy: ContextPolicy
) -> tuple[str, str] | None:
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
    if key.startswith("@"):
        return ("jsonld.context-keyword", f"{key} in a sender's context is not allowed")
    if key in baseline.definitions:
        sent = _as_definition(value, prefixes)
        if sent is None or not _same_meaning(sent, baseline.definitions[key]):
            return ("jsonld.term-redefinition",
                    f"{key!r} is defined differently from the baseline 6.1 context")
        if isinstance(value, dict) and set(value) - _SIMPLE_DEFINITION_KEYS:
            return ("jsonld.term-redefinition",
                    f"{key!r} carries {sorted(set(value) - _SIMPLE_DEFINITION_KEYS)}, "
                    "which the baseline definition does not")
        return None
    if value is None:
        return None
    if isinstance(value, str):
        if value.startswith("@"):
            return ("jsonld.keyword-alias",
                    f"{key!r} aliases {value}; @id and @type are used directly (6.1)")
        return _iri_mapping_problem(key, value, prefixes)
    if isinstance(value, dict):
        ident = value.get("@id")
        if isinstance(ident, str) and ident.startswith("@"):
            return ("jsonld.keyword-alias",
                    f"{key!r} aliases {value['@id']}; @id and @type are used directly (6.1)")
        extra = set(value) - _SIMPLE_DEFINITION_KEYS
        if extra:
            return ("jsonld.term-definition",
                    f"the definition of {key!r} uses {sorted(extra)}, which envelopes may not use")
        problem = _definition_members_problem(key, value, prefixes)
        if problem is not None:
            return problem
        if ident is None and "@id" in value:
            return None  # "@id": null keeps the term from expanding: its members are dropped
        # Without @id, the term's own spelling is its IRI (JSON-LD 1.1, 4.2.2 step 14-16).
        return _iri_mapping_problem(key, key if ident is None else ident, prefixes)
    return ("jsonld.context-invalid", f"the definition of {key!r} is not a string or an object")


_COERCIONS = frozenset({"@id", "@vocab", "@json", "@none"})


def _definition_members_problem(key: str, value: dict[str, Any],
                                prefixes: Mapping[str, str]) -> tuple[str, str] | None:
    """What JSON-LD 1.1 (4.2.2, Create Term Definition) rejects in an expanded definition's
    members, said before pyld meets it (pyld fails on some of these with a TypeError)."""
    ident = value.get("@id")
    if ident is not None and not isinstance(ident, str):
        return ("jsonld.term-definition",
                f"the @id of {key!r} is {json_kind(ident)}; JSON-LD requires a string "
                "(an invalid IRI mapping)")
    if "@type" in value:
        coercion = value["@type"]
        if not isinstance(coercion, str) or (
                coercion not in _COERCIONS and iri_defect(_resolve(coercion, prefixes))):
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


def _iri_mapping_problem(key: str, value: str,
                         prefixes: Mapping[str, str]) -> tuple[str, str] | None:
    """Whether a term's IRI is an absolute IRI (RFC 3987), and a term spelled as an IRI or
    a compact IRI expands to itself (JSON-LD 1.1, 4.2.2 step 14.2.4: anything else is an
    invalid IRI mapping, which some processors apply nonetheless)."""
    iri = _resolve(value, prefixes)
    if iri.startswith("_:"):
        return ("jsonld.term-definition",
                f"{key!r} is mapped to the blank node identifier {iri!r}; a term names an IRI")
    defect = iri_defect(iri)
    if defect is not None:
        return ("jsonld.invalid-iri",
                f"the IRI of {key!r}, {iri!r}, is not an absolute IRI (RFC 3987): "
                f"{defect.describe()}")
    if ":" in key[1:-1] or "/" in key:
        own = _resolve(key, {k: v for k, v in prefixes.items() if k != key})
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


class ExpansionError(IoaSemanticError):
    """pyld refused the document; ``code`` is the JSON-LD error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class RemoteLoadRefused(IoaSemanticError):
    """The default document loader: nothing is fetched unless a policy says so."""


def refuse_remote(url: str, options: Any = None) -> Any:
    raise RemoteLoadRefused(f"remote retrieval of {url!r} is off by policy")


class Expansion(NamedTuple):
    nodes: list[Any]
    dropped: tuple[str | None, ...]


def expand(
    document: Any,
    *,
    base: str | None = None,
    expand_context: Any = None,
    document_loader: Callable[[str, Any], Any] | None = None,
    processing_mode: str = "json-ld-1.1",
) -> Expansion:
    """JSON-LD 1.1 expansion with no document base unless one is given.

    pyld would otherwise resolve relative references against a default base and turn
    ``"TechTranslation"`` into an absolute IRI. Every dropped property is recorded.
    """
    from pyld import jsonld

    dropped: list[str | None] = []
    loader = document_loader or refuse_remote
    options: dict[str, Any] = {
        "base": base,
        "documentLoader": loader,
        "processingMode": processing_mode,
        "contextResolver": _context_resolver(loader),
    }
    if expand_context is not None:
        options["expandContext"] = expand_context
    try:
        nodes = jsonld.expand(document, options, on_property_dropped=dropped.append)
    except jsonld.JsonLdError as exc:
        code, message = _describe(exc)
        raise ExpansionError(code, message) from exc
    except RecursionError as exc:
        raise ExpansionError("recursion", "the document nests too deeply to expand") from exc
    except Exception as exc:
        # pyld raises TypeError, IndexError and the like on some input JSON-LD rejects (a
        # term definition's @id that is an object, an @list in a node): what pyld cannot
        # expand is not a JSON-LD document this checker can judge, never a crash.
        raise ExpansionError("invalid input",
                             f"pyld failed on the document ({type(exc).__name__})") from exc
    return Expansion(nodes, tuple(dropped))


# pyld keeps the contexts it resolved in one module-level cache that every thread shares and
# none guards (cachetools is not thread-safe: threads sharing it raised KeyError and
# RuntimeError inside pyld). Each thread gets a cache of its own instead, of a few contexts:
# a context is at most Limits.max_bytes and max_terms, and pyld keeps at most ten processed
# forms of each, so a thread holds at most that many times those bounds.
_PYLD = threading.local()
_PYLD_CONTEXTS = 8


def _context_resolver(document_loader: Callable[..., Any]) -> Any:
    from cachetools import LRUCache
    from pyld.context_resolver import ContextResolver

    cache = getattr(_PYLD, "contexts", None)
    if cache is None:
        cache = _PYLD.contexts = LRUCache(maxsize=_PYLD_CONTEXTS)
    return ContextResolver(cache, document_loader)


def _describe(exc: Any) -> tuple[str, str]:
    # pyld wraps loader and context errors: the outermost JSON-LD code names what failed
    # (W3C error codes); a refused remote load anywhere in the chain is a retrieval.
    code = exc.code or ""
    message = str(exc.args[0]) if exc.args else exc.type
    from pyld import jsonld

    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, jsonld.JsonLdError) and cause.code:
            code = code or cause.code
        if isinstance(cause, RemoteLoadRefused):
            return "loading remote context failed", str(cause)
        cause = cause.__cause__ or (
            cause.details.get("cause") if isinstance(cause, jsonld.JsonLdError)
            and isinstance(cause.details, dict) else None)
    return code or exc.type, message


def expansion_findings(exc: ExpansionError) -> Finding:
    if exc.code in ("loading remote context failed", "loading document failed"):
        from ..sources.retrieval import retrieval_error_in

        cause = retrieval_error_in(exc)
        if cause is not None:
            return finding(cause.code, cause.message, "/@context")
    if exc.code == "protected term redefinition":
        return finding("jsonld.protected-redefinition",
                       f"a protected term is redefined: {exc}", "/@context")
    if exc.code in ("loading remote context failed", "loading document failed"):
        return finding("retrieval.prohibited", str(exc), "/@context")
    return finding("jsonld.expansion-error", f"JSON-LD expansion failed ({exc.code}): {exc}", "")


# Keywords an envelope or registration never needs in a node object: they add nodes or
# graphs beside the one being judged, which the shapes would not see.
_STRUCTURE_KEYWORDS = frozenset({"@graph", "@included", "@reverse", "@nest", "@index"})


# The keywords each kind of object may hold in an envelope or a registration; any other key
# that starts with "@" is dropped by expansion, ignored, or kept where nothing reads it.
_NODE_KEYWORDS = frozenset({"@context", "@id", "@type"})
_VALUE_KEYWORDS = frozenset({"@value", "@type", "@language", "@direction"})


def structure_findings(document: Any) -> list[Finding]:
    """Keys that expansion would turn into other nodes, and every key that starts with "@"
    where the baseline gives it no meaning (rule 3: nothing is dropped silently)."""
    out = []
    for at, key, _, allowed in _keyed_members(document):
        if not key.startswith("@") or key in allowed:
            continue
        if key in _STRUCTURE_KEYWORDS:
            out.append(finding("jsonld.node-structure",
                               f"{key} is not used in envelopes or registrations: it adds "
                               "nodes or graphs beside the one being judged", at))
        elif key in _KEYWORDS:
            out.append(finding("jsonld.misplaced-keyword",
                               f"{key} has no meaning here: expansion would ignore it, or keep "
                               "it where no check reads it", at))
        else:
            out.append(finding("jsonld.dropped-term",
                               f"{key!r} starts with '@' but is no JSON-LD keyword: expansion "
                               "would drop it silently", at))
    return sorted(out, key=lambda f: f.path)


def _keyed_members(document: Any) -> Iterator[tuple[str, str, Any, frozenset[str]]]:
    """``(pointer, key, value, keywords its object may hold)`` of every member outside
    contexts and literals, the object told apart as JSON-LD tells it (a value object holds
    ``@value``, a list object ``@list``, a set object ``@set``; anything else is a node)."""
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        pointer, value = stack.pop()
        if isinstance(value, dict):
            if "@value" in value:
                allowed = _VALUE_KEYWORDS
            elif "@list" in value or "@set" in value:
                allowed = frozenset({"@list", "@set"})
            else:
                allowed = _NODE_KEYWORDS
            for key, item in value.items():
                at = f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"
                yield at, key, item, allowed
                if key not in _OPAQUE and key not in _STRUCTURE_KEYWORDS and (
                        not key.startswith("@") or key in allowed):
                    stack.append((at, item))
        elif isinstance(value, list):
            stack.extend((f"{pointer}/{i}", item) for i, item in enumerate(value))


def dropped_findings(
    document: Any, dropped: Iterable[str | None], terms: SenderTerms, policy: ContextPolicy,
    skip: frozenset[str] = frozenset(),
) -> list[Finding]:
    """Point at each member expansion dropped; ignorable ones are warnings (rule 3)."""
    wanted = set(dropped)
    if not wanted:
        return []

    def is_dropped(key: str) -> bool:
        if key.startswith("@"):
            return False
        # A key spelled as an absolute IRI is kept by expansion; one that only looks like an
        # IRI (a space in it, say) is not one, and is dropped like any unmapped key.
        return (key in wanted and terms.resolve(key) in (None, key) and iri_scheme(key) is None) or (
            None in wanted and key in terms.terms and terms.terms[key] is None)

    out = []
    for at, key, _ in members(document, prune=is_dropped):
        if not is_dropped(key) or at in skip:
            continue
        if key in policy.ignorable_terms:
            out.append(finding("jsonld.ignored-term",
                               f"{key!r} is not mapped by the context; the profile lets it be "
                               "ignored as a descriptive term", at, severity=Severity.WARNING))
        else:
            out.append(finding("jsonld.dropped-term",
                               f"{key!r} is not mapped by the context and would be dropped "
                               "silently by expansion", at))
    return out


def iri_scheme(iri: str) -> str | None:
    """The scheme of an absolute IRI (lower case, RFC 3987), or None for anything else: a
    relative reference (one resolved against the reserved base is still one), a blank node,
    or a string RFC 3987 does not call an IRI."""
    if iri.startswith(NO_BASE):
        return None
    return _rfc3987_scheme(iri)



# --- restricted expansion: the compiled path --------------------------------------------------
#
# Envelopes in the wild use the baseline context, a prefix or two, strings, node objects and
# arrays of them. For exactly that subset the expanded form is simple enough to build in one
# pass; anything else (a nested or remote context, a value object, a list, a number, a
# relative or disallowed reference, a key expansion would drop) makes ``expand_restricted``
# return None and the caller takes pyld. The differential tests hold the two to the same
# output on every input the restricted path accepts.

_GEN_DELIMS = (":", "/", "?", "#", "[", "]", "@")
_DEFINITION_KEYS = frozenset({"@id", "@type", "@container", "@protected"})


class ActiveContext:
    """A sender's context reduced to what the restricted expansion needs.

    ``memo`` remembers expanded references: the same context meets the same IRIs envelope
    after envelope. It is bounded, and a lost race only recomputes an equal value.
    """

    __slots__ = ("coerced", "layouts", "memo", "plans", "prefixes", "terms")

    def __init__(self, terms: Mapping[str, str], coerced: frozenset[str],
                 prefixes: Mapping[str, str]) -> None:
        self.terms = terms
        self.coerced = coerced
        self.prefixes = prefixes
        # By (vocab, schemes): each reference's expansion, or None.
        self.memo: dict[tuple[bool, frozenset[str]], dict[str, str | None]] = {}
        self.plans: dict[tuple[frozenset[str], frozenset[str]], dict[str, Any]] = {}
        self.layouts: dict[tuple[frozenset[str], frozenset[str]], dict[Any, Any]] = {}


def active_context(context: Any) -> ActiveContext | None:  # noqa: C901
    """The active context of an inline context made only of simple definitions, or None."""
    objects = context if isinstance(context, list) else [context]
    raw: dict[str, tuple[str, bool, bool]] = {}  # term -> (value, coerced, simple)
    for obj in objects:
        if not isinstance(obj, dict):
            return None
        for key, value in obj.items():
            if key == "@version" or (key == "@protected" and value is True):
                continue
            if key.startswith("@"):
                return None
            if isinstance(value, str) and not value.startswith("@"):
                entry = (value, False, True)
            elif isinstance(value, dict) and set(value) <= _DEFINITION_KEYS and isinstance(
                    value.get("@id"), str) and value.get("@type") in (None, "@id") and value.get(
                    "@container") in (None, "@set", ["@set"]):
                entry = (value["@id"], value.get("@type") == "@id", False)
            else:
                return None
            if raw.get(key, entry) != entry:
                return None  # defined twice, differently: pyld's rules decide, not ours
            raw[key] = entry
    # A prefix is a simple definition ending in a gen-delim (JSON-LD 1.1's prefix flag)
    # whose own IRI uses no other term: one step expands any compact IRI of this subset.
    prefixes = {}
    for k, (v, _, simple) in raw.items():
        scheme, sep, rest = v.partition(":")
        if simple and sep and v.endswith(_GEN_DELIMS) and (rest.startswith("//")
                                                          or scheme not in raw):
            prefixes[k] = v
    terms: dict[str, str] = {}
    for key, (value, _, _) in raw.items():
        if ":" in key or "/" in key:
            return None  # a term spelled as an IRI: JSON-LD's own rules for it decide
        prefix, sep, suffix = value.partition(":")
        if not sep:
            return None  # a term defined by another term or a relative IRI
        if not suffix.startswith("//") and prefix in raw:
            if prefix not in prefixes:
                return None
            value = prefixes[prefix] + suffix
        if iri_defect(value) is not None:
            return None  # the review reports it
        terms[key] = value
    return ActiveContext(terms, frozenset(k for k, (_, c, _) in raw.items() if c), prefixes)


# What an active context remembers is bounded so that a cached context weighs at most a
# known amount (MEMO_BYTES, which the context caches count it as): references up to
# _MEMO_CHARS long (key and value together; longer ones are expanded every time), at most
# _MEMO_LIMIT of them per memo, and member plans likewise; layouts are planned only for
# names that are short together (_LAYOUT_CHARS), at most _LAYOUT_LIMIT of them.
_MEMO_LIMIT = 128
_MEMO_CHARS = 256
_MISSING = object()


def _restricted_iri(value: str, active: ActiveContext, vocab: bool,
                    schemes: frozenset[str]) -> str | None:
    memo = active.memo.get((vocab, schemes))
    if memo is None:
        memo = active.memo.setdefault((vocab, schemes), {})
    return _memoized(memo, active, vocab, schemes, value)


def reference_expander(active: ActiveContext, vocab: bool,
                       schemes: frozenset[str]) -> Callable[[str], str | None]:
    """:func:`_restricted_iri` under one context, its memo found once: for a caller that
    expands one reference of each of many documents."""
    return partial(_memoized, active.memo.setdefault((vocab, schemes), {}), active, vocab,
                   schemes)


def _memoized(memo: dict[str, str | None], active: ActiveContext, vocab: bool,
              schemes: frozenset[str], value: str) -> str | None:
    found = memo.get(value, _MISSING)
    if found is _MISSING:
        found = _expand_reference(value, active, vocab, schemes)
        if len(memo) < _MEMO_LIMIT and len(value) + len(found or "") <= _MEMO_CHARS:
            memo[value] = found
    return found  # type: ignore[return-value]


def _expand_reference(value: str, active: ActiveContext, vocab: bool,
                      schemes: frozenset[str]) -> str | None:
    if vocab and value in active.terms:
        return active.terms[value]
    if value.startswith(("@", "_:")):
        return None
    prefix, sep, suffix = value.partition(":")
    if not sep:
        return None  # relative: the reference path reports it
    if not suffix.startswith("//"):
        if prefix in active.prefixes:
            value = active.prefixes[prefix] + suffix
        elif prefix in active.terms:
            return None
    # The whole IRI is held to RFC 3987, never its prefix alone: a suffix can hold a space.
    scheme = iri_scheme(value)
    return value if scheme is not None and scheme in schemes else None


# What to do with a member of a node object, decided once per key and context.
_CONTEXT, _ID, _TYPE = "@context", "@id", "@type"


def _member_plan(key: str, active: ActiveContext, schemes: frozenset[str],
                 single_valued: frozenset[str]) -> tuple[str, bool, bool, int] | str | None:
    for keyword in (_CONTEXT, _ID, _TYPE):
        if key == keyword:
            return keyword  # the module's own string, so that callers may test identity
    prop = None if key.startswith("@") else _restricted_iri(key, active, True, schemes)
    if prop is None:
        return None
    return (prop, key in active.coerced, prop in single_valued, key.count(":"))


def expand_restricted(
    document: dict[str, Any], active: ActiveContext, schemes: frozenset[str],
    single_valued: frozenset[str] = frozenset(),
    *,
    ordered: bool = False,
) -> tuple[dict[str, Any], list[tuple[dict[str, Any], dict[str, Any], str]], int,
           list[tuple[dict[str, Any], str | None]]] | None:
    """The expanded top node, ``(node, compact, pointer)`` of every node, the colons
    counted on the way (members and colons in strings, the top ``@context`` left out: see
    :func:`~ioa_semantic.pipeline.intake.read_unproven`), and each expanded node with the property
    that reached it (None: the top node), or None.

    ``single_valued`` are the properties the shapes allow once (sh:maxCount 1): the compact
    form spells those as one value, never an array, and anything else goes the reference way.
    With ``ordered``, members are taken in pyld's order (sorted by name), so that the node
    equals pyld's member for member and in the same order.
    """
    walk = _RestrictedWalk(active, schemes, single_valued, ordered)
    root = walk.node(document, "", None) if ordered else walk.top(document)
    return None if root is None else (root, walk.located, walk.colons, walk.reached)


class _RestrictedWalk:
    """One walk of :func:`expand_restricted`. A class rather than a recursive closure: a
    closure that calls itself is a reference cycle, which kept every node of a check alive
    until the collector found it (a collection every 17 checks, which set the p99)."""

    __slots__ = ("active", "colons", "ids", "layouts", "located", "ordered", "plans", "reached",
                 "schemes", "single_valued")

    def __init__(self, active: ActiveContext, schemes: frozenset[str],
                 single_valued: frozenset[str], ordered: bool) -> None:
        self.active, self.schemes, self.single_valued = active, schemes, single_valued
        self.ordered = ordered
        self.plans = active.plans.setdefault((schemes, single_valued), {})
        self.layouts = active.layouts.setdefault((schemes, single_valued), {})
        self.ids: dict[str, Any] = active.memo.setdefault((False, schemes), {})
        self.located: list[tuple[dict[str, Any], dict[str, Any], str]] = []
        # Each expanded node with the property that reached it (None: the root).
        self.reached: list[tuple[dict[str, Any], str | None]] = []
        self.colons = 0

    def node(self, obj: dict[str, Any], pointer: str, via: str | None) -> dict[str, Any] | None:  # noqa: C901
        active, schemes, single_valued = self.active, self.schemes, self.single_valued
        plans, located, ids = self.plans, self.located, self.ids
        colons = len(obj)
        out: dict[str, Any] = {}
        located.append((out, obj, pointer))
        self.reached.append((out, via))
        for key, value in sorted(obj.items()) if self.ordered else obj.items():
            plan = plans.get(key, _MISSING)
            if plan is _MISSING:
                plan = _member_plan(key, active, schemes, single_valued)
                if len(plans) < _MEMO_LIMIT and len(key) <= _MEMO_CHARS // 2:
                    plans[key] = plan
            if type(plan) is tuple:  # a property: nearly every member
                prop, coerced, single, key_colons = plan
            elif plan is None:
                return None
            elif plan is _CONTEXT:
                if pointer:
                    return None
                continue
            elif plan is _ID:
                ident = (_restricted_iri(value, active, False, schemes) if type(value) is str
                         else None)
                if ident is None:
                    return None
                out["@id"] = ident
                colons += value.count(":")
                continue
            else:  # @type
                names = [value] if type(value) is str else value
                if type(names) is not list or not names:
                    return None
                types = []
                for name in names:
                    iri = (_restricted_iri(name, active, True, schemes) if type(name) is str
                           else None)
                    if iri is None:
                        return None
                    types.append(iri)
                    colons += name.count(":")
                out["@type"] = types
                continue
            colons += key_colons
            if prop in out:
                return None
            is_list = type(value) is list
            if is_list and single:
                return None
            expanded = []  # an empty array stays an empty array, as in pyld
            for index, item in enumerate(value if is_list else (value,)):
                kind = type(item)
                if kind is str:
                    colons += item.count(":")
                    if coerced:
                        iri = ids.get(item, _MISSING)  # _restricted_iri's memo, read in place
                        if iri is _MISSING:
                            iri = _restricted_iri(item, active, False, schemes)
                        if iri is None:
                            return None
                        expanded.append({"@id": iri})
                    else:
                        expanded.append({"@value": item})
                else:
                    child = self.child(item, coerced, key, pointer, index if is_list else None,
                                       prop)
                    if child is None:
                        return None
                    expanded.append(child)
            out[prop] = expanded
        self.colons += colons
        return out

    def child(self, item: Any, coerced: bool, key: str, pointer: str, index: int | None,
              prop: str) -> dict[str, Any] | None:
        """A value of the member ``key`` that is not a string: a node object, expanded, or
        None."""
        if type(item) is not dict or coerced:
            return None
        if len(item) == 1 and _ID in item:
            return None  # a node written as a bare reference: the reference path reports it
        for k in item:
            if k[:1] == "@" and k not in (_ID, _TYPE):
                return None
        token = key.replace("~", "~0").replace("/", "~1")
        return self.node(item, f"{pointer}/{token}" if index is None
                         else f"{pointer}/{token}/{index}", prop)

    def top(self, document: dict[str, Any]) -> dict[str, Any] | None:
        """The top node, walked by the plan of its layout (its member names and the types
        of their values): documents of one sender share a layout, and the plan spends
        nothing on what the layout already decides."""
        if len(document) > _LAYOUT_MEMBERS:
            return self.node(document, "", None)
        layout = (tuple(document), tuple(map(type, document.values())))
        plan = self.layouts.get(layout)
        if plan is None:
            # A layout is planned when it comes back: compiling costs more than a walk,
            # and a one-envelope command meets its one layout once.
            if len(self.layouts) < _LAYOUT_LIMIT and sum(map(len, layout[0])) <= _LAYOUT_CHARS:
                self.layouts[layout] = _once
            return self.node(document, "", None)
        if plan is _once:
            plan = self.layouts[layout] = _layout_plan(*layout, self)
        top: dict[str, Any] | None = plan(document, self)
        return top


# Layouts planned per context, and the members a planned layout may have: past either,
# documents take the general walk.
_LAYOUT_LIMIT = 16
_LAYOUT_MEMBERS = 32
_LAYOUT_CHARS = 512
# What one cached active context may come to weigh beyond its definitions: two memos and the
# plans (each _MEMO_LIMIT entries of at most _MEMO_CHARS characters, a few hundred bytes with
# their overhead) and _LAYOUT_LIMIT planned layouts (their generated code, a few KiB each).
MEMO_BYTES = 3 * _MEMO_LIMIT * (_MEMO_CHARS + 200) + _LAYOUT_LIMIT * (4 << 10)


def _layout_plan(keys: tuple[str, ...], kinds: tuple[type, ...],
                 walk: _RestrictedWalk) -> Callable[[dict[str, Any], _RestrictedWalk], Any]:
    """:meth:`_RestrictedWalk.node` for a top node of one layout, as straight Python source
    (as the conformance functions are): what depends only on the member names and the
    types of their values is decided here, once; strings are expanded where the walk
    expands them; any other value goes to :meth:`_RestrictedWalk.child`, as in the walk.
    The tests hold every plan to the general walk."""
    active, schemes = walk.active, walk.schemes
    names: dict[str, Any] = {
        "MISSING": _MISSING, "RESTRICTED": _restricted_iri, "ACTIVE": active,
        "SCHEMES": schemes, "IDS": walk.ids,
        "VOCAB": active.memo.setdefault((True, schemes), {}),
    }
    lines = ["out = {}", "walk.located.append((out, obj, ''))", "walk.reached.append((out, None))"]
    colons = len(keys)
    props: set[str] = set()
    for i, (key, kind) in enumerate(zip(keys, kinds, strict=True)):
        plan = _member_plan(key, active, schemes, walk.single_valued)
        names[f"K{i}"] = key
        if plan is None:
            return _no_plan
        if plan is _CONTEXT:
            continue
        if plan is _ID or plan is _TYPE:
            memo, vocab = ("IDS", False) if plan is _ID else ("VOCAB", True)
            expand = [f"iri = {memo}.get(v, MISSING)",
                      f"if iri is MISSING: iri = RESTRICTED(v, ACTIVE, {vocab}, SCHEMES)",
                      "if iri is None: return None", "colons += v.count(':')"]
            if kind is str:
                lines += [f"v = obj[K{i}]", *expand,
                          "out['@id'] = iri" if plan is _ID else "out['@type'] = [iri]"]
            elif kind is list and plan is _TYPE:
                lines += ["types = []", f"for v in obj[K{i}]:", "    if type(v) is not str: return None",
                          *(f"    {line}" for line in expand), "    types.append(iri)",
                          "if not types: return None", "out['@type'] = types"]
            else:
                return _no_plan
            continue
        assert isinstance(plan, tuple)  # a property: the keywords are handled above
        prop, coerced, single, key_colons = plan
        if prop in props or (kind is list and single):
            return _no_plan
        props.add(prop)
        colons += key_colons
        names[f"P{i}"], names[f"C{i}"] = prop, coerced
        if coerced:
            value = ["iri = IDS.get(item, MISSING)",
                     "if iri is MISSING: iri = RESTRICTED(item, ACTIVE, False, SCHEMES)",
                     "if iri is None: return None", "values.append({'@id': iri})"]
        else:
            value = ["values.append({'@value': item})"]
        other = (f"child = walk.child(item, C{i}, K{i}, '', "
                 f"{'index' if kind is list else 'None'}, P{i})")
        body = ["if type(item) is str:", "    colons += item.count(':')",
                *(f"    {line}" for line in value), "else:", f"    {other}",
                "    if child is None: return None", "    values.append(child)"]
        if kind is list:
            lines += ["values = []", f"for index, item in enumerate(obj[K{i}]):",
                      *(f"    {line}" for line in body)]
        else:
            lines += ["values = []", f"item = obj[K{i}]", *body]
        lines.append(f"out[P{i}] = values")
    lines = [f"colons = {colons}", *lines, "walk.colons += colons", "return out"]
    source = "def plan(obj, walk):\n" + "".join(f"    {line}\n" for line in lines)
    exec(compile(source, "<walk of a layout>", "exec"), names)
    planned: Callable[[dict[str, Any], _RestrictedWalk], Any] = names["plan"]
    return planned


def _no_plan(obj: dict[str, Any], walk: _RestrictedWalk) -> None:
    """The plan of a layout the restricted walk never expands."""
    return None


def _once(obj: dict[str, Any], walk: _RestrictedWalk) -> None:
    """Marks a layout met once, not planned yet (never called)."""
    raise AssertionError("a layout met once has no plan")
