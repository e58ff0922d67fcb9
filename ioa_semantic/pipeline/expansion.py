"""Expansion: a document whose contexts passed their review, expanded by pyld.

It expands with no document base, so that a relative reference stays relative (rule 1);
reports every member that expansion drops (rule 3) and every keyword a node may not hold;
and maps what pyld raises to findings at this one boundary (a remote context's retrieval
error to its ``retrieval.*`` code, anything else to ``jsonld.expansion-error``).
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from .._codes import finding
from .._exceptions import IoaSemanticError, retrieval_error_in
from .._findings import Finding, Severity
from .._runtime import local
from .contexts import _KEYWORDS, _OPAQUE, ContextPolicy, SenderTerms, iri_scheme, members


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
_PYLD = local()
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
        cause = retrieval_error_in(exc)
        if cause is not None:
            return finding(cause.code, cause.message, "/@context", subject=cause.url)
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
        elif key == "@list":
            out.append(finding("jsonld.misplaced-keyword",
                               "@list has no meaning here: the baseline has no ordered values, "
                               "and a list's members would reach no check (write an array)",
                               at))
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
                # A list object's @list is reported (no check reads an RDF list's members).
                allowed = frozenset({"@set"})
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


