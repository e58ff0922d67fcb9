"""The trace reader's fast path (orjson, where certain) against the strict intake parser: the
same value or the same problem for every line, and the same fold of every stream.

A differential fuzzer: lines are written from generated JSON with what tells the two parsers
apart (repeated and escaped member names, whitespace before a colon, integers past 64 bits,
numbers whose float is not their value, escaped quotes and surrogates, deep nesting, broken
UTF-8, a byte order mark), then read both ways.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ioa_semantic.trace import events
from ioa_semantic.trace.events import Fold, Line
from ioa_semantic.trace.privacy import Disclosure

import otlp_requests

NUMBERS = st.one_of(
    st.integers(min_value=-(1 << 70), max_value=1 << 70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1.0000000000000000001", "1e400", "-1e-400", "0.1", "1E2", "-0",
                     "-0.0", "18446744073709551616", "9223372036854775808",
                     "1733412345.1234567", "123456789.123456789123", "2.5e-320", "1e22",
                     "9007199254740993", "1.5e300", "12345678901234567.5", "-1e-7",
                     "1.00000000000000000001e-7"]),
)
TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(['a"b', "\\", "\ud83d\ude00", "tab\there", "\u2028", 'x":1', "é"]),
)


def _key(text: str, draw: Any) -> str:
    spelled = json.dumps(text)
    if text and draw(st.booleans()) and text.isascii() and text.isalnum():
        spelled = '"' + "".join(f"\\u{ord(c):04x}" for c in text) + '"'  # escaped name
    return spelled


@st.composite
def documents(draw: Any, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["object", "object", "array", "number", "string", "literal"]
                                if depth < 3 else ["number", "string", "literal"]))
    if kind == "number":
        return str(draw(NUMBERS))
    if kind == "string":
        return json.dumps(draw(TEXT), ensure_ascii=draw(st.booleans()))
    if kind == "literal":
        return str(draw(st.sampled_from(["true", "false", "null"])))
    if kind == "array":
        items = draw(st.lists(documents(depth + 1), max_size=4))
        return "[" + ",".join(items) + "]"
    names = draw(st.lists(st.sampled_from(["kind", "call_id", "a", "b", "tool_name", "x"])
                          | st.text(max_size=4), max_size=5))
    members = []
    for name in names:
        colon = draw(st.sampled_from([":", ":", ":", " :", ": "]))
        members.append(f"{_key(name, draw)}{colon}{draw(documents(depth + 1))}")
    return "{" + ",".join(members) + "}"


@st.composite
def lines(draw: Any) -> bytes:
    text = draw(documents())
    data = text.encode("utf-8", "surrogatepass")
    twist = draw(st.sampled_from(["", "", "", "bom", "lone", "bad-utf8", "deep", "nan", "space"]))
    if twist == "bom":
        data = b"\xef\xbb\xbf" + data
    elif twist == "lone":
        data = b'{"a":"\\ud800","b":' + data + b"}"
    elif twist == "bad-utf8":
        data = data + b'"\xff"'
    elif twist == "deep":
        depth = draw(st.integers(min_value=200, max_value=1100))
        data = b"[" * depth + data + b"]" * depth
    elif twist == "nan":
        data = b'{"a":NaN}'
    elif twist == "space":
        data = b"  " + data + b" \n"
    return bytes(data)


def canon(value: Any) -> Any:
    """A value as a flat tuple of tokens, its types told apart (1 is not 1.0), a float by its
    bits; made without recursion, as a line may nest a thousand levels."""
    out: list[Any] = []
    stack: list[Any] = [("value", value)]
    while stack:
        what, item = stack.pop()
        if what == "token":
            out.append(item)
        elif isinstance(item, bool):
            out.append(("b", item))
        elif isinstance(item, int):
            out.append(("i", item))
        elif isinstance(item, float):
            out.append(("f", math.copysign(1, item), float(item).hex()))
        elif isinstance(item, str):
            out.append(("s", item))
        elif isinstance(item, list):
            out.append("[")
            stack.append(("token", "]"))
            stack.extend(("value", v) for v in reversed(item))
        elif isinstance(item, dict):
            out.append("{")
            stack.append(("token", "}"))
            for key, member in reversed(list(item.items())):
                stack.append(("value", member))
                stack.append(("token", ("k", key)))
        else:
            out.append(("n", item))
    return tuple(out)


def both(data: bytes) -> tuple[Any, Any]:
    fast_value, fast_problem = events.parse(data)
    strict_value, strict_problem = events._strict(data, events.DEFAULT_MAX_LINE_BYTES)
    return (canon(fast_value), fast_problem), (canon(strict_value), strict_problem)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines())
def test_the_fast_path_reads_every_line_as_the_strict_parser(data: bytes) -> None:
    fast, strict = both(data)
    assert fast == strict


@pytest.mark.parametrize("data", [
    b'{"a":1,"a":2}', b'{"a":1,"\\u0061":2}', b'{"a" :1,"a":2}', b'{"a":18446744073709551616}',
    b'{"a":-9223372036854775809}', b'{"a":"x\\":1","a":2}', b'\xef\xbb\xbf{}',
    b'{"a":"\\ud800"}', b'{"a":NaN}', b"[" * 995 + b"]" * 995, b'{"a":1.0000000000000000001}',
    b'{"kind":"x","call_id":"c","timestamp":1733412345.1234567}',
])
def test_the_lines_that_tell_the_parsers_apart(data: bytes) -> None:
    fast, strict = both(data)
    assert fast == strict


def test_plain_event_lines_take_the_fast_path() -> None:
    """The fast path is taken for the events mas-lab writes (else it would be no path)."""
    line = (b'{"kind": "tool_call_start", "agent_id": "a", "run_id": "r", "call_id": "c", '
            b'"timestamp": 1733412345.1234567, "tool_name": "t", "arguments": {"q": "x"}}')
    assert events._plain(line) is not events._NOT_PLAIN
    assert events._plain(b'{"a":1,"a":2}') is events._NOT_PLAIN


@st.composite
def streams(draw: Any) -> list[bytes]:
    """Event lines of calls whose members carry the numbers and texts above."""
    out = []
    for index in range(draw(st.integers(min_value=1, max_value=8))):
        kind = draw(st.sampled_from(["tool_call", "llm_call", "execution"]))
        for phase in ("start", "end"):
            members = [f'"kind":"{kind}_{phase}"', f'"call_id":"c{index}"',
                       f'"agent_id":{json.dumps(draw(TEXT))}', '"run_id":"r"',
                       f'"timestamp":{draw(NUMBERS)}', f'"tool_name":{json.dumps(draw(TEXT))}',
                       f'"arguments":{draw(documents(1))}', f'"temperature":{draw(NUMBERS)}',
                       f'"usage":{{"input_tokens":{draw(NUMBERS)}}}']
            if draw(st.booleans()):
                members.append(f'"output":{draw(documents(1))}')
            out.append(("{" + ",".join(members) + "}").encode("utf-8", "surrogatepass"))
    return out


def folded(stream: list[bytes], content: bool, fast: bool) -> Fold:
    """``stream`` folded with its lines read by the fast path where it takes them, or by the
    strict parser alone."""
    events.FAST_PATH = fast
    try:
        fold = Fold(include_content=content)
        for seq, data in enumerate(stream, 1):
            fold.line(Line(seq, 0, data))
        return fold
    finally:
        events.FAST_PATH = True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.booleans())
def test_a_stream_folds_the_same_whichever_parser_reads_it(
        stream: list[bytes], content: bool) -> None:
    deltas = [canon(json.loads(json.dumps(folded(stream, content, fast).delta(),
                                          default=float))) for fast in (True, False)]
    assert deltas[0] == deltas[1]


# --- OTLP requests, mas-lab spans and Jaeger documents as lines ------------------------------

def _jaeger(request: dict[str, Any]) -> dict[str, Any]:
    """An OTLP request's spans as Jaeger's JSON (tags typed, times in microseconds)."""
    spans = []
    for scope in request["resourceSpans"][0]["scopeSpans"]:
        for span in scope["spans"]:
            tags = [{"key": a["key"], "type": "string", "value": next(iter(a["value"].values()))}
                    for a in span["attributes"]]
            spans.append({"traceID": span.get("traceId", otlp_requests.TRACE),
                          "spanID": span.get("spanId", "00000000000000aa"),
                          "operationName": span.get("name", "span"), "references": [],
                          "startTime": int(span["startTimeUnixNano"]) // 1000,
                          "duration": 500, "tags": tags, "processID": "p1"})
    return {"data": [{"traceID": otlp_requests.TRACE, "spans": spans,
                      "processes": {"p1": {"serviceName": "s", "tags": []}}}]}


@st.composite
def otlp_streams(draw: Any) -> list[bytes]:
    """Lines of OTLP requests (GenAI and mas-lab spans) or Jaeger documents whose numbers (times,
    kinds, status codes, int and double attribute values) are drawn from NUMBERS, written as
    numbers where the exporters write strings, with or without spaces after the separators."""
    kind = draw(st.sampled_from(["genai", "maslab", "jaeger"]))
    spans = otlp_requests.maslab_trip() if kind == "maslab" else otlp_requests.trip()
    numbers: list[str] = []

    def slot(value: Any) -> Any:
        if draw(st.integers(min_value=0, max_value=3)) == 0:
            numbers.append(draw(NUMBERS))
            return f"@@{len(numbers) - 1}@@"
        return value

    def twist(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: twist(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [twist(v, key) for v in value]
        if isinstance(value, str) and '"' in value and draw(st.booleans()):
            return "plain"  # JSON in a string escapes its quotes: the line would be strict's
        if isinstance(value, bool) or not (isinstance(value, int | float) or key in (
                "startTimeUnixNano", "endTimeUnixNano", "intValue", "startTime")):
            return value
        return slot(value)

    out = []
    for index in range(draw(st.integers(min_value=1, max_value=3))):
        chosen = draw(st.lists(st.sampled_from(spans), min_size=1, max_size=len(spans)))
        extra = otlp_requests.span(9 + index, 2, {"gen_ai.operation.name": "execute_tool",
                                                  "gen_ai.tool.name": "t", "n": 1.5, "i": 7})
        request = otlp_requests.request(*chosen, extra)
        document = twist(_jaeger(request) if kind == "jaeger" else request)
        written = [document]
        if kind != "jaeger" and draw(st.booleans()):
            # An exporter's retry of the request beside a span that escapes a quote: the
            # same spans read by the other parser are the same spans, not a conflict.
            quoted = otlp_requests.tool(20 + index, 2, "t")
            written.append({"resourceSpans": [*document["resourceSpans"], {"scopeSpans": [
                {"spans": [quoted]}]}]})
        for item in written:
            spaced = draw(st.booleans())
            text = json.dumps(item, ensure_ascii=False,
                              separators=(", ", ": ") if spaced else (",", ":"))
            for number, numeral in enumerate(numbers):
                text = text.replace(f'"@@{number}@@"', numeral)
            out.append(text.encode("utf-8", "surrogatepass"))
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(otlp_streams(), st.booleans())
def test_an_otlp_stream_folds_and_builds_the_same_whichever_parser_reads_it(
        stream: list[bytes], content: bool) -> None:
    built = []
    for fast in (True, False):
        fold = folded(stream, content, fast)
        delta = canon(json.loads(json.dumps(fold.delta(), default=float)))
        source = events.Source("t.jsonl", "t.jsonl", None, None)
        built.append((delta, repr(events.runs(source, fold, Disclosure(include_content=content)))))
    assert built[0] == built[1]


def test_an_exporters_retry_read_by_the_other_parser_is_a_retry() -> None:
    """A span whose double is no float exactly (a kept text under the strict parser), sent once
    on a line the fast path reads and again on a line with a space before a colon (the strict
    parser's): one call, a repeat, no conflict (its fingerprint is of the float either way)."""
    number = "1.00000000000000000001e-7"  # the float's JSON is 1e-07 or 1e-7 by encoder
    spans = [otlp_requests.span(9, 2, {"gen_ai.operation.name": "execute_tool",
                                       "gen_ai.tool.name": "t", "n": 1.5})]
    first = json.dumps(otlp_requests.request(*spans)).replace("1.5", number).encode()
    again = json.dumps(otlp_requests.request(*spans, otlp_requests.tool(20, 2, "t"))).replace(
        "1.5", number).replace('"resourceSpans":', '"resourceSpans" :').encode()
    assert events._plain(first) is not events._NOT_PLAIN
    assert events._plain(again) is events._NOT_PLAIN
    fold = Fold()
    fold.line(Line(1, 0, first))
    fold.line(Line(2, 0, again))
    assert (fold.problems, fold.repeats) == ([], 1)


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.floats(), st.integers(min_value=-(10**40), max_value=10**40),
                 st.sampled_from([10**31 - 1, 10**31, -(10**31) + 1, -(10**31), 0, -0.0, 1e16,
                                  9999999999999998.0, 1e-4, 0.0001, 1e-5, 1e30, 1e31, 123.0])))
