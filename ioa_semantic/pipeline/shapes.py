"""Shape checks: JSON Schema over the compact form, compiled SHACL over the expanded graph.

``shapes/baseline.ttl`` is the normative statement of a well-formed envelope and capability
registration. It is compiled once into plain constraint objects and evaluated over the
expanded JSON-LD, so that each finding can name the JSON Pointer of the member it concerns;
the tests hold this evaluation to pyshacl on the same shapes. The JSON Schemas catch what
expansion hides: a missing ``@context``, the legacy ``id``/``type`` spellings, JSON types.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from typing import Any, NamedTuple

import pyoxigraph

from .. import data as _resources
from .._codes import finding
from .._exceptions import ConfigurationError, IoaSemanticError
from .._findings import Finding
from .._iri import iri_defect
from .._runtime import local
from .._vocab import IOASH, RDF_JSON, RDF_LANGSTRING, RDF_TYPE, SH, XSD
from .contexts import NO_BASE, SenderTerms, json_kind, term_for


class PropertyShape(NamedTuple):
    name: str
    path: str
    min_count: int | None
    max_count: int | None
    node_kind: str | None
    datatype: str | None
    pattern: re.Pattern[str] | None
    has_value: str | None
    pattern_code: str
    section: str
    message: str


class NodeShape(NamedTuple):
    name: str
    family: str
    section: str
    node_kind: str | None
    closed: bool
    properties: tuple[PropertyShape, ...]
    target_classes: frozenset[str]
    target_subjects_of: frozenset[str]
    target_objects_of: frozenset[str]
    allowed: frozenset[str] = frozenset()  # the property paths a closed shape admits


def _triples(text: str) -> dict[str, dict[str, list[pyoxigraph.NamedNode | Any]]]:
    graph: dict[str, dict[str, list[Any]]] = {}
    for quad in pyoxigraph.parse(text, pyoxigraph.RdfFormat.TURTLE):
        subject = quad.subject.value if hasattr(quad.subject, "value") else str(quad.subject)
        graph.setdefault(subject, {}).setdefault(quad.predicate.value, []).append(quad.object)
    return graph


class ShapesError(ConfigurationError, ValueError):
    """The shapes use a SHACL construct the compiler does not support."""


# The SHACL Core subset the compiler understands; anything else in a shape is refused, so a
# shapes file can never say more than the compiled checks enforce.
_NODE_SHAPE_KEYS = frozenset({
    "targetClass", "targetSubjectsOf", "targetObjectsOf", "nodeKind", "closed", "property",
})
_PROPERTY_KEYS = frozenset({
    "path", "minCount", "maxCount", "nodeKind", "datatype", "pattern", "hasValue", "message",
})


def _refuse_unsupported(graph: dict[str, dict[str, list[Any]]]) -> None:
    for subject, props in graph.items():
        is_node_shape = any(t.value == SH + "NodeShape" for t in props.get(RDF_TYPE, []))
        allowed = _NODE_SHAPE_KEYS if is_node_shape else _PROPERTY_KEYS
        for predicate in props:
            if predicate.startswith(SH) and predicate[len(SH):] not in allowed:
                raise ShapesError(f"{subject} uses sh:{predicate[len(SH):]}, which the shape "
                                  "compiler does not support")
        for path in props.get(SH + "path", []):
            if not isinstance(path, pyoxigraph.NamedNode):
                raise ShapesError(f"{subject} has a complex sh:path; only predicate paths are "
                                  "supported")


def compile_shapes(text: str) -> dict[str, NodeShape]:
    """Compile the SHACL Core subset the baseline shapes use into constraint objects."""
    graph = _triples(text)
    _refuse_unsupported(graph)

    def one(subject: str, predicate: str) -> Any:
        values = graph.get(subject, {}).get(predicate, [])
        return values[0].value if values else None

    def many(subject: str, predicate: str) -> "frozenset[str]":
        return frozenset(v.value for v in graph.get(subject, {}).get(predicate, []))

    shapes = {}
    for subject, props in graph.items():
        if not any(t.value == SH + "NodeShape" for t in props.get(RDF_TYPE, [])):
            continue
        family = one(subject, IOASH + "family")
        section = one(subject, IOASH + "section")
        properties = []
        for prop in props.get(SH + "property", []):
            p = prop.value
            pattern = one(p, SH + "pattern")
            min_count = one(p, SH + "minCount")
            max_count = one(p, SH + "maxCount")
            properties.append(PropertyShape(
                name=p,
                path=one(p, SH + "path"),
                min_count=int(min_count) if min_count is not None else None,
                max_count=int(max_count) if max_count is not None else None,
                node_kind=_local(one(p, SH + "nodeKind")),
                datatype=one(p, SH + "datatype"),
                pattern=re.compile(python_pattern(pattern)) if pattern is not None else None,
                has_value=one(p, SH + "hasValue"),
                pattern_code=one(p, IOASH + "patternCode") or "empty",
                section=one(p, IOASH + "section") or section,
                message=one(p, SH + "message") or "",
            ))
        shapes[subject] = NodeShape(
            name=subject,
            family=family,
            section=section,
            node_kind=_local(one(subject, SH + "nodeKind")),
            closed=one(subject, SH + "closed") == "true",
            properties=tuple(sorted(properties, key=lambda p: p.path)),
            target_classes=many(subject, SH + "targetClass"),
            target_subjects_of=many(subject, SH + "targetSubjectsOf"),
            target_objects_of=many(subject, SH + "targetObjectsOf"),
            allowed=frozenset(p.path for p in properties),
        )
    return shapes


def python_pattern(pattern: str) -> str:
    """A SHACL ``sh:pattern`` (an XPath regular expression, SHACL 4.7.1) as Python's ``re``
    reads the same: ``$`` outside a character class ends the string in XPath, where Python's
    also matches before a final newline (``"text/plain\\n"`` would pass as a media type), so
    it becomes ``\\Z``. Escapes and classes are copied as they are."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if char == "]":
                in_class = False
        elif char == "[":
            in_class = True
            if pattern.startswith("]", i + 1) or pattern.startswith("^]", i + 1):
                # a ']' first in a class is a member of it
                skip = 2 if pattern[i + 1] == "]" else 3
                out.append(pattern[i:i + skip])
                i += skip
                continue
        elif char == "$":
            out.append(r"\Z")
            i += 1
            continue
        out.append(char)
        i += 1
    return "".join(out)


