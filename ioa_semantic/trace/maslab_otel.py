"""mas-lab's OTel export read as the mas-lab events it stands for.

When a mas-lab flavour sets ``instrumentation: otel_file``, the runtime writes its trace as
OpenTelemetry spans in the OTLP JSON encoding: one span per call, named ``TaskCall``,
``AgentCall``, ``LLMCall``, ``ToolCall``, ``ProcessingCall``, ``MemoryCall``, ``RAGQuery`` or
``MASCall``, carrying ``mas.*`` attributes (mas-lab's trajectory schema, "OTel export
alternative"). "OTel spans carry both start and end in a single record and are expanded to an
(e_start, e_end) event pair when converted": this module reads each such span into a plain
JSON record (:func:`spans`, per request, beside the GenAI reading of :mod:`.otlp`), and plans
the expansion of a run's records into the ``*_start``/``*_end`` events of the mas-lab
vocabulary (:class:`Plan`), which the events' fold then reads like any events file. Both
encodings so share one reading and one audit.

Which name is which call, and which attribute carries what, comes from one table,
``ioa_semantic/data/trace/otel-maslab.json``. Attributes outside it are never read, nor their
keys named; content (arguments, results, messages, responses) reaches a record only as a
digest and a length, unless content was asked for. The plan orders the events of a run by
time, so that spans written without ids nest as the schema's interval tree (the order is
explained at :meth:`Plan.events`); spans with ids name their calls by span id and their
callers by parent span id.

This module imports nothing of the fold; the fold imports it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from functools import cache
from typing import Any

from .. import data
from .._codes import finding
from .._findings import Finding, Severity
from . import conventions, otlp
from .calls import succeeded
from .privacy import Disclosure, digest

# A span name or unknown kind is named in reasons and counts at most this long: a hostile
# exporter may write a name of megabytes.
_SHOWN = 64


@cache
def table() -> dict[str, Any]:
    """The mapping table: span names to calls and links, roles to attribute names."""
    value: dict[str, Any] = data.read_json("trace", "otel-maslab.json")
    return value


@cache
def _roles() -> dict[str, str]:
    """Attribute name -> the role it carries."""
    return {name: role for role, row in table()["attributes"].items() for name in row["names"]}


@cache
def _operation_names() -> frozenset[str]:
    """The GenAI attributes that make a span one of the GenAI conventions'."""
    return frozenset(otlp.table()["attributes"]["operation"])


def shown(name: Any) -> str:
    """A span's name as reasons and counts show it."""
    if name is None:
        return "(no name)"
    if not isinstance(name, str):
        return "(a name that is not a string)"
    return name if len(name) <= _SHOWN else name[:_SHOWN] + "…"


# --- which convention a span follows ------------------------------------------------------------


def convention(span: Any) -> str:
    """``maslab``, ``genai``, or ``named`` (a mas-lab call's name on a span that carries no
    ``mas.*`` attribute and no GenAI operation: what it called is not recorded).

    A span is mas-lab's when it carries a ``mas.*`` attribute and either has one of the
    table's names or no GenAI operation; a span with a GenAI operation and stray ``mas.*``
    attributes under another name is the GenAI conventions' (they define it)."""
    if not isinstance(span, dict):
        return "genai"
    name = span.get("name")
    listed = span.get("attributes")
    keys = [a.get("key") for a in listed if isinstance(a, dict)] if isinstance(
        listed, list) else []
    prefix = table()["prefix"]
    has_mas = any(isinstance(k, str) and k.startswith(prefix) for k in keys)
    known = isinstance(name, str) and (name in table()["calls"] or name in table()["links"])
    if has_mas and known:
        return "maslab"
    if any(k in _operation_names() for k in keys if isinstance(k, str)):
        return "genai"
    if has_mas:
        return "maslab"
    return "named" if isinstance(name, str) and name in table()["calls"] else "genai"


