"""Execution traces read as a stream and folded into the calls of each run.

The first stage of ``ioa-check trace``. An input is a mas-lab run folder (``run.json`` beside
``traces/events.jsonl`` or ``events.jsonl``), an events file (JSON Lines), or a file of
privacy-gated trace outcome records (one JSON object, an array of them, or JSON Lines).

Events are read one line at a time. A line that is not one JSON object is a finding with its
line number, and reading goes on; an event kind this stage does not know is counted, never
fatal. The ``*_start``/``*_end`` events of MAS, agent, LLM, tool and processing calls fold
into calls (:class:`Fold`): one per call id, and, for events without ids (as mas-lab's
trajectory schema documents them), by the order they nest in (``nesting.py``). At the end the
fold becomes an immutable :class:`Run` whose calls know their parents, with what a run
folder's ``run.json`` says of the session (``runfile.py``). Free text (prompts, arguments,
outputs) never enters the fold: only its digest and length, unless content was asked for.

The fold is written as plain JSON so that ``--state`` can checkpoint it (``state.py``); a
mas-lab run's calls are held compact meanwhile (``folded.py``).
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal, InvalidOperation
from typing import IO, Any, NamedTuple

import orjson

from .._codes import finding
from .._findings import Finding, Severity
from ..pipeline.intake import JSON_WHITESPACE, Limits
from ..pipeline.intake import parse as parse_json
from . import formats, instants, maslab_otel, nesting, otlp, runfile
from .attribution import Attribution
from .calls import Call, Digest, Run, id_key
from .folded import NO_RARE, FoldedCall
from .privacy import Disclosure, digest

# Event kind prefix -> call class; the class names follow the oxp-ontology (MASCall, ...).
CALL_CLASSES = {
    "mas_call": "mas",
    "execution": "agent",
    "llm_call": "llm",
    "tool_call": "tool",
    "processing_call": "processing",
}

# Kinds of the mas-lab event vocabulary that carry nothing the audit uses. They are known, so
# they are not counted as unknown; everything else unrecognised is.
KNOWN_KINDS = frozenset({
    "user_input", "user_response", "client_response", "audit",
    "context_assembled", "context_part_contributed", "context_steer",
    "state_update_start", "state_update_end", "boundary_ingress", "boundary_egress",
    "governance_authorize_start", "governance_authorize_end",
    "governance_validate_start", "governance_validate_end", "governance_decision",
    "obs_wrap_gov_authorize_start", "obs_wrap_gov_authorize_end",
    "obs_wrap_gov_validate_start", "obs_wrap_gov_validate_end",
    "contract_call_start", "contract_call_end",
    "observability_pre_execute_start", "observability_pre_execute_end",
    "observability_post_execute_start", "observability_post_execute_end",
    "wait_state_start", "wait_state_end",
})

# Members that make an event of an unknown kind a use the audit cannot judge (Fold._unknown_use).
_USE_MEMBERS = ("tool_name", "model")

# Members holding free text or payloads, by phase: reduced to digests, never copied.
_INPUT_MEMBERS = ("input", "arguments", "args", "messages", "prompt")
_OUTPUT_MEMBERS = ("output", "result", "response", "content")

# The required members of a trace outcome record (agent-utilities trace-outcome schema v1).
OUTCOME_REQUIRED = (
    "schema_version", "outcome_id", "trace_id", "context_id", "operation", "status",
    "started_at_ms", "ended_at_ms", "input_artifact_refs", "output_artifact_refs", "metrics",
    "policy_decision", "error_code", "error_detail_ref", "evaluation_scores",
)
_OUTCOME_STATUSES = ("succeeded", "failed", "cancelled", "denied")


def _is_count(value: Any) -> bool:
    return otlp.count(value) is not None


# Below it every whole number is a float exactly: 1771889088767.0 is the number written.
_EXACT_FLOATS = 2 ** 53


def _milliseconds(value: Any) -> int | None:
    """An outcome record's time in milliseconds, as its v1 schema admits one (JSON Schema
    2020-12's "integer": any number whose fraction is zero, 1771889088767.0 and 1.771889088767e12
    as well as 1771889088767): not negative, within 64 bits; else None. A float past 2**53
    may not be the number written, so it is not read."""
    if type(value) is float and value.is_integer() and 0 <= value < _EXACT_FLOATS:
        return int(value)
    return otlp.count(value)


def _is_milliseconds(value: Any) -> bool:
    return _milliseconds(value) is not None


def _is_refs(value: Any) -> bool:
    return type(value) is list and all(type(v) is str and v for v in value)


def _is_scores(value: Any) -> bool:
    # A number is a score when its float is finite: an integer too large for a float is none.
    # (an exact number, a float whose text is kept, is a number: otlp.number reads it.)
    return type(value) is dict and all(_finite(otlp.number(v)) for v in value.values())


def _finite(number: float | None) -> bool:
    return number is not None and math.isfinite(number)


def _is_optional_ref(value: Any) -> bool:
    return value is None or (type(value) is str and value != "")


# The members of agent-utilities' TraceOutcome v1 (trace-outcome.schema.json) that the
# checks above leave aside, each with what its schema admits.
_OUTCOME_MEMBERS: dict[str, Callable[[Any], bool]] = {
    "started_at_ms": _is_milliseconds,
    "ended_at_ms": _is_milliseconds,
    "input_artifact_refs": _is_refs,
    "output_artifact_refs": _is_refs,
    "metrics": _is_scores,
    "evaluation_scores": _is_scores,
    "policy_decision": lambda value: value in ("allow", "deny", "not_applicable"),
    "error_code": _is_optional_ref,
    "error_detail_ref": _is_optional_ref,
}
_OUTCOME_KNOWN = frozenset(OUTCOME_REQUIRED)

DEFAULT_MAX_LINE_BYTES = 16 << 20
_UNBOUNDED_DEPTH = 1 << 62


class Source(NamedTuple):
    """One input: what was given and where its events are."""

    given: str
    stream: str | None  # the file to read; None when the input is unusable
    run_folder: str | None
    problem: Finding | None  # why it cannot be read, naming no path (see unreadable)

    @property
    def key(self) -> str:
        return os.path.abspath(self.stream) if self.stream else self.given


def resolve(path: str) -> Source:
    """A run folder, an events file or a records file; an unusable path carries its finding."""
    if os.path.isdir(path):
        for candidate in (os.path.join(path, "traces", "events.jsonl"),
                          os.path.join(path, "events.jsonl")):
            if os.path.isfile(candidate):
                return Source(path, candidate, path, None)
        return Source(path, None, path, finding(
            "json.unreadable", "a folder without traces/events.jsonl or events.jsonl"))
    if os.path.isfile(path):
        return Source(path, path, None, None)
    # A named pipe or a device is never read: it could block the audit or never end.
    problem = "not a regular file or folder" if os.path.exists(path) else "no such file or folder"
    return Source(path, None, None, finding("json.unreadable", problem))


# The files of a run folder's traces/ named unread, at most (a folder of many is named by
# its first ones and a count).
_UNREAD_NAMED = 20


def _unread(source: Source, disclose: Disclosure) -> tuple[Finding, ...]:
    """What a run folder holds beside the events read that may be more of them, each said to
    be left unread, never silently (it may be the run's other half): with events in both
    places :func:`resolve` looks (the schema's ``traces/events.jsonl``, and
    ``events.jsonl``), the second; and every other file in ``traces/``, where the schema
    lays out ``events.jsonl`` alone."""
    if source.run_folder is None or source.stream is None:
        return ()
    found: list[Finding] = []
    other = os.path.join(source.run_folder, "events.jsonl")
    if source.stream != other and os.path.isfile(other):
        shown = disclose.path(other)
        found.append(finding(
            "trace.run-malformed", f"{shown}: the run folder also holds traces/events.jsonl, "
            "where the schema lays out a run's events, and only that one is read: this file "
            "is not", shown, severity=Severity.WARNING))
    traces = os.path.join(source.run_folder, "traces")
    try:
        names = sorted(name for name in os.listdir(traces)
                       if name != "events.jsonl" and not name.startswith("."))
    except OSError:  # no traces/ (events.jsonl read), or one that cannot be listed
        names = []
    if names:
        shown = disclose.path(traces)
        listed = ", ".join(disclose.path(name) for name in names[:_UNREAD_NAMED])
        more = f" and {len(names) - _UNREAD_NAMED} more" if len(names) > _UNREAD_NAMED else ""
        found.append(finding(
            "trace.run-malformed", f"{shown}: the run folder's traces/ also holds {listed}"
            f"{more}, which the schema does not lay out: {'it is' if len(names) == 1 else 'they are'}"
            " not read (only traces/events.jsonl is)", shown, severity=Severity.WARNING))
    return tuple(found)


class Line(NamedTuple):
    seq: int  # 1-based line number
    end: int  # byte offset just after the line
    data: bytes


def lines(handle: IO[bytes], seq: int = 0, max_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[Line]:
    """The lines of a binary stream from its current position; ``seq`` lines came before.

    A line longer than ``max_bytes`` is yielded truncated to ``max_bytes + 1`` bytes (so the
    reader can tell) and the rest of it is skipped, so memory stays bounded.
    """
    # The position is counted, not asked of the handle after each line: a buffered reader's
    # tell() is a system call (lseek), which was a twentieth of a long run's reading.
    end = handle.tell()
    while True:
        data = handle.readline(max_bytes + 1)
        if not data:
            return
        seq += 1
        end += len(data)
        if len(data) > max_bytes and not data.endswith(b"\n"):
            while True:  # drain the rest of an oversized line
                more = handle.readline(1 << 20)
                end += len(more)
                if not more or more.endswith(b"\n"):
                    break
        yield Line(seq, end, data)


def decode(line: Line, max_bytes: int = DEFAULT_MAX_LINE_BYTES) -> tuple[Any, tuple[str, str] | None]:
    """One line as JSON, or the (code, reason) that it is not; ``(None, None)`` for a blank line."""
    value, problem = parse(line.data, max_bytes)
    if problem is None and value is not None and not isinstance(value, dict):
        return None, ("json.not-object", "not a JSON object")
    return value, problem


def parse(data: bytes, max_bytes: int = DEFAULT_MAX_LINE_BYTES) -> tuple[Any, tuple[str, str] | None]:
    """Strict JSON as the intake stage reads it (UTF-8, no repeated member, no NaN, within
    ``max_bytes``), an array or any value allowed; ``(None, None)`` for blank input."""
    if len(data) <= max_bytes:
        if not data.strip(JSON_WHITESPACE):
            return None, None
        fast = _plain(data)
        if fast is not _NOT_PLAIN:
            return fast, None
    return _strict(data, max_bytes)


# What _plain answers for a line it leaves to the strict parser.
_NOT_PLAIN: Any = object()
# Levels of nesting past which a line is left to the strict parser: orjson nests 1,024 levels,
# the strict parser as deep as Python's recursion allows (fewer), and each says so its own way.
_PLAIN_DEPTH = 256
FAST_PATH = True  # the differential tests read every line both ways


def _plain(data: bytes) -> Any:
    """The line as the strict parser reads it, parsed by orjson, where that is certain; else
    :data:`_NOT_PLAIN`. orjson refuses what the strict parser refuses (invalid UTF-8, a byte
    order mark, NaN, a lone surrogate, control characters) but keeps a repeated member's last
    value and reads an integer past 64 bits as a float, so a line is taken only when neither
    can be.

    A repeated member: with no quote followed by whitespace (:func:`_suspect`), the closing
    quote of every member name is followed by its colon, so the line holds at least as many
    ``":`` whose quote is not escaped (:func:`_name_ends`) as member names (a string that
    begins with a colon only adds to them); the objects orjson makes have at most as many
    members as names, fewer where a name is repeated (or spelled again with escapes). So when
    the members are as many as those ``":``, no name was repeated. A quote followed by
    whitespace may be a member name before its colon, which ``":`` would not count (JSON
    Lines writers put none there).

    An integer past 64 bits: no float may be as large as 2^63 (it may have been written as an
    integer). Nor may the line nest deeper than :data:`_PLAIN_DEPTH` levels. A number whose
    float is not its exact value reads as a plain float here and as the same float with its
    text kept there (intake.ExactNumber): the trace audit reads numbers as floats either way
    (tests/test_trace_parse.py holds the folds equal)."""
    if not FAST_PATH or _suspect(data):
        return _NOT_PLAIN
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return _NOT_PLAIN  # the strict parser says what is wrong, its own way
    kind = type(value)
    if kind is not dict and kind is not list:
        return _NOT_PLAIN  # a line of a scalar: the strict parser's finding
    members = 0
    stack = [value]
    depths = [1]  # each container's level of nesting, beside it on the stack
    while stack:
        item = stack.pop()
        depth = depths.pop()
        if depth > _PLAIN_DEPTH:
            return _NOT_PLAIN
        if type(item) is dict:
            members += len(item)
            item = item.values()
        for inner in item:
            kind = type(inner)
            if kind is dict or kind is list:
                stack.append(inner)
                depths.append(depth + 1)
            elif kind is float and not -_LARGE < inner < _LARGE:
                return _NOT_PLAIN
    return value if members == _name_ends(data) else _NOT_PLAIN


_LARGE = float(1 << 63)


def _name_ends(data: bytes) -> int:
    """The ``":`` of ``data`` whose quote is not escaped (an odd run of backslashes before
    it): content that is JSON in a string (OTLP's messages, a tool's arguments) holds many
    ``\\":``, none of them a name's end. Found by ``bytes.find``, each run counted back from
    its last backslash (a regular expression went byte by byte: a third of a request's read)."""
    ends = data.count(b'":')
    at = data.find(b'\\":')
    while at != -1:
        run = 1
        while at >= run and data[at - run] == 0x5C:  # a backslash
            run += 1
        ends -= run % 2
        at = data.find(b'\\":', at + 3)
    return ends


def _suspect(data: bytes) -> bool:
    """Whether ``data`` holds a quote followed by whitespace: a line :func:`_plain` leaves to
    the strict parser. Each search of two bytes is made only where its whitespace is in the
    line at all (one memchr), a line's one newline being its last byte: four searches of two
    bytes were half of the fast path's own time on a long run."""
    if b'" ' in data or (b"\t" in data and b'"\t' in data) or (
            b"\r" in data and b'"\r' in data):
        return True
    newline = data.find(b"\n")
    return newline != -1 and (data.endswith(b'"\n') if newline == len(data) - 1
                              else b'"\n' in data)


def _strict(data: bytes, max_bytes: int) -> tuple[Any, tuple[str, str] | None]:
    # Nesting is bounded by the parser's recursion limit only, as trace payloads may nest.
    intake = parse_json(data, Limits(max_bytes, _UNBOUNDED_DEPTH), array=True)
    if not intake.ok:
        return None, (intake.findings[0].code, intake.findings[0].message)
    return intake.document, None


# The member of an event that names what a call of each class executes (a string, in the
# schema), beside agent_id.
_NAMED_BY = {"tool": "tool_name", "llm": "model"}


def _answered_model(event: dict[str, Any]) -> str | None:
    """The model an LLM event's raw ``response`` names, interned; None for none or a
    placeholder."""
    response = event.get("response")
    model = _text(response.get("model")) if isinstance(response, dict) else None
    if model is None or otlp.is_placeholder_model(model):
        return None
    return sys.intern(model)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


_PLAIN_INT = 10**31  # an integer of up to 31 digits: within the 10^30 bound below


def _instant(value: Any) -> str | None:
    """A Unix timestamp kept exactly as the trace wrote it, in plain decimal notation.

    ``xsd:decimal`` has no exponent form, and a timestamp beyond 10^30 seconds is no
    timestamp (formatting one with a huge exponent would exhaust memory).
    """
    kind = type(value)
    if kind is float:
        text = repr(value)
        # A float's shortest text without an exponent is its plain decimal notation already
        # (repr writes an exponent from 1e16 and below 1e-4; inf and nan have an n).
        if "e" not in text and "n" not in text:
            return text
    elif kind is int and -_PLAIN_INT < value < _PLAIN_INT:
        return str(value)
    return _decimal_instant(value)


def held_instant(value: Any) -> str | float | None:
    """``instants.held(_instant(value))``: a timestamp as a call holds it, or None (no
    timestamp). A float whose shortest text is plain decimal notation (repr writes an
    exponent from 1e16 and below 1e-4) is held as itself, without that text made and read
    back (twice the text of every event's time); zero is held as its text, as held keeps it
    (tests/test_trace_instants.py holds the two alike)."""
    if type(value) is float and _PLAIN_LOW <= abs(value) < _PLAIN_HIGH:
        return value
    instant = _instant(value)
    return None if instant is None else instants.held(instant)


# The floats whose repr is plain decimal notation: 1e-4 itself is "0.0001", the float below
# it "9.999999999999999e-05"; below 1e16, "1e+16" from it.
_PLAIN_LOW, _PLAIN_HIGH = 1e-4, 1e16


def _shown_value(value: Any) -> str:
    """A member's value in a message: as JSON, cut to a length a reason can carry."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _decimal_instant(value: Any) -> str | None:
    """:func:`_instant` for every value, through ``Decimal`` (its shortcut's reference). The
    schema's timestamp is a number: a string, even of digits, is none (a ``Decimal`` is the
    exact time of a span read as mas-lab events, never a value parsed from JSON text)."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    try:
        number = Decimal(repr(value) if isinstance(value, float) else str(value))
    except InvalidOperation:
        return None
    if not number.is_finite() or not -30 <= number.adjusted() <= 30:
        return None
    return format(number, "f")


_count = otlp.count  # a token count or a time in milliseconds: within 64 bits


_USAGE_NAMES = {"prompt": ("prompt_tokens", "input_tokens"),
                "completion": ("completion_tokens", "output_tokens"),
                "total": ("total_tokens",),
                "cacheRead": ("cache_read_input_tokens", "cached_tokens")}


def _usage(event: dict[str, Any]) -> tuple[dict[str, int], list[str]]:
    """Token counts from the usage blocks runtimes write (OpenAI and Anthropic spellings),
    and what is wrong with the block: a count that is not one (``"10"``, ``-1``) is not used,
    and a total that is not prompt plus completion is not written (the ontology's
    ``totalTokenCount`` is "prompt + completion": their sum is)."""
    response = event.get("response")
    usage = event.get("usage")
    if not isinstance(usage, dict) and isinstance(response, dict):
        usage = response.get("usage")
    if not isinstance(usage, dict):
        return {}, []
    out: dict[str, int] = {}
    problems: list[str] = []
    for field, keys in _USAGE_NAMES.items():
        for key in keys:
            value = usage.get(key)
            count = _count(value)
            if count is not None:
                out[field] = count
                break
            if value is not None:
                problems.append(f"the usage's {key} {_shown_value(value)} is not a count of "
                                "tokens; it is not used")
    if "prompt" in out and "completion" in out:
        total = out["prompt"] + out["completion"]
        if out.get("total", total) != total:
            problems.append(f"the usage's total_tokens {out['total']} is not prompt plus "
                            f"completion ({total}); their sum is the total used")
        out["total"] = total
    return out, problems


def _payload(event: dict[str, Any], members: tuple[str, ...]) -> Any:
    for member in members:
        if member in event and event[member] is not None:
            value = event[member]
            if member == "response" and isinstance(value, dict) and "content" in value:
                return value["content"]
            return value
    return None


class Fold:
    """The calls of one input so far; fed one event at a time.

    ``calls`` holds the calls of mas-lab events (:class:`FoldedCall`, compact: a long run's
    fold holds every call to the end), ``spans`` those of OTLP spans (plain JSON). ``touched``
    names the calls changed since the last :meth:`delta`, so a checkpoint writes only what is
    new.
    """

    def __init__(self, include_content: bool = False) -> None:
        self.include_content = include_content
        self.calls: dict[str, FoldedCall] = {}
        self.spans: dict[str, dict[str, Any]] = {}
        self.open_anonymous: dict[str, list[str]] = {}
        self.events = 0
        self.kinds: dict[str, int] = {}
        self.unknown: dict[str, int] = {}
        self.problems: list[list[Any]] = []  # [code, line, detail]
        self.records: list[dict[str, Any]] = []
        self.run_ids: dict[str, str] = {}  # "run_id" / "session_id" -> first non-empty value
        # Other runs' ids on events of this stream: [first line, events], by run id.
        self.other_runs: dict[str, list[int]] = {}
        self.touched: set[str] = set()
        # The interval tree of the events: where calls whose start names no parent nest.
        self.tree = nesting.Tree(self.calls, self.touched)
        self.format: str | None = None  # "events" (mas-lab events, outcome records) or "otlp"
        # mas-lab spans of OTLP input, by trace/span id (or line and place, without ids):
        # expanded to events when their runs are built (maslab_otel.Plan).
        self.maslab: dict[str, dict[str, Any]] = {}
        # Counters and open calls changed since the last delta: a checkpoint writes only these.
        self._changed: dict[str, set[str]] = {"kinds": set(), "unknown": set(), "open": set(),
                                              "maslab": set()}
        self.repeats = 0  # spans received again unchanged (an exporter's retry)
        self.spent = False  # built (build_worded): its calls became its run's
        self._new_problems = 0
        self._new_records = 0
        # LLM calls whose model only a response has named so far (by key): an event naming
        # the model asked for, read after it, replaces it rather than contradicting it.
        self._answered: set[str] = set()

    # --- feeding ---------------------------------------------------------------------------

    def line(self, line: Line, max_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        value, problem = decode(line, max_bytes)
        if problem is not None:
            self.problems.append([problem[0], line.seq, problem[1]])
        elif value is not None:
            self.value(line.seq, value)

    def value(self, seq: int, value: dict[str, Any]) -> None:
        # Jaeger's JSON and the console exporter's spans are read as the OTLP they stand for.
        self._read(seq, formats.as_request(value) or value)

    def _read(self, seq: int, value: dict[str, Any]) -> None:
        """One object, a Jaeger document or console span already made the OTLP it stands for."""
        if otlp.is_request(value):
            if self._format("otlp", seq):
                self.request(seq, value)
            return
        if not self._format("events", seq):
            return
        kind = value.get("kind")
        if isinstance(kind, str) and kind:
            if value.get("timestamp") is None:
                # "Every event carries these mandatory fields": kind, agent_id, timestamp, run_id
                # (the schema). One without a time is read, and said so (its call is not timed).
                self.problems.append(["trace.attribute-malformed", seq,
                                      "the event has no timestamp (a member the schema says "
                                      "every event carries); it times nothing"])
            self.event(seq, kind, value)
        elif "outcome_id" in value and "schema_version" in value:
            self.outcome(seq, value)
        else:
            self.problems.append(["trace.event-malformed", seq, "an object with neither a kind "
                                  "nor the members of a trace outcome record"])

    def array(self, seq: int, items: list[Any]) -> None:
        """The values of a JSON array at line ``seq`` (a ``.json`` document, or one of
        pretty-printed values): trace outcome records and OTLP requests are read, each at
        that line. mas-lab events are not: the trajectory schema writes them one JSON object
        per line (``events.jsonl``), and in an array they have no line of their own, by which
        calls without ids are told apart (they would fold into one another, and a call would
        be lost). They are refused, each array's with one problem that counts them."""
        events = 0
        for item in items:
            if not isinstance(item, dict):
                self.problems.append(["json.not-object", seq, "not an object (a record or an "
                                      "event)"])
            else:
                value = formats.as_request(item) or item
                if otlp.is_request(value) or not _text(value.get("kind")):
                    self._read(seq, value)
                else:
                    events += 1  # what _read would read as an event
        if events:
            self.problems.append([
                "trace.event-malformed", seq, f"a JSON array of {events} mas-lab event"
                f"{'s' if events > 1 else ''}: events are read one JSON object per line (JSON "
                "Lines, as mas-lab writes traces/events.jsonl), never from an array, where "
                f"they have no line of their own; {'they are' if events > 1 else 'it is'} not "
                "read (write one event per line)"])

    def _format(self, found: str, seq: int) -> bool:
        """A file holds one format; a line of the other is not read as either."""
        if self.format is None:
            self.format = found
        if self.format == found:
            return True
        what = {"otlp": "an OTLP trace request", "events": "an event or record"}
        self.problems.append(["trace.event-malformed", seq, f"{what[found]} in a file of "
                              f"{'OTLP requests' if self.format == 'otlp' else 'events'}"])
        return False

    # --- OpenTelemetry spans ---------------------------------------------------------------

    def request(self, seq: int, request: dict[str, Any]) -> None:
        """The spans of one OTLP request, each a complete call; problems per span."""
        for item in maslab_otel.spans(request, self.include_content):
            if isinstance(item, otlp.Problem):
                self.problems.append([item.code, seq, item.detail, item.pointer, item.trace])
            elif isinstance(item, otlp.Span):
                self._span(seq, item)
            else:
                self._maslab_span(seq, item)

    def _maslab_span(self, seq: int, record: dict[str, Any]) -> None:
        """A mas-lab span, kept as read until its run is built; a retry is counted once."""
        record["line"] = seq
        record["key"] = record["key"] or f"{seq}{record['pointer']}"
        merged = maslab_otel.merge(self.maslab, record)
        if merged == "new":
            self.events += 1
        elif merged == "repeat":
            self.repeats += 1
        elif merged == "conflict":
            self.problems.append(["trace.call-conflict", seq, record["span"], record["pointer"],
                                  record["trace"]])
        self._changed["maslab"].add(record["key"])

    def _span(self, seq: int, span: otlp.Span) -> None:
        key = f"{span.trace}/{span.span}"
        existing = self.spans.get(key)
        if existing is not None:
            if existing["sha256"] == span.sha256:
                self.repeats += 1
            elif not existing.get("conflict"):
                # Two different spans under one id: what the call was, who made it and what
                # it declared are not known, and either copy may have been the true one.
                self.problems.append(["trace.call-conflict", seq, span.span, span.pointer,
                                      span.trace])
                existing["target"] = None
                existing["parentAmbiguous"] = existing["conflict"] = True
                existing.pop("declares", None)
                existing["ambiguous"] = ["target", "parent"]
                self.touched.add(key)
            return
        self.events += 1
        call = otlp.call(span, self.include_content)
        call["first"] = call["startLine"] = call["endLine"] = seq
        self.spans[key] = call
        self.touched.add(key)

    # --- mas-lab events --------------------------------------------------------------------

    def event(self, seq: int, kind: str, event: dict[str, Any]) -> None:
        self.events += 1
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self._changed["kinds"].add(kind)
        for member in ("run_id", "session_id"):
            value = _text(event.get(member))
            if value and member not in self.run_ids:
                self.run_ids[member] = value
        # Every event carries "Same run_id as in run.json" (the schema): another id is another
        # run's event (two runs' files concatenated), reported, and judged as this run's.
        raw = event.get("run_id")
        other = _text(raw)
        if other and other != self.run_ids["run_id"]:
            self.other_runs.setdefault(other, [seq, 0])[1] += 1
        elif raw is not None and type(raw) is not str:
            # The schema's run_id is a string: one of another type names no run, and whose
            # run the event is cannot be told; said so rather than left out unseen.
            self.problems.append(["trace.attribute-malformed", seq,
                                  f"the run_id {_shown_value(raw)} is not a string; it names "
                                  "no run"])
        prefix, _, phase = kind.rpartition("_")
        cls = CALL_CLASSES.get(prefix) if phase in ("start", "end") else None
        if cls is None:
            if kind not in KNOWN_KINDS:
                self.unknown[kind] = self.unknown.get(kind, 0) + 1
                self._changed["unknown"].add(kind)
                self._unknown_use(seq, kind, event)
            return
        call = self._call_for(seq, cls, phase, event)
        started = call.startLine is not None
        self._merge(seq, call, phase, event)
        if phase == "start":
            # A start naming its own call as its parent names a cycle (build_worded), not
            # no parent: it is not placed by the order of events either.
            self.tree.opened(call, seq, by_order=not _text(event.get("parent_call_id")))
        else:
            self.tree.closed(call, seq, started)
        self.touched.add(call.key)

    def _unknown_use(self, seq: int, kind: str, event: dict[str, Any]) -> None:
        """An event of a kind the reader does not know that names a tool or a model: it may
        be a tool or model call under another name (another version's vocabulary), which
        the audit cannot judge, as a mas-lab span of a name the table does not know: the
        line is not used (so the run is at best indeterminate), never passed over."""
        carried = [m for m in _USE_MEMBERS if event.get(m) is not None and event.get(m) != ""]
        if carried:
            self.problems.append([
                "trace.span-name-unknown", seq, f"an event of kind {maslab_otel.shown(kind)}, "
                f"which the reader does not know, carries {' and '.join(carried)}: it may be a "
                "tool or model call the audit cannot judge (counted under unknownKinds)"])

    def _call_for(self, seq: int, cls: str, phase: str, event: dict[str, Any]) -> FoldedCall:
        raw_id = event.get("call_id")
        call_id = str(raw_id) if isinstance(raw_id, str | int) and not isinstance(
            raw_id, bool) else ""
        agent = _text(event.get("agent_id"))
        parent = _text(event.get("parent_call_id"))
        if not call_id:
            # A call without an id ends where its agent's innermost open call of its class
            # (under the same parent, when the events name one) ends: the schema's events
            # are emitted in order and nest. Its end need not repeat what it executes (an
            # llm_call_end names no model); where it does, it must agree (see _agree).
            signature = json.dumps([cls, agent, parent])
            stack = self.open_anonymous.setdefault(signature, [])
            self._changed["open"].add(signature)
            if phase == "start":
                key = f"~{seq}"
                stack.append(key)
                return self._new(key, "", cls, seq)
            if stack:
                key = stack.pop()
                if not stack:
                    del self.open_anonymous[signature]
                return self.calls[key]
            del self.open_anonymous[signature]
            return self._new(f"~{seq}", "", cls, seq)
        key = id_key(call_id)
        first = self.calls.get(key)
        if first is None:
            return self._new(key, call_id, cls, seq)
        # The id's latest call of the event's class: an id started again is another call,
        # and its own end (or start, read after its end) pairs with it, not with the first
        # call of the id; an execution and a tool call under one id pair each their own.
        again = (first._rare or NO_RARE).again
        latest_key = (again or {}).get(cls) or (key if first.cls == cls else None)
        latest = None if latest_key is None else self.calls[latest_key]
        if latest is None or (phase == "start" and latest.startLine is not None) or (
                phase == "end" and latest.endLine is not None):
            self.problems.append(["trace.call-conflict", seq, (latest or first).key])
            if first.again is None:
                first.again = {}
            first.again[cls] = made = f"{key}~{seq}"
            self.touched.add(key)
            return self._new(made, call_id, cls, seq)
        return latest

    def _named(self, parent: str, line: int, own: str) -> str | None:
        """The call a parent id names for a call (key ``own``) first seen at ``line``, where
        the id was started again: its latest call begun by then other than the call itself
        (a tool call given its execution's id names that execution); None for the id's first
        call (the build resolves the id to it)."""
        named = self.calls.get(id_key(parent))
        again = None if named is None else (named._rare or NO_RARE).again
        if again is None:
            return None
        before = [self.calls[k] for k in again.values()
                  if k != own and self.calls[k].first <= line]
        return max(before, key=lambda c: c.first).key if before else None

    def _new(self, key: str, call_id: str, cls: str, seq: int) -> FoldedCall:
        call = FoldedCall(key, call_id, cls, seq)
        self.calls[key] = call
        return call

    @staticmethod
    def _target(cls: str, event: dict[str, Any]) -> str | None:
        """What the call executes: the agent, model, tool or processing type, as the event says."""
        if cls == "agent":
            return _text(event.get("agent_id"))
        if cls == "llm":
            # A placeholder (mas-lab writes "unknown" where the model is not known) is no
            # model, as in the OTel readings: capability.model-unknown, never a name.
            model = _text(event.get("model"))
            if model is not None and otlp.is_placeholder_model(model):
                model = None
            return model
        if cls == "tool":
            return _text(event.get("tool_name")) or _text(event.get("name"))
        if cls == "processing":
            return _text(event.get("processing_type")) or _text(event.get("processing_name"))
        return None

    def _merge(self, seq: int, call: FoldedCall, phase: str, event: dict[str, Any]) -> None:
        if phase == "start":
            call.startLine = seq
        else:
            call.endLine = seq
        self._time(seq, call, phase, event.get("timestamp"))
        agent = _text(event.get("agent_id"))
        if agent is None:
            self._names_text(seq, event, "agent_id")
        self._agree(seq, call, "agent", agent)
        parent = _text(event.get("parent_call_id"))
        # mas-lab writes an execution_end whose parent is the call itself: not a parent. A
        # start that names its own call is a cycle of one call (build_worded reports it).
        if parent and (phase == "start" or (parent != call.id and call.parent is None)):
            call.parent = sys.intern(parent)  # the parent's every child names it
            named = self._named(parent, call.first, call.key)
            if named is not None or call._rare is not None:  # None is what it holds without
                call.parentKey = named
        self._name_target(seq, call, event)
        if call.cls == "processing" and call.label is None:
            call.label = _text(event.get("processing_name"))
        status = _text(event.get("status"))
        if status and phase == "end":
            call.status = sys.intern(status)
        if call.cls == "llm":
            self._model_call(seq, call, event)
        payload = _payload(event, _INPUT_MEMBERS if phase == "start" else _OUTPUT_MEMBERS)
        if payload is not None:
            if phase == "start":
                call.input = digest(payload)
            else:
                call.output = digest(payload)
            if self.include_content:
                if call.content is None:
                    call.content = {}
                call.content["input" if phase == "start" else "output"] = payload

    def _name_target(self, seq: int, call: FoldedCall, event: dict[str, Any]) -> None:
        """What the call executes, as this event names it (agreed with the call's other
        event). The model that answered (a raw response's "model", often the provider's dated
        name) stands in only where no event names the model asked for, which a manifest
        declares, in whichever order the events come: it never contradicts that one (the OTel
        readings: request before response)."""
        target = self._target(call.cls, event)
        if target is not None:
            if call.key in self._answered:  # a response's model stood in: this one is asked for
                self._answered.discard(call.key)
                call.target = None
            self._agree(seq, call, "target", target)
            return
        if call.cls in _NAMED_BY:
            self._names_text(seq, event, _NAMED_BY[call.cls])
        if call.cls == "llm" and call.target is None and not call.disputed("target"):
            call.target = _answered_model(event)
            if call.target is not None:
                self._answered.add(call.key)

    def _names_text(self, seq: int, event: dict[str, Any], member: str) -> None:
        """A name the schema types as a string (agent_id, tool_name, model) written as
        anything else names nothing, and is said so rather than left out unseen. Asked only
        where no name was read (a run's every event names its agent: nothing more per event)."""
        value = event.get(member)
        if value is not None and not isinstance(value, str):
            self.problems.append(["trace.attribute-malformed", seq,
                                  f"the {member} {_shown_value(value)} is not a string; "
                                  "it names nothing"])

    def _time(self, seq: int, call: FoldedCall, phase: str, stamp: Any) -> None:
        instant = held_instant(stamp)
        if instant is None:
            if stamp is not None:
                # The schema's timestamp is a number of Unix seconds on every event: one of
                # another kind times nothing, and is said so rather than left out unseen.
                self.problems.append(["trace.attribute-malformed", seq,
                                      f"the timestamp {_shown_value(stamp)} is not a number "
                                      "of Unix seconds; the call's time is not used"])
            return
        # Held as FoldedCall.start and .end hold them, set without their descriptors (an
        # interpreted call each, for every event of a run).
        if phase == "start":
            call._start = instant
        else:
            call._end = instant
        start, end = call._start, call._end  # as held: compared without their texts made
        if start is not None and end is not None and instants.earlier(end, start):
            # Times that cannot both be right. The end's is not used; the start's is kept,
            # for a call without one has no place among the others (a trajectory reads it
            # so), and the order of events, which decides the verdicts, stays.
            self.problems.append(["trace.attribute-malformed", call.endLine,
                                  f"the call ends (timestamp {call.end}) before it starts "
                                  f"(timestamp {call.start}); its end time is not used"])
            call.end = None

    def _model_call(self, seq: int, call: FoldedCall, event: dict[str, Any]) -> None:
        """What an LLM call's event says of the model's work: tokens, finish, temperature."""
        counts, problems = _usage(event)
        for field, value in counts.items():
            if call.tokens is None:
                call.tokens = {}
            call.tokens[field] = value
        for problem in problems:
            self.problems.append(["trace.attribute-malformed", seq, problem])
        finish = _text(event.get("finish_reason"))
        if finish:
            call.finish = finish
        temperature = otlp.number(event.get("temperature"))
        if temperature is not None:
            call.temperature = temperature
        response = event.get("response")
        response_id = _text(event.get("response_id")) or (
            _text(response.get("id")) if isinstance(response, dict) else None)
        if response_id:
            call.responseId = response_id

    def _agree(self, seq: int, call: FoldedCall, field: str, value: str | None) -> None:
        """Start and end must name the same agent and target; a disagreement is ambiguous
        (the member None, and named in ``ambiguous``)."""
        if value is None:
            return
        current = getattr(call, field)
        if current is None:
            if call._rare is None or not call.disputed(field):
                # Agents, tools and models are few, named by every call: held once (interned).
                setattr(call, field, sys.intern(value))
        elif current != value:
            self.problems.append(["trace.call-conflict", seq, call.key])
            setattr(call, field, None)
            if call.ambiguous is None:
                call.ambiguous = []
            call.ambiguous.append(field)

    def outcome(self, seq: int, record: dict[str, Any]) -> None:
        """A trace outcome record: identities are opaque and payloads references, by design."""
        missing = [m for m in OUTCOME_REQUIRED if m not in record]
        wrong: list[str] = [m for m in ("outcome_id", "trace_id", "context_id", "operation")
                            if m in record and not _text(record[m])]
        if record.get("status") not in _OUTCOME_STATUSES and "status" in record:
            wrong.append("status")
        if record.get("schema_version") != "1":
            wrong.append("schema_version")
        wrong.extend(m for m, fits in _OUTCOME_MEMBERS.items() if m in record and not fits(record[m]))
        # The v1 schema admits no other member ("additionalProperties": false): a record that
        # carries one (a prompt, a response) is not the content-free record it claims to be.
        # Their names are counted, never shown: they may be the very content kept out.
        extra = sum(1 for m in record if m not in _OUTCOME_KNOWN)
        if missing or wrong or extra:
            detail = "; ".join(filter(None, (
                f"missing {', '.join(missing)}" if missing else "",
                f"malformed {', '.join(wrong)}" if wrong else "",
                f"{extra} member{'s' if extra > 1 else ''} the v1 schema does not define"
                if extra else "")))
            self.problems.append(["trace.event-malformed", seq, f"a trace outcome record: {detail}"])
            return
        self.records.append({
            "line": seq, "outcome": record["outcome_id"], "trace": record["trace_id"],
            "operation": record["operation"], "status": record["status"],
            "start": _milliseconds(record.get("started_at_ms")),
            "end": _milliseconds(record.get("ended_at_ms")),
            "inputs": len(record["input_artifact_refs"]),
            "outputs": len(record["output_artifact_refs"]),
        })
        self.run_ids.setdefault("trace_id", record["trace_id"])

    # --- checkpoints -----------------------------------------------------------------------

    def delta(self) -> dict[str, Any]:
        """What changed since the last delta, and the counters as they are now."""
        changed = self._changed
        out = {
            # A fold holds calls of one format: mas-lab events' calls or OTLP spans.
            "calls": [_paired(self.spans[key])
                      for key in sorted(self.touched, key=self._span_order)]
            if self.spans else [_paired(self.calls[key].as_json())
                                for key in sorted(self.touched, key=self._order)],
            # An open stack emptied since is written empty: the restore removes it.
            "open": {s: self.open_anonymous.get(s, []) for s in sorted(changed["open"])},
            "events": self.events,
            "kinds": {k: self.kinds[k] for k in sorted(changed["kinds"])},
            "unknown": {k: self.unknown[k] for k in sorted(changed["unknown"])},
            "runIds": self.run_ids,
            "problems": self.problems[self._new_problems:],
            "records": self.records[self._new_records:],
            "format": self.format,
            "repeats": self.repeats,
            "maslab": [_paired(self.maslab[key]) for key in sorted(changed["maslab"])],
            "otherRuns": self.other_runs,
        }
        tree = self.tree.state()
        if tree is not None:
            out["tree"] = tree
        self.forget_changes()
        return out

    def forget_changes(self) -> None:
        """Let go of what changed since the last delta: once a delta is taken, and for a fold
        no checkpoint reads after each batch (it would otherwise hold every call's key to the
        end of its input, about 40 bytes a call)."""
        self.touched.clear()  # the tree holds this set too
        for changed in self._changed.values():
            changed.clear()
        self._new_problems = len(self.problems)
        self._new_records = len(self.records)

    def _order(self, key: str) -> tuple[int, str]:
        return self.calls[key].first, key

    def _span_order(self, key: str) -> tuple[int, str]:
        # The spans of one OTLP request share their line: the key orders them.
        return int(self.spans[key]["first"]), key

    def restore(self, delta: dict[str, Any]) -> None:
        for call in delta["calls"]:
            _digests(call)
            # A span's call has its digest (sha256); an event's call never has one.
            if "sha256" in call:
                self.spans[call["key"]] = call
            else:
                self.calls[call["key"]] = FoldedCall.of(call)
        for signature, stack in delta["open"].items():
            if stack:
                self.open_anonymous[signature] = list(stack)
            else:
                self.open_anonymous.pop(signature, None)
        self.events = delta["events"]
        self.kinds.update(delta["kinds"])
        self.unknown.update(delta["unknown"])
        self.run_ids = dict(delta["runIds"])
        self.other_runs = {k: list(v) for k, v in delta.get("otherRuns", {}).items()}
        self.problems.extend(delta["problems"])
        self.records.extend(delta["records"])
        self.format = delta.get("format", self.format)
        self.repeats = delta.get("repeats", 0)
        if "tree" in delta:
            self.tree.load(delta["tree"])
        for record in delta.get("maslab", ()):
            _digests(record)
            self.maslab[record["key"]] = record
        self._new_problems = len(self.problems)
        self._new_records = len(self.records)

    def names_known(self) -> bool:
        """Whether every call the fold's calls, open anonymous calls and nesting name is one
        of its calls (a fold restored from checkpoints edited or damaged may name others)."""
        calls = self.calls
        for call in calls.values():
            named = [call.placed] if "placed" in call else []
            named += [call.parentKey, *(call.again or {}).values(), *(call.candidates or ())]
            if any(key is not None and key not in calls for key in named):
                return False
        return (all(key in calls for stack in self.open_anonymous.values() for key in stack)
                and self.tree.names_known())


def _paired(call: dict[str, Any]) -> dict[str, Any]:
    """A call of the fold as its checkpoint writes it: plain JSON, its digests as pairs
    (:func:`_digests` reads them back)."""
    if isinstance(call.get("input"), Digest) or isinstance(call.get("output"), Digest):
        call = dict(call)
        for side in ("input", "output"):
            value = call.get(side)
            if isinstance(value, Digest):
                call[side] = value.as_pair()
    return call


def _digests(call: dict[str, Any]) -> None:
    """A call of a checkpoint with its digests as the fold holds them (its JSON has pairs)."""
    for side in ("input", "output"):
        value = call.get(side)
        if value is not None:
            call[side] = Digest.of(value)


def unreadable(source: Source, disclose: Disclosure) -> Run:
    """The run of an input that cannot be read; its problem (a message naming no path) is
    prefixed with the input's path as ``disclose`` shows it: under ``--opaque-ids`` a path
    names a person or a run as often as a run id does."""
    assert source.problem is not None
    problem = source.problem
    worded = problem._replace(message=f"{disclose.path(source.given)}: {problem.message}")
    return Run(source.given, None, None, None, (), 0, {}, {}, (), (worded,), 0, False)


def runs(source: Source, fold: Fold, disclose: Disclosure) -> list[Run]:
    """The runs of one input: one for mas-lab events and records, one per trace for OTLP."""
    if fold.format != "otlp":
        return [build(source, fold, disclose)]
    return otlp_runs([(source, fold)], disclose)


def otlp_runs(inputs: list[tuple[Source, Fold]], disclose: Disclosure,
              shared: dict[str | None, tuple[Call, ...]] | None = None) -> list[Run]:
    """The runs of OTLP inputs read together, one per trace id: a trace whose spans several
    files hold (each service's exporter its own file, or a rotated file) is one run.
    ``shared``: the calls of the same traces' runs worded otherwise, by trace id: a run whose
    calls equal them holds those, so that its calls are held once."""
    by_trace: dict[str, dict[str, dict[str, Any]]] = {}
    files: dict[str, list[str]] = {}  # trace -> the inputs holding its spans, in input order
    # A problem of a span whose trace is known belongs to that trace's run. One of a line, or
    # of a span without a readable trace id, could hide a span of any trace: every run counts
    # it as unused evidence, and the first run reports it (each once: n traces and n problems
    # make n findings, not n squared).
    own: dict[str | None, list[Finding]] = {}
    unused: dict[str | None, int] = {}
    several = len(inputs) > 1
    # mas-lab spans, by run (maslab_otel.group): copies, as reading several inputs marks them.
    maslab: dict[str, dict[str, dict[str, Any]]] = {}
    for source, fold in inputs:
        # The input as the reasons name it: under --opaque-ids a path is withheld like an id.
        shown = disclose.path(source.given)
        for call in fold.spans.values():
            spans = by_trace.setdefault(call["trace"], {})
            known = spans.get(call["id"])
            if source.given not in files.setdefault(call["trace"], []):
                files[call["trace"]].append(source.given)
            if known is None:
                spans[call["id"]] = call
            elif known["sha256"] != call["sha256"] and not known.get("conflict"):
                # The same span id in two inputs, with other contents (a copy, not the fold's).
                spans[call["id"]] = {**known, "target": None, "parentAmbiguous": True,
                                     "conflict": True, "ambiguous": ["target", "parent"]}
                spans[call["id"]].pop("declares", None)
                own.setdefault(call["trace"], []).append(finding(
                    "trace.call-conflict", f"{shown}: span {disclose.call(call['id'])} "
                    "is given in two inputs with different contents; what it did, who called "
                    "it and what it declared are not used", f"/{call['first'] - 1}",
                    severity=Severity.WARNING))
                unused[call["trace"]] = unused.get(call["trace"], 0) + 1
        for record in fold.maslab.values():
            group = maslab_otel.group(source.given, record)
            if source.given not in files.setdefault(group, []):
                files[group].append(source.given)
            if maslab_otel.merge(maslab.setdefault(group, {}), dict(record)) == "conflict":
                own.setdefault(group, []).append(finding(
                    "trace.call-conflict", f"{shown}: span {disclose.call(record['span'])}"
                    " is given in two inputs with different contents; what it did and who "
                    "called it are not used", f"/{record['line'] - 1}{record['pointer']}",
                    severity=Severity.WARNING))
                unused[group] = unused.get(group, 0) + 1
        for problem in fold.problems:
            trace = problem[4] if len(problem) > 4 else None
            trace = trace if trace in by_trace or trace in maslab else None
            own.setdefault(trace, []).append(_worded(problem, disclose,
                                                     shown if several else None))
            if _unused(problem):
                unused[trace] = unused.get(trace, 0) + 1
    everywhere = unused.get(None, 0)
    if not by_trace and not maslab:
        return [Run(", ".join(s.given for s, _ in inputs), None, None, None, (),
                    sum(f.events for _, f in inputs), {}, {}, (), tuple(own.get(None, [])),
                    everywhere, True, unit="spans")]
    for trace in [t for t in maslab if t in by_trace and not maslab_otel.has_calls(maslab[t])]:
        # A GenAI trace holding mas-lab spans of no call is the GenAI reading's.
        by_trace[trace].update(maslab_otel.as_links(maslab.pop(trace)))
    out = []
    for n, trace in enumerate(sorted(set(by_trace) | set(maslab))):
        problems = own.get(trace, []) + (own.get(None, []) if n == 0 else [])
        skipped = everywhere + unused.get(trace, 0)
        if trace in maslab:
            run = _maslab_run(", ".join(files[trace]), maslab[trace], by_trace.get(trace, {}),
                              disclose, problems, skipped)
        else:
            run = _otlp_run(", ".join(files[trace]), trace, list(by_trace[trace].values()),
                            disclose, problems, skipped)
        calls = shared.get(run.run_id) if shared is not None else None
        out.append(run._replace(calls=calls) if calls == run.calls else run)
    return out


def _maslab_run(source: str, records: dict[str, dict[str, Any]], genai: dict[str, dict[str, Any]],
                disclose: Disclosure, problems: list[Finding], skipped: int) -> Run:
    """The run of a trace's mas-lab spans: each expanded to its pair of mas-lab events, fed to
    a fold of events as an events file would be, and built as one (``genai``: the trace's
    GenAI spans, which nesting passes through)."""
    plan = maslab_otel.Plan(records, genai)
    fed = plan.events()
    fold = Fold()
    for ordinal, (_, event) in enumerate(fed, 1):
        fold.event(ordinal, event["kind"], event)

    def place(ordinal: int) -> tuple[str, str]:
        # An event's fed position is no place in the input: its span's line and pointer are.
        record = fed[ordinal - 1][0] if 0 < ordinal <= len(fed) else None
        if record is None:
            return nesting.by_line(ordinal)
        line, pointer = record["line"], record.get("pointer", "")
        return (f"line {line}" + (f", {pointer}" if pointer else ""), f"/{line - 1}{pointer}")

    run = build(Source(source, None, None, None), fold, disclose, place, planned=True)
    patches = plan.patches(fed)
    calls = tuple(call._replace(**patches[call.first_line]) if call.first_line in patches
                  else call for call in run.calls)
    return run._replace(calls=calls, events=plan.spans, kinds=dict(sorted(plan.kinds.items())),
                        unknown=dict(sorted(plan.unknown.items())), unit="spans",
                        findings=(*problems, *plan.findings(disclose), *run.findings),
                        skipped=skipped + plan.unused)


def _unused(problem: list[Any]) -> bool:
    """Whether a problem of an OTLP input left a span (or a line) out of the evidence."""
    return bool(problem[0] != "trace.attribute-malformed")


def _otlp_run(source: str, trace: str, raws: list[dict[str, Any]], disclose: Disclosure,
              problems: list[Finding], skipped: int) -> Run:
    # In the order the calls started (then by span id), not as the exporter batched them: the
    # same trace reads the same however its spans were cut into requests.
    links = _SpanLinks(sorted(raws, key=_started))
    ordered, by_id = links.ordered, links.by_id
    findings = list(problems)
    for cycle in links.cycles:
        findings.append(finding(
            "trace.parent-cycle",
            f"spans {', '.join(disclose.call(c) for c in cycle[:5])}"
            f"{f' and {len(cycle) - 5} more' if len(cycle) > 5 else ''} are each other's "
            "ancestors; their parents are not used", f"/{by_id[cycle[0]]['first'] - 1}",
            severity=Severity.WARNING))
    served = links.served()
    calls: list[Call] = []
    for raw in ordered:
        # An A2A client span with no agent span beneath it is the only trace of a call into
        # another agent: it stands for that call.
        # (A kind that could not be read may be CLIENT: the call is not passed over.)
        remote = raw["cls"] == "span" and "a2a" in raw and raw.get("kindOf") in (
            "client", "unknown") and raw["id"] not in served
        if raw["cls"] in _LINKS_ONLY and not remote:
            continue
        parent_id, known = links.parent_of(raw)
        calls.append(Call(
            key=raw["id"], id=raw["id"], cls="agent" if remote else raw["cls"],
            agent=raw.get("agent"), target=raw.get("target"),
            parent=parent_id if known else None, parent_id=parent_id, start=raw.get("start"),
            end=raw.get("end"), first_line=raw["first"], status=raw.get("status"),
            label=f"A2A {raw['a2a']['method']}" if remote else None,
            tokens=_tokens(raw.get("tokens")), finish=raw.get("finish"),
            temperature=raw.get("temperature"), response_id=raw.get("responseId"),
            input=raw.get("input"), output=raw.get("output"), content=raw.get("content"),
            ambiguous=tuple(raw.get("ambiguous", ())), remote=remote,
            agent_id=raw.get("agentId"), own_agent=raw.get("ownAgent")))
    definitions: dict[str, dict[str, str]] = {}
    beside: Attribution | None = None
    for raw in ordered:
        if "declares" not in raw:
            continue
        agent = links.declaring_agent(raw)
        if agent is None and raw["cls"] not in _LINKS_ONLY:
            # A model call written beside its agent's span (the sibling layout) declares for
            # the agent the audit attributes its calls to.
            if beside is None:
                beside = Attribution(Run(source, trace, trace, None, tuple(calls), 0, {}, {},
                                         (), (), 0, True, unit="spans"))
            call = beside.calls.get(raw["id"])
            agent = beside.agent(call) if call is not None else None
        if agent is None:
            findings.append(finding(
                "trace.attribute-malformed",
                f"span {disclose.call(raw['id'])} lists tool definitions, but no agent span "
                "encloses it or stands beside it; they declare nothing", f"/{raw['first'] - 1}",
                severity=Severity.WARNING))
            continue
        listed = definitions.setdefault(agent, {})
        for tool in raw["declares"]:
            listed.setdefault(tool, raw["id"])
    roots = [c for c in ordered if c["cls"] == "mas" and c.get("agent")]
    kinds: dict[str, int] = {}
    unknown: dict[str, int] = {}
    for raw in ordered:
        operation = raw.get("op")
        counts = unknown if operation is not None and operation not in otlp.table()[
            "operations"] else kinds
        name = operation or "(no gen_ai.operation.name)"
        counts[name] = counts.get(name, 0) + 1
    if not calls and ordered:
        findings.append(finding(
            "trace.all-spans-unmapped",
            f"none of the trace's {len(ordered)} spans is a call either convention maps: no "
            f"{otlp.table()['attributes']['operation'][0]} of the GenAI table, no mas-lab span "
            f"name with {maslab_otel.table()['prefix']}* attributes", severity=Severity.WARNING))
    conversation = next((c["conversation"] for c in ordered if "conversation" in c), None)
    latest = max((Decimal(c[member]) for c in ordered for member in ("start", "end")
                  if c.get(member) is not None), default=None)
    return Run(
        source=source, run_id=trace, session_id=conversation or trace,
        mas=roots[0]["agent"] if roots else None, calls=tuple(calls), events=len(raws),
        kinds=dict(sorted(kinds.items())), unknown=dict(sorted(unknown.items())),
        records=(), findings=tuple(findings), skipped=skipped, readable=True, unit="spans",
        definitions={agent: dict(sorted(tools.items())) for agent, tools in sorted(
            definitions.items())},
        root_ended=any(c.get("parent") is None and c.get("end") is not None for c in ordered),
        last_instant=str(latest) if latest is not None else None)


def _started(call: dict[str, Any]) -> tuple[int, Decimal, str]:
    start = call.get("start")
    return (0, Decimal(start), call["key"]) if start is not None else (1, Decimal(0), call["key"])


# Spans that are links only: nesting passes through them, and no call is made of them.
_LINKS_ONLY = ("span", "declaration")


class _SpanLinks:
    """The parent links of one trace's spans. Every walk up the links remembers its answer
    for each span it passed, so a trace costs linear time however its spans nest; a walk
    that meets a cycle or an ambiguous span answers "unknown", never a guess."""

    def __init__(self, ordered: list[dict[str, Any]]) -> None:
        self.ordered = ordered
        self.by_id = {call["id"]: call for call in ordered}
        self.cycles = parent_cycles(self.by_id, self._parent_in_trace)
        self.on_cycle = {ident for cycle in self.cycles for ident in cycle}
        self.mapped = {ident for ident, call in self.by_id.items()
                       if call["cls"] not in _LINKS_ONLY}
        self._parents: dict[str, tuple[str | None, bool]] = {}
        self._owners: dict[str, str | None] = {}

    def _parent_in_trace(self, ident: str) -> str | None:
        parent: str | None = self.by_id[ident].get("parent")
        return parent if parent in self.by_id else None

    def _cut(self, ident: str) -> bool:
        """Whether a span's own parent link is not to be used."""
        return ident in self.on_cycle or bool(self.by_id[ident].get("parentAmbiguous"))

    def parent_of(self, call: dict[str, Any]) -> tuple[str | None, bool]:
        """The nearest mapped ancestor's id; ``known`` is False when the chain leaves the
        trace, loops or is ambiguous (the id is then the last one the chain names)."""
        if self._cut(call["id"]):
            return call.get("parent"), False
        passed: list[str] = []
        current = call.get("parent")
        answer: tuple[str | None, bool] | None = None
        while answer is None:
            if current is None or current in self.mapped:
                answer = (current, True)
            elif current not in self.by_id:
                answer = (current, False)
            elif current in self._parents:
                answer = self._parents[current]
            elif self._cut(current):
                answer = (current, False)
            else:
                passed.append(current)
                current = self.by_id[current].get("parent")
        for ident in passed:
            self._parents[ident] = answer
        return answer

    def served(self) -> set[str]:
        """A2A spans with an agent span beneath them (through unmapped spans only)."""
        out: set[str] = set()
        walked: set[str] = set()
        for call in self.ordered:
            if call["cls"] != "agent":
                continue
            current: str | None = call.get("parent")
            while current in self.by_id and current not in self.mapped and current not in walked:
                assert current is not None
                walked.add(current)
                if "a2a" in self.by_id[current]:
                    out.add(current)
                current = self.by_id[current].get("parent")
        return out

    def declaring_agent(self, raw: dict[str, Any]) -> str | None:
        """The agent whose tools a span's definitions list: the span's own (an agent or
        create_agent span), else that of the nearest agent span above it."""
        if raw["cls"] in ("agent", "declaration"):
            own: str | None = raw.get("agent")
            return own
        if self._cut(raw["id"]):
            return None
        passed: list[str] = []
        ident, found = raw.get("parent"), None
        while ident is not None and ident in self.by_id:
            if ident in self._owners:
                found = self._owners[ident]
                break
            if self.by_id[ident]["cls"] == "agent":
                found = self.by_id[ident].get("target")
                break
            passed.append(ident)
            if self._cut(ident):
                break
            ident = self.by_id[ident].get("parent")
        for each in passed:
            self._owners[each] = found
        return found


def parent_cycles(calls: Iterable[str], parent: Callable[[str], str | None]) -> list[list[str]]:
    """The cycles of the parent links of ``calls`` (``parent``: a call's parent among them,
    None for none or one that is not among them), each once, in the order of ``calls``:
    every call has at most one parent, so each walk stops at a call already settled (linear
    time). The one way a run's cycles are found, its spans' (:class:`_SpanLinks`) and its
    events' (:func:`build_worded`)."""
    state: dict[str, int] = {}  # 1 on the walk now, 2 settled
    cycles: list[list[str]] = []
    for start in calls:
        path: list[str] = []
        current: str | None = start
        while current is not None and current not in state:
            state[current] = 1
            path.append(current)
            current = parent(current)
        if current is not None and state.get(current) == 1:
            cycles.append(path[path.index(current):])
        for ident in path:
            state[ident] = 2
    return cycles


def _worded(problem: list[Any], disclose: Disclosure, source: str | None) -> Finding:
    """A problem of an OTLP input at its line and its span's JSON Pointer (and its input,
    when several are read together)."""
    code, seq, detail, *rest = problem
    pointer = rest[0] if rest else ""
    path = f"/{seq - 1}{pointer}"
    where = (f"{source}: " if source else "") + f"line {seq}" + (f", {pointer}" if pointer else "")
    if code == "trace.call-conflict":
        message = (f"{where}: span {disclose.call(str(detail))} is given twice with different "
                   "contents; what it did, who called it and what it declared are not used")
    elif code == "trace.attribute-malformed":
        message = f"{where}: {detail}"
    else:
        what = "span" if "/spans/" in pointer else "line" if not pointer else "part"
        message = f"{where}: {detail}; the {what} is skipped"
    return finding(code, message, path, severity=Severity.WARNING)


def build(source: Source, fold: Fold, disclose: Disclosure,
          place: nesting.Place = nesting.by_line, planned: bool = False) -> Run:
    """The fold of one input as a :class:`Run`: parents resolved, findings worded, each at
    the ``place`` of the event it is about. The fold is spent (:func:`build_worded`)."""
    return build_worded(fold, [(source, disclose)], place, planned)[0]


class _Wording(NamedTuple):
    """What a run built through one disclosure says in its words: the run file as it reads
    it, and the findings so far (the settled nesting's first)."""

    source: Source
    disclose: Disclosure
    run_file: runfile.RunFile
    mas_app: str | None
    settled: nesting.Settled
    findings: list[Finding]


def build_worded(fold: Fold, wordings: Sequence[tuple[Source, Disclosure]],
                 place: nesting.Place = nesting.by_line, planned: bool = False) -> list[Run]:
    """The fold of one input as one :class:`Run` a wording (an input and the disclosure its
    run is shown through: the report's, a store's), the runs holding the same calls (they do
    not depend on the wording): parents resolved, findings worded, each at the ``place`` of
    the event it is about.

    The parents the events name are checked as spans' are: calls that are each other's
    ancestors (a call its own parent among them) are ``trace.parent-cycle`` and their parents
    are not used, so their callers are unknown; a parent the trace holds no event of is
    ``trace.call-incomplete``. ``planned``: the events are a plan's of mas-lab spans
    (:class:`maslab_otel.Plan`), which cut the cycles of its spans' links and reported them,
    and whose parents outside the trace are those of any OTLP trace cut short (not said).

    The fold is spent: each of its calls is let go as the run's call is made of it, so that
    a long run's calls are never held twice (the fold's and the run's, issue 37); a spent
    fold cannot be built again (ValueError)."""
    if fold.spent:
        raise ValueError("a fold is built once: its calls became its run's")
    fold.spent = True
    ordered = nesting.in_order(fold.calls.values())
    by_id: dict[str, str] = {}
    for folded in ordered:
        if folded.id:
            by_id.setdefault(folded.id, folded.key)
    root = next((c for c in ordered if c.cls == "mas"), None)
    worded = [_wording(source, fold, disclose, place) for source, disclose in wordings]
    # The problems' findings follow the calls' in a run's findings, but name calls the loop
    # below lets go: worded first.
    problems = [_problem_findings(fold, w.disclose, place) for w in worded]
    cut = set() if planned else _named_parents(fold, ordered, by_id, worded, place)
    calls = _spent(fold, ordered, by_id, worded, place, cut)
    events_run_id = fold.run_ids.get("run_id")
    runs = []
    for w, (found, skipped) in zip(worded, problems, strict=True):
        run_file = w.run_file
        run_id = (run_file.run_id or run_file.run_hash or events_run_id
                  or fold.run_ids.get("session_id") or fold.run_ids.get("trace_id")
                  or (root.id if root is not None and root.id else None))
        runs.append(Run(
            source=w.source.given, run_id=run_id,
            session_id=fold.run_ids.get("session_id") or run_id,
            mas=run_file.mas_id or w.mas_app or (root.agent if root is not None else None),
            calls=calls, events=fold.events, kinds=dict(sorted(fold.kinds.items())),
            unknown=dict(sorted(fold.unknown.items())), records=tuple(fold.records),
            findings=(*w.findings, *found), skipped=skipped, readable=True,
            scenario=run_file.scenario, status=run_file.status, created_at=run_file.created_at,
            duration_secs=run_file.duration_secs))
    return runs


def _named_parents(fold: Fold, ordered: list[FoldedCall], by_id: dict[str, str],
                   worded: list[_Wording], place: nesting.Place) -> set[str]:
    """The calls on cycles of the parents the events name (their keys), the cycles' and the
    parents the trace does not hold each a finding of each wording's (at the first line of
    the first call concerned)."""
    calls = fold.calls

    def parent(key: str) -> str | None:
        call = calls[key]
        return ((call._rare or NO_RARE).parentKey or by_id.get(call.parent)
                ) if call.parent else None

    cycles = parent_cycles((c.key for c in ordered), parent)
    unheld: dict[str, list[FoldedCall]] = {}  # parent id -> the calls naming it, in order
    for call in ordered:
        if call.parent and parent(call.key) is None:
            unheld.setdefault(call.parent, []).append(call)
    for w in worded:
        for cycle in cycles:
            first = calls[cycle[0]]
            named = [_call_name(calls[k], w.disclose, place) for k in cycle[:5]]
            more = f" and {len(cycle) - 5} more" if len(cycle) > 5 else ""
            what = (f"call {named[0]} names itself as its parent" if len(cycle) == 1 else
                    f"calls {', '.join(named)}{more} are each other's ancestors")
            w.findings.append(finding(
                "trace.parent-cycle", f"{place(first.first)[0]}: {what} (parent_call_id); "
                f"{'its parent is' if len(cycle) == 1 else 'their parents are'} not used",
                place(first.first)[1], severity=Severity.WARNING))
        for ident, children in unheld.items():
            first = children[0]
            others = f" and {len(children) - 1} more" if len(children) > 1 else ""
            w.findings.append(finding(
                "trace.call-incomplete", f"{place(first.first)[0]}: call "
                f"{_call_name(first, w.disclose, place)}{others} name{'s' if not others else ''}"
                f" call {w.disclose.call(ident)} as the parent (parent_call_id), and the trace "
                "has no start and no end event of it", place(first.first)[1],
                severity=Severity.WARNING))
    return {key for cycle in cycles for key in cycle}


def _spent(fold: Fold, ordered: list[FoldedCall], by_id: dict[str, str],
           worded: list[_Wording], place: nesting.Place, cut: set[str]) -> tuple[Call, ...]:
    """The calls of ``fold`` (``ordered``: all of them, in order, emptied), each let go as its
    run's is made; an incomplete one's finding added to each wording's. The calls of ``cut``
    (on cycles of parents) have no parent."""
    candidates = worded[0].settled.candidates  # the calls', whatever the wording
    made: list[Call] = []
    ordered.reverse()
    while ordered:
        raw = ordered.pop()
        call = _call(raw, fold.calls, by_id, candidates.get(raw.key))
        if raw.key in cut:
            call = call._replace(parent=None)
        made.append(call)
        missing = [p for p, line in (("start", raw.startLine), ("end", raw.endLine))
                   if line is None]
        for w in worded if missing else ():
            w.findings.append(finding(
                "trace.call-incomplete",
                f"{raw.cls} call {_call_name(raw, w.disclose, place)}: the trace has no "
                f"{' and no '.join(missing)} event", place(raw.first)[1],
                severity=Severity.WARNING))
        # The fold's call let go: its run's call answers what a later call asks of its
        # parent (its id).
        fold.calls[raw.key] = call  # type: ignore[assignment]
    fold.calls.clear()
    return tuple(made)


def _wording(source: Source, fold: Fold, disclose: Disclosure,
            place: nesting.Place) -> _Wording:
    """The run file of ``source`` and the findings that come before the calls', through
    ``disclose``."""
    run_info = runfile.read_object(os.path.join(source.run_folder, "run_info.json")) if (
        source.run_folder) else {}
    run_file = runfile.read(source.run_folder, disclose) if source.run_folder else (
        runfile.RunFile())
    events_run_id = fold.run_ids.get("run_id")
    if run_file.run_id and events_run_id and run_file.run_id != events_run_id:
        run_file = runfile.mismatch(run_file, events_run_id, source.run_folder or "", disclose)
    mas_info = run_info.get("mas")
    mas_app = _text(mas_info.get("app")) if isinstance(mas_info, dict) else None
    settled = nesting.settle(fold.calls, fold.tree, disclose, place)
    return _Wording(source, disclose, run_file, mas_app, settled,
                    [*run_file.findings, *_unread(source, disclose), *settled.findings])


def _problem_findings(fold: Fold, disclose: Disclosure,
                      place: nesting.Place) -> tuple[list[Finding], int]:
    """The findings of the fold's problems and of other runs' events, worded through
    ``disclose``, and how many lines were skipped."""
    findings: list[Finding] = []
    skipped = 0
    for code, seq, detail in fold.problems:
        if code == "trace.call-conflict":
            # The detail is the call's key (see calls.id_key), never its id: an id may
            # spell another call's key.
            conflicted = fold.calls[str(detail)]
            name = _call_name(conflicted, disclose, place)
            where, path = place(seq)
            findings.append(finding(
                code, f"{where}: call {name} is started, ended or attributed twice "
                      "inconsistently; the ambiguous part is not used",
                path, severity=Severity.WARNING))
            continue
        where, path = place(seq)
        if code == "trace.attribute-malformed":
            # A member of the event not used (the timestamp, the one an event reports so);
            # the event itself is read.
            findings.append(finding(code, f"{where}: {detail}", f"{path}/timestamp",
                                    severity=Severity.WARNING))
            continue
        skipped += 1
        findings.append(finding(code, f"{where}: {detail}; the line is skipped",
                                path, severity=Severity.WARNING))
    events_run_id = fold.run_ids.get("run_id")
    for other, (seq, count) in sorted(fold.other_runs.items(), key=lambda item: item[1]):
        where, path = place(seq)
        findings.append(finding(
            "trace.run-mismatch", f"{where}: {count} event{'s' if count > 1 else ''} carry "
            f"run_id {disclose.run(other)}, not the run's {disclose.run(str(events_run_id))}: "
            "another run's events in this one's stream, judged as this run's", path,
            severity=Severity.WARNING))
    return findings, skipped


# A call without token counts (every call but a model's) holds this one empty mapping, never
# written to: an empty dict a call would weigh a long run down by 64 bytes a call.
_NO_TOKENS: dict[str, int] = {}


def _tokens(tokens: dict[str, int] | None) -> dict[str, int]:
    """A call's token counts, its own copy (the fold's may change as it reads on)."""
    return dict(tokens) if tokens else _NO_TOKENS


def _call_name(raw: FoldedCall, disclose: Disclosure,
               place: nesting.Place = nesting.by_line) -> str:
    return disclose.call_name(raw.id, raw.key) if raw.id else (
        f"without an id at {place(raw.first)[0]}")


def _call(raw: FoldedCall, calls: dict[str, FoldedCall], by_id: dict[str, str],
          candidates: tuple[str, ...] | None) -> Call:
    """One call of the fold, its parent resolved: the parent its events name, else the call
    the order of events placed it in, else none (``candidates``: the order cannot tell)."""
    parent_id = raw.parent
    rare = raw._rare or NO_RARE  # read here, not through the call's descriptors
    parent = (rare.parentKey or by_id.get(parent_id)) if parent_id else None
    if not parent_id and candidates is None and raw.get("placed") is not None:
        parent = raw["placed"]
        parent_id = calls[parent].id or parent
    return Call(
        key=raw.key, id=raw.id, cls=raw.cls, agent=raw.agent,
        target=raw.target, parent=parent if parent != raw.key else None,
        # The times as the fold holds them, which Call holds as they are (instants.held
        # keeps a held time), rather than made into their texts and held again.
        parent_id=parent_id, start=raw._start, end=raw._end,
        first_line=raw.first, status=raw.status, label=rare.label,
        tokens=raw.tokens or _NO_TOKENS, finish=rare.finish,
        temperature=rare.temperature, response_id=rare.responseId,
        input=raw.input, output=raw.output, content=rare.content,
        ambiguous=tuple(rare.ambiguous or ()), candidates=candidates)
