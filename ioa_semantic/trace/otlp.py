"""OpenTelemetry traces read as calls: the OTLP JSON encoding of ``ExportTraceServiceRequest``.

The second input format of ``ioa-check trace``, beside mas-lab events. A request is one JSON
object with ``resourceSpans``; a file holds one request per line (as the Collector's file
exporter writes it) or one request as a document. Both spellings of the JSON mapping are
read: the OTLP specification's (ids in hexadecimal, enumerations as numbers) and protobuf's
canonical one (ids in base64, enumerations by name), since the SDK's own encoder with
protobuf's ``MessageToJson`` writes the latter. Unknown members are ignored, as OTLP asks of
receivers.

Which span is which call, and which attribute carries what, comes from one table,
``ioa_semantic/data/trace/otel-genai.json``: the GenAI semantic conventions are still in
development and their attribute names move, so a renamed attribute is one more name in a row
of that table. Spans the table does not map (HTTP, databases, A2A transport) are kept as
links only, so nesting passes through them. Attributes outside the table are never read: a
span's message content reaches the fold only as a digest and a length, like mas-lab payloads.

This module only reads: :func:`spans` turns one request into :class:`Span` values and
:class:`Problem` values (a span that cannot be used, an attribute that is ignored), each with
the JSON Pointer of its place in the request, so one bad span never stops the rest.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Container, Generator, Iterator
from decimal import Decimal
from functools import cache
from typing import Any, NamedTuple

import orjson

from .. import data
from .privacy import digest

# Span kinds and status codes: protobuf's enumeration names and the OTLP numbers.
_KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer",
          5: "consumer"}
_STATUSES = {0: None, 1: "ok", 2: "error"}
_HEX_TRACE = re.compile(r"[0-9a-f]{32}")
_HEX_SPAN = re.compile(r"[0-9a-f]{16}")
_NANOS = Decimal(10) ** 9
_INT64 = re.compile(r"-?[0-9]{1,19}")
# A tool definition list is a declaration, not content; its names are what is read, and a
# list this long is no agent's declaration.
_MAX_DEFINITIONS = 4096


class Span(NamedTuple):
    """One span as the fold needs it; free text only as digests unless content was asked for."""

    pointer: str  # its place in the request, a JSON Pointer
    trace: str  # trace id, lowercase hex
    span: str  # span id, lowercase hex
    parent: str | None  # parent span id, lowercase hex
    cls: str  # mas, agent, llm, tool, declaration (create_agent), or span (a link only)
    kind: str  # the span kind: internal, client, server, ...
    values: dict[str, Any]  # role -> value, for the roles of the table that are present
    start: str | None  # Unix seconds, exact decimal
    end: str | None
    status: str | None  # ok, error, or None when unset
    declares: tuple[str, ...] | None  # tool names of gen_ai.tool.definitions
    sha256: str  # of the span's canonical JSON: an exporter's retry repeats it exactly


class Problem(NamedTuple):
    pointer: str
    code: str  # trace.event-malformed, trace.span-unmapped (the span is not used) or
    # trace.attribute-malformed (a part of it is not used)
    detail: str
    trace: str | None = None  # the span's trace, when its id could be read

    @property
    def unused(self) -> bool:
        """Whether the span (or more) is left out, so that the evidence is incomplete."""
        return self.code != "trace.attribute-malformed"


_DEFINITIONS = "tool.definitions"
# Spans whose definitions are a declaration: the agent's own, its creation, its model calls.
_DECLARING = ("agent", "declaration", "llm")
# Roles that make a span a call of some kind: on a span the table cannot place, a tool call
# or a model call may be hidden.
_CALL_ROLES = ("tool.name", "model.request", "model.response")


@cache
def table() -> dict[str, Any]:
    """The mapping table: operations to call classes, roles to attribute names."""
    value: dict[str, Any] = data.read_json("trace", "otel-genai.json")
    return value


@cache
def _attribute_roles() -> dict[str, list[str]]:
    """Attribute name -> the roles it carries (one attribute may carry several)."""
    out: dict[str, list[str]] = {}
    for role, names in table()["attributes"].items():
        for name in names:
            out.setdefault(name, []).append(role)
    return out


def is_request(value: Any) -> bool:
    """Whether a JSON object is an OTLP trace request (its one required member)."""
    return isinstance(value, dict) and "resourceSpans" in value


def spans(request: dict[str, Any]) -> Iterator[Span | Problem]:
    """Every span of ``request``, or the problem that stops one, in document order."""
    for item in walk(request):
        if isinstance(item, Problem):
            yield item
        else:
            yield from read(*item)


# OTLP before 1.0 named a resource's scopes ``instrumentationLibrarySpans`` (each scope's
# own ``instrumentationLibrary``), and the Collector's file exporter wrote that member until
# 2022: the same spans, so a resource without ``scopeSpans`` is read through it rather than
# read as holding none.
LEGACY_SCOPES = "instrumentationLibrarySpans"


def scopes_of(resource: dict[str, Any]) -> tuple[str, Any]:
    """The member that holds a resource's scopes, and its value: ``scopeSpans``, or for a
    resource without it, OTLP 0.x's ``instrumentationLibrarySpans``."""
    if "scopeSpans" not in resource and LEGACY_SCOPES in resource:
        return LEGACY_SCOPES, resource[LEGACY_SCOPES]
    return "scopeSpans", resource.get("scopeSpans", [])


