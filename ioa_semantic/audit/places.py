"""Where a finding's member stands in the text of its registration: the line and column of
the member a JSON Pointer names, and the span of its value, for a report that locates
findings (SARIF regions and fixes).

Found by one position-tracking pass over the text the audit read and judged (json's own
string scanner for member names and strings), never by parsing it again into values: what
it places is what the judgement saw. Text that is not JSON is placed as far as it goes; a
pointer the pass does not meet (an IRI, a member the text lacks) is not placed.

Columns count UTF-16 code units, SARIF's default ``columnKind``, the unit code scanning
tools read when a log says nothing of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from json.decoder import scanstring  # type: ignore[attr-defined]  # json's own, undeclared
from typing import Any, NamedTuple


class Place(NamedTuple):
    """A member's place, 1-based: its start (a member name's opening quote, an array item's
    or the document's first character), and its value's start and end (the end column is
    the one just after the value, as SARIF's ``endColumn``)."""

    line: int
    column: int
    value_line: int
    value_column: int
    end_line: int
    end_column: int


class Element(dict[str, Any]):
    """An item of an array of registrations (its members, as the array's parse gave them)
    with the text it was read from and where that text begins in its file, so that its
    findings can be placed (see :func:`.workers.placed`). It is judged as a plain dict."""

    def __init__(self, node: dict[str, Any], text: str, line: int, column: int) -> None:
        super().__init__(node)
        self.text, self.line, self.column = text, line, column


def places(text: str, pointers: Iterable[str], line: int = 1,
           column: int = 1) -> dict[str, Place]:
    """The place of each of ``pointers`` that ``text`` holds; ``text`` begins at ``line``
    and ``column`` of its file."""
    wanted = set(pointers)
    offsets = _offsets(text, wanted.__contains__)
    return {pointer: _place(text, found, line, column) for pointer, found in offsets.items()}


def elements(text: str) -> list[tuple[int, int]]:
    """The start and end offsets in ``text`` of each item of the array it holds."""
    found = _offsets(text, lambda pointer: pointer.count("/") == 1)
    return [(value, end) for _, value, end in found.values()]


def position(text: str, offset: int, line: int = 1, column: int = 1) -> tuple[int, int]:
    """Line and column of ``offset`` in ``text``, which begins at ``line`` and ``column``."""
    newlines = text.count("\n", 0, offset)
    if newlines == 0:
        return line, column + _units(text[:offset])
    start = text.rfind("\n", 0, offset) + 1
    return line + newlines, 1 + _units(text[start:offset])


def _units(text: str) -> int:
    """UTF-16 code units of ``text``: a character beyond the BMP counts two."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def _place(text: str, found: tuple[int, int, int], line: int, column: int) -> Place:
    start, value, end = found
    return Place(*position(text, start, line, column), *position(text, value, line, column),
                 *position(text, end, line, column))


_SPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|NaN|-?Infinity")


def _offsets(text: str, wants: Callable[[str], bool]) -> dict[str, tuple[int, int, int]]:
    """``{pointer: (member start, value start, value end)}`` for every pointer ``wants``,
    the first of a repeated member name; as far as the text is JSON."""
    found: dict[str, tuple[int, int, int]] = {}
    start = _SPACE.match(text).end()  # type: ignore[union-attr]
    try:
        end = _value(text, start, "", wants, found)
    except (ValueError, IndexError, RecursionError):  # not JSON from there on, or too deep
        return found
    if wants(""):
        found[""] = (start, start, end)
    return found


def _value(text: str, at: int, pointer: str, wants: Callable[[str], bool],
           found: dict[str, tuple[int, int, int]]) -> int:
    """The end of the value at ``at``, recording the places of its members that are wanted."""
    char = text[at]
    if char == "{":
        return _members(text, at, pointer, wants, found)
    if char == "[":
        at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
        if text[at] == "]":
            return at + 1
        index = 0
        while True:
            child = f"{pointer}/{index}"
            end = _value(text, at, child, wants, found)
            if wants(child) and child not in found:
                found[child] = (at, at, end)
            at = _SPACE.match(text, end).end()  # type: ignore[union-attr]
            if text[at] == "]":
                return at + 1
            if text[at] != ",":
                raise ValueError(at)
            at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
            index += 1
    if char == '"':
        closed: int = scanstring(text, at + 1)[1]
        return closed
    scalar = _SCALAR.match(text, at)
    if scalar is None:
        raise ValueError(at)
    return scalar.end()


def _members(text: str, at: int, pointer: str, wants: Callable[[str], bool],
             found: dict[str, tuple[int, int, int]]) -> int:
    at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    if text[at] == "}":
        return at + 1
    while True:
        if text[at] != '"':
            raise ValueError(at)
        name, after = scanstring(text, at + 1)
        child = pointer + "/" + name.replace("~", "~0").replace("/", "~1")
        colon = _SPACE.match(text, after).end()  # type: ignore[union-attr]
        if text[colon] != ":":
            raise ValueError(colon)
        value = _SPACE.match(text, colon + 1).end()  # type: ignore[union-attr]
        end = _value(text, value, child, wants, found)
        if wants(child) and child not in found:
            found[child] = (at, value, end)
        at = _SPACE.match(text, end).end()  # type: ignore[union-attr]
        if text[at] == "}":
            return at + 1
        if text[at] != ",":
            raise ValueError(at)
        at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
