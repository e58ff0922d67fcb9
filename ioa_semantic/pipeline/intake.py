"""Intake: bytes to JSON, strictly and within limits.

This is the first stage of the pipeline. It accepts only what RFC 8259 calls JSON, in UTF-8,
within a size and a nesting-depth limit, and rejects what parsers commonly let through:
duplicate member names (a parser differential: one reader keeps the first value, another the
last), NaN and Infinity, and a top level that is not an object. It never raises on input.
"""

# Annotations are evaluated at import (no __future__ import): see _findings.

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

from mypy_extensions import mypyc_attr

from .._codes import finding
from .._findings import Finding
from .._runtime import local

DEFAULT_MAX_BYTES = 1 << 20
DEFAULT_MAX_DEPTH = 64
# Bounds on the work a document within the byte limit can ask for: the JSON values of one
# document (every member value and array item, nested ones included), and the context
# objects and term definitions it brings. A baseline envelope has about 30 values, one
# context object and a dozen terms; pyld copies its active context for every context object,
# so their count times their terms is what expansion costs (issue: bounded cost).
DEFAULT_MAX_VALUES = 16384
DEFAULT_MAX_CONTEXTS = 16
DEFAULT_MAX_TERMS = 1024
# JSON's whitespace (RFC 8259, section 2): a line of only these is blank. Not bytes.strip()'s,
# which also takes a vertical tab and a form feed, which JSON refuses.
JSON_WHITESPACE = b" \t\r\n"

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = str.maketrans({"[": "+", "{": "+", "]": "-", "}": "-"})


class Limits(NamedTuple):
    """Resource limits of one document. Size and depth are checked before the parser runs;
    the count of values right after it (:func:`value_findings`), and the contexts and terms
    before any context is reviewed or expanded."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH
    max_values: int = DEFAULT_MAX_VALUES
    max_contexts: int = DEFAULT_MAX_CONTEXTS
    max_terms: int = DEFAULT_MAX_TERMS


class Intake(NamedTuple):
    """The parsed document, or the findings that kept it from being one."""

    document: Any
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings


def _nests_deeper_than(text: str, limit: int) -> bool:
    # Strings are removed first so that brackets inside them do not count; what remains is
    # a run of brackets whose running sum is the depth, read only until it passes the limit.
    # A loop, not a generator expression: mypyc would make that a list of every bracket.
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text)).translate(_DEPTH_STEP)
    depth = 0
    for step in brackets:
        depth += 1 if step == "+" else -1
        if depth > limit:
            return True
    return False


_PARSERS = local()


def _parser() -> tuple[json.JSONDecoder, dict[int, tuple[dict[str, Any], list[str]]]]:
    """This thread's strict parser and the record its hook fills, built once per thread.

    ``json.loads`` with a hook builds a decoder on every call, a sizeable part of parsing
    a small document; the record is cleared after each parse.
    """
    found = getattr(_PARSERS, "parser", None)
    if found is None:
        hook, seen = _duplicate_keys()
        found = _PARSERS.parser = (
            json.JSONDecoder(object_pairs_hook=hook, parse_constant=_reject_constant,
                             parse_float=_number), seen)
    return found


def _duplicate_keys() -> tuple[Callable[[list[tuple[str, Any]]], dict[str, Any]],
                             dict[int, tuple[dict[str, Any], list[str]]]]:
    """An object hook for the parser, and the objects it saw repeat a member name.

    The objects themselves are kept so that no id is reused by a later object after a
    repeated member's first value is thrown away.
    """
    seen: dict[int, tuple[dict[str, Any], list[str]]] = {}

    def hook(pairs: "list[tuple[str, Any]]") -> "dict[str, Any]":
        obj = dict(pairs)
        if len(obj) != len(pairs):
            names: dict[str, int] = {}
            for key, _ in pairs:
                names[key] = names.get(key, 0) + 1
            seen[id(obj)] = (obj, sorted(k for k, n in names.items() if n > 1))
        return obj

    return hook, seen


def _has_lone_surrogate(document: Any) -> bool:
    # Only reached when the text escapes a surrogate, so the common case pays nothing.
    try:
        json.dumps(document, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# A subclass of float: a Python class in the compiled build too (mypyc compiles no subclass
# of a builtin type).
@mypyc_attr(native_class=False)
class ExactNumber(float):
    """A JSON number with a fraction or an exponent whose binary float is not its value
    (``1024.0000000000000001``, ``1e-400``): the float, with its text kept. Values compare
    by their declared datatype (xsd:decimal is exact), so :func:`number_text` reads the
    number by its text, never by the float's rounding."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> "ExactNumber":
        number = float.__new__(cls, text)
        number.text = text
        return number

    def __reduce__(self) -> tuple[type["ExactNumber"], tuple[str]]:
        # Copied (pyld deep-copies a document) and pickled by its text: float's own way calls
        # __new__ with the float, which the compiled build refuses (text is a str there).
        return (ExactNumber, (self.text,))


# An ExactNumber passes through `object`, never `float`: mypyc holds a float as a C double,
# which would drop the subclass and its text (a compiled build then compared 1024.0 for
# 1024.0000000000000001).
def _number(text: str) -> object:
    number = float(text)
    if repr(number) == text:  # "1.1", "0.5": the float's own text, so its value (finite)
        return number
    if not math.isfinite(number):
        return ExactNumber(text)
    exact = _decimal(text)
    if exact is None or _decimal(repr(number)) != exact:
        return ExactNumber(text)  # past Decimal's exponents (0e1000000000000000000): kept
    return number  # the float's shortest text is the number's value: nothing to keep