def walk(request: dict[str, Any]) -> Iterator[tuple[str, Any] | Problem]:
    """Each span of ``request`` as (its JSON Pointer, the span as written), or the problem of
    a part that holds no readable spans, in document order."""
    resource_spans = request.get("resourceSpans")
    if not isinstance(resource_spans, list):
        yield Problem("/resourceSpans", "trace.event-malformed", "resourceSpans is not an array")
        return
    for r, resource in enumerate(resource_spans):
        at = f"/resourceSpans/{r}"
        if not isinstance(resource, dict):
            yield Problem(at, "trace.event-malformed", "a resourceSpans entry is not an object")
            continue
        member, scopes = scopes_of(resource)
        if not isinstance(scopes, list):
            yield Problem(f"{at}/{member}", "trace.event-malformed", f"{member} is not an array")
            continue
        for s, scope in enumerate(scopes):
            where = f"{at}/{member}/{s}"
            listed = scope.get("spans", []) if isinstance(scope, dict) else None
            if not isinstance(listed, list):
                yield Problem(where, "trace.event-malformed",
                              f"a {member} entry is not an object with a spans array")
                continue
            for i, span in enumerate(listed):
                yield f"{where}/spans/{i}", span


def read(pointer: str, span: Any) -> Iterator[Span | Problem]:
    """One span read through the GenAI table, or the problems that stop it or a part of it."""
    if not isinstance(span, dict):
        yield Problem(pointer, "trace.event-malformed", "a span is not an object")
        return
    trace = _id(span.get("traceId"), 16)
    ident = _id(span.get("spanId"), 8)
    missing = [name for name, value in (("traceId", trace), ("spanId", ident)) if value is None]
    if missing:
        yield Problem(pointer, "trace.event-malformed",
                      f"the span has no valid {' or '.join(missing)} (16 and 8 bytes, not all "
                      "zero, in hexadecimal or base64)", trace)
        return
    assert trace is not None and ident is not None
    parent: str | None = None
    raw_parent = span.get("parentSpanId")
    if raw_parent not in (None, ""):
        parent = _id(raw_parent, 8)
        if parent is None:
            # Read as a root, the span would be judged as an entry call: not a guess to make.
            yield Problem(pointer, "trace.event-malformed",
                          "parentSpanId is not an 8-byte id; the span's caller would be a guess",
                          trace)
            return
    attributes: dict[str, Any] = {}
    unreadable: set[str] = set()
    where: dict[str, int] = {}
    named: dict[str, str] = {}
    for problem in _attributes(pointer, span.get("attributes", []), attributes, unreadable,
                               where=where, named=named):
        yield problem._replace(trace=trace)
    values = _roles(attributes)
    yield from _mistyped(pointer, values, where, named, trace)
    read = {role: value for role, (_, value) in values.items()}
    operation = read.get("operation")
    if unreadable & set(table()["attributes"]["operation"]) or (
            "operation" in read and not text(operation)):
        # What the span is cannot be read: it may be any call.
        yield Problem(pointer, "trace.event-malformed", f"{table()['attributes']['operation'][0]}"
                      " is not one readable string; what the span is is unknown", trace)
        return
    cls = table()["operations"].get(operation, "span") if isinstance(operation, str) else "span"
    if cls == "span" and any(role in read for role in _CALL_ROLES):
        said = operation if operation is not None else "no operation name"
        yield Problem(pointer, "trace.span-unmapped",
                      f"a span with {' and '.join(values[r][0] for r in _CALL_ROLES if r in read)}"
                      f" but {json.dumps(said) if operation else said}: it may be a call the "
                      "mapping does not know", trace)
        return
    kind = _enum(span.get("kind", 0), _KINDS, "SPAN_KIND_")
    if kind == "unknown":
        yield Problem(f"{pointer}/kind", "trace.attribute-malformed",
                      "kind is not a span kind; the span is read as of any kind", trace)
    start, end = yield from _times(pointer, span, trace)
    status_value = span.get("status")
    status = _enum(status_value.get("code", 0), _STATUSES, "STATUS_CODE_") if isinstance(
        status_value, dict) else None if status_value is None else "unknown"
    if status == "unknown":
        yield Problem(f"{pointer}/status", "trace.attribute-malformed",
                      "status is not an object with a status code; the outcome is not used",
                      trace)
        status = None
    declares: tuple[str, ...] | None = None
    if _DEFINITIONS in read:
        listed = read.pop(_DEFINITIONS)
        name = values[_DEFINITIONS][0]
        if cls not in _DECLARING:
            yield Problem(f"{pointer}/attributes", "trace.attribute-malformed",
                          f"{name} on a span that is no agent, create_agent or model span "
                          "declares nothing", trace)
        else:
            declares = _definitions(listed)
            if declares is None:
                yield Problem(f"{pointer}/attributes", "trace.attribute-malformed",
                              f"{name} is not a list of tool definitions with names; the span "
                              "declares nothing", trace)
    yield Span(pointer, trace, ident, parent, cls, kind, read, start, end, status, declares,
               _fingerprint(span))