def test_a_timestamp_reads_as_before_its_shortcut(value: float | int) -> None:
    assert events._instant(value) == events._decimal_instant(value)


def _quote_before_whitespace(data: bytes) -> bool:
    """The fast path's refusal, byte by byte: a quote followed by whitespace."""
    return any(data[i] == 0x22 and data[i + 1] in b" \t\r\n" for i in range(len(data) - 1))


_SUSPECT_PIECES = st.one_of(
    st.sampled_from([b'"', b"\\", b" ", b"\t", b"\n", b"\r", b"{", b"[", b'":']),
    st.builds(lambda n: b"a" * n, st.integers(0, 40)))


@given(st.lists(_SUSPECT_PIECES, max_size=6).map(b"".join))
@example(b'{"a":"b"\n,"c":1}\n')  # a quote before a newline that is not the line's end
@example(b'{"a":1}"\n')
@example(b'{"a":"b"\r\n')
@example(b'{"a":"b"\t}')
@example(b'{"a\\"b":1}')
def test_the_fast_path_refuses_a_line_with_a_quote_before_whitespace(data: bytes) -> None:
    assert events._suspect(data) == _quote_before_whitespace(data)


@pytest.mark.parametrize("data", [
    # Many brackets, nesting shallow: read by orjson, as the strict parser reads them.
    b'{"spans":[' + b",".join([b'{"a":[{"b":1}]}'] * 300) + b"]}",
    # Escaped quotes, as content that is JSON in a string holds them: a repeated name is
    # still found (the members are fewer than the colons after a quote).
    b'{"a":"{\\"x\\":1}","b":"\\":"}', b'{"a":"{\\"x\\":1}","a":"\\":"}',
    b'{"a":"\\":","a":1}', b'{"a\\"":1,"a\\"":2}',
    # Nesting at the fast path's bound and past it.
    b"[" * 256 + b"]" * 256, b"[" * 257 + b"]" * 257,
    b'{"a":' * 255 + b"1" + b"}" * 255, b'{"a":' * 256 + b"1" + b"}" * 256,
])
def test_the_fast_path_reads_these_lines_as_the_strict_parser(data: bytes) -> None:
    fast, strict = both(data)
    assert fast == strict


