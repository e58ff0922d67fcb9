"""A review of aad1d56 ("the spent fold"): a run of mas-lab events built from its fold a call at
a time (``events.build_worded``), the report's and a store's wordings built together, the calls
put in order by two stable sorts (``nesting.in_order``), the JSON report's agent lines written
as they are made, and the memory bound projecting the later stages of mas-lab events as a
fifth of their reading (a quarter and 64 MiB with a store).

Compared against the commit before it (ec8b2b1) on the examples, the reference traces and
several thousand generated inputs (every report format, exit status, stderr, store quads,
--emit-kg graph, --state checkpoint), nothing differed. The tests below pin that:

* the spent build against the build as ec8b2b1 made it (copied here, the oracle), on generated
  events (incomplete calls, conflicts, ids spelling keys, other runs' events, placed parents)
  and on run folders whose files disagree with the events, through every kind of disclosure;
* the two sorts against the sort by pairs;
* each line of the JSON report as json.dumps makes it, whatever the names hold, and the same
  report whether a store is fed or not;
* the formats the bound is told of, input after input.

What did change is the bound: ``Budget.later("events")`` is measured on what follows the
reading of a run reported as text or JSON. Reported as HTML (the page's rows and timeline
are made of every call, a Decimal of each instant), or fed to a plain store with
--trajectory, what follows takes more than the bound keeps for it, and a run ec8b2b1 refused
within --max-memory is now judged past it (the strict xfails at the end).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

from ioa_semantic._codes import finding
from ioa_semantic._findings import Finding, Severity
from ioa_semantic.reporters import json_text
from ioa_semantic.trace import events, nesting, runfile
from ioa_semantic.trace.calls import Call, Run
from ioa_semantic.trace.events import Fold, Line, Source, build_worded, resolve
from ioa_semantic.trace.folded import FoldedCall
from ioa_semantic.trace.privacy import Disclosure, Private
from ioa_semantic.trace.state import consume

from support import IOA_CHECK

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "trace"
MASLAB = EXAMPLES / "mas-lab" / "run"
OTLP = EXAMPLES / "otel" / "otlp.jsonl"
MASLAB_SPANS = EXAMPLES / "otel" / "maslab-spans.jsonl"
KEY = b"k" * 32


def disclosures() -> list[Disclosure]:
    """The report's (plain, --opaque-ids, with content) and a private store's."""
    return [Disclosure(None), Disclosure(KEY), Disclosure(None, True),
            Private(KEY, frozenset({"lead"}), frozenset())]


# --- the oracle: the build as ec8b2b1 made it -----------------------------------------------


def _old_call(raw: FoldedCall, calls: dict[str, FoldedCall], by_id: dict[str, str],
              candidates: tuple[str, ...] | None) -> Call:
    parent_id = raw.parent
    parent = (raw.parentKey or by_id.get(parent_id)) if parent_id else None
    if not parent_id and candidates is None and raw.get("placed") is not None:
        parent = raw["placed"]
        parent_id = calls[parent].id or parent
    return Call(
        key=raw.key, id=raw.id, cls=raw.cls, agent=raw.agent,
        target=raw.target, parent=parent if parent != raw.key else None,
        parent_id=parent_id, start=raw.start, end=raw.end,
        first_line=raw.first, status=raw.status, label=raw.label,
        tokens=dict(raw.tokens) if raw.tokens else {}, finish=raw.finish,
        temperature=raw.temperature, response_id=raw.responseId,
        input=raw.input, output=raw.output, content=raw.content,
        ambiguous=tuple(raw.ambiguous or ()), candidates=candidates)


def old_build(source: Source, fold: Fold, disclose: Disclosure,
              place: nesting.Place = nesting.by_line) -> Run:
    """ec8b2b1's ``events.build``, which left the fold as it was (its ``calls`` argument,
    the calls of a build before, aside)."""
    call_name = events._call_name
    run_info = runfile.read_object(os.path.join(source.run_folder, "run_info.json")) if (
        source.run_folder) else {}
    run_file = runfile.read(source.run_folder, disclose) if source.run_folder else (
        runfile.RunFile())
    events_run_id = fold.run_ids.get("run_id")
    if run_file.run_id and events_run_id and run_file.run_id != events_run_id:
        run_file = runfile.mismatch(run_file, events_run_id, source.run_folder or "", disclose)
    ordered = sorted(fold.calls.values(), key=lambda c: (c.first, c.key))
    by_id: dict[str, str] = {}
    for call in ordered:
        if call.id:
            by_id.setdefault(call.id, call.key)
    roots = [c for c in ordered if c.cls == "mas"]
    run_id = (run_file.run_id or run_file.run_hash or events_run_id
              or fold.run_ids.get("session_id") or fold.run_ids.get("trace_id")
              or (roots[0].id if roots and roots[0].id else None))
    session_id = fold.run_ids.get("session_id") or run_id
    mas_info = run_info.get("mas")
    mas = run_file.mas_id or (
        events._text(mas_info.get("app")) if isinstance(mas_info, dict) else None) or (
        roots[0].agent if roots else None)
    settled = nesting.settle(fold.calls, fold.tree, disclose, place)
    findings: list[Finding] = [*run_file.findings, *events._unread(source, disclose),
                               *settled.findings]
    # The parents the events name, checked as the build checks them now (cycles are cut,
    # parents the trace does not hold reported): their findings follow the settled ones.
    cut = events._named_parents(fold, ordered, by_id, [events._Wording(
        source, disclose, run_file, None, settled, findings)], place)
    made: list[Call] = []
    for raw in ordered:
        built = _old_call(raw, fold.calls, by_id, settled.candidates.get(raw.key))
        made.append(built._replace(parent=None) if raw.key in cut else built)
        missing = [p for p, line in (("start", raw.startLine), ("end", raw.endLine))
                   if line is None]
        if missing:
            findings.append(finding(
                "trace.call-incomplete",
                f"{raw.cls} call {call_name(raw, disclose, place)}: the trace has no "
                f"{' and no '.join(missing)} event", place(raw.first)[1],
                severity=Severity.WARNING))
    skipped = 0
    for code, seq, detail in fold.problems:
        if code == "trace.call-conflict":
            conflicted = fold.calls[str(detail)]
            name = call_name(conflicted, disclose, place)
            where, path = place(seq)
            findings.append(finding(
                code, f"{where}: call {name} is started, ended or attributed twice "
                      "inconsistently; the ambiguous part is not used",
                path, severity=Severity.WARNING))
            continue
        where, path = place(seq)
        if code == "trace.attribute-malformed":
            findings.append(finding(code, f"{where}: {detail}", f"{path}/timestamp",
                                    severity=Severity.WARNING))
            continue
        skipped += 1
        findings.append(finding(code, f"{where}: {detail}; the line is skipped",
                                path, severity=Severity.WARNING))
    for other, (seq, count) in sorted(fold.other_runs.items(), key=lambda item: item[1]):
        where, path = place(seq)
        findings.append(finding(
            "trace.run-mismatch", f"{where}: {count} event{'s' if count > 1 else ''} carry "
            f"run_id {disclose.run(other)}, not the run's {disclose.run(str(events_run_id))}: "
            "another run's events in this one's stream, judged as this run's", path,
            severity=Severity.WARNING))
    return Run(
        source=source.given, run_id=run_id, session_id=session_id, mas=mas,
        calls=tuple(made), events=fold.events, kinds=dict(sorted(fold.kinds.items())),
        unknown=dict(sorted(fold.unknown.items())), records=tuple(fold.records),
        findings=tuple(findings), skipped=skipped, readable=True, scenario=run_file.scenario,
        status=run_file.status, created_at=run_file.created_at,
        duration_secs=run_file.duration_secs)


def folded(lines: list[bytes], include_content: bool = False) -> Fold:
    fold = Fold(include_content)
    for seq, data in enumerate(lines, 1):
        fold.line(Line(seq, 0, data))
    return fold


def assert_spent_build_is_the_old_one(source: Source, make: Any) -> None:
    """``build_worded`` through every disclosure at once equals ec8b2b1's build through each,
    of a fold of its own (read with --include-content or without); every run holds the one
    tuple of calls; the fold is left empty, and refused a second build."""
    wordings = disclosures()
    for content in (False, True):
        fold = make(content)
        runs = build_worded(fold, [(source, d) for d in wordings])
        assert fold.calls == {} and fold.spent
        for run, disclose in zip(runs, wordings, strict=True):
            assert run == old_build(source, make(content), disclose)
            assert run.calls is runs[0].calls
        with pytest.raises(ValueError, match="built once"):
            build_worded(fold, [(source, wordings[0])])


# Names a trace may give: ids that spell the keys the fold makes ("~3": an id-less call's,
# "a~5": an id started again), quotes, a newline, a line separator, a bidirectional override.
_IDS = st.sampled_from(["a", "b", "c", "~3", "~4", "a~5", "b~2", 'q"', "x\ny", 7, "", None])
_AGENTS = st.sampled_from(["lead", "finder", 'we"ird', "new\nline", "\u2028z\u202e", "", None])
_EVENT = st.fixed_dictionaries(
    {"kind": st.sampled_from([f"{c}_{p}" for c in ("execution", "llm_call", "tool_call",
                                                     "mas_call", "processing_call")
                              for p in ("start", "end")] + ["user_response", "odd_kind"])},
    optional={"agent_id": _AGENTS, "call_id": _IDS, "parent_call_id": _IDS,
              "run_id": st.sampled_from(["r1", "r1", "r2", "r\u00e9"]),
              "session_id": st.sampled_from(["s1", "s2"]),
              "timestamp": st.one_of(st.integers(0, 40), st.sampled_from(["soon", None])),
              "tool_name": st.sampled_from(["search", "pay", "<b>"]),
              "model": st.sampled_from(["m-1", "unknown"]),
              "response": st.fixed_dictionaries({"usage": st.fixed_dictionaries(
                  {"prompt_tokens": st.integers(0, 9)})}),
              "input": st.sampled_from(["hello", {"q": 1}]),
              "output": st.sampled_from(["bye", [1, 2]]),
              "status": st.sampled_from(["success", "error"])})
_LINE = st.one_of(_EVENT.map(lambda e: json.dumps(e).encode()),
                  st.sampled_from([b"{not json", b"[1, 2]", b"42", b""]))


@given(st.lists(_LINE, max_size=40))
def test_a_spent_build_is_the_build_before_it_on_any_events(lines: list[bytes]) -> None:
    source = Source("events.jsonl", "events.jsonl", None, None)
    assert_spent_build_is_the_old_one(source, lambda content: folded(lines, content))


def _nested(calls: int) -> list[bytes]:
    """A run whose calls name no ids: what nests in what is the order of events (a call's
    parent is the one the order placed it in, resolved as the calls before it are let go)."""
    # Ids whose keys are not the ids ("~" doubled): a placed call's parent id is its
    # parent's id, read of the parent's run call once the fold's is let go.
    out = [{"kind": "mas_call_start", "agent_id": "sys", "call_id": "ro~ot", "timestamp": 0}]
    for n in range(calls):
        lead = {"call_id": f"le~ad{n}"} if n % 2 else {}
        out += [{"kind": "execution_start", "agent_id": "lead", "timestamp": n, **lead},
                {"kind": "tool_call_start", "agent_id": "lead", "tool_name": "search",
                 "timestamp": n},
                {"kind": "execution_start", "agent_id": "finder", "timestamp": n},
                {"kind": "llm_call_start", "agent_id": "finder", "model": "m-1",
                 "timestamp": n},
                {"kind": "llm_call_end", "agent_id": "finder",
                 "response": {"usage": {"prompt_tokens": n}}, "timestamp": n},
                {"kind": "execution_end", "agent_id": "finder", "timestamp": n},
                {"kind": "tool_call_end", "agent_id": "lead", "tool_name": "search",
                 "timestamp": n}]
        if n % 3:  # an execution left open: its calls' parent is placed, not named
            out.append({"kind": "execution_end", "agent_id": "lead", "timestamp": n, **lead})
    out.append({"kind": "mas_call_end", "agent_id": "sys", "call_id": "ro~ot", "timestamp": 99})
    return [json.dumps({**e, "run_id": "r1"}).encode() for e in out]


def test_a_spent_build_resolves_placed_parents_as_the_build_before_it() -> None:
    lines = _nested(12)
    fold = folded(lines)
    assert sum(1 for c in fold.calls.values() if c.get("placed") is not None) > 12
    source = Source("events.jsonl", "events.jsonl", None, None)
    assert_spent_build_is_the_old_one(source, lambda content: folded(lines, content))


def _run_folder(folder: Path, run: Any, info: Any, both: bool) -> Path:
    (folder / "traces").mkdir(parents=True)
    text = b"\n".join(_nested(3)) + b"\n"
    (folder / "traces" / "events.jsonl").write_bytes(text)
    if both:  # events in both places the schema's readers look: the second is said unread
        (folder / "events.jsonl").write_bytes(text)
    if run is not None:
        (folder / "run.json").write_text(run if isinstance(run, str) else json.dumps(run))
    if info is not None:
        (folder / "run_info.json").write_text(json.dumps(info))
    return folder


@pytest.mark.parametrize(("run", "info", "both"), [
    ({"run_id": "other", "mas_id": "trip", "status": "success"}, {"mas": {"app": "a"}}, False),
    ({"run_id": "r1", "status": "bogus", "created_at": "yesterday"}, {"mas": {"app": 3}}, True),
    ({"run_hash": "h1"}, {"mas": "not an object"}, False),
    ("{not json", None, True),
    (None, {"mas": {"app": "from-info"}}, False),
], ids=["mismatch", "malformed-members", "run-hash", "unreadable", "info-only"])
def test_a_spent_build_words_a_run_folders_files_as_the_build_before_it(
        tmp_path: Path, run: Any, info: Any, both: bool) -> None:
    source = resolve(str(_run_folder(tmp_path / 'run "one"\nof them', run, info, both)))

    def make(content: bool) -> Fold:
        fold = Fold(content)
        consume(source, fold)
        return fold

    assert_spent_build_is_the_old_one(source, make)


# --- the order of the calls -----------------------------------------------------------------


@given(st.lists(st.tuples(st.integers(1, 6), st.text("ab~1", min_size=1, max_size=3)),
                unique_by=lambda pair: pair[1]))
def test_the_two_sorts_put_calls_in_the_order_of_the_pairs(pairs: list[tuple[int, str]]) -> None:
    calls = [FoldedCall(key, "", "tool", first) for first, key in pairs]
    assert nesting.in_order(calls) == sorted(calls, key=lambda c: (c.first, c.key))


# --- the JSON report as written -------------------------------------------------------------


def _ioa(args: list[Any], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run([IOA_CHECK, "trace", *args], cwd=cwd, capture_output=True,
                          timeout=300)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc


def _hostile(tmp_path: Path) -> bytes:
    """An events file whose name holds a byte that is not UTF-8 and a quote, whose names
    hold quotes, newlines, a line separator and a bidirectional override, and whose agent
    makes more calls of one tool than the report writes at once."""
    from ioa_semantic.reporters import trace as reporter

    agent = 'ag"ent\nx\u202e\\'
    out: list[dict[str, Any]] = [
        {"kind": "mas_call_start", "agent_id": "m\u2028as", "call_id": "root"},
        {"kind": "execution_start", "agent_id": agent, "call_id": "L" * 5000,
         "parent_call_id": "root", "input": "hi \u0000"}]
    for n in range(reporter._CALLS_A_WRITE + 9):
        for phase in ("start", "end"):
            out.append({"kind": f"tool_call_{phase}", "agent_id": agent, "call_id": f"t\"{n}",
                        "tool_name": "to\u0000ol\x1b[31m", "output": n})
    out += [{"kind": "execution_start", "agent_id": "other", "call_id": "dup"},
            {"kind": "execution_start", "agent_id": "other", "call_id": "dup"},
            {"kind": "tool_call_end", "agent_id": "z", "call_id": "never", "tool_name": "x"},
            {"kind": "execution_start", "agent_id": "z", "run_id": "another"},
            {"kind": "mas_call_end", "agent_id": "m\u2028as", "call_id": "root"}]
    name = os.fsencode(tmp_path) + b'/ev\xff"q.jsonl'
    with open(name, "wb") as handle:
        handle.write(b"".join(json.dumps({"run_id": "r\"1", "timestamp": n, **e}).encode()
                              + b"\n" for n, e in enumerate(out)))
    return name


@pytest.mark.parametrize("options", [[], ["--opaque-ids", "--opaque-key", "opaque.key",
                                          "--include-content"]],
                         ids=["plain", "opaque-content"])
def test_each_json_line_is_json_dumps_of_itself_and_a_store_leaves_the_report_as_it_was(
        tmp_path: Path, options: list[str]) -> None:
    (tmp_path / "opaque.key").write_bytes(KEY)
    name = _hostile(tmp_path)
    inputs = [name, str(OTLP), str(tmp_path / "missing.jsonl"), str(MASLAB),
              str(MASLAB_SPANS)]
    common = [*inputs, "--format", "json", "--no-shapes", *options]
    alone = _ioa(common, tmp_path)
    assert alone.returncode == 4, alone.stderr  # an input unreadable
    report = alone.stdout.decode("utf-8")  # UTF-8 whatever the names hold
    lines = report.splitlines()
    assert len(lines) >= 8
    for line in lines:
        assert json_text(json.loads(line)) == line
    if not options:
        sources = {json.loads(line).get("source") for line in lines}
        assert os.fsdecode(name) in sources  # the name's odd byte written as its escape
    # The report's runs and a private store's are built together; a plain store's take the
    # report's: the report is the one made without a store, byte for byte.
    for store in (["--store", "private"], ["--store", "plain", "--store-plain-ids"]):
        fed = _ioa([*common, *store, "--at", "2026-12-02T00:00:00Z"], tmp_path)
        assert (fed.returncode, fed.stdout, fed.stderr) == (
            alone.returncode, alone.stdout, alone.stderr)


# --- the formats the bound is told of -------------------------------------------------------


def test_the_bound_is_told_events_only_while_every_input_read_is_of_events(
        tmp_path: Path) -> None:
    import argparse

    from ioa_semantic.cli import trace as trace_cli
    from ioa_semantic.reporters.progress import reading
    from ioa_semantic.trace.memory import Budget

    class Told(Budget):
        """The real bound, far off, keeping what each check was told."""

        def __init__(self) -> None:
            super().__init__(1 << 50)
            self.told: list[tuple[str, str | None]] = []

        def check(self, where: str, format: str | None = None) -> None:
            self.told.append((where, format))
            super().check(where, format)

    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    events_file = MASLAB / "traces" / "events.jsonl"
    other = tmp_path / "other.jsonl"
    other.write_bytes(events_file.read_bytes().replace(b'"f52df92b"', b'"other"'))

    def told(*paths: Path) -> list[list[str | None]]:
        sources = [resolve(str(p)) for p in paths]
        opts = argparse.Namespace(include_content=False, batch_size=4,
                                  max_line_bytes=events.DEFAULT_MAX_LINE_BYTES,
                                  max_memory=1 << 50)
        budget, consumed = Told(), cast("trace_cli.Consumed", [])
        with open(os.devnull, "w") as sink, reading(sink, len(sources)) as shown:
            trace_cli._each(sources, opts, None, consumed, shown, budget, lambda: None)
        assert len(consumed) == len(paths)
        # Each input's checks: its batches, then its end.
        out: list[list[str | None]] = []
        for where, format in budget.told:
            if not out or out[-1][-1] == "end":
                out.append([])
            out[-1].append(format)
            if where.startswith("the end of the input"):
                out[-1].append("end")
        return [[f for f in each if f != "end"] for each in out]

    # Events alone: every check of every input is told "events" (its fold will be spent).
    assert {f for each in told(events_file, other) for f in each} == {"events"}
    # An input of nothing weighs nothing later: it changes nothing of the inputs after it.
    assert {f for each in told(empty, events_file)[1:] for f in each} == {"events"}
    # Spans read before events: the events are projected as the spans are, whole.
    spans_then_events = told(OTLP, events_file)
    assert {f for each in spans_then_events for f in each} == {None}
    # Events read before spans: the events as events, the spans as spans.
    events_then_spans = told(events_file, OTLP)
    assert set(events_then_spans[0]) == {"events"} and set(events_then_spans[1]) == {None}


# --- the bound is held whatever follows the reading (open: the xfails) ----------------------

# The run: one agent making 150,000 tool calls (63 MB of events, read into about 100 MiB).
_BIG_CALLS = 150_000

# Run in a process of its own: the bound's base (what the process held when it began), what
# it held once the inputs were read (the runs not built yet), and the most it ever held.
_PROBE = """
import json, sys
from ioa_semantic.cli import trace as trace_cli
from ioa_semantic.cli.main import main
from ioa_semantic.trace import memory
seen = {}
real_runs, real_init = trace_cli._runs, memory.Budget.__init__
def runs(*args, **kwargs):
    seen["read"] = memory.resident()
    return real_runs(*args, **kwargs)