def spans(request: dict[str, Any], include_content: bool) -> Iterator[
        otlp.Span | otlp.Problem | dict[str, Any]]:
    """Every span of ``request``: GenAI spans as :class:`.otlp.Span`, mas-lab spans as plain
    records, each preceded by the problems met on it, in document order."""
    for item in otlp.walk(request):
        if isinstance(item, otlp.Problem):
            yield item
            continue
        pointer, span = item
        kind = convention(span)
        if kind == "maslab":
            yield from read(pointer, span, include_content)
            continue
        if kind == "named":
            yield otlp.Problem(
                pointer, "trace.span-unmapped",
                f"a span named {shown(span['name'])}, mas-lab's name for a call, carries no "
                f"{table()['prefix']}* attribute and no GenAI operation: what it called, and "
                "for whom, is not recorded", otlp._id(span.get("traceId"), 16))
        # Other conventions' agent, model and tool spans read as the GenAI spans they are.
        yield from otlp.read(pointer, conventions.normalise(span))


# --- one span -----------------------------------------------------------------------------------


def _ids(pointer: str, span: dict[str, Any]) -> tuple[str | None, str | None, str | None,
                                                     otlp.Problem | None]:
    """(trace, span, parent) ids in hex, all None for a span written without ids (as the
    schema's example is), or the problem that makes them unusable."""
    given = {m: span.get(m) for m in ("traceId", "spanId", "parentSpanId")
             if span.get(m) not in (None, "")}
    if not given:
        return None, None, None, None
    trace = otlp._id(given.get("traceId"), 16)
    ident = otlp._id(given.get("spanId"), 8)
    if trace is None or ident is None:
        return None, None, None, otlp.Problem(
            pointer, "trace.event-malformed", "the span has ids, but no valid traceId and "
            "spanId (16 and 8 bytes, not all zero, in hexadecimal or base64)", trace)
    parent = None
    if "parentSpanId" in given:
        parent = otlp._id(given["parentSpanId"], 8)
        if parent is None:
            return None, None, None, otlp.Problem(
                pointer, "trace.event-malformed",
                "parentSpanId is not an 8-byte id; the span's caller would be a guess", trace)
    return trace, ident, parent, None


def _values(pointer: str, attributes: dict[str, Any], where: dict[str, int], trace: str | None
            ) -> tuple[dict[str, Any], list[otlp.Problem]]:
    """Role -> value; the table lists a role's names in order of preference, and the first
    one present with a value of the right type wins. mas-lab's stand-ins for "not recorded"
    (``unknown``, ``tool``) are no value."""
    rows = table()["attributes"]
    unrecorded = table()["unrecorded"]
    out: dict[str, tuple[int, Any]] = {}
    problems = []
    for name, raw in attributes.items():
        role = _roles()[name]
        value, ok = otlp.typed(raw, rows[role]["type"])
        if not ok:
            problems.append(otlp.Problem(
                f"{pointer}/attributes/{where[name]}", "trace.attribute-malformed",
                f"{name} is not {otlp.TYPE_WORDS[rows[role]['type']]}; it is not used", trace))
            continue
        if value is None or value in unrecorded.get(role, ()):
            continue
        rank = rows[role]["names"].index(name)
        if role not in out or rank < out[role][0]:
            out[role] = (rank, value)
    return {role: value for role, (_, value) in out.items()}, problems


def _name(role: str) -> str:
    """The attribute that carries a role, as reasons name it."""
    name: str = table()["attributes"][role]["names"][0]
    return name


def _what(name: Any, boundary: Any) -> tuple[str, str | None]:
    """(the span's class: a call class, ``link`` or ``unknown``; the reason it is unknown)."""
    calls, links = table()["calls"], table()["links"]
    attributes = f"{table()['prefix']}* attributes"
    if isinstance(name, str) and name in calls:
        if isinstance(boundary, str) and boundary != name:
            return "unknown", (f"the span is named {shown(name)} but its "
                               f"{_name('boundary')} says {shown(boundary)}: what it is is "
                               "not known")
        return calls[name]["class"], None
    if isinstance(name, str) and name in links:
        return "link", None
    if isinstance(boundary, str) and boundary in links:
        return "link", None  # mas-lab names its topology span after the application
    if name is None:
        return "unknown", f"a span with {attributes} has no name: what it is is not known"
    if not isinstance(name, str):
        return "unknown", (f"a span with {attributes} has a name that is not a string: what "
                           "it is is not known")
    quoted = json.dumps(shown(name), ensure_ascii=False)
    return "unknown", (f"a span with {attributes} is named {quoted}, which is no mas-lab span "
                       "name the table knows: it may be a call the audit cannot judge")