class PatternNotTranslated(IoaSemanticError, ValueError):
    """An ``sh:pattern`` (with its ``sh:flags``) that RE2 cannot read as XPath does."""


def xpath_pattern(pattern: str, flags: str = "") -> str:
    r"""A SHACL ``sh:pattern`` (an XPath regular expression: XML Schema 2 appendix F with
    XPath's anchors, flags and reluctant quantifiers) in RE2's syntax, for a profile's own
    shapes. RE2 matches in time linear in the value (a pattern such as ``^(a+)+$`` cannot
    make a check run for ever, as it would under Python's backtracking ``re``).

    ``$`` matches at the end of the value only (``\z``); ``.`` matches neither ``
`` nor
    ``
``; ``\s`` is space, tab, line feed and carriage return only; ``\d`` is ``\p{Nd}``;
    ``\w`` is every character but punctuation, separators and others (``\p{P}``, ``\p{Z}``,
    ``\p{C}``), so not ``_``; ``\p{..}`` and ``\P{..}`` name Unicode general categories (as
    Python's ``unicodedata`` has them); ``[a-z-[aeiou]]`` subtracts a class. ``flags`` are
    ``sh:flags``: ``s``, ``m``, ``i``, ``x`` and ``q`` as XPath reads them. Raises
    :class:`PatternNotTranslated` for what has no translation here (a back-reference, which
    no linear-time engine can match; a block escape ``\p{IsBasicLatin}``; ``\i``/``\c``; a
    complement inside a class; an escape or a ``(?`` group XPath does not have; a flag
    XPath does not have; a ``{``, ``}`` or ``]`` that is no quantifier's or class's, which
    RE2 would read as the character itself): such a shape is not evaluated rather than read
    otherwise."""
    _spent.ranges = 0
    unknown = sorted(set(flags) - set("smixq"))
    if unknown:
        raise PatternNotTranslated(f"{pattern!r}: sh:flags {flags!r} has "
                                   f"{', '.join(map(repr, unknown))}, which XPath does not")
    prefix = "(?i)" if "i" in flags else ""
    if "q" in flags:
        # every character stands for itself
        return prefix + "".join(_escaped(ord(c)) for c in pattern)
    if "x" in flags:
        pattern = _without_whitespace(pattern)
    out, i = [prefix], 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            text, i = _xpath_escape(pattern, i)
            out.append(text)
        elif char == "[":
            ranges, i = _xpath_class(pattern, i)
            out.append(_class_text(ranges))
        elif char == ".":
            out.append("(?s:.)" if "s" in flags else r"[^\n\r]")
            i += 1
        elif char in "^$":
            out.append(("(?m:^)" if char == "^" else "(?m:$)") if "m" in flags
                       else "^" if char == "^" else r"\z")
            i += 1
        elif pattern.startswith("(?:", i):
            out.append("(?:")
            i += 3
        elif pattern.startswith("(?", i):
            raise PatternNotTranslated(f"{pattern!r}: '(?' groups other than '(?:' are not XPath")
        elif char == "{":
            # XPath's only braces are a quantifier's; RE2 reads any other brace as itself
            quantifier = _QUANTIFIER.match(pattern, i)
            if quantifier is None:
                raise PatternNotTranslated(f"{pattern!r}: '{{' that does not open a quantifier "
                                           "{n}, {n,} or {n,m} (escape it as \\{)")
            out.append(quantifier.group())
            i = quantifier.end()
        elif char in "}]":
            raise PatternNotTranslated(f"{pattern!r}: {char!r} outside a quantifier or a class "
                                       f"(escape it as \\{char})")
        else:
            # metacharacters as they are; anything else literally
            out.append(char if char in "|?*+()," or (char.isascii() and char.isalnum())
                       else _escaped(ord(char)))
            i += 1
    return "".join(out)


