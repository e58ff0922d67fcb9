"""Many small runs into the trace store: the new ones gathered in batches, their graphs bulk
loaded together, then their records and verdicts committed in one transaction.

The store a batched feed makes is held to fixed expectations (each run's graph is what
``--emit-kg`` writes of it, with its record and digest; verdicts numbered 1..N in the
report's order) and to the store the path of one transaction a run makes, which a store on
a SPARQL server still takes (``TraceStore.gathers_runs`` off). A feed killed after each of
its transactions, the bulk loads counted, resumes to the store fed whole. Sizes and
transactions are counted, never timed.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import pyoxigraph
from test_trace import MANIFESTS, TRACES
from test_trace_store import KEY, PLAIN, feed, graphs, ioa, keyed

from ioa_semantic.cli.main import main
from ioa_semantic.trace import store as store_module
from ioa_semantic.trace.nquads import Chunk
from ioa_semantic.trace.privacy import Disclosure, Private
from ioa_semantic.trace.store import BATCH_QUADS_ENV, KILL_AFTER_ENV, TraceStore

import otlp_requests as otlp

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")

AT = "2026-12-02T00:00:00Z"
IOAT = "https://example.org/ioa/trace#"
RECORD, RECORD_SHA256 = f"<{IOAT}runRecord>", f"<{IOAT}recordSha256>"
SEQUENCE, AUDITED_RUN = f"<{IOAT}sequence>", f"<{IOAT}auditedRun>"
RESULT = f"<{IOAT}result>"
VERDICTS = "<urn:ioa-trace:verdicts>"
# A batch written once it would pass this many quads (a run here is 250 to 350 quads, its
# graph 115 to 200 of them): a feed of a dozen new runs makes two batches. Its graphs are bulk
# loaded from a tenth of that (store.BULK_SHARE): one run's are committed with its marks.
BATCH = "2200"
BULK = int(BATCH) // store_module.BULK_SHARE


# --- the traces --------------------------------------------------------------------------------


def trace(number: int, grown: bool = False) -> dict[str, Any]:
    """A small trace of the trip planner, id ``number``: moderator delegates to schedule_agent,
    which calls lookup_schedule ``number % 4`` times (book_hotel, which the manifests do not
    declare, first in every fifth trace); ``grown``: one call more, as when the trace's last
    span came late."""
    spans = [otlp.span(1, None, {"gen_ai.operation.name": "invoke_workflow",
                                 "gen_ai.workflow.name": "trip-planner"}),
             otlp.agent(2, 1, "moderator", ["delegate_to_schedule_agent"]),
             otlp.chat(3, 2, "azure/gpt-4o"),
             otlp.tool(4, 2, "delegate_to_schedule_agent"),
             otlp.agent(5, 4, "schedule_agent", ["lookup_schedule"])]
    spans += [otlp.tool(6 + i, 5, "book_hotel" if number % 5 == 0 and i == 0 else
                        "lookup_schedule") for i in range(number % 4 + grown)]
    return otlp.request(*[{**span, "traceId": f"{number:032x}"} for span in spans])


def write(path: Path, requests: list[dict[str, Any]]) -> Path:
    path.write_text(otlp.lines(*requests), encoding="utf-8")
    return path


def first_and_second(folder: Path) -> tuple[Path, Path]:
    """Two inputs fed one after the other: twelve new traces (even ids); then, runs taken in
    the order of their ids, new traces (odd ids: runs for a batch) among traces of the first
    input unchanged, at the line they had (a record unchanged: judged again against the
    manifests the second feed gives, a verdict alone), and grown (a graph replaced)."""
    first = write(folder / "first.jsonl", [trace(n) for n in range(2, 25, 2)])
    second = write(folder / "second.jsonl", [
        trace(1), trace(3), trace(5), trace(7), trace(10), trace(9), trace(11), trace(14, True),
        trace(13), trace(20), trace(15), trace(17), trace(19), trace(22, True), trace(23)])
    return first, second


SECOND = ["--manifests", MANIFESTS]
# The traces whose graph each input's feed writes (the others are judged again only), and
# the new ones of the second feed, in groups between the runs that take another path.
WRITTEN = {"first": range(2, 25, 2), "second": [1, 3, 5, 7, 9, 11, 13, 14, 15, 17, 19, 22, 23]}
GATHERED = [[1, 3, 5, 7, 9], [11, 13], [15, 17, 19], [23]]


# --- what is read of a store -----------------------------------------------------------------


def _value(literal: str) -> str:
    return json.loads(literal.rsplit("^^", 1)[0]) if literal.startswith('"') else literal


def runs_of(stored: dict[str, set[tuple[str, str, str]]]) -> dict[str, set[tuple[str, str, str]]]:
    return {name: graph for name, graph in stored.items() if name.startswith("<urn:ioa-trace:run:")}


def verdicts_of(stored: dict[str, set[tuple[str, str, str]]]) -> list[tuple[int, str, str]]:
    """The stored verdicts as (sequence number, run graph, result), in number order."""
    graph = stored.get(VERDICTS, set())
    by_node: dict[str, dict[str, str]] = {}
    for s, p, o in graph:
        if p in (SEQUENCE, AUDITED_RUN, RESULT):
            by_node.setdefault(s, {})[p] = o
    out = [(int(_value(v[SEQUENCE])), v[AUDITED_RUN], _value(v[RESULT]))
           for v in by_node.values() if SEQUENCE in v]
    return sorted(out)


def summaries(stdout: bytes) -> list[dict[str, Any]]:
    return [json.loads(line)["summary"] for line in stdout.decode().splitlines()
            if '"summary"' in line]


def report(path: Path, cwd: Path, *more: Any) -> bytes:
    """The report of ``path`` without a store."""
    proc = ioa(["trace", path, "--no-shapes", "--format", "json", *more], cwd)
    assert proc.returncode in (1, 3), proc.stderr
    return proc.stdout


def run_iri(mode: str, run: str) -> str:
    shown = Private(KEY) if mode == "private" else Disclosure(None)
    return f"<{shown.run_iri(run)}>"


def store_for(folder: Path, mode: str) -> Path:
    return keyed(folder) if mode == "private" else folder


def options(mode: str) -> list[Any]:
    return ["--batch-size", "100000", *([PLAIN] if mode == "plain" else [])]


# --- the store a batched feed makes --------------------------------------------------------------


@pytest.mark.parametrize("mode", ["private", "plain"])
def test_a_batched_feed_stores_each_run_whole_and_numbers_verdicts_in_report_order(
        tmp_path: Path, mode: str) -> None:
    """Fixed expectations: each run's graph holds one record, whose digest is stored with
    it; the verdicts are numbered 1..N in the order of the report, each of the run the report
    names there and with its result; the report is the report without a store. In a plain
    store each run's graph is what --emit-kg writes of it (the graphs of a private one name
    what the emitted graph names by its references: compared with the per-run path below)."""
    first, second = first_and_second(tmp_path)
    store = store_for(tmp_path / "store", mode)
    env = {BATCH_QUADS_ENV: BATCH}
    expected: list[tuple[str, str]] = []
    for path, more in ((first, []), (second, SECOND)):
        kg = tmp_path / f"{path.stem}.nt"
        proc = feed([path], store, tmp_path, *options(mode), *more, "--emit-kg", kg, env=env)
        assert proc.returncode in (1, 3), proc.stderr
        assert proc.stdout == report(path, tmp_path, *more)
        expected += [(run_iri(mode, s["run"]), s["verdict"]) for s in summaries(proc.stdout)]
        stored = graphs(store)
        # One verdict a run and feed, in the report's order (the unchanged runs of the second
        # feed judged again against its manifests, the grown ones as grown).
        assert verdicts_of(stored) == [
            (n, run, result) for n, (run, result) in enumerate(expected, 1)]
        runs = runs_of(stored)
        assert set(runs) == {run for run, _ in expected}
        for graph in runs.values():
            (record,) = [o for _, p, o in graph if p == RECORD]
            (digest,) = [o for _, p, o in graph if p == RECORD_SHA256]
            assert store_module.record_digest(json.loads(_value(record))) == _value(digest)
        if mode == "plain":
            emitted = pyoxigraph.Store()
            emitted.load(kg.read_bytes(), pyoxigraph.RdfFormat.N_TRIPLES)
            triples = {(str(q.subject), str(q.predicate), str(q.object)) for q in emitted}
            # The graphs this feed wrote (a run judged again keeps the graph it had).
            written = {run_iri(mode, f"{n:032x}") for n in WRITTEN[path.stem]}
            assert written <= set(runs)
            for name in written:
                own = {t for t in runs[name] if t[1] not in (RECORD, RECORD_SHA256)}
                # The run's own nodes (named under its IRI) exactly; the agents, tools and
                # models it shares with the other runs, among the emitted ones.
                prefix = name[:-1] + ":"
                assert {t for t in own if t[0].startswith(prefix) or t[0] == name} == {
                    t for t in triples if t[0].startswith(prefix) or t[0] == name}
                assert own <= triples
            if path == first:  # every run new: the emitted graph is theirs, whole
                assert set().union(*(runs[name] for name in written)) - {
                    t for name in written for t in runs[name]
                    if t[1] in (RECORD, RECORD_SHA256)} == triples


@pytest.mark.parametrize("mode", ["private", "plain"])
def test_a_batched_feed_stores_what_one_transaction_a_run_stored(
        tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The same two feeds into a store that gathers runs and one that does not (the path of
    one transaction a run, which a store on a SPARQL server takes): the same quads, graph for
    graph, and the same reports."""
    first, second = first_and_second(tmp_path)
    monkeypatch.setenv(BATCH_QUADS_ENV, BATCH)
    stores = {}
    for gathers in (True, False):
        monkeypatch.setattr(TraceStore, "gathers_runs", gathers)
        store = store_for(tmp_path / f"store-{gathers}", mode)
        outputs = []
        for path, more in ((first, []), (second, SECOND)):
            status = main(["trace", str(path), "--store", str(store), "--no-shapes", "--format",
                           "json", "--at", AT, *map(str, options(mode)), *map(str, more)])
            assert status in (1, 3)
            outputs.append(capsys.readouterr().out)
        stores[gathers] = (graphs(store), outputs)
    assert stores[True] == stores[False]
    assert len(runs_of(stores[True][0])) == 23