def _times(pointer: str, span: dict[str, Any], trace: str | None
           ) -> tuple[str | None, str | None, list[otlp.Problem]]:
    problems = []
    found: dict[str, str | None] = {}
    for member in ("startTimeUnixNano", "endTimeUnixNano"):
        found[member] = otlp._instant(span.get(member))
        if found[member] is None and span.get(member) not in (None, "", "0", 0):
            problems.append(otlp.Problem(f"{pointer}/{member}", "trace.attribute-malformed",
                                         f"{member} is not a count of nanoseconds; the time is "
                                         "not used", trace))
    start, end = found["startTimeUnixNano"], found["endTimeUnixNano"]
    if start is not None and end is not None and Decimal(end) < Decimal(start):
        problems.append(otlp.Problem(pointer, "trace.attribute-malformed", "the span ends "
                                     "before it starts; its times are not used", trace))
        start = end = None
    return start, end, problems


def _status(pointer: str, span: dict[str, Any], word: Any, trace: str | None
            ) -> tuple[str | None, list[otlp.Problem]]:
    """mas-lab's own word (``mas.status``: success, error, timeout...), else the span's status
    code; the two contradicting each other leave the outcome unknown."""
    problems = []
    raw = span.get("status")
    code = otlp._enum(raw.get("code", 0), otlp._STATUSES, "STATUS_CODE_") if isinstance(
        raw, dict) else None if raw is None else "unknown"
    if code == "unknown":
        problems.append(otlp.Problem(f"{pointer}/status", "trace.attribute-malformed",
                                     "status is not an object with a status code; it is not "
                                     "used", trace))
        code = None
    meant = _meant(word) if isinstance(word, str) else None
    if meant is not None and code is not None and meant != code:
        problems.append(otlp.Problem(f"{pointer}/status", "trace.attribute-malformed",
                                     f"{_name('status')} says {shown(word)} and the status code "
                                     f"{code}: the outcome is not used", trace))
        return None, problems
    return (word if isinstance(word, str) else code), problems


def _meant(word: str) -> str | None:
    """The status code a mas-lab outcome word stands for: the table's, else the one its
    success says (``timeout`` is no success: an error), else None (a word of neither)."""
    listed: str | None = table()["statuses"].get(word.lower())
    if listed is not None:
        return listed
    success = succeeded(word)
    return None if success is None else "ok" if success else "error"


def read(pointer: str, span: dict[str, Any], include_content: bool
         ) -> Iterator[otlp.Problem | dict[str, Any]]:
    """A mas-lab span as a record of what its events will say, after the problems met on it.

    A span that cannot be used yields its problem and no record."""
    trace, ident, parent, problem = _ids(pointer, span)
    if problem is not None:
        yield problem
        return
    attributes: dict[str, Any] = {}
    where: dict[str, int] = {}
    for met in otlp._attributes(pointer, span.get("attributes", []), attributes, set(),
                                _roles(), where):
        yield met._replace(trace=trace)
    values, problems = _values(pointer, attributes, where, trace)
    yield from problems
    name = span.get("name")
    cls, unknown = _what(name, values.pop("boundary", None))
    if unknown is not None:
        yield otlp.Problem(pointer, "trace.span-name-unknown", unknown, trace)
    start, end, problems = _times(pointer, span, trace)
    yield from problems
    if ident is None and cls not in ("link", "unknown") and (start is None or end is None):
        # Without ids a call is placed in the tree by its interval alone.
        yield otlp.Problem(pointer, "trace.event-malformed", "a span without ids and without "
                           "a start and an end time cannot be placed among the calls")
        return
    status, problems = _status(pointer, span, values.pop("status", None), trace)
    yield from problems
    record: dict[str, Any] = {
        "key": f"{trace}/{ident}" if ident else None, "pointer": pointer, "trace": trace,
        "span": ident, "parent": parent, "name": shown(name), "cls": cls,
        "sha256": otlp._fingerprint(span)}
    if cls in ("link", "unknown"):
        yield record
        return
    for side in ("input", "output"):
        payload = values.pop(f"content.{side}", None)
        if payload is not None:
            record[side] = digest(payload)
            if include_content:
                record.setdefault("content", {})[side] = payload
    record.update(values=values, start=start, end=end, status=status)
    yield record


