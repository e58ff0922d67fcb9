"""``--max-memory``: a run that cannot be judged within the bound gets a reason naming it, is
not judged on part of its events, and nothing of it is stored.

Memory is read, never timed; the bounds of the tests are far from what the runs take (a run
of 42,000 events takes about 15 MiB to read, past the 35-40 MiB of the process that starts
to read it, and about 55 MiB in all; a run of 40 events, a few MiB).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support import IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import trace_runs
from test_trace_store import graphs
from test_trace_store_scale import large_run

from ioa_semantic.cli import trace as trace_cli
from ioa_semantic.cli.parsing import _size
from ioa_semantic.trace import memory

AT = "2026-12-02T00:00:00Z"
needs_proc = pytest.mark.skipif(memory.resident() is None,
                                reason="resident memory is read from /proc/self/statm")


def ioa(*args: object) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([IOA_CHECK, *map(str, args)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "COLUMNS": "200"})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("large")
    return large_run(folder / "runs", 7_000), trace_runs.write_manifests(folder / "m")


def summary(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    last = json.loads(proc.stdout.splitlines()[-1])
    assert isinstance(last["summary"], dict)
    return last["summary"]


@needs_proc
def test_a_run_past_the_bound_is_not_judged_and_the_reason_names_the_bound(
        large: tuple[Path, Path]) -> None:
    run, manifests = large
    proc = ioa("trace", run, "--manifests", manifests, "--no-shapes", "--format", "json",
               "--max-memory", "40MiB")
    assert proc.returncode == 3, proc.stderr
    found = summary(proc)
    assert found["verdict"] == "indeterminate"
    assert found["agents"] == {}  # not a verdict on part of the run
    [reason] = found["reasons"]
    assert reason["code"] == "trace.memory-bound"
    assert "--max-memory 40 MiB" in reason["message"] and "line " in reason["message"]
    assert "--max-memory 40 MiB" in proc.stderr


@needs_proc
def test_the_same_run_is_judged_under_a_bound_that_holds_it(large: tuple[Path, Path]) -> None:
    run, manifests = large
    proc = ioa("trace", run, "--manifests", manifests, "--no-shapes", "--format", "json",
               "--max-memory", "1GiB")
    assert proc.returncode == 1, proc.stderr  # the run calls the undeclared tool pay
    assert summary(proc)["agents"] == {"booker": "incompatible", "finder": "incompatible",
                                       "lead": "compatible", "writer": "incompatible"}


@needs_proc
def test_with_a_store_the_bound_keeps_room_for_storing_and_nothing_is_stored(
        large: tuple[Path, Path], tmp_path: Path) -> None:
    """A bound that holds the run's audit alone does not hold storing it too: the store
    gets neither a graph nor a verdict of the run (its cursor keeps the lines read)."""
    run, manifests = large
    # Measured: the run's audit alone holds from 100 MiB, storing it too from 140 MiB (the
    # fold's calls slotted; with dicts, 150 MiB lay between).
    plain = ioa("trace", run, "--manifests", manifests, "--no-shapes", "--format", "json",
                "--max-memory", "115MiB")
    assert plain.returncode == 1, plain.stderr
    store = tmp_path / "store"
    stored = ioa("trace", run, "--manifests", manifests, "--no-shapes", "--format", "json",
                 "--max-memory", "115MiB", "--store", store, "--at", AT)
    assert stored.returncode == 3, stored.stderr
    assert "judging and storing" in summary(stored)["reasons"][0]["message"]
    held = graphs(store)
    assert not any(name.startswith("<urn:ioa-trace:run:") for name in held)
    assert not held.get("<urn:ioa-trace:verdicts>")


def test_a_small_run_is_judged_under_the_default_bound_with_memory_read_each_batch(
        tmp_path: Path) -> None:
    spec = trace_runs.generate(1)[0]
    run = trace_runs.write_run(tmp_path, spec)
    proc = ioa("trace", run, "--no-shapes", "--format", "json", "--batch-size", "5")
    assert proc.returncode in (0, 1, 3) and "--max-memory" not in proc.stdout


def test_the_budget_projects_the_later_stages() -> None:
    budget = memory.Budget(1 << 40)
    budget.check("line 1")  # far within
    assert budget.checks == 1
    if budget.base is None:
        pytest.skip("resident memory is read from /proc/self/statm")
    store = memory.Budget(budget.base + 900 * (1 << 20), storing=True)
    assert store.base is not None
    # What storing takes whatever the run, then once again what reading took (spans, or an
    # input not read yet), or a fifth of it (mas-lab events: their folds are spent).
    room = budget.base + (900 - 64) * (1 << 20) - store.base
    assert store.reading_limit() == store.reading_limit("otlp") == store.base + int(room / 2)
    assert store.reading_limit("events") == store.base + int(room / 1.2)
    plain = memory.Budget(budget.base + 900 * (1 << 20))
    assert plain.base is not None
    assert plain.reading_limit("events") == plain.base + int(
        (budget.base + 900 * (1 << 20) - plain.base) / 1.2)
    # The HTML page orders a run's calls for its timeline: events' later stages as spans';
    # a store's graph with its trajectory, 2.5 times, whatever the input.
    assert memory.Budget(1 << 40, report="html").later("events") == memory.LATER_STAGES
    assert memory.Budget(1 << 40, report="json").later("events") == 0.2
    assert memory.Budget(1 << 40, True, "json", trajectory=True).later("events") == 2.5
    assert memory.Budget(1 << 40, False, "json", trajectory=True).later("events") == 0.2
    # A bound the process and the store's fixed part alone fill: reading may not grow.
    full = memory.Budget(budget.base + 32 * (1 << 20), storing=True)
    assert full.reading_limit() == full.base == full.reading_limit("events")
    tight = memory.Budget(1)
    with pytest.raises(memory.MemoryBound, match="--max-memory 1 bytes: at line 7") as raised:
        tight.check("line 7")
    # Said as the bound was given (not "0 MiB").
    assert "takes up to 2 times what reading it did" in str(raised.value)
    assert memory.mebibytes(1 << 20) == "1 MiB" and memory.mebibytes(64 << 10) == "64 KiB"
    assert memory.mebibytes(3 << 29) == "1536 MiB" and memory.mebibytes(1000) == "1000 bytes"
    with pytest.raises(memory.MemoryBound,
                       match=r"takes up to 64 MiB and 2 times what reading it did"):
        memory.Budget(1, storing=True).check("line 1")
    with pytest.raises(memory.MemoryBound,
                       match=r"takes up to 64 MiB and 1.2 times what reading it did"):
        memory.Budget(1, storing=True).check("line 1", "events")


@pytest.mark.default_memory_bound
def test_sizes() -> None:
    assert _size("512MiB") == 512 << 20 and _size("2 GiB") == 2 << 30 and _size("4096") == 4096
    assert _size("64k") == 64 << 10
    for bad in ("0", "-1", "1.5GiB", "12XB", "", "MiB"):
        with pytest.raises(argparse.ArgumentTypeError):
            _size(bad)
    assert trace_cli.DEFAULT_MAX_MEMORY == memory.DEFAULT_MAX_MEMORY == 512 << 20


def _otlp_inputs(folder: Path) -> tuple[Path, Path]:
    """One trace in two OTLP files: its workflow and agent spans in a small one, and 30,000
    tool calls of that agent in a large one, 250 a line (about 130 MiB to read)."""
    import otlp_requests as otlp

    folder.mkdir()
    small = folder / "small.jsonl"
    small.write_text(otlp.lines(otlp.request(
        otlp.span(1, None, {"gen_ai.operation.name": "invoke_workflow",
                            "gen_ai.workflow.name": "trip-planner"}),
        otlp.agent(2, 1, "moderator", ["lookup_schedule"]))))
    large = folder / "large.jsonl"
    with large.open("w") as out:
        for first in range(10, 30_010, 250):
            out.write(otlp.lines(otlp.request(*(otlp.tool(i, 2, "lookup_schedule")
                                                for i in range(first, first + 250)))))
    return small, large


def _rows(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line)["summary"] for line in proc.stdout.splitlines()
            if line.startswith('{"summary"')]


@needs_proc
def test_an_otlp_input_past_the_bound_leaves_no_trace_judged_on_the_spans_of_another(
        tmp_path: Path) -> None:
    """The spans of one trace may be in several files, read together: when one is not read
    whole, a trace of another is not judged on part of its spans (nor stored), and its
    cursor keeps what was read, so that a larger bound judges the trace whole."""
    small, large = _otlp_inputs(tmp_path / "in")
    store = tmp_path / "store"
    options = ["--no-shapes", "--format", "json", "--store", store, "--store-plain-ids",
               "--at", AT]
    bounded = ioa("trace", small, large, *options, "--max-memory", "160MiB")
    assert bounded.returncode == 3, bounded.stderr
    rows = _rows(bounded)
    assert len(rows) == 2 and all(r["verdict"] == "indeterminate" for r in rows), rows
    assert all(r["agents"] == {} for r in rows), rows
    assert all(r["reasons"][0]["code"] == "trace.memory-bound" for r in rows), rows
    held = graphs(store)
    assert not any(name.startswith("<urn:ioa-trace:run:") for name in held)
    assert not held.get("<urn:ioa-trace:verdicts>")
    whole = ioa("trace", small, large, *options, "--max-memory", "4GiB")
    [row] = _rows(whole)
    assert row["calls"]["tool"] == 30_000 and list(row["agents"]) == ["moderator"], row


@needs_proc
def _refused_while_reading(path: Path) -> None:
    """``path`` is refused under a 96 MiB bound where its reading passes it, not at its end."""
    proc = ioa("trace", path, "--no-shapes", "--format", "json", "--max-memory", "96MiB")
    assert proc.returncode == 3, proc.stderr
    [row] = _rows(proc)
    [reason] = row["reasons"]
    assert reason["code"] == "trace.memory-bound"
    assert "at line " in reason["message"] and "end of the input" not in reason["message"]


def test_memory_is_read_as_long_lines_are_read_not_only_every_batch_of_lines(
        tmp_path: Path) -> None:
    """A file of long lines (an OTLP exporter's batch of spans a line) is refused where its
    reading passes the bound, not once the whole file is read: memory is read every few MiB
    of input too, whatever --batch-size says."""
    _, large = _otlp_inputs(tmp_path / "in")  # 120 lines of 250 spans
    _refused_while_reading(large)


@needs_proc
def test_memory_is_read_as_pretty_printed_spans_are_read(tmp_path: Path) -> None:
    """The console exporter's spans (pretty-printed values, never checkpointed) are refused
    where their reading passes the bound too, not once the whole file is read."""
    spans = tmp_path / "console.txt"
    with spans.open("w") as out:
        for number in range(1, 30_001):
            out.write(json.dumps({
                "name": "execute_tool lookup_schedule",
                "context": {"trace_id": "0x5b8efff798038103d269b633813fc60c",
                            "span_id": f"0x{number:016x}", "trace_state": "[]"},
                "kind": "SpanKind.INTERNAL", "parent_id": None if number == 1 else f"0x{1:016x}",
                "start_time": "2026-12-02T21:24:14.565124Z",
                "end_time": "2026-12-02T21:24:14.565148Z", "status": {"status_code": "UNSET"},
                "attributes": {"gen_ai.operation.name": "execute_tool",
                               "gen_ai.tool.name": "lookup_schedule"},
                "events": [], "links": []}, indent=4) + "\n")
    _refused_while_reading(spans)


@needs_proc
@pytest.mark.parametrize("cursor", ["--state", "--store"])
def test_a_run_refused_midway_is_judged_whole_by_a_later_feed_under_a_larger_bound(
        tmp_path: Path, cursor: str) -> None:
    """Refused after its first batch, the run's cursor (a state file, a store) holds that
    batch with its fold: a later invocation under a bound that holds the run judges it from
    the checkpoint on, the whole run, as an invocation without a cursor does."""
    run = trace_runs.write_run(tmp_path / "runs", trace_runs.generate(1)[0])
    manifests = trace_runs.write_manifests(tmp_path / "m")
    base = ["trace", run, "--manifests", manifests, "--no-shapes", "--format", "json",
            "--batch-size", "5"]
    held = [cursor, tmp_path / "cursor", *(["--store-plain-ids", "--at", AT]
                                            if cursor == "--store" else [])]
    refused = ioa(*base, *held, "--max-memory", "1KiB")
    assert refused.returncode == 3 and "at line 5 " in refused.stderr, refused.stderr
    assert "--max-memory 1 KiB" in refused.stderr
    again = ioa(*base, *held)
    fresh = ioa(*base)
    assert again.returncode == fresh.returncode == 1
    assert {k: v for k, v in summary(again).items() if k != "source"} == {
        k: v for k, v in summary(fresh).items() if k != "source"}