def test_a_line_of_escaped_quotes_and_many_brackets_takes_the_fast_path() -> None:
    """What OTLP requests hold (content that is JSON in a string; hundreds of spans' attribute
    objects) is no reason to leave a line to the strict parser."""
    data = (b'{"resourceSpans":[' + b",".join(
        [b'{"attributes":[{"key":"gen_ai.input.messages","value":{"stringValue":'
         b'"[{\\"role\\":\\"user\\"}]"}}]}'] * 200) + b"]}")
    assert events._plain(data) is not events._NOT_PLAIN
    assert events._plain(b"[" * 257 + b"]" * 257) is events._NOT_PLAIN


def _unescaped_name_ends(data: bytes) -> int:
    """Byte by byte: each quote followed by a colon whose run of backslashes before it is even."""
    ends = 0
    for i in range(len(data) - 1):
        if data[i:i + 2] == b'":':
            run = 0
            while i - run - 1 >= 0 and data[i - run - 1] == 0x5C:
                run += 1
            ends += run % 2 == 0
    return ends


@given(st.lists(st.sampled_from([b'"', b"\\", b":", b'":', b'\\":', b"a"]), max_size=30)
       .map(b"".join))
@example(b'{"a\\\\":1,"b":"\\":","c":"\\\\\\":"}')
def test_a_names_end_is_a_quote_and_colon_whose_quote_is_not_escaped(data: bytes) -> None:
    assert events._name_ends(data) == _unescaped_name_ends(data)