def merge(records: dict[str, dict[str, Any]], record: dict[str, Any]) -> str:
    """Add ``record`` to a run's records: ``new``, ``repeat`` (the same span again, an
    exporter's retry), ``conflict`` (its id given with other contents: what it did and who
    called it are then unknown, whichever copy was the true one) or ``known`` (another copy
    of a span already in conflict: reported once)."""
    existing = records.get(record["key"])
    if existing is None:
        records[record["key"]] = record
        return "new"
    if existing["sha256"] == record["sha256"]:
        return "repeat"
    if existing.get("conflict"):
        return "known"
    existing["conflict"] = True
    return "conflict"


def group(source: str, record: dict[str, Any]) -> str:
    """The run a record belongs to: its trace; spans without ids, their input's (mas-lab
    writes its run id on its MAS and agent calls only, so it cannot tell the others' run)."""
    if record["trace"] is not None:
        return str(record["trace"])
    return f"\0{source}"


def has_calls(records: dict[str, dict[str, Any]]) -> bool:
    return any(r["cls"] in _CALL_CLASSES for r in records.values())


def as_links(records: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """mas-lab spans of no call (annotations, unknown names) in a trace of GenAI spans, as the
    GenAI reading's links (span id -> the fold's OTLP call): nesting passes through them."""
    return {r["span"]: {"key": r["key"], "id": r["span"], "trace": r["trace"], "cls": "span",
                        "sha256": r["sha256"], "kindOf": "internal", "first": r["line"],
                        **({"parent": r["parent"]} if r["parent"] else {})}
            for r in records.values() if r["span"]}


# --- a run's records as events ------------------------------------------------------------------


_CALL_CLASSES = ("mas", "agent", "llm", "tool", "processing")

# What a span given twice with other contents leaves unknown, as the GenAI reading names it.
_CONFLICTING = ("target", "parent")


class Plan:
    """The events a run's mas-lab records expand to, in the order they are fed to the fold,
    and what reading them met.

    ``genai`` holds the GenAI spans of the same trace (the fold's OTLP calls by span id):
    spans of no call (HTTP, databases) are passed through like mas-lab's links; GenAI calls
    are not read (``trace.convention-mixed``), since both conventions may write one call."""

    def __init__(self, records: dict[str, dict[str, Any]],
                 genai: dict[str, dict[str, Any]]) -> None:
        self.records = sorted(records.values(), key=_document)
        self.calls = [r for r in self.records if r["cls"] in _CALL_CLASSES]
        self._call_ids = {r["span"] for r in self.calls if r["span"]}
        self.spans = len(self.records) + len(genai)
        self.unused = 0
        self.mixed = 0
        # (code, the record or GenAI call concerned, the span ids of a cycle)
        self._problems: list[tuple[str, dict[str, Any], list[str]]] = []
        self.kinds: dict[str, int] = {}
        self.unknown: dict[str, int] = {}
        for record in self.records:
            counts = self.unknown if record["cls"] == "unknown" else self.kinds
            counts[record["name"]] = counts.get(record["name"], 0) + 1
        self._genai(genai)
        self._through: dict[str, str | None] = {
            r["span"]: r["parent"] for r in self.records
            if r["span"] and r["cls"] in ("link", "unknown")}
        self._through.update({i: c.get("parent") for i, c in genai.items()
                              if _passed(c) and i not in self._call_ids})
        self._parents: dict[str, tuple[str | None, bool]] = {}
        self.cut = self._cycles()

    def _genai(self, genai: dict[str, dict[str, Any]]) -> None:
        ids = {r["span"]: r for r in self.records if r["span"]}
        for ident, call in sorted(genai.items()):
            if ident in ids:
                # One span id, two contents: a conflict like any other.
                if not ids[ident].get("conflict"):
                    ids[ident]["conflict"] = True
                    self._problems.append(("trace.call-conflict", ids[ident], []))
                    self.unused += 1
                continue
            if not _passed(call):
                self._problems.append(("trace.convention-mixed", call, []))
                self.unused += 1
                self.mixed += 1

    def _cycles(self) -> set[str]:
        """The spans whose parent links form cycles: those links are not used."""
        links = {r["span"]: r["parent"] for r in self.records if r["span"]}
        links.update({i: p for i, p in self._through.items() if i not in links})
        state: dict[str, int] = {}
        cut: set[str] = set()
        by_span = {r["span"]: r for r in self.records if r["span"]}
        for start in links:
            path: list[str] = []
            current: str | None = start
            while current is not None and current in links and current not in state:
                state[current] = 1
                path.append(current)
                current = links[current]
            if current is not None and state.get(current) == 1:
                cycle = path[path.index(current):]
                cut.update(cycle)
                first = next((by_span[i] for i in cycle if i in by_span), None)
                if first is not None:
                    self._problems.append(("trace.parent-cycle", first, cycle))
            for ident in path:
                state[ident] = 2
        return cut

    def parent(self, record: dict[str, Any]) -> tuple[str | None, bool]:
        """The nearest call above ``record`` through links (its id, or None at the top), and
        whether that is known; unknown (a cycle) gives the id the span names."""
        if record["span"] in self.cut:
            return record["parent"], False
        passed: list[str] = []
        current: str | None = record["parent"]
        answer: tuple[str | None, bool] | None = None
        calls = self._call_ids
        while answer is None:
            if current is None or current in calls or current not in self._through:
                answer = (current, True)  # the top, a call, or a span the trace does not hold
            elif current in self._parents:
                answer = self._parents[current]
            elif current in self.cut:
                answer = (current, False)
            else:
                passed.append(current)
                current = self._through[current]
        for ident in passed:
            self._parents[ident] = answer
        return answer

    def events(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(record, event) for every call, in the order the fold reads them.

        By time, and at one instant: first the ends of spans that began before it (a span
        ending when another begins is its sibling, not its caller), then the starts, the
        longer span first (it encloses the shorter), and two spans of the same interval in
        the reverse of the file's order (exporters write a span when it ends, so the later
        one ended last: it is the caller); a span of no duration ends right after it starts
        (it encloses nothing), and the ends of spans that began before close innermost first.
        Spans with ids and without both times (their ids, not their place, say where they
        belong) come last, in the file's order."""
        calls = [r for r in self.calls if r.get("start") is not None and r.get("end") is not None]
        untimed = [r for r in self.calls if r not in calls]
        order = {id(r): n for n, r in enumerate(self.calls)}
        calls.sort(key=lambda r: (Decimal(r["start"]), -Decimal(r["end"]), -order[id(r)]))
        keyed: list[tuple[tuple[Any, ...], dict[str, Any], dict[str, Any]]] = []
        for pos, record in enumerate(calls):
            start, end = self._pair(record)
            s, e = Decimal(record["start"]), Decimal(record["end"])
            keyed.append(((0, s, 1, pos, 0), record, start))
            keyed.append(((0, e, 1, pos, 1) if s == e else (0, e, 0, -pos, 0), record, end))
        for pos, record in enumerate(untimed):
            start, end = self._pair(record)
            keyed.append(((1, Decimal(0), 0, pos, 0), record, start))
            keyed.append(((1, Decimal(0), 0, pos, 1), record, end))
        keyed.sort(key=lambda item: item[0])
        return [(record, event) for _, record, event in keyed]

    def _pair(self, record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The (start, end) events of one span. A span whose id was given with other contents
        names no agent, target or caller: either copy may be the true one. Its events still
        name the parent its (first) copy names, so that the fold does not place it by the
        order of events (under whichever call happens to be open, and reporting the agents'
        events as interleaved); :meth:`patches` then takes that caller away."""
        entry = table()["calls"][_name_of(record)]
        values = record["values"]
        trusted = not record.get("conflict")
        common: dict[str, Any] = {}
        run = record["trace"] or values.get("run")
        if run:
            common["run_id"] = run
        session = values.get("session") or values.get("run")
        if session:
            common["session_id"] = session
        if trusted and values.get("agent"):
            common["agent_id"] = values["agent"]
        if record["span"]:
            common["call_id"] = record["span"]
            parent, _ = self.parent(record)
            if parent is not None:
                common["parent_call_id"] = parent
        start = {"kind": f"{entry['events']}_start", **common}
        end = {"kind": f"{entry['events']}_end", **common}
        # Exact, as numbers: the fold reads no time from a string (the schema's is a float).
        if record.get("start") is not None:
            start["timestamp"] = Decimal(record["start"])
        if record.get("end") is not None:
            end["timestamp"] = Decimal(record["end"])
        if record.get("status") is not None:
            end["status"] = record["status"]
        if trusted:
            _targets(entry, values, start, end)
        return start, end

    def patches(self, fed: list[tuple[dict[str, Any], dict[str, Any]]]
                ) -> dict[int, dict[str, Any]]:
        """What the fold cannot know of each call, by the line number it was fed at (its
        start's place in ``fed``, from 1): the span's own line in its input, the digests of
        its content (never fed: checkpoints hold digests only) and, for spans on a cycle of
        parents, that the caller is unknown. A span whose id was given with other contents is
        the GenAI reading's conflicting span: no agent, target or caller (its parent id as
        written, never resolved), both named ambiguous, so that no agent is ever charged
        with it (attribution.py: ``capability.caller-unknown``)."""
        out: dict[int, dict[str, Any]] = {}
        for n, (record, event) in enumerate(fed, 1):
            if not event["kind"].endswith("_start"):
                continue
            patch: dict[str, Any] = {"first_line": record["line"], "input": record.get("input"),
                                     "output": record.get("output"),
                                     "content": record.get("content")}
            if record["span"] in self.cut:
                patch["parent"] = None
            if record.get("conflict"):
                patch.update(agent=None, target=None, parent=None, candidates=None,
                             ambiguous=_CONFLICTING)
            out[n] = patch
        return out

    def findings(self, disclose: Disclosure) -> list[Finding]:
        """What the plan met, each at its span's place (a GenAI span by its line)."""
        out = []
        for code, item, cycle in self._problems:
            if code == "trace.convention-mixed":
                out.append(finding(code, f"line {item['first']}: span "
                                   f"{disclose.call(item['id'])} is a GenAI call in a trace of "
                                   "mas-lab spans; the two conventions may write one call "
                                   "twice, so it is not used", f"/{item['first'] - 1}",
                                   severity=Severity.WARNING))
                continue
            where = f"/{item['line'] - 1}{item['pointer']}"
            if code == "trace.call-conflict":
                message = (f"line {item['line']}, {item['pointer']}: span "
                           f"{disclose.call(item['span'])} is also a GenAI span with other "
                           "contents; what it did, who called it and what it declared are "
                           "not used")
            else:
                more = f" and {len(cycle) - 5} more" if len(cycle) > 5 else ""
                message = (f"spans {', '.join(disclose.call(i) for i in cycle[:5])}{more} are "
                           "each other's ancestors; their parents are not used")
            out.append(finding(code, message, where, severity=Severity.WARNING))
        if not self.calls and not self.mixed:
            names = sorted({**self.kinds, **self.unknown}.items())
            listed = ", ".join(f"{name} x{count}" for name, count in names[:5])
            out.append(finding(
                "trace.all-spans-unmapped",
                f"none of the trace's {self.spans} spans is a call either convention maps "
                f"(mas-lab spans: {listed or 'none'}{' and more' if len(names) > 5 else ''})",
                severity=Severity.WARNING))
        return out


def _document(record: dict[str, Any]) -> tuple[int, tuple[int, ...]]:
    """A record's place in its input: its line, then the indexes of its JSON Pointer."""
    return record["line"], tuple(int(p) for p in record["pointer"].split("/") if p.isdigit())


def _name_of(record: dict[str, Any]) -> str:
    return str(record["name"])


def _passed(call: dict[str, Any]) -> bool:
    """Whether a GenAI span of a mas-lab trace is a link only (no call, no A2A request)."""
    return call["cls"] == "span" and "a2a" not in call


def _targets(entry: dict[str, Any], values: dict[str, Any], start: dict[str, Any],
             end: dict[str, Any]) -> None:
    """What the call executed, in the members of the mas-lab events of its class."""
    cls = entry["class"]
    if cls == "tool" and values.get("tool"):
        start["tool_name"] = end["tool_name"] = values["tool"]
    elif cls == "llm":
        if values.get("model"):
            start["model"] = end["model"] = values["model"]
        if values.get("temperature") is not None:
            start["temperature"] = values["temperature"]
        usage = {field: values[f"tokens.{role}"] for field, role in (
            ("prompt_tokens", "prompt"), ("completion_tokens", "completion"),
            ("total_tokens", "total")) if values.get(f"tokens.{role}") is not None}
        if usage:
            end["usage"] = usage
        if values.get("finish"):
            end["finish_reason"] = values["finish"]
    elif cls == "processing":
        kind = entry.get("processing") or values.get("processing.type")
        name = values.get("processing.name") or values.get("memory.type")
        for event in (start, end):
            if kind:
                event["processing_type"] = kind
            if name:
                event["processing_name"] = name