# What each role's value must be (the GenAI conventions' types); a role not named here is
# read as it is (content, whose digest is made of any value; the tool definitions, read by
# _definitions; the operation, which decides what the span is and is checked with it).
_ROLE_TYPES = {
    **dict.fromkeys(("agent.id", "agent.name", "workflow.name", "conversation", "tool.name",
                     "model.request", "model.response", "response.id", "a2a.method",
                     "a2a.task"), "string"),
    **dict.fromkeys(("tokens.prompt", "tokens.completion", "tokens.cacheRead"), "count"),
    "temperature": "number",
    "finish": "strings",
}
# A type as a reason words it (see typed).
TYPE_WORDS = {"string": "a string", "number": "a number",
              "count": "a count (an integer, not negative)", "strings": "an array of strings",
              "content": "a value"}


def _mistyped(pointer: str, values: dict[str, tuple[str, Any]], where: dict[str, int],
              named: dict[str, str], trace: str) -> Iterator[Problem]:
    """The problems of the roles whose value is not of the role's type, each left out of
    ``values``: a tool named by bytes, a count given as a double or a negative number is
    evidence of nothing, and a guess if read (an empty value is no value, and no problem)."""
    for role, (name, value) in list(values.items()):
        kind = _ROLE_TYPES.get(role)
        if kind is None or typed(value, kind)[1]:
            continue
        del values[role]
        yield Problem(f"{pointer}/attributes/{where[name]}", "trace.attribute-malformed",
                      f"{_named_as(name, named.get(name))} is not {TYPE_WORDS[kind]}; it is "
                      "not used", trace)


