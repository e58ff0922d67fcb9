"""The restricted expansion: JSON-LD expansion of a document whose inline context is made of
simple definitions, by one walk of its members.

It gives pyld's expanded node (the tests hold the two together, member order included) and
the nodes it found, each with the property that reached it, for the conformance functions;
anything outside the subset (a nested context, a value object with a language, a list) it
declines with None.

Envelopes in the wild use the baseline context, a prefix or two, strings, node objects and
arrays of them. For exactly that subset the expanded form is simple enough to build in one
pass; anything else (a nested or remote context, a value object, a list, a number, a
relative or disallowed reference, a key expansion would drop) makes ``expand_restricted``
return None and the caller takes pyld.
"""

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from .._iri import iri_scheme as rfc3987_scheme
from .._memo import BoundedCache
from ..pipeline.contexts import NO_BASE, iri_scheme

_GEN_DELIMS = (":", "/", "?", "#", "[", "]", "@")
_DEFINITION_KEYS = frozenset({"@id", "@type", "@container", "@protected"})


class ActiveContext:
    """A sender's context reduced to what the restricted expansion needs.

    ``memo`` remembers expanded references: the same context meets the same IRIs envelope
    after envelope. It is bounded, and a lost race only recomputes an equal value.
    ``remembered`` counts the bytes the memos and the member plans have come to hold (as
    _ENTRY_BYTES sizes them) and ``charged`` what the cache of active contexts has been told
    it weighs, so that the cache counts what a context holds rather than what it might.
    """

    __slots__ = ("charged", "coerced", "memo", "plans", "prefixes", "remembered", "terms")

    def __init__(self, terms: Mapping[str, str], coerced: frozenset[str],
                 prefixes: Mapping[str, str]) -> None:
        self.terms = terms
        self.coerced = coerced
        self.prefixes = prefixes
        # By (vocab, schemes): each reference's expansion, or None.
        self.memo: dict[tuple[bool, frozenset[str]], dict[str, str | None]] = {}
        self.plans: dict[tuple[frozenset[str], frozenset[str]], dict[str, Any]] = {}
        self.remembered = self.charged = 0


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
            elif isinstance(value, dict) and _DEFINITION_KEYS.issuperset(value) and isinstance(
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
        if _remembered_scheme(value) is None:
            return None  # no IRI (RFC 3987): the review reports it
        terms[key] = value
    return ActiveContext(terms, frozenset(k for k, (_, c, _) in raw.items() if c), prefixes)


# The RFC 3987 scheme of IRIs met expanded ("" for a string that is no IRI), process-wide:
# senders spell the same definitions and references under prefix names of their own, so a
# new sender's terms and compact IRIs expand to IRIs met before, and the check of an IRI
# reads nothing but its text. Only those are asked here: an IRI a sender writes in full is
# often its document's own (an @id), met once. Each entry weighs its text twice over and a
# couple of hundred bytes of bookkeeping.
_SCHEMES: BoundedCache[str, str] = BoundedCache(16 << 20)


def scheme_cache_bytes(max_bytes: int | None = None) -> int:
    """Set the byte bound of the process-wide memo of expanded IRIs' schemes (when given;
    16 MiB by default) and return it."""
    if max_bytes is not None:
        _SCHEMES.resize(max_bytes)
    return _SCHEMES.max_bytes


def _remembered_scheme(iri: str) -> str | None:
    """The RFC 3987 scheme of an expanded IRI, or None for a string that is no IRI
    (:func:`ioa_semantic._iri.iri_scheme`), remembered."""
    known = _SCHEMES.get(iri)
    if known is None:
        known = rfc3987_scheme(iri) or ""
        _SCHEMES.put(iri, known, 200 + 2 * len(iri))
    return known or None


# What an active context remembers is bounded: references up to _MEMO_CHARS long (key and
# value together; longer ones are expanded every time), at most _MEMO_LIMIT of them per
# memo, and member plans likewise. Each entry is counted as its characters and
# _ENTRY_BYTES of dictionary and string overhead (ActiveContext.remembered).
_MEMO_LIMIT = 32
_MEMO_CHARS = 256
_ENTRY_BYTES = 200
_MISSING = object()


def _restricted_iri(value: str, active: ActiveContext, vocab: bool,
                    schemes: frozenset[str]) -> str | None:
    memo = active.memo.get((vocab, schemes))
    if memo is None:
        memo = active.memo.setdefault((vocab, schemes), {})
    return _memoized(memo, active, vocab, schemes, value)


def id_expander(active: ActiveContext,
                schemes: frozenset[str]) -> Callable[[str], str | None]:
    """The walk's expansion of a top node's ``@id`` under one context (not remembered, as the
    walk does not remember it): for a caller that expands the ``@id`` of each of many
    documents. Nor is its scheme, as in the walk: each document's ``@id`` is its own, met
    once, and remembering it only pushed out of the memo the IRIs met again."""
    return partial(_expand_reference, active=active, vocab=False, schemes=schemes,
                   remember=False)


def _memoized(memo: dict[str, str | None], active: ActiveContext, vocab: bool,
              schemes: frozenset[str], value: str) -> str | None:
    found = memo.get(value, _MISSING)
    if found is _MISSING:
        found = _expand_reference(value, active, vocab, schemes)
        if len(memo) < _MEMO_LIMIT and len(value) + len(found or "") <= _MEMO_CHARS:
            memo[value] = found
            active.remembered += _ENTRY_BYTES + len(value) + len(found or "")
    return found  # type: ignore[return-value]


def _expand_reference(value: str, active: ActiveContext, vocab: bool,
                      schemes: frozenset[str], remember: bool = True) -> str | None:
    if vocab and value in active.terms:
        # A term's IRI is an IRI (active_context holds it to RFC 3987); its scheme is the
        # policy's to allow, as a property's IRI in the reference engine.
        return _allowed(active.terms[value], schemes, remember)
    if value.startswith(("@", "_:")):
        return None
    prefix, sep, suffix = value.partition(":")
    if not sep:
        return None  # relative: the reference path reports it
    # The whole IRI is held to RFC 3987, never its prefix alone: a suffix can hold a space.
    if not suffix.startswith("//"):
        if prefix in active.prefixes:
            return _allowed(active.prefixes[prefix] + suffix, schemes, remember)
        if prefix in active.terms:
            return None
    scheme = iri_scheme(value)
    return value if scheme is not None and scheme in schemes else None


def _allowed(iri: str, schemes: frozenset[str], remember: bool = True) -> str | None:
    """An IRI a context's terms or prefixes expanded to, if it is one of an allowed scheme:
    :func:`iri_scheme`, with the RFC 3987 part remembered (see _SCHEMES) if ``remember``."""
    if iri.startswith(NO_BASE):
        return None
    scheme = _remembered_scheme(iri) if remember else (rfc3987_scheme(iri) or None)
    return iri if scheme is not None and scheme in schemes else None


# What to do with a member of a node object, decided once per key and context.
_CONTEXT, _ID, _TYPE = "@context", "@id", "@type"


def member_plan(key: str, active: ActiveContext, schemes: frozenset[str],
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
    dropped: list[str] | None = None,
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

    With ``dropped`` (the reporting path, which judges what expansion gives rather than
    declining it), three things the compiled path declines get the answer pyld gives when
    it expands with no base: a top-level member that no term defines and that is no IRI
    (a plain name) is dropped, its name appended to ``dropped`` as pyld reports it; a
    reference (an ``@id``, a value of an ``@id``-typed term) that is relative or outside the
    allowed schemes is kept as written, a compact one expanded by its prefix first; and a
    number or a boolean is a value object.
    """
    walk = _RestrictedWalk(active, schemes, single_valued, ordered, dropped)
    root = walk.node(document, "", None)
    return None if root is None else (root, walk.located, walk.colons, walk.reached)


class _RestrictedWalk:
    """One walk of :func:`expand_restricted`. A class rather than a recursive closure: a
    closure that calls itself is a reference cycle, which kept every node of a check alive
    until the collector found it (a collection every 17 checks, which set the p99)."""

    __slots__ = ("active", "colons", "dropped", "ids", "located", "ordered", "plans", "reached",
                 "schemes", "single_valued")

    def __init__(self, active: ActiveContext, schemes: frozenset[str],
                 single_valued: frozenset[str], ordered: bool,
                 dropped: list[str] | None = None) -> None:
        self.active, self.schemes, self.single_valued = active, schemes, single_valued
        self.ordered = ordered
        self.dropped = dropped
        self.plans = active.plans.setdefault((schemes, single_valued), {})
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
                plan = member_plan(key, active, schemes, single_valued)
                if len(plans) < _MEMO_LIMIT and len(key) <= _MEMO_CHARS // 2:
                    plans[key] = plan
                    active.remembered += _ENTRY_BYTES + 2 * len(key)
            if type(plan) is tuple:  # a property: nearly every member
                prop, coerced, single, key_colons = plan
            elif plan is None:
                if self.dropped is None or pointer or not _plain_name(key, active):
                    return None
                self.dropped.append(key)  # pyld drops it, and reports its name
                continue
            elif plan is _CONTEXT:
                if pointer:
                    return None
                continue
            elif plan is _ID:
                # A top node's @id is its document's own, met once: remembering it (or
                # its scheme) would only push out the references that do recur (types,
                # coerced values, a sender's prefixes).
                ident = None if type(value) is not str else (
                    _restricted_iri(value, active, False, schemes) if pointer
                    else _expand_reference(value, active, False, schemes, remember=False))
                if ident is None and self.dropped is not None and type(value) is str:
                    ident = as_written(value, active)
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
                        # _restricted_iri's memo, read in place. The sentinel has a local of
                        # its own: iri is a str or None, which mypyc checks on assignment.
                        remembered = ids.get(item, _MISSING)
                        if remembered is _MISSING:
                            iri = _restricted_iri(item, active, False, schemes)
                        else:
                            iri = remembered
                        if iri is None and self.dropped is not None:
                            iri = as_written(item, active)
                        if iri is None:
                            return None
                        expanded.append({"@id": iri})
                    else:
                        expanded.append({"@value": item})
                elif self.dropped is not None and kind in _NATIVE and not coerced:
                    if kind is float:
                        # orjson keeps no number's text, and a declared parameter compares
                        # by it (intake.ExactNumber): the reference path reads such a one.
                        return None
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


# JSON's native values other than strings, which expansion keeps as value objects.
_NATIVE = (int, float, bool)


def _plain_name(key: str, active: ActiveContext) -> bool:
    """Whether pyld, expanding with no base and no ``@vocab``, drops the member ``key`` of a
    node (and reports ``key``): a name that is no keyword, looks like none, is defined by no
    term and has no colon, so that expansion leaves it relative."""
    return (key != "" and key[0] != "@" and ":" not in key and key not in active.terms)


def as_written(value: str, active: ActiveContext) -> str | None:
    """A reference the walk refuses (relative, an IRI outside the allowed schemes, or no
    IRI), as pyld expands it with no base: by its prefix when it has one the context defines
    as such, as written when what precedes its first colon is no term at all; None for
    anything else, which pyld has rules of its own for: a keyword or what looks like one, a
    blank node, the empty string, and a compact IRI whose prefix is a term the walk does not
    take for a prefix (pyld may: it flags a term by its expanded IRI, so ``"urn":
    "cs:sub/"`` makes ``urn:x`` read as ``cs``'s namespace plus ``sub/x``)."""
    if value == "" or value[0] == "@" or value.startswith("_:"):
        return None
    prefix, sep, suffix = value.partition(":")
    if sep and prefix and not suffix.startswith("//"):
        if prefix in active.prefixes:
            return active.prefixes[prefix] + suffix
        if prefix in active.terms:
            return None
    return value