def _decimal(text: str) -> Any:
    """``Decimal(text)``, or None where its exponent is past what Decimal holds (a JSON
    number may write any exponent: 1e-2000000000000000000 raised, ending a check)."""
    # decimal is imported when a number is written otherwise ("1.10", "1e3"), not with the
    # module: its import was 2% of a cold check whose envelope writes "@version": 1.1.
    from decimal import Decimal, InvalidOperation

    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def number_text(number: object) -> str:
    """A JSON number's exact decimal text (``0.1`` is one tenth, not a binary rounding)."""
    from decimal import Decimal  # only for a number a profile or an artifact states

    if isinstance(number, ExactNumber):
        exact = _decimal(number.text)
        # Written out in full only when that stays short: 1e999999999 would be a billion
        # digits. Kept as written, it is then no lexical form of a decimal (refused as such).
        if exact is None or abs(exact.adjusted()) > _MAX_EXPONENT:
            return number.text
        return format(exact, "f")
    return format(Decimal(repr(number)), "f")


_MAX_EXPONENT = 400


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)


class _NonFinite(ValueError):
    pass


def _pointer_token(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _locate(
    document: Any, wanted: dict[int, tuple[dict[str, Any], list[str]]]
) -> list[tuple[str, list[str]]]:
    """JSON Pointers of the objects the parser flagged (depth is already bounded)."""
    found = []
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        pointer, value = stack.pop()
        if isinstance(value, dict):
            if id(value) in wanted:
                found.append((pointer, wanted[id(value)][1]))
            stack.extend((f"{pointer}/{_pointer_token(k)}", v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{pointer}/{i}", v) for i, v in enumerate(value))
    return sorted(found)


def parse(data: bytes | str, limits: Limits | None = None, *, array: bool = False) -> Intake:
    """Parse one JSON document under ``limits``; every problem is a finding, none raises.

    The top level must be an object; with ``array``, an array is accepted too (an audit file
    may hold a list of registrations).
    """
    limits = limits or Limits()
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if size > limits.max_bytes:
        return Intake(None, (too_large(size, limits.max_bytes),))
    if isinstance(data, str):
        text = data
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return _fail("json.encoding", "the text holds a lone UTF-16 surrogate, "
                         "which is not Unicode text")
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _fail("json.encoding", f"the document is not UTF-8 (byte {exc.start})")
    if text.startswith("\ufeff"):
        return _fail("json.encoding", "the document starts with a byte order mark")
    # A document with fewer opening brackets than the limit cannot nest deeper than it; only
    # the others pay for the exact measure.
    brackets = text.count("{") + text.count("[")
    if brackets > limits.max_depth and _nests_deeper_than(text, limits.max_depth):
        return _fail("json.too-deep",
                     f"the document nests deeper than the limit of {limits.max_depth} levels")
    decoder, seen = _parser()
    try:
        document = decoder.decode(text)
    except _NonFinite as exc:
        return _fail("json.non-finite", f"{exc} is not a JSON number")
    except RecursionError:
        return _fail("json.too-deep", "the document nests too deeply to parse")
    except json.JSONDecodeError as exc:
        return _fail("json.syntax",
                     f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
    except ValueError as exc:
        if "integer string conversion" in str(exc):
            # JSON, but an integer longer than Python converts (4,300 digits by default):
            # over a limit, said in the input's words rather than the interpreter's.
            return _fail("json.too-large", f"the document holds an integer of more than "
                         f"{sys.get_int_max_str_digits()} digits, over the limit of "
                         f"{sys.get_int_max_str_digits()} digits a number may have")
        return _fail("json.syntax", f"not JSON: {exc}")
    finally:
        duplicates = dict(seen)
        seen.clear()
    if _ESCAPED_SURROGATE.search(text) and _has_lone_surrogate(document):
        return _fail("json.encoding",
                     "the document escapes a lone UTF-16 surrogate, which is not Unicode text")
    if duplicates:
        return Intake(None, tuple(
            finding("json.duplicate-key",
                    f"the object repeats the member name(s) {', '.join(map(repr, names))}",
                    pointer)
            for pointer, names in _locate(document, duplicates)
        ))
    if not isinstance(document, dict) and not (array and isinstance(document, list)):
        kind = ("an array" if isinstance(document, list) else "null" if document is None
                else "a boolean" if isinstance(document, bool)
                else "a number" if isinstance(document, int | float) else "a string")
        return _fail("json.not-object", f"the document is {kind}, not one JSON object")
    return Intake(document, ())


def value_findings(document: Any, limits: Limits, size: int | None = None) -> tuple[Finding, ...]:
    """The finding of a document with more JSON values than ``limits.max_values``, or none.

    One pass that stops at the limit. With ``size`` (the text's length in bytes), a text too
    short to hold that many values (each needs a byte and a separator) is not walked.
    """
    limit = limits.max_values
    if size is not None and size < 2 * limit:
        return ()
    count = 0
    stack = [document]
    while stack:
        value = stack.pop()
        if type(value) is dict:
            count += len(value)
            stack.extend(value.values())
        elif type(value) is list:
            count += len(value)
            stack.extend(value)
        else:
            continue
        if count > limit:
            return (finding("json.too-many-values",
                            f"the document holds more than {limit} JSON values (members and "
                            f"array items); the limit is --max-values", ""),)
    return ()


def too_large(size: int | None, limit: int) -> Finding:
    """The finding of a document over ``limit`` bytes: of ``size`` bytes, or (None) one read
    no further than the limit (a stream, a line let go), whose size is not known."""
    if size is None:
        return finding("json.too-large", f"the document has more than {limit} bytes (it was "
                                         f"read no further), over the limit of {limit}", "")
    return finding("json.too-large", f"the document has {size} bytes, over the limit of "
                                     f"{limit}", "")


def _fail(code: str, message: str) -> Intake:
    return Intake(None, (finding(code, message, ""),))