def typed(value: Any, kind: str) -> tuple[Any, bool]:
    """A role's value as its type (``string``, ``number``, ``count``, ``strings``, or any
    ``content``) reads it; ``ok`` False for the wrong type. An empty string (what mas-lab
    writes for a value it does not have) or an empty value is no value, and no problem."""
    if value is None or value == "":
        return None, True
    if kind == "string":
        return value, isinstance(value, str)
    if kind == "number":  # an integer too large for a float is no number
        read_number = number(value)
        return read_number, read_number is not None
    if kind == "count":  # (a variable of its own: mypyc would hold an int typed float as one)
        read_count = count(value)
        return read_count, read_count is not None
    if kind == "strings":
        return value, isinstance(value, list) and all(isinstance(item, str) for item in value)
    return value, True


def _as_float(value: Any) -> float:
    if isinstance(value, float):
        return float(value)
    raise TypeError


def _fingerprint(span: dict[str, Any]) -> str:
    """The SHA-256 of a span's canonical JSON, to tell an exporter's retry from a conflict
    (an attribute conventions.normalise added is in it as written, without its SOURCE: the
    span's own, as its stores and states have recorded it)."""
    listed = span.get("attributes")
    if isinstance(listed, list) and any(isinstance(a, dict) and SOURCE in a for a in listed):
        span = {**span, "attributes": [{k: v for k, v in a.items() if k != SOURCE}
                                       if isinstance(a, dict) else a for a in listed]}
    try:
        # A number read with its text kept (intake.ExactNumber) is the float it is: a span
        # reads the same whichever parser read its line (events.parse).
        canonical = orjson.dumps(span, option=orjson.OPT_SORT_KEYS, default=_as_float)
    except TypeError:  # a lone surrogate, which orjson refuses to encode, or a deep value
        canonical = json.dumps(span, sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False).encode("utf-8", "surrogatepass")
    return hashlib.sha256(canonical).hexdigest()