def init(self, *args, **kwargs):
    real_init(self, *args, **kwargs)
    seen["base"], seen["later"], seen["fixed"] = self.base, self.later("events"), self.fixed
trace_cli._runs, memory.Budget.__init__ = runs, init
status = main(["trace", *sys.argv[1:]])
# The process's own high-water mark (VmHWM, of its memory since its exec): ru_maxrss of
# RUSAGE_SELF keeps the forking process's (a test run's hundreds of MiB) across the exec.
with open("/proc/self/status") as handle:
    seen["peak"] = next(int(line.split()[1]) * 1024 for line in handle
                        if line.startswith("VmHWM:"))
seen["status"] = status
print(json.dumps(seen), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def big_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("big")
    path = folder / "events.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        head = {"kind": "execution_start", "agent_id": "finder", "call_id": "ex", "run_id": "B",
                "timestamp": 0}
        handle.write(json.dumps(head) + "\n")
        for n in range(_BIG_CALLS):
            for phase in ("start", "end"):
                handle.write(json.dumps({
                    "kind": f"tool_call_{phase}", "agent_id": "finder", "run_id": "B",
                    "tool_name": ("search", "pay")[n % 2], "call_id": f"c{n}",
                    "parent_call_id": "ex", "timestamp": n / 1000, "arguments": {"n": n},
                    "output": f"out {n}"}) + "\n")
        handle.write(json.dumps({**head, "kind": "execution_end"}) + "\n")
    return path