@pytest.mark.parametrize("metric", ["0.1000000000000000000001", "1e-400", "1.10", "2.5e-320",
                                    "0e1000000000000000000", "1e-2000000000000000000"])
def test_an_outcome_record_folds_the_same_whichever_parser_reads_it(metric: str) -> None:
    """A number whose text the strict parser keeps (an exact number, a float whose text
    differs from its value) is a number to the outcome record's checks, as the fast path's
    float is; one past Decimal's exponents is read, not raised on."""
    record = ('{"schema_version":"1","outcome_id":"o","trace_id":"t","context_id":"c",'
              '"operation":"op","status":"succeeded","started_at_ms":1,"ended_at_ms":2,'
              '"input_artifact_refs":[],"output_artifact_refs":[],'
              f'"metrics":{{"latency":{metric}}},"policy_decision":"allow","error_code":null,'
              '"error_detail_ref":null,"evaluation_scores":{}}')
    stream = [record.encode()]
    fast, strict = (folded(stream, False, fast) for fast in (True, False))
    assert (fast.problems, len(fast.records)) == (strict.problems, len(strict.records)) == (
        [], 1)


@pytest.mark.parametrize("data", [b"\x0b\n", b"\x0c", b"\x0b\x0b\r\n", b" \t\r\n"])
def test_a_line_of_what_json_calls_no_whitespace_is_no_blank_line(data: bytes) -> None:
    """JSON's whitespace is space, tab, return and newline: a line of form feeds or vertical
    tabs is a line the strict parser refuses, not a blank one skipped unseen."""
    fast, strict = both(data)
    if data.strip(b" \t\r\n"):
        assert fast == strict and fast[1] is not None
    else:  # a blank line: skipped (the strict parser alone would call it no JSON)
        assert fast == ((("n", None),), None)
