"""Trace files in the other shapes people save OpenTelemetry spans in, read as OTLP requests.

``otlp.py`` reads the OTLP JSON encoding of ``ExportTraceServiceRequest``. Spans are also
commonly saved as:

* **Jaeger's JSON** (the query API's answer and the UI's "Download JSON"):
  ``{"data": [{"traceID", "spans": [...], "processes": {...}}]}``, each span with
  ``references``, ``startTime``/``duration`` in microseconds and typed ``tags``;
* **the SDK's console exporter output** (``ConsoleSpanExporter``): a stream of pretty-printed
  JSON span objects, one after the other, each with ``context.trace_id``/``span_id`` as
  ``0x…`` hex, ``parent_id``, ISO-8601 ``start_time``/``end_time``, ``attributes`` as a plain
  object and its ``resource``;
* **the Collector's file exporter with ``format: proto``**: each ``TracesData`` message
  preceded by its length as a 4-byte big-endian integer.

Each is recognised by its content, never by its file name, and turned into the OTLP request
``otlp.py`` reads, so that every span goes through the one GenAI table. What cannot be read
(a compressed file, protobuf without ``opentelemetry-proto`` installed) raises
:class:`FormatUnreadable` with one reason naming the format and how to convert it: the input is
then unreadable as a whole, never one warning per line.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO, Any, Protocol

from .._exceptions import IoaSemanticError

# The Collector's file exporter with compression: zstd's frame magic number.
_ZSTD = b"\x28\xb5\x2f\xfd"
_GZIP = b"\x1f\x8b"
# TracesData field 1 (resource_spans), length-delimited: the first byte of every message.
_RESOURCE_SPANS_TAG = 0x0A
# Bytes no JSON text holds raw (control characters but tab, line feed and carriage return).
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_JAEGER_KINDS = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_CONSOLE_KINDS = {"SpanKind.INTERNAL": 1, "SpanKind.SERVER": 2, "SpanKind.CLIENT": 3,
                  "SpanKind.PRODUCER": 4, "SpanKind.CONSUMER": 5}
_STATUS_CODES = {"UNSET": 0, "OK": 1, "ERROR": 2}
_CHUNK = 1 << 20
_BLANK = re.compile(r"[ \t\n\r]*")


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class FormatUnreadable(IoaSemanticError, ValueError):
    """A trace file in a format recognised but not read here; the message says how to convert."""


class MessageCutShort(FormatUnreadable):
    """The Collector's protobuf file ends inside message ``number`` (an exporter may be
    writing it): under ``--state`` the messages before are read, and that one next time."""

    def __init__(self, message: str, number: int) -> None:
        super().__init__(message)
        self.number = number


# --- detection ---------------------------------------------------------------------------------


def sniff(handle: IO[bytes]) -> str | None:
    """``protobuf``, ``compressed`` or ``pretty`` (JSON values over several lines each), from
    the start of a file; None for JSON Lines or a one-line document. The position is kept."""
    start = handle.tell()
    head = handle.read(4096)
    handle.seek(start)
    if head.startswith((_ZSTD, _GZIP)):
        return "compressed"
    if len(head) > 4:
        length = int.from_bytes(head[:4], "big")
        handle.seek(0, 2)
        size = handle.tell() - start
        handle.seek(start)
        # A length that fits the file: a JSON Lines file whose first line is four characters
        # ("null", "1234") would read as an impossible length.
        if 0 < length <= size - 4:
            # The Collector's legacy compression compresses each message after its length.
            if head[4:8] == _ZSTD or head[4:6] == _GZIP:
                return "compressed"
            if head[4] == _RESOURCE_SPANS_TAG:
                return "protobuf"
    if head[:1] == bytes([_RESOURCE_SPANS_TAG]) and _CONTROL.search(head[1:64]):
        # A protobuf message written without the Collector's length before it (a TracesData
        # or an export request saved as it was sent): text never holds those control bytes.
        return "bare-protobuf"
    # A JSON Lines file never has a line that is only an opening brace or bracket; the
    # console exporter's spans may follow a program's own log lines printed before them.
    lines = head.splitlines()[:-1] if len(head) == 4096 else head.splitlines()
    return "pretty" if any(line.strip() in (b"{", b"[") for line in lines) else None


# --- streams of values -------------------------------------------------------------------------


def values(handle: IO[bytes], max_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """Each JSON value of a stream of concatenated (pretty-printed) values, as (the line it
    starts on, its bytes); ``(line, b"")`` for a line of text between values that starts no
    value (a program's log line printed among the console exporter's spans); ``(line, None)``
    for the rest of the stream once a value cannot be read or is longer than ``max_bytes``."""
    decoder = json.JSONDecoder()
    text = codecs.getincrementaldecoder("utf-8")("surrogatepass")
    buffer, at = "", 0  # what is held, and where the next value starts in it
    line = 1
    ended = False
    while True:
        blank = _BLANK.match(buffer, at)
        assert blank is not None
        line += buffer.count("\n", at, blank.end())
        at = blank.end()
        # Where the line ends is looked for only off a value: values one after the other on
        # one long line would each scan the rest of it.
        whole_line = -1
        try:
            if at < len(buffer) and buffer[at] not in "{[":
                whole_line = buffer.find("\n", at)
            if at == len(buffer) or (buffer[at] not in "{[" and whole_line < 0):
                raise ValueError("more is needed")
            if buffer[at] not in "{[":
                yield line, b""  # text, not a value
                at, line = whole_line + 1, line + 1
                continue
            _, end = decoder.raw_decode(buffer, at)
        except ValueError as exc:
            # Not JSON on the line it starts ("[INFO] ready"): text between values, once
            # that line is whole (a string cut short says where it started, not where it
            # went wrong).
            text_line = (at < len(buffer) and buffer[at] not in "{[") or (isinstance(
                exc, json.JSONDecodeError) and not exc.msg.startswith(
                "Unterminated string") and buffer.find("\n", at, exc.pos) < 0)
            if text_line and isinstance(exc, json.JSONDecodeError):
                whole_line = buffer.find("\n", exc.pos)
            if whole_line >= 0:
                yield line, b""
                at, line = whole_line + 1, line + 1
                continue
            if ended:
                if at < len(buffer):
                    # The last line: text without a newline, or a value cut short.
                    yield line, b"" if text_line else None
                return
            if len(buffer) - at > max_bytes:
                yield line, None
                return
            # A value not yet whole is decoded again from its start once more is read: reading
            # as much again as is held makes the attempts add up to twice the value, where
            # fixed chunks would make a large Jaeger document quadratic.
            chunk = handle.read(max(_CHUNK, len(buffer) - at))
            ended = not chunk
            try:
                buffer = buffer[at:] + text.decode(chunk, final=ended)
            except UnicodeDecodeError:
                yield line, None
                return
            at = 0
            continue
        if end - at > max_bytes:
            yield line, None
            return
        piece = buffer[at:end]
        yield line, piece.encode("utf-8", "surrogatepass")
        line += piece.count("\n")
        at = end


def protobuf(handle: Readable, max_bytes: int, number: int = 0) -> Iterator[dict[str, Any]]:
    """Each ``TracesData`` message of a Collector file (``format: proto``) as a request in
    protobuf's JSON mapping, which ``otlp.py`` reads; from the handle's position, the first
    being message ``number + 1``. The handle is after each message when it is yielded."""
    try:
        from google.protobuf import json_format
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
    except ImportError:
        raise FormatUnreadable(
            "the Collector's file exporter output in protobuf (format: proto); reading it "
            "needs opentelemetry-proto, the otlp extra (pip install 'ioa-semantic[otlp]'), "
            "or have the file exporter write format: json") from None
    while True:
        size = handle.read(4)
        if not size:
            return
        number += 1
        length = int.from_bytes(size, "big")
        body = handle.read(length) if len(size) == 4 and length <= max_bytes else b""
        if len(size) < 4 or len(body) < length <= max_bytes:
            raise MessageCutShort(
                f"the Collector's file exporter output in protobuf: message {number} is cut "
                "short (an exporter may still be writing it: read it again once written); "
                "or have the file exporter write format: json", number)
        if len(body) != length or not body:
            raise FormatUnreadable(
                f"the Collector's file exporter output in protobuf: message {number} is cut "
                "short (an exporter may still be writing it: read it again once written) or "
                "longer than --max-line-bytes; or have the file exporter write format: json")
        if body[:4] == _ZSTD or body[:2] == _GZIP:
            raise compressed()
        # Every TracesData message the Collector writes starts with its resource_spans field:
        # bytes that do not (garbage after the messages) could parse as unknown fields of an
        # empty message and be skipped without a word.
        message = TracesData()
        try:
            if body[0] != _RESOURCE_SPANS_TAG:
                raise DecodeError("not a resource_spans field")
            message.ParseFromString(body)
        except DecodeError:
            raise FormatUnreadable(
                f"the Collector's file exporter output in protobuf: message {number} is not a "
                "TracesData message; have the file exporter write format: json") from None
        request: dict[str, Any] = json_format.MessageToDict(message)
        request.setdefault("resourceSpans", [])
        yield request


def bare_protobuf() -> FormatUnreadable:
    return FormatUnreadable(
        "a protobuf message (TracesData or ExportTraceServiceRequest) without the 4-byte "
        "big-endian length the Collector's file exporter writes before each message; write "
        "that length before it, or export OTLP/JSON (the file exporter's format: json)")


def compressed() -> FormatUnreadable:
    return FormatUnreadable(
        "a compressed file (zstd or gzip, as the Collector's file exporter writes with "
        "compression); decompress it first (zstd -d, gunzip)")


# --- Jaeger JSON -------------------------------------------------------------------------------


# The members of the Jaeger query API's answer around its data.
_JAEGER_ANSWER = ("total", "limit", "offset", "errors")


def is_jaeger(value: Any) -> bool:
    """Jaeger's JSON: a list of traces in ``data``; or the query API's answer with no trace
    (none found, or errors: ``data`` empty or null beside the answer's other members)."""
    data = value.get("data") if isinstance(value, dict) else None
    if isinstance(data, list) and data:
        return all(isinstance(t, dict) and "spans" in t and ("traceID" in t or "processes" in t)
                   for t in data)
    return isinstance(value, dict) and (data is None or data == []) and "data" in value and any(
        member in value for member in _JAEGER_ANSWER)


def from_jaeger(document: dict[str, Any]) -> dict[str, Any]:
    """Jaeger's trace JSON as one OTLP request: a resource per process of each trace. An
    answer that holds errors and no trace is no trace file: refused, saying the errors."""
    errors = document.get("errors")
    if not document["data"] and isinstance(errors, list) and errors:
        said = [e.get("msg") for e in errors if isinstance(e, dict)]
        shown = "; ".join(m for m in said if isinstance(m, str))[:200] or "unreadable errors"
        raise FormatUnreadable(
            f"Jaeger's query API answer with no trace but errors ({shown}); query the trace "
            "again (or download it from Jaeger's UI) and audit that answer")
    resource_spans: list[dict[str, Any]] = []
    for trace in document["data"] or []:
        processes = trace.get("processes") if isinstance(trace.get("processes"), dict) else {}
        by_process: dict[Any, list[Any]] = {}
        for span in trace["spans"] if isinstance(trace["spans"], list) else [trace["spans"]]:
            process = span.get("processID") if isinstance(span, dict) else None
            by_process.setdefault(process if isinstance(process, str) else None, []).append(
                _jaeger_span(span) if isinstance(span, dict) else span)
        for process, spans in by_process.items():
            described = processes.get(process) if process is not None else None
            attributes = []
            if isinstance(described, dict):
                if isinstance(described.get("serviceName"), str):
                    attributes.append(_attribute("service.name", described["serviceName"]))
                attributes.extend(_jaeger_tags(described.get("tags")))
            resource_spans.append({"resource": {"attributes": attributes},
                                   "scopeSpans": [{"spans": spans}]})
    return {"resourceSpans": resource_spans}


def _jaeger_span(span: dict[str, Any]) -> dict[str, Any]:
    tags: list[Any] = span["tags"] if isinstance(span.get("tags"), list) else []
    special = {t.get("key"): t.get("value") for t in tags if isinstance(t, dict)}
    out: dict[str, Any] = {
        "traceId": _hex_id(span.get("traceID"), 32), "spanId": _hex_id(span.get("spanID"), 16),
        "name": span.get("operationName"),
        "attributes": [a for a in _jaeger_tags(tags)
                       if a["key"] not in ("span.kind", "otel.status_code",
                                           "otel.status_description")],
        "kind": _JAEGER_KINDS.get(str(special.get("span.kind", "internal")).lower(), 0),
    }
    references: list[Any] = span["references"] if isinstance(span.get("references"),
                                                              list) else []
    # The parent is the CHILD_OF reference; else a FOLLOWS_FROM reference in the same trace,
    # which OpenTracing defines as a parent that does not wait for its child (Jaeger's UI
    # nests the span under it). Read as a root, the span would be judged an entry call.
    parents = [r for r in references if isinstance(r, dict) and r.get("refType") == "CHILD_OF"]
    parents = parents or [r for r in references if isinstance(r, dict) and r.get(
        "refType") == "FOLLOWS_FROM" and _same_trace(r.get("traceID"), out["traceId"])]
    if parents:
        out["parentSpanId"] = _hex_id(parents[0].get("spanID"), 16)
    start, duration = span.get("startTime"), span.get("duration")
    if isinstance(start, int) and not isinstance(start, bool) and start > 0:
        out["startTimeUnixNano"] = str(start * 1000)  # microseconds
        if isinstance(duration, int) and not isinstance(duration, bool) and duration >= 0:
            out["endTimeUnixNano"] = str((start + duration) * 1000)
    status = special.get("otel.status_code")
    code = _STATUS_CODES.get(status, 0) if isinstance(status, str) else 0
    if special.get("error") is True and code == 0:
        code = 2
    out["status"] = {"code": code}
    return out


def _same_trace(reference: Any, trace: Any) -> bool:
    return reference is None or _hex_id(reference, 32) == trace


def _jaeger_tags(tags: Any) -> list[dict[str, Any]]:
    out = []
    for tag in tags if isinstance(tags, list) else []:
        if isinstance(tag, dict) and isinstance(tag.get("key"), str):
            out.append(_attribute(tag["key"], tag.get("value")))
    return out


def _hex_id(value: Any, digits: int) -> Any:
    """Jaeger writes 64-bit trace ids in 16 hex digits: OTLP's are 128 bits, zero-padded."""
    if isinstance(value, str) and value and len(value) <= digits:
        return value.lower().rjust(digits, "0")
    return value


# --- the console exporter ----------------------------------------------------------------------


def is_console_span(value: Any) -> bool:
    context = value.get("context") if isinstance(value, dict) else None
    return isinstance(context, dict) and "trace_id" in context and "span_id" in context and (
        "name" in value)


def from_console(span: dict[str, Any]) -> dict[str, Any]:
    """One span of ``ConsoleSpanExporter`` as an OTLP request of that span and its resource."""
    context = span["context"]
    out: dict[str, Any] = {
        "traceId": _console_id(context.get("trace_id")),
        "spanId": _console_id(context.get("span_id")), "name": span.get("name"),
        # A kind that is not a string (a list, an object) is no kind, never a crash.
        "kind": _CONSOLE_KINDS.get(kind, 0) if isinstance(kind := span.get("kind"), str) else 0,
        "attributes": _plain_attributes(span.get("attributes")),
    }
    if span.get("parent_id") is not None:
        out["parentSpanId"] = _console_id(span["parent_id"])
    for member, field in (("start_time", "startTimeUnixNano"), ("end_time", "endTimeUnixNano")):
        nanos = _iso_nanos(span.get(member))
        if nanos is not None:
            out[field] = str(nanos)
    status = span.get("status")
    code = status.get("status_code") if isinstance(status, dict) else None
    out["status"] = {"code": _STATUS_CODES.get(code, 0) if isinstance(code, str) else 0}
    resource = span.get("resource")
    attributes = resource.get("attributes") if isinstance(resource, dict) else None
    return {"resourceSpans": [{"resource": {"attributes": _plain_attributes(attributes)},
                               "scopeSpans": [{"spans": [out]}]}]}


def _console_id(value: Any) -> Any:
    return value[2:] if isinstance(value, str) and value.startswith("0x") else value


def _iso_nanos(value: Any) -> int | None:
    """The console exporter's ``%Y-%m-%dT%H:%M:%S.%fZ`` (microseconds) as nanoseconds."""
    if not isinstance(value, str):
        return None
    try:
        instant = datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    delta = instant - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def _plain_attributes(attributes: Any) -> list[dict[str, Any]]:
    if not isinstance(attributes, dict):
        return []
    return [_attribute(key, value) for key, value in attributes.items()]


def _attribute(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": _any_value(value)}


def _any_value(value: Any) -> dict[str, Any]:
    """A plain value as an OTLP AnyValue; what is none of its kinds is left malformed for
    ``otlp.py`` to report."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"unknownValue": value}


def as_request(value: dict[str, Any]) -> dict[str, Any] | None:
    """The OTLP request a Jaeger document or a console exporter span stands for; None for
    anything else (an OTLP request, a mas-lab event, a record)."""
    if is_jaeger(value):
        return from_jaeger(value)
    if is_console_span(value):
        return from_console(value)
    return None