def _later_stages(path: Path, cwd: Path, *options: str) -> dict[str, Any]:
    """What the bound projected for what follows the reading of ``path``, and what it took."""
    if sys.platform != "linux":
        pytest.skip("resident memory is read from /proc/self/statm")
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(path), "--no-shapes",
                           "--max-memory", "8GiB", *options], cwd=cwd, capture_output=True,
                          timeout=600)
    seen: dict[str, Any] = json.loads(proc.stderr.decode().strip().splitlines()[-1])
    assert seen["status"] in (0, 1, 3), proc.stderr.decode()
    seen["reading"] = seen["read"] - seen["base"]
    seen["projected"] = seen["fixed"] + seen["later"] * seen["reading"]
    seen["took"] = seen["peak"] - seen["read"]
    return seen


# The stores' cases feed 150,000 calls (with their trajectory about two and a half minutes;
# into a private store about one): in the slow run only.
@pytest.mark.parametrize("options", [
    ["--format", "json"],
    ["--format", "html"],
    pytest.param(["--format", "json", "--store", "plain", "--store-plain-ids", "--trajectory",
                  "--at", "2026-12-02T00:00:00Z"], marks=pytest.mark.slow),
    pytest.param(["--format", "json", "--store", "private", "--at", "2026-12-02T00:00:00Z"],
                 marks=pytest.mark.slow),
], ids=["json", "html", "plain-store-trajectory", "private-store"])
def test_what_follows_the_reading_of_events_fits_what_the_bound_projects(
        big_run: Path, tmp_path: Path, options: list[str]) -> None:
    seen = _later_stages(big_run, tmp_path, *options)
    assert seen["reading"] > 64 << 20, seen  # a run large enough to weigh
    assert seen["took"] <= seen["projected"], {
        k: round(v / (1 << 20), 1) for k, v in seen.items()
        if k in ("reading", "took", "projected")}