# A quantifier's braces (XML Schema 2 appendix F, quantity): RE2 reads these as XPath does.
_QUANTIFIER = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")


def _without_whitespace(pattern: str) -> str:
    """The pattern under XPath's ``x`` flag: whitespace removed outside classes."""
    out, depth, i = [], 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
        if depth or char not in " \t\n\r":
            out.append(char)
        i += 1
    return "".join(out)


# A regular expression of this module: RE2, compiled once a process for each pattern and
# flags; RE2's own log of a pattern it refuses is off (a library writes nothing to stderr).
@cache
def xpath_regex(pattern: str, flags: str = "") -> Any:
    """The compiled RE2 expression of :func:`xpath_pattern`. Raises
    :class:`PatternNotTranslated` for a pattern that has no translation or that RE2
    refuses (a repetition count past 1000, say)."""
    import re2

    options = re2.Options()
    options.log_errors = False
    translated = xpath_pattern(pattern, flags)
    try:
        return re2.compile(translated, options)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise PatternNotTranslated(f"{pattern!r}: RE2 cannot read it: {detail}") from exc


_SINGLE = {"n": 0x0A, "r": 0x0D, "t": 0x09} | {c: ord(c) for c in "\\|.-^?*+{}()[]$"}
_SPACE = ((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20))
_MAX = 0x10FFFF
Ranges = tuple[tuple[int, int], ...]


def _complement(ranges: Ranges) -> Ranges:
    out, start = [], 0
    for low, high in _merged(ranges):
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    if start <= _MAX:
        out.append((start, _MAX))
    return tuple(out)