def _roles(attributes: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """Role -> (the attribute read for it, its value); the table lists names newest first,
    and the first one present wins."""
    values: dict[str, tuple[str, Any]] = {}
    for name, value in attributes.items():
        for role in _attribute_roles().get(name, ()):
            order = table()["attributes"][role]
            held = values.get(role)
            if held is None or order.index(name) < order.index(held[0]):
                values[role] = (name, value)
    return values


def _id(value: Any, size: int) -> str | None:
    """An id as lowercase hex: OTLP JSON writes hex, protobuf's JSON mapping base64."""
    if not isinstance(value, str):
        return None
    pattern = _HEX_TRACE if size == 16 else _HEX_SPAN
    lowered = value.lower()
    if pattern.fullmatch(lowered):
        raw = bytes.fromhex(lowered)
    else:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(raw) != size:
            return None
    # The all-zero id is OTLP's "invalid".
    return raw.hex() if any(raw) else None


def _enum(value: Any, numbers: dict[int, Any], prefix: str) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return numbers.get(value, "unknown")
    if isinstance(value, str) and value.startswith(prefix):
        name = value.removeprefix(prefix).lower()
        for number, known in numbers.items():
            if (known or "unset") == name or (number == 0 and name in ("unset", "unspecified")):
                return known
    return "unknown"


def _times(pointer: str, span: dict[str, Any], trace: str) -> Generator[
        Problem, None, tuple[str | None, str | None]]:
    """The span's start and end, as exact Unix seconds; the problems of those not used."""
    start = _instant(span.get("startTimeUnixNano"))
    end = _instant(span.get("endTimeUnixNano"))
    for name, value in (("startTimeUnixNano", start), ("endTimeUnixNano", end)):
        if value is None and span.get(name) not in (None, "", "0", 0):
            yield Problem(f"{pointer}/{name}", "trace.attribute-malformed",
                          f"{name} is not a count of nanoseconds; the time is not used", trace)
    if start is not None and end is not None and Decimal(end) < Decimal(start):
        # Times that cannot both be right: an interval from them would be enclosed by, or
        # enclose, spans that hold neither end (whose call a call beside its agent is).
        yield Problem(f"{pointer}/endTimeUnixNano", "trace.attribute-malformed",
                      "endTimeUnixNano is before startTimeUnixNano; neither time is used", trace)
        return None, None
    return start, end


def _instant(value: Any) -> str | None:
    """Nanoseconds since the epoch (a string of digits, or a number) as exact Unix seconds."""
    if isinstance(value, bool):
        return None
    # Twenty digits reach the year 5138; Decimal divides them exactly.
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20:
        nanos = int(value)
    elif isinstance(value, int) and 0 <= value < 10**20:
        nanos = value
    else:
        return None
    if nanos == 0:
        return None  # OTLP's "not set"
    return format(Decimal(nanos) / _NANOS, "f")


def _attributes(pointer: str, listed: Any, out: dict[str, Any], unreadable: set[str],
                roles: Container[str] | None = None, where: dict[str, int] | None = None,
                named: dict[str, str] | None = None) -> Iterator[Problem]:
    """The span's attributes named in ``roles`` (default: the GenAI table's) as plain values;
    malformed or repeated ones are left out (and named in ``unreadable``). Attributes outside
    the table are not read at all: their values are not parsed, nor their keys named.
    ``where`` gets each value's index in the list, for the reasons of a later stage, and
    ``named`` the span's own attribute each one added by ``conventions.normalise`` stands for
    (whose index ``where`` gives)."""
    if not isinstance(listed, list):
        yield Problem(f"{pointer}/attributes", "trace.attribute-malformed",
                      "attributes is not an array; none is used")
        return
    if roles is None:
        roles = _attribute_roles()
    for a, attribute in enumerate(listed):
        at = f"{pointer}/attributes/{a}"
        key = attribute.get("key") if isinstance(attribute, dict) else None
        if not isinstance(key, str):
            yield Problem(at, "trace.attribute-malformed", "an attribute without a string key")
            continue
        if key not in roles:
            continue
        source = attribute.get(SOURCE)
        if isinstance(source, str):
            # Added for another convention's attribute (conventions.normalise): what is said
            # of it is said of that one, where it stands in the span.
            a = next((n for n, each in enumerate(listed) if isinstance(each, dict)
                      and each.get("key") == source), a)
            at = f"{pointer}/attributes/{a}"
        value, ok = _value(attribute.get("value"))
        if not ok:
            yield Problem(at, "trace.attribute-malformed",
                          f"{_named_as(key, source)} has no well-formed value; it is not used")
            unreadable.add(key)  # present but unreadable: not read from another entry either
            out.pop(key, None)
            continue
        if key in unreadable:
            continue
        if key in out and out[key] != value:
            # Two values for one key: which one the instrumentation meant is not known.
            yield Problem(at, "trace.attribute-malformed",
                          f"{_named_as(key, source)} is given twice with different values; "
                          "it is not used")
            unreadable.add(key)
            del out[key]
            continue
        out[key] = value
        if where is not None:
            where.setdefault(key, a)
            if isinstance(source, str) and named is not None:
                named.setdefault(key, source)


# The member of an attribute conventions.normalise adds that names the span's attribute it
# stands for (not an OTLP member: no span carries it).
SOURCE = "x-ioa-source"


def _named_as(key: str, source: Any) -> str:
    """An attribute as a reason names it: the span's own, where ``key`` was added for it."""
    return f"{source} (read as {key})" if isinstance(source, str) else key


def _value(value: Any, depth: int = 0) -> tuple[Any, bool]:
    """An OTLP AnyValue as a plain value; ``ok`` is False when it is not one."""
    if not isinstance(value, dict) or depth > 32:
        return None, False
    if not value:
        return None, True  # the empty value
    if len(value) != 1:
        return None, False
    (member, inner), = value.items()
    if member in ("arrayValue", "kvlistValue"):
        return _composite(member, inner, depth)
    return _scalar(member, inner)


def _scalar(member: str, inner: Any) -> tuple[Any, bool]:
    numeric = isinstance(inner, int | float) and not isinstance(inner, bool)
    if member == "stringValue":
        return inner, isinstance(inner, str)
    if member == "bytesValue":
        # Bytes (base64 in JSON) are no text: kept as the AnyValue they are, so that content
        # is digested with them and a name given as bytes is of the wrong type, never its
        # base64 read as the name.
        return {"bytesValue": inner}, isinstance(inner, str)
    if member == "boolValue":
        return inner, isinstance(inner, bool)
    if member == "intValue":
        if isinstance(inner, str) and _INT64.fullmatch(inner):
            value = int(inner)
            return value, -INT64_LIMIT <= value < INT64_LIMIT
        return inner, numeric and isinstance(inner, int) and -INT64_LIMIT <= inner < INT64_LIMIT
    if member == "doubleValue":
        double = number(inner)
        return (double, True) if double is not None else (None, False)
    return None, False


def _composite(member: str, inner: Any, depth: int) -> tuple[Any, bool]:
    if member == "arrayValue" and isinstance(inner, dict):
        items = inner.get("values", [])
        if not isinstance(items, list):
            return None, False
        out = []
        for item in items:
            plain, ok = _value(item, depth + 1)
            if not ok:
                return None, False
            out.append(plain)
        return out, True
    if member == "kvlistValue" and isinstance(inner, dict):
        items = inner.get("values", [])
        if not isinstance(items, list):
            return None, False
        pairs: dict[str, Any] = {}
        for item in items:
            key = item.get("key") if isinstance(item, dict) else None
            if not isinstance(key, str) or key in pairs:
                return None, False
            plain, ok = _value(item.get("value"), depth + 1)
            if not ok:
                return None, False
            pairs[key] = plain
        return pairs, True
    return None, False


def _definitions(value: Any) -> tuple[str, ...] | None:
    """The tool names of ``gen_ai.tool.definitions``: structured, or a JSON string of it."""
    if isinstance(value, str):
        from ..pipeline.intake import Limits
        from ..pipeline.intake import parse as parse_json

        parsed = parse_json(value.encode("utf-8", "surrogatepass"), Limits(len(value) * 4 + 16, 64),
                            array=True)
        if not parsed.ok:
            return None
        value = parsed.document
    if not isinstance(value, list) or len(value) > _MAX_DEFINITIONS:
        return None
    names: list[str] = []
    for definition in value:
        name = definition.get("name") if isinstance(definition, dict) else None
        if not isinstance(name, str) or not name:
            return None
        names.append(name)
    return tuple(dict.fromkeys(names))


# --- spans as the fold's calls -----------------------------------------------------------------


def call(span: Span, include_content: bool) -> dict[str, Any]:
    """The fold's plain-JSON call of a span (``first`` and the line numbers are the fold's)."""
    read = span.values
    out: dict[str, Any] = {"key": f"{span.trace}/{span.span}", "id": span.span,
                           "trace": span.trace, "cls": span.cls, "sha256": span.sha256,
                           "kindOf": span.kind}
    operation = text(read.get("operation"))
    if operation is not None:
        out["op"] = operation
    for member, value in (("parent", span.parent), ("start", span.start), ("end", span.end),
                          ("status", span.status), ("conversation", text(read.get("conversation")))):
        if value is not None:
            out[member] = value
    # An agent is who people declare: its name. Frameworks fill gen_ai.agent.id with a fresh
    # UUID per process or run, so the id is kept beside the name, for a manifest that gives
    # one explicitly (the audit matches it there), and names the agent only when it has no name.
    # A placeholder is no name, as for models: an agent "unknown" or " " is the agent its id
    # names, else none (its calls' caller unknown), never an undeclared agent of that name.
    name, ident = named(read.get("agent.name")), named(read.get("agent.id"))
    agent = name or ident
    if ident is not None and span.cls in ("agent", "declaration", "llm", "tool"):
        out["agentId"] = ident
    target = {"agent": agent, "llm": model(read), "tool": named(read.get("tool.name"))}.get(
        span.cls)
    if target is not None:
        out["target"] = target
    owner = agent if span.cls in ("agent", "declaration") else text(
        read.get("workflow.name")) if span.cls == "mas" else None
    if owner:
        out["agent"] = owner
    elif agent and span.cls in ("llm", "tool"):
        # A framework's own agent attribute on a model or tool span: the last way its agent is
        # read, after the agent span above it and an agent span beside it (audit.py).
        out["ownAgent"] = agent
    if span.declares is not None:
        out["declares"] = list(span.declares)
    method = text(read.get("a2a.method"))
    if method and span.cls == "span":
        out["a2a"] = {"method": method, "task": text(read.get("a2a.task"))}
    if span.cls == "llm":
        out.update(_model_call(read))
    for side in ("input", "output"):
        payload = read.get(f"content.{side}")
        if payload is not None:
            out[side] = digest(payload)
            if include_content:
                out.setdefault("content", {})[side] = payload
    return out


def _model_call(read: dict[str, Any]) -> dict[str, Any]:
    """Token counts, finish reasons, temperature and response id of a model span."""
    out: dict[str, Any] = {}
    tokens = {field: count(read.get(f"tokens.{field}"))
              for field in ("prompt", "completion", "cacheRead")}
    found = {field: value for field, value in tokens.items() if value is not None}
    # The ontology's total is prompt plus completion, as for mas-lab usage blocks.
    if "prompt" in found and "completion" in found:
        found["total"] = found["prompt"] + found["completion"]
    if found:
        out["tokens"] = found
    finish = read.get("finish")
    if isinstance(finish, list) and finish and all(isinstance(f, str) and f for f in finish):
        out["finish"] = ",".join(finish)
    temperature = number(read.get("temperature"))
    if temperature is not None:
        out["temperature"] = temperature
    response_id = text(read.get("response.id"))
    if response_id:
        out["responseId"] = response_id
    return out


# What instrumentations write when they do not know the model: no model name, so the call is
# capability.model-unknown rather than a use of a model called "unknown".
_MODEL_PLACEHOLDERS = frozenset({"unknown", "none"})


def model(read: dict[str, Any]) -> str | None:
    """The model of a model span: the one asked for, else the one that answered; a
    placeholder (``unknown``, ``none``, empty or blank, in any case) is no model."""
    for role in ("model.request", "model.response"):
        value = text(read.get(role))
        if value is not None and not is_placeholder_model(value):
            return value
    return None


def is_placeholder_model(name: str) -> bool:
    """Whether a recorded model (agent, tool) name says none is known (``unknown``, ``none``,
    blank)."""
    return not name.strip() or name.strip().lower() in _MODEL_PLACEHOLDERS


def named(value: Any) -> str | None:
    """A role's value when it is a name: a non-empty string that is no placeholder."""
    found = text(value)
    return None if found is None or is_placeholder_model(found) else found


def text(value: Any) -> str | None:
    """A role's value when it is a non-empty string."""
    return value if isinstance(value, str) and value else None


# Counts and integers past a signed 64-bit integer are none: OTLP's intValue is an int64, and
# the knowledge graph's JSON-LD writer refuses larger integers.
INT64_LIMIT = 1 << 63


def count(value: Any) -> int | None:
    """A count (tokens): an integer, not negative, within 64 bits; else None."""
    return value if type(value) is int and 0 <= value < INT64_LIMIT else None


def number(value: Any) -> float | None:
    """A JSON number as a float; None for anything else, and for an integer too large for a
    float (10^400 written as an integer), which is no temperature or score."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None
