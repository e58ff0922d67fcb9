"""What a trace state's checkpoint must hold before a fold is restored from it.

A checkpoint is written by this program as JSON of the fold (:meth:`.events.Fold.delta`); one
edited or damaged is refused (``--state``: exit 2), never half read. Reading a value of the
wrong type is not refusal enough: the fold holds it, and a later stage (the nesting of calls,
the wording of a problem, the compiled build's typed code) would fail on it, in a traceback,
and not alike in the pure and the compiled build. So each member the fold and its readers
rely on is checked here for its type first: :func:`problem` names the first that is wrong.

Checked: the position (line, offset, digest), the counters, the problems (their codes
registered), the open anonymous calls, the run ids, and each call's members by the types the
fold writes them with: a mas-lab call's (:data:`CALL_MEMBERS`), an OTLP span's
(:data:`SPAN_MEMBERS`), a mas-lab span's record (:data:`RECORD_MEMBERS`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .._codes import CODES
from . import maslab_otel

Check = Callable[[Any], bool]


def _text(value: Any) -> bool:
    return type(value) is str


def _whole(value: Any) -> bool:
    return type(value) is int and value >= 0


def _optional(check: Check) -> Check:
    return lambda value: value is None or check(value)


def _texts(value: Any) -> bool:
    return type(value) is list and all(type(v) is str for v in value)


def _counts(value: Any) -> bool:
    return type(value) is dict and all(type(k) is str and _whole(v) for k, v in value.items())


# An instant as the fold writes it: Unix seconds in plain decimal notation (events._instant,
# otlp._instant), which the build reads as a Decimal.
_SECONDS = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def _seconds(value: Any) -> bool:
    return type(value) is str and _SECONDS.fullmatch(value) is not None


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def _digest(value: Any) -> bool:
    return type(value) is list and len(value) == 2 and type(value[0]) is str and _whole(
        value[1])


# Each member of a mas-lab call as a checkpoint writes it (folded.ORDER), and its type there:
# None only where the fold writes None (a disputed agent or target; placed under no call).
CALL_MEMBERS: dict[str, Check] = {
    "key": _text, "id": _text, "cls": _text, "first": _whole,
    "startLine": _whole, "endLine": _whole, "start": _seconds, "end": _seconds,
    "agent": _optional(_text), "target": _optional(_text), "parent": _text,
    "label": _text, "temperature": _number, "input": _digest, "output": _digest,
    "content": lambda value: type(value) is dict, "placed": _optional(_text),
    "candidates": _texts, "hosted": _whole, "status": _text, "tokens": _counts,
    "finish": _text, "responseId": _text, "ambiguous": _texts,
    "again": lambda value: type(value) is dict and all(
        type(k) is str and type(v) is str for k, v in value.items()),
    "parentKey": _text,
}
_REQUIRED = ("key", "id", "cls", "first")
# Each member of an OTLP span's call (otlp.call, and the fold's own: its lines, a conflict).
SPAN_MEMBERS: dict[str, Check] = {
    **{name: _text for name in ("key", "id", "trace", "cls", "sha256", "kindOf", "op",
                                "parent", "status", "conversation", "agentId", "agent",
                                "ownAgent", "finish", "responseId")},
    "start": _seconds, "end": _seconds,
    "target": _optional(_text), "declares": _texts, "tokens": _counts,
    "temperature": _number, "input": _digest, "output": _digest,
    "content": lambda value: type(value) is dict, "first": _whole, "startLine": _whole,
    "endLine": _whole, "conflict": lambda value: value is True,
    "parentAmbiguous": lambda value: value is True, "ambiguous": _texts,
    "a2a": lambda value: type(value) is dict and _text(value.get("method"))
    and _optional(_text)(value.get("task")) and set(value) <= {"method", "task"},
}
_SPAN_REQUIRED = ("key", "id", "trace", "cls", "sha256", "first")
# Each member of a mas-lab span's record, kept as read until its run is built (maslab_otel).
RECORD_MEMBERS: dict[str, Check] = {
    **{name: _text for name in ("key", "pointer", "name", "cls", "sha256")},
    **{name: _optional(_text) for name in ("trace", "span", "parent", "status")},
    "start": _optional(_seconds), "end": _optional(_seconds),
    "line": _whole, "input": _digest, "output": _digest,
    "content": lambda value: type(value) is dict,
    "values": lambda value: type(value) is dict and all(type(k) is str for k in value),
}
_RECORD_REQUIRED = ("key", "pointer", "name", "cls", "sha256", "line", "trace", "span",
                    "parent")
_CALL_RECORD_REQUIRED = ("values", "start", "end", "status")


def problem(position: Any) -> str | None:
    """What is wrong with a checkpoint line (its position and delta), or None."""
    if type(position) is not dict:
        return "a checkpoint that is not an object"
    for name, check in (("input", _text), ("seq", _whole), ("offset", _whole),
                        ("sha256", _text)):
        if not check(position.get(name)):
            return f"its {name}"
    delta = position.get("delta")
    if type(delta) is not dict:
        return "its delta"
    return _delta_problem(delta)


def _delta_problem(delta: dict[str, Any]) -> str | None:
    checks: tuple[tuple[str, Check], ...] = (
        ("events", _whole), ("kinds", _counts), ("unknown", _counts),
        ("runIds", lambda v: type(v) is dict and all(_text(k) and _text(x)
                                                     for k, x in v.items())),
        ("open", lambda v: type(v) is dict and all(_texts(x) for x in v.values())),
        ("records", lambda v: type(v) is list and all(type(r) is dict for r in v)),
        # An OTLP span's problem names its pointer and trace too; every other is of three.
        ("problems", lambda v: type(v) is list and all(
            _problem_ok(p, delta.get("format") == "otlp") for p in v)),
        ("calls", lambda v: type(v) is list and all(type(c) is dict for c in v)))
    for name, check in checks:
        if not check(delta.get(name)):
            return f"its delta's {name}"
    optional: tuple[tuple[str, Check], ...] = (
        ("format", lambda v: v in ("events", "otlp")), ("repeats", _whole),
        ("otherRuns", lambda v: type(v) is dict and all(
            type(x) is list and len(x) == 2 and all(_whole(n) for n in x) for x in v.values())),
        ("maslab", lambda v: type(v) is list and all(_record_ok(r) for r in v)),
        ("tree", _tree_ok))
    for name, check in optional:
        if delta.get(name) is not None and not check(delta[name]):
            return f"its delta's {name}"
    for call in delta["calls"]:
        wrong = _call_problem(call)
        if wrong is not None:
            return f"a call's {wrong}"
    return None


def _problem_ok(value: Any, spans: bool) -> bool:
    """A problem as the fold records it: [code, line, detail] (of a fold of ``spans``, an OTLP
    span's: and its pointer and trace)."""
    return (type(value) is list and len(value) in ((3, 5) if spans else (3,)) and _text(value[0])
            and value[0] in CODES
            and _whole(value[1]) and _text(value[2])
            and (len(value) == 3 or (_text(value[3]) and _optional(_text)(value[4]))))


def _record_ok(value: Any) -> bool:
    """A mas-lab span's record: a link's or an unknown span's without its values; a call's
    with them, named as the table names its class (maslab_otel._what)."""
    if type(value) is not dict or _members_problem(value, RECORD_MEMBERS,
                                                   _RECORD_REQUIRED) is not None:
        return False
    if value["cls"] in ("link", "unknown"):
        return True
    entry = maslab_otel.table()["calls"].get(value["name"])
    return (all(name in value for name in _CALL_RECORD_REQUIRED) and entry is not None
            and entry["class"] == value["cls"])


def _tree_ok(value: Any) -> bool:
    """The nesting's state (nesting.Tree.state): its open calls; each tangle, by the pair of
    agents (their JSON), its first line, count, the call started and the call it was under;
    each crossing, its line, the call ended and the call it crossed. That the calls named are
    the fold's is checked once every checkpoint is restored (nesting.Tree.names_known)."""
    return (type(value) is dict and _texts(value.get("open"))
            and type(value.get("tangles")) is dict
            and all(_pair(k) and _tangle(v) for k, v in value["tangles"].items())
            and type(value.get("crossings")) is list
            and all(type(c) is list and len(c) == 3 and _whole(c[0]) and _text(c[1])
                    and _text(c[2]) for c in value["crossings"]))


def _pair(key: str) -> bool:
    try:
        agents = json.loads(key)
    except ValueError:
        return False
    return _texts(agents)


def _tangle(value: Any) -> bool:
    return (type(value) is list and len(value) == 4 and _whole(value[0]) and _whole(value[1])
            and _text(value[2]) and _text(value[3]))


def _call_problem(call: dict[str, Any]) -> str | None:
    if "sha256" in call:  # an OTLP span's call
        return _members_problem(call, SPAN_MEMBERS, _SPAN_REQUIRED)
    return _members_problem(call, CALL_MEMBERS, _REQUIRED)


def _members_problem(value: dict[str, Any], members: dict[str, Check],
                     required: tuple[str, ...]) -> str | None:
    """The first member of ``value`` missing (of ``required``), unknown or of the wrong type."""
    for name in required:
        if name not in value:
            return name
    for name, member in value.items():
        check = members.get(name)
        if check is None or not check(member):
            return name
    return None