def _merged(ranges: Iterable[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if out and low <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return tuple(out)


def _class_text(ranges: Ranges) -> str:
    """A class of code points in RE2's syntax (surrogates, which no RDF literal holds,
    left out: RE2 reads UTF-8)."""
    parts = []
    for low, high in _merged(ranges):
        for a, b in ((low, min(high, 0xD7FF)), (max(low, 0xE000), high)):
            if a <= b:
                parts.append(_escaped(a) if a == b else f"{_escaped(a)}-{_escaped(b)}")
    # an empty class matches nothing: RE2 has no "[]", so a class that excludes everything
    return "[" + "".join(parts) + "]" if parts else r"[^\x00-\x{10FFFF}]"


def _xpath_escape(pattern: str, i: int) -> tuple[str, int]:
    """An escape outside a class, in RE2's syntax."""
    if pattern.startswith(("\\s", "\\S", "\\d", "\\D", "\\w", "\\W", "\\p", "\\P"), i):
        ranges, end = _escape_ranges(pattern, i)
        _charge(pattern, ranges)
        return _class_text(ranges), end
    if i + 1 < len(pattern) and pattern[i + 1].isdigit() and pattern[i + 1] != "0":
        raise PatternNotTranslated(f"{pattern!r}: a back-reference (\\{pattern[i + 1]}), which "
                                   "RE2, the linear-time engine patterns run on, cannot match")
    return _escaped(_single_escape(pattern, i)), i + 2


def _single_escape(pattern: str, i: int) -> int:
    if i + 1 >= len(pattern):
        raise PatternNotTranslated(f"{pattern!r}: a pattern cannot end in a backslash")
    char = pattern[i + 1]
    if char in _SINGLE:
        return _SINGLE[char]
    raise PatternNotTranslated(f"{pattern!r}: \\{char} is not an XPath escape")


# What the escapes of one pattern may name in all, in ranges of code points. RE2 (with its
# default memory budget) compiles no pattern that holds much more than 300,000 (400 times
# \p{L} compiles, 500 times does not); past this a pattern is refused before its classes
# are computed further, so that a hostile profile's pattern (lint reads any) costs at most
# a second, never minutes. Counted per thread: patterns are translated on several.
_MAX_RANGES = 400_000
_spent = local()


def _charge(pattern: str, ranges: Ranges) -> None:
    _spent.ranges = getattr(_spent, "ranges", 0) + len(ranges)
    if _spent.ranges > _MAX_RANGES:
        raise PatternNotTranslated(f"{pattern[:100]!r}...: its escapes name more than "
                                   f"{_MAX_RANGES:,} ranges of code points, past any "
                                   "pattern RE2 compiles")


def _escape_ranges(pattern: str, i: int, *, in_class: bool = False) -> tuple[Ranges, int]:
    """A multi-character escape (``\\s``, ``\\d``, ``\\w``, ``\\p{..}`` and their complements) as
    code points."""
    char = pattern[i + 1]
    if in_class and char in "SDwWP":
        raise PatternNotTranslated(f"{pattern!r}: \\{char} inside a class")
    if char in "sS":
        return (_SPACE if char == "s" else _complement(_SPACE)), i + 2
    if char in "dD":
        digits = _category_ranges(("Nd",))
        return (digits if char == "d" else _complement(digits)), i + 2
    if char in "wW":
        others = _category_ranges(("P", "Z", "C"))
        return (_complement(others) if char == "w" else others), i + 2
    end = pattern.find("}", i)
    if not pattern.startswith("{", i + 2) or end < 0:
        raise PatternNotTranslated(f"{pattern!r}: \\{char} without a {{name}}")
    name = pattern[i + 3:end]
    if name not in _CATEGORIES:
        raise PatternNotTranslated(f"{pattern!r}: \\{char}{{{name}}} is not a general "
                                   "category (block escapes are not translated)")
    ranges = _category_ranges((name,))
    return (ranges if char == "p" else _complement(ranges)), end + 1


def _xpath_class(pattern: str, i: int) -> tuple[Ranges, int]:
    """The code points of a character class from ``pattern[i] == "["`` (a subtraction
    ``-[...]`` last in it taken away)."""
    j = i + 1
    members: list[tuple[int, int]] = []
    negated = pattern.startswith("^", j)
    if negated:
        j += 1
    first = True
    while j < len(pattern):
        char = pattern[j]
        if char == "]" and not first:
            found = _merged(members)
            return (_complement(found) if negated else found), j + 1
        if char == "-" and pattern.startswith("-[", j):
            sub, k = _xpath_class(pattern, j + 1)
            if not pattern.startswith("]", k):
                raise PatternNotTranslated(f"{pattern!r}: a subtraction ends its class")
            base = _merged(members)
            base = _complement(base) if negated else base
            return _merged(_minus(base, sub)), k + 1
        if char == "[":
            raise PatternNotTranslated(f"{pattern!r}: '[' inside a class must be escaped")
        if char == "\\" and pattern.startswith(("\\s", "\\S", "\\d", "\\D", "\\w", "\\W", "\\p",
                                             "\\P", "\\i", "\\c", "\\I", "\\C"), j):
            if pattern[j + 1] in "iIcC":
                raise PatternNotTranslated(f"{pattern!r}: \\{pattern[j + 1]} is not translated")
            ranges, j = _escape_ranges(pattern, j, in_class=True)
            _charge(pattern, ranges)
            members.extend(ranges)
        else:
            low, j = _class_char(pattern, j)
            high = low
            if pattern.startswith("-", j) and not pattern.startswith(("-[", "-]"), j):
                high, j = _class_char(pattern, j + 1)
                if high < low:
                    raise PatternNotTranslated(f"{pattern!r}: a range that runs backwards")
            members.append((low, high))
        first = False
    raise PatternNotTranslated(f"{pattern!r}: a class is not closed")


def _class_char(pattern: str, j: int) -> tuple[int, int]:
    if j >= len(pattern):
        raise PatternNotTranslated(f"{pattern!r}: a class is not closed")
    if pattern[j] == "\\":
        return _single_escape(pattern, j), j + 2
    return ord(pattern[j]), j + 1


def _minus(base: Ranges, sub: Ranges) -> Ranges:
    """``base`` without ``sub`` (both merged, so sorted): one walk over both, never every
    pair (a subtraction of two categories of some 600 ranges each would otherwise cost
    some 400,000 steps, for a class of 30 characters)."""
    out, j = [], 0
    for low, high in base:
        start = low
        while j < len(sub) and sub[j][1] < start:
            j += 1
        k = j
        while k < len(sub) and sub[k][0] <= high:
            if sub[k][0] > start:
                out.append((start, sub[k][0] - 1))
            start = max(start, sub[k][1] + 1)
            k += 1
        if start <= high:
            out.append((start, high))
    return tuple(out)


_CATEGORIES = frozenset({
    "L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No",
    "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Z", "Zs", "Zl", "Zp",
    "S", "Sm", "Sc", "Sk", "So", "C", "Cc", "Cf", "Co", "Cn"})


@cache
def _category_ranges(categories: tuple[str, ...]) -> Ranges:
    """Every code point whose general category is one of ``categories`` (or starts with a
    one-letter one), as ranges."""
    table = _categories()
    return _merged(r for name, ranges in table.items()
                   if name in categories or name[0] in categories for r in ranges)


@cache
def _categories() -> dict[str, Ranges]:
    """Every general category's code points as ranges, read in one pass over every code
    point, once a process (about half a second; a pass for each category named would cost
    that for each of the 36 names a pattern may use)."""
    import unicodedata

    parts: dict[str, list[tuple[int, int]]] = {}
    start, current = 0, unicodedata.category(chr(0))
    for code in range(1, _MAX + 2):
        category = unicodedata.category(chr(code)) if code <= _MAX else ""
        if category != current:
            parts.setdefault(current, []).append((start, code - 1))
            start, current = code, category
    return {name: tuple(ranges) for name, ranges in parts.items()}


def _escaped(code: int) -> str:
    """A code point as RE2 reads it literally anywhere."""
    return f"\\x{{{code:x}}}"


def _local(iri: str | None) -> str | None:
    return iri.rpartition("#")[2] if iri else None


# --- the expanded graph, with the compact member each node and value came from -----------


class Located:
    """An expanded node object and the compact object (and JSON Pointer) it came from."""

    __slots__ = ("_keys", "compact", "node", "pointer")

    def __init__(self, node: dict[str, Any], compact: dict[str, Any], pointer: str) -> None:
        self.node, self.compact, self.pointer = node, compact, pointer
        self._keys: tuple[SenderTerms, dict[str | None, str]] | None = None

    @classmethod
    def _make(cls, fields: Iterable[Any]) -> "Located":
        return cls(*fields)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.node, self.compact, self.pointer))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Located) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # equal by value, and its parts are mutable

    def __repr__(self) -> str:
        return f"Located(pointer={self.pointer!r}, node={self.node!r})"

    def key_for(self, iri: str, terms: SenderTerms) -> str | None:
        """The member (the first in name order) that spells ``iri`` under ``terms``."""
        # Each member is resolved once per node, not once per property asked about: a node
        # with thousands of members would otherwise cost their square (issue: bounded cost).
        if self._keys is None or self._keys[0] is not terms:
            keys: dict[str | None, str] = {}
            for key in sorted(self.compact):
                if not key.startswith("@"):
                    keys.setdefault(terms.resolve(key), key)
            self._keys = (terms, keys)
        return self._keys[1].get(iri)

    def member_pointer(self, iri: str, terms: SenderTerms) -> str:
        key = self.key_for(iri, terms)
        if key is None:
            return self.pointer
        return f"{self.pointer}/{key.replace('~', '~0').replace('/', '~1')}"

    def value_pointer(self, iri: str, index: int, terms: SenderTerms) -> str:
        key = self.key_for(iri, terms)
        base = self.member_pointer(iri, terms)
        if key is not None and isinstance(self.compact.get(key), list):
            return f"{base}/{index}"
        return base


