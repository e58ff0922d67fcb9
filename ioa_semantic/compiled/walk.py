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
    # The whole IRI is held to RFC 3987, never its prefix alone: a suffix can hold a space.
    if not suffix.startswith("//"):
        if prefix in active.prefixes:
            value = active.prefixes[prefix] + suffix
            # iri_scheme(value), with the RFC 3987 part remembered (see _SCHEMES).
            scheme = None if value.startswith(NO_BASE) else _remembered_scheme(value)
            return value if scheme is not None and scheme in schemes else None
        if prefix in active.terms:
            return None
    scheme = iri_scheme(value)
    return value if scheme is not None and scheme in schemes else None


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
                plan = member_plan(key, active, schemes, single_valued)
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
        plan = member_plan(key, active, schemes, walk.single_valued)
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