# --- how it is written --------------------------------------------------------------------------


def test_a_batch_is_loaded_whole_then_its_marks_committed_in_one_transaction(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The new runs' graphs go to the store a bulk load a batch (never one a run), each batch
    within its bound, and then, in one transaction, the records and verdicts of exactly the
    runs that load held, their verdicts numbered on from the last batch's. Runs that take
    another path (a verdict alone, a graph replaced) write the batch gathered before them
    first."""
    first, second = first_and_second(tmp_path)
    monkeypatch.setenv(BATCH_QUADS_ENV, BATCH)
    writes: list[tuple[str, Any]] = []
    commit, load, replace = TraceStore.commit, TraceStore.load, TraceStore.replace

    def named(quads: Any) -> tuple[int, set[str], list[int]]:
        parsed = list(quads)
        runs = {q.graph_name.value for q in parsed if q.graph_name.value.startswith(
            "urn:ioa-trace:run:")}
        numbers = [int(q.object.value) for q in parsed
                   if q.predicate.value == f"{IOAT}sequence"]
        return len(parsed), runs, sorted(numbers)

    def spy_commit(self: TraceStore, quads: Any) -> None:
        writes.append(("commit", named(quads)))
        commit(self, quads)

    def spy_load(self: TraceStore, quads: Chunk) -> None:
        writes.append(("load", named(quads)))
        load(self, quads)

    def spy_replace(self: TraceStore, graph: str, quads: Any) -> None:
        writes.append(("replace", named(quads)))
        replace(self, graph, quads)

    monkeypatch.setattr(TraceStore, "commit", spy_commit)
    monkeypatch.setattr(TraceStore, "load", spy_load)
    monkeypatch.setattr(TraceStore, "replace", spy_replace)
    store = tmp_path / "store"
    for path, more in ((first, []), (second, SECOND)):
        assert main(["trace", str(path), "--store", str(store), "--no-shapes", "--format",
                     "json", "--at", AT, PLAIN, "--batch-size", "100000", *map(str, more)]) in (
            1, 3)
        capsys.readouterr()
        writes.append(("feed", (0, set(), [])))
    loads = [index for index, (kind, _) in enumerate(writes) if kind == "load"]
    for index in loads:
        (_, (count, runs, sequence)), (kind, (marks, marked, verdicts)) = writes[index:index + 2]
        assert kind == "commit" and runs == marked and not sequence
        assert count >= BULK and count + marks <= int(BATCH)
        assert len(runs) > 1  # never a load for one small run
        assert verdicts == list(range(verdicts[0], verdicts[0] + len(runs)))
    # Every verdict written in the order of its number, whichever its path.
    assert [n for _, (_, _, v) in writes for n in v] == list(range(1, 28))
    # The first feed: its twelve runs in two batches. The second: the new runs of each group
    # between the others gathered apart; the last, one run, in one transaction.
    start = next(i for i, (kind, _) in enumerate(writes) if kind == "feed")
    first_loads = [len(writes[i][1][1]) for i in loads if i < start]
    assert len(first_loads) == 2 and sum(first_loads) == 12, first_loads
    groups: list[set[str]] = [set()]
    for before, (kind, (count, runs, verdicts)) in zip(writes[start:], writes[start + 1:],
                                                        strict=False):
        if kind == "load":
            groups[-1] |= runs
        elif kind == "replace" or (kind == "commit" and verdicts and not runs):
            groups.append(set())  # a graph replaced, a verdict alone
        elif kind == "commit" and runs and before[0] != "load":
            groups[-1] |= runs  # a batch of few quads: its graphs and marks at once
            assert len(runs) == 1 and count < int(BATCH)
    assert [group for group in groups if group] == [
        {run_iri("plain", f"{n:032x}").strip("<>") for n in group} for group in GATHERED]
    # Of the runs that take another path: two verdicts alone, two graphs replaced.
    assert len(groups) == 5 and sum(kind == "replace" for kind, _ in writes) == 2


class _Writes:
    """A store's writes, as a batch makes them: (kind, quads, bytes)."""

    def __init__(self) -> None:
        self.made: list[tuple[str, int, int]] = []

    def load(self, quads: Chunk) -> None:
        self.made.append(("load", len(quads), len(quads.data)))

    def commit(self, quads: Chunk) -> None:
        self.made.append(("commit", len(quads), len(quads.data)))


def _lines(count: int, width: int = 0) -> Chunk:
    return Chunk.lines([f'<urn:x:{n}> <urn:x:p> "{"x" * width}" <urn:x:g> .\n'
                        for n in range(count)])


def test_a_batch_is_bounded_in_quads_and_bytes_and_few_quads_go_in_one_transaction(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch is written before it would pass CHUNK_QUADS quads or BATCH_BYTES (a run of
    few quads may carry a record of 64 KiB), never empty, and graphs of fewer quads than a
    BULK_SHARE of the bound are committed with their marks in one transaction."""
    monkeypatch.delenv(BATCH_QUADS_ENV, raising=False)
    limit, bulk = store_module.CHUNK_QUADS, store_module.CHUNK_QUADS // store_module.BULK_SHARE
    writes = _Writes()
    batch = store_module._Batch(writes)  # type: ignore[arg-type]
    batch.write()
    assert writes.made == []
    for index in range(100):  # 100 runs of 300 quads: a batch every 66 runs
        batch.add(f"urn:run:{index}", _lines(200), _lines(100))
    assert "urn:run:99" in batch and "urn:run:0" not in batch
    assert [kind for kind, _, _ in writes.made] == ["load", "commit"]
    assert writes.made[0][1] == 66 * 200 and writes.made[1][1] == 66 * 100
    batch.write()
    assert writes.made[2:] == [("load", 34 * 200, writes.made[2][2]),
                               ("commit", 34 * 100, writes.made[3][2])]
    assert bulk <= 34 * 200
    # Few quads, many bytes: a batch every 64 KiB record's share of BATCH_BYTES.
    writes.made.clear()
    record = 64 << 10
    for index in range(300):
        batch.add(f"urn:run:{index}", _lines(5), _lines(1, record))
    batch.write()
    assert all(size <= store_module.BATCH_BYTES for _, _, size in writes.made)
    assert len(writes.made) > 2 and {kind for kind, _, _ in writes.made} == {"commit"}
    assert sum(count for _, count, _ in writes.made) == 300 * 6
    # A run's graph past the bound is written alone (a batch never empty).
    writes.made.clear()
    batch.add("urn:run:a", _lines(10), _lines(1))
    batch.add("urn:run:b", _lines(limit), _lines(1))
    batch.write()
    assert writes.made[0] == ("commit", 11, writes.made[0][2])
    assert [(kind, count) for kind, count, _ in writes.made[1:]] == [
        ("load", limit), ("commit", 1)]


def test_many_small_runs_are_written_in_few_transactions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """1,400 small runs (about 330,000 quads): a bulk load and a transaction about every
    CHUNK_QUADS quads, not a transaction a run; none past its bound."""
    path = write(tmp_path / "traces.jsonl", [trace(n) for n in range(1, 1401)])
    counted: list[TraceStore] = []
    finish = TraceStore.finish

    def spy_finish(self: TraceStore) -> None:
        counted.append(self)
        finish(self)

    monkeypatch.setattr(TraceStore, "finish", spy_finish)
    status = main(["trace", str(path), "--store", str(tmp_path / "store"), "--no-shapes",
                   "--format", "json", "--at", AT, "--batch-size", "100000"])
    capsys.readouterr()
    assert status == 3
    (store,) = counted
    assert store.written > 300_000
    batches = -(-store.written // store_module.CHUNK_QUADS)
    # The store made, the input's checkpoint, then a load and a commit a batch (a batch is
    # written before it would pass its bound, so a few more than the quads' share).
    assert store.transactions <= 2 + 2 * (batches + 2), store.transactions
    assert store.largest <= store_module.CHUNK_QUADS


def test_a_run_recorded_twice_in_one_feed_is_read_as_stored_the_second_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run given twice to one feed's recording (the CLI refuses two inputs of one run with
    calls, not of one without): the second finds the first stored, batched or not, and adds
    nothing, as one transaction a run did."""
    from ioa_semantic.trace.audit import audit
    from ioa_semantic.trace.declarations import Declarations
    from ioa_semantic.trace.events import Fold, resolve, runs
    from ioa_semantic.trace.state import consume
    from ioa_semantic.trace.store import Feed, Judged, basis

    path = write(tmp_path / "t.jsonl", [trace(3), trace(4)])
    stores = {}
    for gathers in (True, False):
        monkeypatch.setattr(TraceStore, "gathers_runs", gathers)
        fed = Feed(str(tmp_path / f"store-{gathers}"), "c", plain=True)
        disclose = fed.disclosure(Declarations(None, None, None))
        fold = Fold()
        source = resolve(str(path))
        consume(source, fold)
        built = runs(source, fold, disclose)
        declarations = Declarations(None, None, None)
        audits = [audit(run, declarations, disclose) for run in built]
        judged = Judged([*audits, audits[0]], [*built, built[0]], declarations, disclose)
        grounds = basis(declarations, disclose, None, [], None, None)
        assert fed.record(judged, grounds, datetime(2026, 12, 2, tzinfo=UTC)) == 2
        del fed
        stores[gathers] = graphs(tmp_path / f"store-{gathers}")
    assert len(verdicts_of(stores[True])) == 2
    assert stores[True] == stores[False]


# --- crash safety -----------------------------------------------------------------------------


def _numbered_from_one(stored: dict[str, set[tuple[str, str, str]]]) -> None:
    """What a crash leaves: verdicts numbered 1..m, each of a run whose graph holds its
    record (a verdict is never written before its run's record, nor after a later one)."""
    verdicts = verdicts_of(stored)
    assert [n for n, _, _ in verdicts] == list(range(1, len(verdicts) + 1))
    runs = runs_of(stored)
    for _, run, _ in verdicts:
        assert any(p == RECORD_SHA256 for _, p, _ in runs[run])


@pytest.mark.parametrize("mode", ["private", "plain"])
def test_a_batched_feed_killed_after_any_transaction_resumes_to_the_store_fed_whole(
        tmp_path: Path, mode: str) -> None:
    """Each of the two feeds killed with SIGKILL right after its k-th transaction, for every
    k (the bulk loads counted), then fed again: the store fed whole, the report of the whole
    feed, no run doubled or lost."""
    first, second = first_and_second(tmp_path)
    env = {BATCH_QUADS_ENV: BATCH}
    whole = store_for(tmp_path / "whole", mode)
    base = tmp_path / "base"  # the second feed's start: the store the first made
    reports, stores = [], []
    for path, more in ((first, []), (second, SECOND)):
        proc = feed([path], whole, tmp_path, *options(mode), *more, env=env)
        assert proc.returncode in (1, 3), proc.stderr
        reports.append(proc.stdout)
        stores.append(graphs(whole))
        if path == first:
            shutil.copytree(whole, base)
    # The first feed's start: an empty store (with the key both share, a private one).
    empty = tmp_path / "empty"
    if mode == "private":
        keyed(empty)
    cut_between = 0
    counts: list[int] = []
    for (path, more), start, output, fed in zip(((first, []), (second, SECOND)),
                                               (empty, base), reports, stores, strict=True):
        after = 0
        while True:
            after += 1
            killed = tmp_path / f"killed-{path.stem}-{after}"
            if start.exists():
                shutil.copytree(start, killed)
            proc = feed([path], killed, tmp_path, *options(mode), *more,
                        env={**env, KILL_AFTER_ENV: str(after)})
            if proc.returncode != -9:  # fewer transactions than k: the feed whole
                assert proc.stdout == output, proc.stderr
                assert graphs(killed) == fed
                break
            left = graphs(killed)
            _numbered_from_one(left)
            cut_between += any(not any(p == RECORD_SHA256 for _, p, _ in g)
                               for g in runs_of(left).values())
            again = feed([path], killed, tmp_path, *options(mode), *more, env=env)
            assert again.stdout == output, again.stderr
            assert graphs(killed) == fed
            shutil.rmtree(killed)
        counts.append(after - 1)
    # The store made (the first feed), the input's checkpoint, and the runs: fewer
    # transactions than one a run (12 and 15), the bulk loads counted.
    assert counts[0] < 2 + 12 and counts[1] < 1 + 15, counts
    assert cut_between >= 4  # kills fell between a batch's load and its marks