def _is_node(value: Any) -> bool:
    return isinstance(value, dict) and not ({"@value", "@list", "@set"} & value.keys()) and (
        len(value) > 1 or "@id" not in value)


def shared_ids(located: Sequence[Located]) -> Iterator[tuple[str, Located, Located]]:
    """Each node object (one with a member besides ``@id``) whose ``@id`` another node object
    of the document has, with the first to have it: JSON-LD merges them into one node, and
    what the shapes judged one object at a time is not the graph a receiver loads."""
    first: dict[str, Located] = {}
    for here in located:
        ident = here.node.get("@id")
        if type(ident) is not str or len(here.node) < 2:
            continue
        seen = first.setdefault(ident, here)
        if seen is not here:
            yield ident, seen, here


def located_nodes(root: dict[str, Any], compact: dict[str, Any], terms: SenderTerms) -> list[Located]:
    """Every embedded node object, root first, each with its compact origin.

    A node written as a bare reference (``{"@id": ...}`` and nothing else) is a node too:
    SHACL targets the IRI it names like any other object of the property, and with nothing
    said of it in the document it lacks every member its shape requires (contract rule 1).
    A string coerced to a reference is not written as a node and stays a reference.
    """
    out = []
    stack = [Located(root, compact, "")]
    while stack:
        here = stack.pop()
        out.append(here)
        for prop in sorted(here.node, reverse=True):
            if prop.startswith("@"):
                continue
            key = here.key_for(prop, terms)
            compact_values = here.compact.get(key) if key is not None else None
            for i, value in enumerate(here.node[prop]):
                reference = not _is_node(value)
                if reference and not _is_reference(value):
                    continue
                if isinstance(compact_values, list):
                    origin = compact_values[i] if i < len(compact_values) else {}
                    at = here.value_pointer(prop, i, terms)
                else:
                    origin = compact_values if i == 0 else {}
                    at = here.member_pointer(prop, terms)
                if reference and not isinstance(origin, dict):
                    continue
                stack.append(Located(value, origin if isinstance(origin, dict) else {}, at))
    return out


