"""A hostile review of the OTLP input of ``ioa-check trace``: each test is a way an exporter,
careless or hostile, makes the audit claim more than its evidence, or cost more than its input.

Every test here failed on the code as first reviewed (2026-12-02) and states, in its name
and docstring, the behaviour it now holds. They run the installed command as a process of its own
(the surface a user meets), on requests built with tests/otlp_requests.py. Cost is counted in
bytes the command writes (its report or its state file), never in seconds: doubling the input
must roughly double them, and the bound each test allows (3x for 2x, 6x for 4x) leaves room
for any linear constant while a quadratic cost (4x, 16x) fails.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from otlp_requests import TRACE, agent, attribute, lines, request, span, tool, trip
from support import IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

MANIFESTS = str(Path(__file__).resolve().parents[2] / "shared" / "reference" / "mas-traces"
                / "mas-lab" / "trip-planner-manifests")


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run([IOA_CHECK, "trace", *args], capture_output=True, timeout=240,
                          cwd=cwd, check=False)
    assert proc.returncode != 70 and b"Traceback" not in proc.stderr, proc.stderr
    return proc


def _audit(cwd: Path, data: str | bytes, *args: str, name: str = "otlp.jsonl"
           ) -> tuple[int, list[dict[str, Any]]]:
    """Exit status and the JSON Lines report of one OTLP file (shapes skipped)."""
    path = cwd / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    proc = _run(cwd, name, "--format", "json", "--no-shapes", *args)
    return proc.returncode, [json.loads(line) for line in proc.stdout.decode().splitlines()]


def _summaries(report: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [item["summary"] for item in report if "summary" in item]


def _codes(report: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for item in report:
        body = item.get("summary", item)
        found |= {r["code"] for r in body.get("reasons", ())}
    return found


def _tool_uses(report: list[dict[str, Any]], agent_name: str) -> dict[str, str]:
    record = next(r for r in report if r.get("agent") == agent_name)
    return {use["tool"]: use["verdict"] for use in record["consumed"]["tools"]}


# --- (a) what the evidence does not establish is never compatible ----------------------------


@pytest.mark.parametrize("bad_line", [
    pytest.param(b'{"resourceSpans": [ truncated by the exporter\n', id="syntax"),
    pytest.param(b'{"resourceSpans": "\xff"}\n', id="invalid-utf-8"),
    pytest.param(b"[1]\n", id="not-an-object"),
    pytest.param(lines(request(tool(8, 5, "wire_money"), span(9, 5, {"pad": "x" * 6000})))
                 .encode(), id="over-max-line-bytes"),
])
def test_a_line_of_an_otlp_file_that_cannot_be_read_makes_the_run_incomplete_never_compatible(
        tmp_path: Path, bad_line: bytes) -> None:
    """A line of an OTLP file that is not JSON, not an object, or longer than
    --max-line-bytes may hold any span (here: one holds an undeclared ``wire_money``). mas-lab
    event files count such a line as skipped (``trace.incomplete``, never compatible); the
    OTLP runs count only ``trace.event-malformed`` problems as skipped, so the run stays
    ``compatible`` with exit 0 and the line is a mere warning. Expected: ``trace.incomplete``
    and a verdict other than compatible. Severity: high (an undeclared tool hidden)."""
    data = lines(request(*trip())).encode() + bad_line
    status, report = _audit(tmp_path, data, "--manifests", MANIFESTS, "--max-line-bytes", "4000")
    assert "trace.incomplete" in _codes(report)
    assert status != 0 and all(s["verdict"] != "compatible" for s in _summaries(report))


@pytest.mark.parametrize("operation", [
    pytest.param({"stringValue": 5}, id="wrong-type"),
    pytest.param({"stringValue": "execute_tool", "intValue": "1"}, id="two-members"),
    pytest.param({}, id="empty-value"),
])
def test_a_tool_span_whose_operation_name_is_malformed_is_not_dropped_as_a_link(
        tmp_path: Path, operation: dict[str, Any]) -> None:
    """``gen_ai.operation.name`` decides what a span is. When its value is malformed (or the
    empty AnyValue), the reader reports ``trace.attribute-malformed`` (or nothing) and maps
    the span to a mere link, so the undeclared tool call under it (``gen_ai.tool.name:
    wire_money``) vanishes and the run is ``compatible``, exit 0. Expected: a span whose class
    cannot be read is evidence left unread, so the run is not compatible (as for a span
    without a valid id). Severity: high (an undeclared tool hidden)."""
    hidden = tool(8, 5, "wire_money")
    hidden["attributes"][0] = {"key": "gen_ai.operation.name", "value": operation}
    status, report = _audit(tmp_path, lines(request(*trip(), hidden)), "--manifests", MANIFESTS)
    assert status != 0 and _summaries(report)[0]["verdict"] != "compatible"


def test_the_operation_name_given_twice_with_different_values_does_not_hide_the_tool(
        tmp_path: Path) -> None:
    """A tool span that gives ``gen_ai.operation.name`` twice (``execute_tool`` and ``chat``)
    has the attribute dropped as ambiguous, and with it the span's class: the undeclared
    ``wire_money`` call disappears and the run is ``compatible``, exit 0. Expected: not
    compatible (what the span was is ambiguous, not absent). Severity: high."""
    hidden = tool(8, 5, "wire_money")
    hidden["attributes"].append(attribute("gen_ai.operation.name", "chat"))
    status, report = _audit(tmp_path, lines(request(*trip(), hidden)), "--manifests", MANIFESTS)
    assert status != 0 and _summaries(report)[0]["verdict"] != "compatible"


def test_a_span_naming_a_tool_without_an_operation_name_is_not_silently_a_link(
        tmp_path: Path) -> None:
    """A span with ``gen_ai.tool.name: wire_money`` but no ``gen_ai.operation.name`` (an
    instrumentation on older conventions, or one that drops it) is read as a link without a
    word, and the run is ``compatible``. The issue asks that missing attributes be
    ``indeterminate`` evidence, never a guess; guessing "not a call" is one. Expected: a
    finding and a verdict other than compatible. Severity: medium (the docs' table says any
    other span is a link; the table, not the issue, would have to change)."""
    hidden = tool(8, 5, "wire_money")
    del hidden["attributes"][0]
    status, report = _audit(tmp_path, lines(request(*trip(), hidden)), "--manifests", MANIFESTS)
    assert status != 0 and _summaries(report)[0]["verdict"] != "compatible"


def test_a_span_id_first_seen_as_a_link_then_as_a_tool_call_is_not_hidden(tmp_path: Path) -> None:
    """The same span id first as an HTTP span (a link), then with other contents as an
    ``execute_tool`` span of the undeclared ``wire_money``: ``trace.call-conflict`` is a
    warning, the first copy's class (a link) is kept, and the tool call is never judged:
    ``compatible``, exit 0. In the other order the run is indeterminate. Expected: a
    conflicting span is ambiguous whatever came first: not compatible. Severity: high."""
    link = span(8, 5, {"http.request.method": "GET"}, kind=3)
    text = lines(request(*trip(), link), request(tool(8, 5, "wire_money")))
    status, report = _audit(tmp_path, text, "--manifests", MANIFESTS)
    assert "trace.call-conflict" in _codes(report)
    assert status != 0 and _summaries(report)[0]["verdict"] != "compatible"


def test_a_span_given_twice_with_different_contents_declares_no_tools(tmp_path: Path) -> None:
    """An agent span sent first with a forged ``gen_ai.tool.definitions`` (adding
    ``wire_money``), then again as instrumented: ``trace.call-conflict`` says "what it did is
    not used", yet the first copy's definitions still declare ``wire_money`` for
    schedule_agent (no manifest given), so its ``wire_money`` call is ``compatible``, declared
    by the conflicting span. Expected: a conflicting span declares nothing; the call is
    ``incompatible`` (the real span's list) or ``indeterminate``. Severity: medium (a
    declaration smuggled in)."""
    forged = agent(5, 4, "schedule_agent", ["lookup_schedule", "wire_money"])
    real = agent(10, 4, "schedule_agent")
    text = lines(request(forged), request(*trip(), real, tool(11, 10, "wire_money")))
    _, report = _audit(tmp_path, text)
    assert "trace.call-conflict" in _codes(report)
    assert _tool_uses(report, "schedule_agent")["wire_money"] != "compatible"


@pytest.mark.parametrize("carrier", ["the-tool-span-itself", "an-http-span"])
def test_tool_definitions_on_a_tool_or_unmapped_span_declare_nothing(
        tmp_path: Path, carrier: str) -> None:
    """docs/trace.md: the definitions list an agent's tools "on its agent span, on a
    ``create_agent`` span, or on a model span under it". The reader takes them from any span
    under the agent: an ``execute_tool`` span can declare its own tool, an HTTP span under
    the agent can declare anything, and the undeclared ``wire_money`` becomes ``compatible``
    (no manifest). Expected: only the spans the docs name declare; ``wire_money`` stays
    ``incompatible`` against schedule_agent's own list. Severity: medium (a declaration
    smuggled in, docs disagree)."""
    definitions = json.dumps([{"type": "function", "name": "wire_money"}])
    called = tool(8, 5, "wire_money")
    spans = [*trip(), called]
    if carrier == "the-tool-span-itself":
        called["attributes"].append(attribute("gen_ai.tool.definitions", definitions))
    else:
        spans.append(span(9, 5, {"http.request.method": "GET",
                                 "gen_ai.tool.definitions": definitions}, kind=3))
    _, report = _audit(tmp_path, lines(request(*spans)))
    assert _tool_uses(report, "schedule_agent")["wire_money"] == "incompatible"


@pytest.mark.parametrize("kind", [pytest.param("CLIENT", id="name-without-prefix"),
                                  pytest.param(3.0, id="a-float"),
                                  pytest.param("3", id="a-string")])
def test_a_malformed_span_kind_is_reported_and_does_not_drop_an_a2a_call(
        tmp_path: Path, kind: Any) -> None:
    """An A2A client span with no served agent beneath it is the only trace of a call into
    another agent (``capability.callee-unknown``, indeterminate). A span kind that is neither
    an OTLP number nor a ``SPAN_KIND_`` name is read as UNSPECIFIED without a word, so the
    A2A call is passed through as a link and the run is ``compatible``, exit 0. Expected: the
    kind is ``trace.attribute-malformed`` (as a malformed status is) and the run is not
    compatible. Severity: medium (a delegation hidden)."""
    a2a = span(8, 2, {"a2a.method.name": "message/send", "a2a.task.id": "t-1"}, kind=3)
    a2a["kind"] = kind
    status, report = _audit(tmp_path, lines(request(*trip(), a2a)), "--manifests", MANIFESTS)
    assert "trace.attribute-malformed" in _codes(report)
    assert status != 0


# --- (f) --state over OTLP files -------------------------------------------------------------


def test_state_does_not_consume_a_torn_last_line_and_resumes_it_whole(tmp_path: Path) -> None:
    """The Collector appends a request line while the audit runs: the last line has no
    newline yet. With --state the torn line is folded (a syntax error) and the cursor moves
    past it; once the exporter finishes the line, the resumed run reads its tail as another
    bad line, so the request (an undeclared ``wire_money``) is never read: the resumed run is
    ``compatible`` (exit 0) while a fresh run of the same file is ``incompatible``. Expected:
    the cursor stops before a line without its newline, and the resumed run equals the fresh
    one. Severity: high (a span dropped silently, for ever, in the live-tail use)."""
    full = lines(request(*trip()), request(tool(8, 5, "wire_money")))
    cut = len(full) - 40
    path = tmp_path / "live.jsonl"
    path.write_text(full[:cut], encoding="utf-8")
    _run(tmp_path, "live.jsonl", "--no-shapes", "--manifests", MANIFESTS, "--state", "s")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(full[cut:])
    resumed = _run(tmp_path, "live.jsonl", "--no-shapes", "--manifests", MANIFESTS,
                   "--state", "s")
    fresh = _run(tmp_path, "live.jsonl", "--no-shapes", "--manifests", MANIFESTS)
    assert fresh.returncode == 1
    assert resumed.returncode == fresh.returncode


def _state_bytes(cwd: Path, text: str, name: str) -> int:
    (cwd / f"{name}.jsonl").write_text(text, encoding="utf-8")
    _run(cwd, f"{name}.jsonl", "--no-shapes", "--state", f"{name}.state", "--batch-size", "1")
    return (cwd / f"{name}.state").stat().st_size


def test_state_checkpoints_of_a_span_repeated_with_other_contents_grow_linearly(
        tmp_path: Path) -> None:
    """Each repeat of one span id with other contents appends ``target``, ``parent`` to the
    call's ``ambiguous`` list again, and every checkpoint rewrites the whole call: the state
    file grows with the square of the repeats (about 10x for 4x the lines at batch size 1).
    Expected: linear growth (under 6x for 4x); the ambiguity is a fact, said once.
    Severity: medium (state bytes quadratic within the input limits; counted in bytes, so
    deterministic)."""
    def text(repeats: int) -> str:
        return lines(*(request(tool(8, None, f"name-{i}")) for i in range(repeats)))

    small = _state_bytes(tmp_path, text(100), "small")
    large = _state_bytes(tmp_path, text(400), "large")
    assert large < 6 * small, (small, large)


def test_state_checkpoints_of_many_unknown_operations_grow_linearly(tmp_path: Path) -> None:
    """Every checkpoint writes the whole ``unknown`` table (and ``kinds``), not what the batch
    changed, so spans with distinct unknown ``gen_ai.operation.name`` values make the state
    file quadratic in them (about 10x for 4x the lines at batch size 1; mas-lab event kinds
    share the cause). Expected: under 6x for 4x. Severity: medium (state bytes quadratic)."""
    def text(count: int) -> str:
        return lines(*(request(span(i + 1, None, {"gen_ai.operation.name": f"op-{i}"}))
                       for i in range(count)))

    small = _state_bytes(tmp_path, text(100), "small")
    large = _state_bytes(tmp_path, text(400), "large")
    assert large < 6 * small, (small, large)


# --- (c) cost within the input limits -------------------------------------------------------


def _report_bytes(cwd: Path, text: str) -> int:
    (cwd / "many.jsonl").write_text(text, encoding="utf-8")
    return len(_run(cwd, "many.jsonl", "--format", "json", "--no-shapes").stdout)


def _traces(count: int, operation: Any = "invoke_agent") -> list[dict[str, Any]]:
    return [span(1, None, {"gen_ai.operation.name": operation(i) if callable(operation)
                           else operation, "gen_ai.agent.id": "a"}, trace=f"{i + 1:032x}")
            for i in range(count)]


def test_problems_of_a_request_are_not_repeated_in_the_report_of_every_trace(
        tmp_path: Path) -> None:
    """A request's problems are copied into every trace's run ("every run of the input
    carries them"): n traces and n malformed spans give n^2 findings. 100 of each already
    write 2.5 MB, 200 of each 9.7 MB; a 16 MiB line holds about 100,000 of each. Expected:
    the report grows linearly (under 3x for 2x: each problem said once, or once per run it
    belongs to). Severity: high (report size and time quadratic)."""
    def text(count: int) -> str:
        malformed = request(*_traces(count))
        # A span that is not an object: trace.event-malformed at its place.
        malformed["resourceSpans"][0]["scopeSpans"][0]["spans"].extend([1] * count)
        return lines(malformed)

    small = _report_bytes(tmp_path, text(100))
    large = _report_bytes(tmp_path, text(200))
    assert large < 3 * small, (small, large)


def test_unknown_operation_names_are_not_repeated_in_the_report_of_every_trace(
        tmp_path: Path) -> None:
    """The input's table of unknown operations (one entry per distinct
    ``gen_ai.operation.name``) is copied into every trace's run: n single-span traces with
    distinct unknown operations give n^2 entries in the report. Expected: linear (under 3x
    for 2x). Severity: medium."""
    def text(count: int) -> str:
        return lines(request(*_traces(count, lambda i: f"op-{i}")))

    small = _report_bytes(tmp_path, text(100))
    large = _report_bytes(tmp_path, text(200))
    assert large < 3 * small, (small, large)


def test_the_shacl_budget_bounds_an_input_of_many_traces_not_each_trace(tmp_path: Path) -> None:
    """--max-shape-calls keeps the SHACL check within its time bound (pyshacl costs 15-25 ms
    a call, and about 0.17 s a run on this machine). It is applied per run, and one OTLP file
    holds as many runs as trace ids: a 16 MiB line of one-span traces (about 50,000) would
    be checked run by run for hours. Expected: the calls the SHACL check takes on for one
    input stay within --max-shape-calls; the runs past it say ``trace.shapes-not-run``.
    Severity: medium (the documented bound does not bound an OTLP input)."""
    (tmp_path / "many.jsonl").write_text(lines(request(*_traces(6))), encoding="utf-8")
    proc = _run(tmp_path, "many.jsonl", "--format", "json", "--max-shape-calls", "3")
    summaries = [json.loads(line)["summary"] for line in proc.stdout.decode().splitlines()
                 if "summary" in json.loads(line)]
    checked = [s for s in summaries if "shapes" in s and not any(
        f["code"] == "trace.shapes-not-run" for f in s["shapes"]["findings"])]
    assert len(summaries) == 6
    assert len(checked) <= 3, len(checked)


# --- (d) nothing outside the table reaches the report ----------------------------------------


def test_an_attribute_outside_the_table_is_never_read_nor_named_in_the_report(
        tmp_path: Path) -> None:
    """docs/trace.md: "Only the attributes of the table are read"; otlp.py: "Attributes
    outside the table are never read". Yet every attribute's value is parsed, and one outside
    the table with a malformed value becomes a ``trace.attribute-malformed`` warning that
    quotes its key, here ``user.email=alice@example.org``, in the report, without
    --include-content and under --opaque-ids. Expected: attributes outside the table are not
    looked at, so neither a finding nor their key appears. Severity: low (keys, not values;
    but the claim is absolute)."""
    extra = span(8, 5, {"http.request.method": "GET"}, kind=3)
    extra["attributes"].append({"key": "user.email=alice@example.org",
                                "value": {"stringValue": 5}})
    path = tmp_path / "otlp.jsonl"
    path.write_text(lines(request(*trip(), extra)), encoding="utf-8")
    for output in ("json", "text"):
        proc = _run(tmp_path, "otlp.jsonl", "--format", output, "--no-shapes", "--opaque-ids",
                    "--manifests", MANIFESTS)
        assert b"alice@example.org" not in proc.stdout
        assert b"trace.attribute-malformed" not in proc.stdout


# --- (e) the same as mas-lab, and as the docs say --------------------------------------------


def test_the_text_report_of_an_a2a_call_with_an_unknown_callee_does_not_say_none(
        tmp_path: Path) -> None:
    """An A2A client span with no served agent beneath it makes a delegation whose callee is
    unknown; the text report prints it as ``delegates to None`` (Python's None leaking into
    prose), where every other unknown name reads ``(unknown)``. Expected: no ``None`` in the
    text report. Severity: low."""
    a2a = span(8, 2, {"a2a.method.name": "message/send"}, kind=3)
    (tmp_path / "otlp.jsonl").write_text(lines(request(*trip(), a2a)), encoding="utf-8")
    proc = _run(tmp_path, "otlp.jsonl", "--format", "text", "--no-shapes",
                "--manifests", MANIFESTS)
    assert proc.returncode == 3
    assert b"delegates to None" not in proc.stdout


def test_one_trace_exported_by_two_services_to_two_files_is_not_a_usage_error(
        tmp_path: Path) -> None:
    """Context propagation gives the client agent's and the served agent's spans one trace
    id; when each service's exporter writes its own file (or the Collector rotates its file
    mid-trace), ``ioa-check trace a.jsonl b.jsonl`` refuses with exit 2 ("the same run ...
    audit them separately"), and each file alone misreads the other half (callers unknown).
    The docs say spans of a trace "arrive in any order and in several requests". Expected:
    the files' spans of one trace are one run, judged as the single file is (exit 0 here).
    Severity: medium (the A2A scenario the feature names cannot be audited)."""
    spans = trip()
    (tmp_path / "client.jsonl").write_text(lines(request(*spans[:4])), encoding="utf-8")
    (tmp_path / "server.jsonl").write_text(lines(request(*spans[4:])), encoding="utf-8")
    proc = _run(tmp_path, "client.jsonl", "server.jsonl", "--no-shapes", "--manifests",
                MANIFESTS)
    assert proc.returncode == 0, proc.stderr
    assert TRACE.encode() in proc.stdout