def _is_reference(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "@id" in value


# --- evaluation ---------------------------------------------------------------------------


def node_kind_of(value: Any) -> str:
    """SHACL node kind of an expanded value: IRI, BlankNode or Literal."""
    if isinstance(value, dict) and "@value" not in value and "@list" not in value:
        ident = value.get("@id")
        if isinstance(ident, str) and not ident.startswith("_:"):
            return "IRI"
        return "BlankNode"
    if isinstance(value, dict) and "@list" in value:
        return "BlankNode"
    return "Literal"


def datatype_of(value: Any) -> str | None:
    if not isinstance(value, dict) or "@value" not in value:
        return None
    if "@language" in value:
        return RDF_LANGSTRING
    declared = value.get("@type")
    if isinstance(declared, str):
        return RDF_JSON if declared == "@json" else declared
    raw = value["@value"]
    if isinstance(raw, bool):
        return XSD + "boolean"
    if isinstance(raw, int):
        return XSD + "integer"
    if isinstance(raw, float):
        return XSD + "integer" if raw.is_integer() and abs(raw) < 1e21 else XSD + "double"
    return XSD + "string"


NODE_KIND_OK = {
    "IRI": {"IRI"},
    "BlankNode": {"BlankNode"},
    "Literal": {"Literal"},
    "BlankNodeOrIRI": {"IRI", "BlankNode"},
    "BlankNodeOrLiteral": {"BlankNode", "Literal"},
    "IRIOrLiteral": {"IRI", "Literal"},
}


class Violation(NamedTuple):
    """One SHACL validation result, in terms comparable with pyshacl's report."""

    shape: str
    component: str
    path: str | None
    pointer: str
    code: str
    message: str
    section: str


def _values(node: dict[str, Any], path: str) -> list[Any]:
    if path == RDF_TYPE:
        return [{"@id": t} for t in node.get("@type", [])]
    values = node.get(path, [])
    return values if isinstance(values, list) else [values]


def evaluate_node(shape: NodeShape, here: Located, terms: SenderTerms) -> Iterator[Violation]:  # noqa: C901
    """Every violation of ``shape`` at one focus node.

    Names and JSON Pointers are worked out only for a violation, so a conforming node costs
    a few comparisons per constraint (the compiled path asks only whether one exists).
    """
    family = shape.family
    if shape.node_kind and node_kind_of(here.node) not in NODE_KIND_OK[shape.node_kind]:
        yield Violation(shape.name, "NodeKindConstraintComponent", None, here.pointer,
                        f"{family}.missing" if shape.node_kind == "IRI" else f"{family}.type",
                        "the node needs an @id IRI" if shape.node_kind == "IRI"
                        else f"the node must be a {shape.node_kind}", shape.section)
    for prop in shape.properties:
        values = _values(here.node, prop.path)

        def v(component: str, code: str, detail: str, index: "int | None" = None,
              prop: PropertyShape = prop) -> Violation:
            if prop.path == RDF_TYPE:
                name = "@type"
                at = f"{here.pointer}/@type" if "@type" in here.compact else here.pointer
            else:
                name = term_for(prop.path)
                at = (here.pointer if component == "MinCountConstraintComponent"
                      else here.member_pointer(prop.path, terms) if index is None
                      else here.value_pointer(prop.path, index, terms))
            return Violation(shape.name, component, prop.path, at, f"{family}.{code}",
                             f"{name}: {prop.message} ({detail})", prop.section)

        if prop.min_count is not None and len(values) < prop.min_count:
            yield v("MinCountConstraintComponent", "missing",
                    f"{len(values)} value(s)" if values else "an empty array"
                    if ("@type" in here.compact if prop.path == RDF_TYPE
                        else here.key_for(prop.path, terms) is not None) else "missing")
        if prop.max_count is not None and len(values) > prop.max_count:
            yield v("MaxCountConstraintComponent", "cardinality", f"{len(values)} values")
        if prop.has_value is not None and not any(
                x.get("@id") == prop.has_value for x in values if isinstance(x, dict)):
            yield v("HasValueConstraintComponent", "rdf-type", f"found {_show(values)}")
        for i, value in enumerate(values):
            if prop.node_kind and node_kind_of(value) not in NODE_KIND_OK[prop.node_kind]:
                yield v("NodeKindConstraintComponent", "type",
                        f"a {node_kind_of(value).lower()} is not a {prop.node_kind}", i)
            if prop.datatype is not None and datatype_of(value) != prop.datatype:
                yield v("DatatypeConstraintComponent", "type", f"found {_describe_value(value)}", i)
            if prop.pattern is not None:
                text = lexical_form(value)
                if text is None or not prop.pattern.search(text):
                    yield v("PatternConstraintComponent", prop.pattern_code,
                            f"found {_describe_value(value)}", i)
    if shape.closed:
        allowed = shape.allowed
        for prop_iri in sorted(here.node):
            if prop_iri.startswith("@") or prop_iri in allowed:
                continue
            yield Violation(shape.name, "ClosedConstraintComponent", prop_iri,
                            here.member_pointer(prop_iri, terms), f"{family}.unknown-property",
                            f"{term_for(prop_iri)!s} is not a property of this node in the "
                            "baseline vocabulary", "6.1")


def lexical_form(value: Any) -> str | None:
    if isinstance(value, dict) and "@value" in value:
        raw = value["@value"]
        if isinstance(raw, bool):
            return "true" if raw else "false"
        return str(raw)
    if isinstance(value, dict) and "@id" in value:
        return str(value["@id"])
    return None


def _describe_value(value: Any) -> str:
    if isinstance(value, dict) and "@value" in value:
        raw = value["@value"]
        if "@language" in value:
            return f"a language-tagged string {raw!r}@{value['@language']}"
        if isinstance(raw, str):
            kind = "a typed literal" if "@type" in value else "the string"
            return f"{kind} {raw!r}"
        return f"the {type(raw).__name__} {raw!r}"
    if isinstance(value, dict) and "@id" in value:
        return f"the reference {value['@id']!r}"
    return "a node"


def _show(values: list[Any]) -> str:
    return ", ".join(str(v.get("@id")) for v in values if isinstance(v, dict)) or "nothing"




class ShapeSet:
    """The compiled baseline shapes and compact-form schemas, built once per process."""

    def __init__(self) -> None:
        self.shapes = compile_shapes(_resources.read_text("shapes", "baseline.ttl"))
        self.envelope = self.shapes[IOASH + "EnvelopeShape"]
        self.registration = self.shapes[IOASH + "RegistrationShape"]
        self._schemas: dict[str, tuple[Any, dict[str, Any]]] = {}

    def schema(self, kind: str) -> tuple[Any, dict[str, Any]]:
        """The compact-form JSON Schema of ``kind`` and its validator, built on first use.

        jsonschema-rs validates; `jsonschema` reads the same schemas in the tests, which hold
        the two to the same findings. Loaded only when a document takes the reference path.
        """
        if kind not in self._schemas:
            import jsonschema_rs

            schema = _inline_refs(_resources.read_json("shapes", f"{kind}.schema.json"))
            self._schemas[kind] = (jsonschema_rs.Draft202012Validator(schema), schema)
        return self._schemas[kind]

    def targets(self, here: Located, parents: Iterable[tuple[str, Located]],
                family: str) -> list[NodeShape]:
        types = set(here.node.get("@type", []))
        found = []
        for shape in self.shapes.values():
            if shape.family != family:
                continue
            if (shape.target_classes & types
                    or any(p in here.node for p in shape.target_subjects_of)
                    or any(prop in shape.target_objects_of for prop, _ in parents)):
                found.append(shape)
        return found

    def validate(self, root_shape: NodeShape, located: list[Located],
                 terms: SenderTerms) -> list[Violation]:
        """Every SHACL violation over the expanded graph; the root always gets ``root_shape``.

        Only the shapes of the root shape's family apply: an envelope and a registration
        share property names (ontologyId, inputs) that the other's targets would match.
        """
        parents: dict[int, list[tuple[str, Located]]] = {}
        nodes = {id(here.node) for here in located}
        for here in located:
            for prop, values in here.node.items():
                if prop.startswith("@"):
                    continue
                for value in values:
                    if id(value) in nodes:
                        parents.setdefault(id(value), []).append((prop, here))
        out: list[Violation] = []
        for index, here in enumerate(located):
            shapes = self.targets(here, parents.get(id(here.node), []), root_shape.family)
            if index == 0 and root_shape not in shapes:
                shapes.append(root_shape)
            for shape in shapes:
                out.extend(evaluate_node(shape, here, terms))
        return out

    def schema_findings(self, kind: str, document: dict[str, Any]) -> list[Finding]:
        validator, schema = self.schema(kind)
        try:
            errors = [SchemaError.at(schema, e.schema_path, e.instance_path, e.instance)
                      for e in validator.iter_errors(document)]
        except ValueError:
            # jsonschema-rs reads JSON's own types only, and refused a number kept with its
            # text (intake.ExactNumber, a float: 1e400, 0.1000000000000000000001), ending a
            # check in a traceback. The schemas read such a number as the float it is, as
            # jsonschema (the reference) does: the document is given so.
            errors = [SchemaError.at(schema, e.schema_path, e.instance_path, e.instance)
                      for e in validator.iter_errors(_as_floats(document))]
        return schema_error_findings(schema, errors)


def _as_floats(value: Any) -> Any:
    """``value`` with each number kept with its text (a float subclass) as a plain float, as
    JSON Schema's validators compare it; made without recursion (a document may nest as
    deep as its limits allow)."""
    top: list[Any] = [value]
    stack: list[tuple[Any, Any, Any]] = [(top, 0, value)]
    while stack:
        holder, place, item = stack.pop()
        # The exact type asked first: compiled, an item isinstance has narrowed to float is
        # held as a plain double, whose type is float whatever the object was.
        if type(item) is not float and isinstance(item, float):
            holder[place] = float(item)
        elif type(item) is dict:
            members = holder[place] = dict(item)
            stack.extend((members, key, inner) for key, inner in item.items())
        elif type(item) is list:
            items = holder[place] = list(item)
            stack.extend((items, index, inner) for index, inner in enumerate(item))
    return top[0]


class SchemaError(NamedTuple):
    """What a finding needs from one JSON Schema error, whichever validator reported it."""

    keyword: str
    value: Any  # the keyword's value in the schema (the names ``required`` lists)
    path: tuple[str | int, ...]  # where in the document
    instance: Any

    @classmethod
    def at(cls, schema: dict[str, Any], schema_path: Iterable[str | int],
           instance_path: Iterable[str | int], instance: Any) -> "SchemaError":
        steps = tuple(schema_path)
        location: Any = schema
        for step in steps:
            location = location[step]
        return cls(str(steps[-1]), location, tuple(instance_path), instance)


def schema_error_findings(schema: dict[str, Any], errors: Iterable[SchemaError]) -> list[Finding]:
    family = schema["x-family"]
    out: list[Finding] = []
    for error in errors:
        if error.keyword == "oneOf" and error.instance == []:
            continue  # an empty array where values are required: the shapes say so (minCount)
        pointer = "".join(
            "/" + str(p).replace("~", "~0").replace("/", "~1") for p in error.path)
        wrong = _wrong_items(error)
        if wrong:
            # An array where an array is allowed: its items are what is wrong, each said at
            # its own place (never "the array has the wrong JSON type: an array").
            out.extend(finding(f"{family}.type", f"{pointer}/{index} has the wrong JSON type: "
                               f"{json_kind(item)}", f"{pointer}/{index}")
                       for index, item in wrong)
            continue
        code, message = _schema_error(family, error, pointer)
        if code.endswith(".legacy-key") and isinstance(error.instance, dict):
            out.extend(finding(code, message, f"{pointer}/{key}")
                       for key in ("id", "type") if key in error.instance)
            continue
        out.append(finding(code, message, pointer))
    return out


def _of_json_type(value: Any, expected: str) -> bool:
    """Whether a parsed value is of JSON Schema's type ``expected``."""
    if isinstance(value, bool):
        return expected == "boolean"
    if isinstance(value, int):
        return expected in ("integer", "number")
    if isinstance(value, float):
        return expected == "number"
    kinds = {"string": str, "object": dict, "array": list}
    return value is None if expected == "null" else isinstance(value, kinds.get(expected, ()))


def _wrong_items(error: SchemaError) -> list[tuple[int, Any]]:
    """For a ``oneOf`` of a value or an array of values that an array failed: the items of
    another JSON type than the array's items must be (none where that is not what failed)."""
    if error.keyword != "oneOf" or type(error.instance) is not list:
        return []
    items = next((branch.get("items") for branch in error.value
                  if isinstance(branch, dict) and branch.get("type") == "array"), None)
    expected = items.get("type") if isinstance(items, dict) else None
    if not isinstance(expected, str):
        return []
    return [(index, item) for index, item in enumerate(error.instance)
            if not _of_json_type(item, expected)]


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its local ``$ref``s replaced by their targets.

    The compact-form schemas are not recursive; resolving references once here instead of on
    every validation roughly halves the cost of the JSON Schema step.
    """
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return {**walk(defs[ref.removeprefix("#/$defs/")]), **walk(rest)}
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    inlined: dict[str, Any] = walk(schema)
    return inlined


_SCHEMA_CODE = {
    "required": "missing",
    "minItems": "missing",
    "type": "type",
    "oneOf": "type",
    "pattern": "empty",
    "minLength": "empty",
    "not": "legacy-key",
}


def _schema_error(family: str, error: SchemaError, pointer: str) -> tuple[str, str]:
    kind = _SCHEMA_CODE.get(error.keyword, "type")
    where = pointer or "the document"
    if kind == "missing" and error.keyword == "required":
        missing = [m for m in error.value if m not in error.instance]
        return f"{family}.missing", f"{where} has no {', '.join(missing)} member"
    if kind == "legacy-key":
        keys = [k for k in ("id", "type") if isinstance(error.instance, dict) and k in error.instance]
        return (f"{family}.legacy-key",
                f"{where} uses the legacy {' and '.join(keys)} spelling; the baseline uses "
                "@id and @type, and no id or type alias exists (6.1, 6.5)")
    if kind == "missing":
        return f"{family}.missing", f"{where} is empty; at least one value is required"
    if kind == "empty":
        return f"{family}.empty", f"{where} is an empty or blank string"
    return f"{family}.type", f"{where} has the wrong JSON type: {json_kind(error.instance)}"


def iri_findings(located: list[Located], terms: SenderTerms,
                 allowed_schemes: frozenset[str]) -> list[Finding]:
    """Every reference in the expanded graph is an absolute IRI of an allowed scheme (6.1)."""
    out = []

    def check(iri: str, pointer: str, what: str) -> None:
        if iri.startswith("_:"):
            return  # a blank node: the shapes say where a node needs an IRI
        defect = None if iri.startswith(NO_BASE) else iri_defect(iri)
        if defect is not None and defect.position > 0:
            out.append(finding("jsonld.invalid-iri",
                               f"{what} {iri!r} is not an IRI (RFC 3987): {defect.describe()}",
                               pointer))
            return
        if defect is not None or iri.startswith(NO_BASE):
            out.append(finding("jsonld.relative-iri",
                               f"{what} {iri.removeprefix(NO_BASE)!r} does not expand to an absolute IRI "
                               "(is a prefix missing from the context?)", pointer))
            return
        scheme = iri[:iri.index(":")].lower()
        if scheme not in allowed_schemes:
            out.append(finding("jsonld.scheme-not-allowed",
                               f"{what} {iri!r} has the scheme {scheme!r}, which the profile "
                               f"does not allow (allowed: {', '.join(sorted(allowed_schemes))}); "
                               "an undefined prefix reads as a scheme", pointer))

    for index, here in enumerate(located):
        ident = here.node.get("@id")
        if index == 0 and isinstance(ident, str) and ident.startswith("_:"):
            out.append(finding("jsonld.blank-node-id",
                               f"the document's @id {ident!r} is a blank node identifier; when "
                               "present, it must be an absolute IRI", "/@id"))
        if isinstance(ident, str):
            check(ident, f"{here.pointer}/@id" if "@id" in here.compact else here.pointer, "@id")
        for t in here.node.get("@type", []):
            if isinstance(t, str):
                check(t, f"{here.pointer}/@type", "@type")
        for prop, values in here.node.items():
            if prop.startswith("@"):
                continue
            check(prop, here.member_pointer(prop, terms), "the property")
            for i, value in enumerate(values):
                if isinstance(value, dict) and len(value) == 1 and isinstance(value.get("@id"), str):
                    check(value["@id"], here.value_pointer(prop, i, terms), term_for(prop))
    return out
