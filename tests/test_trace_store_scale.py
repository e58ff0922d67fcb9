"""A large run into the trace store: its graph written in bounded transactions, its record
and verdict last, and a write cut short anywhere in it resumed to the store fed whole.

The sizes are counted, never timed: the quads each transaction writes (a spy on
``TraceStore.commit`` in-process), and the graphs of stores compared quad for quad.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import trace_runs
from test_trace_nquads import SOURCE as NQUADS_SOURCE
from test_trace_nquads import runs as nquads_runs
from test_trace_store import feed, graphs, keyed

from ioa_semantic.cli.main import main
from ioa_semantic.trace import store as store_module
from ioa_semantic.trace.declarations import Declarations
from ioa_semantic.trace.events import Fold, build, resolve
from ioa_semantic.trace.graph import quad_chunks, quads
from ioa_semantic.trace.nquads import Chunk
from ioa_semantic.trace.privacy import Disclosure
from ioa_semantic.trace.state import consume
from ioa_semantic.trace.store import KILL_AFTER_ENV, TraceStore

AT = "2026-12-02T00:00:00Z"
RECORD_SHA256 = "<https://example.org/ioa/trace#recordSha256>"


def large_run(folder: Path, tools: int) -> Path:
    """One run in which each specialist calls ``tools`` tools: about 2 events a call."""
    uses = {agent: [trace_runs.DECLARED[agent][i % len(trace_runs.DECLARED[agent])]
                    if i % 50 else "pay" for i in range(tools)]
            for agent in trace_runs.SPECIALISTS}
    spec = trace_runs.Spec("large-run", trace_runs.BASE_TIME, uses)
    return trace_runs.write_run(folder, spec)


def run_graph(stored: dict[str, set[tuple[str, str, str]]]) -> set[tuple[str, str, str]]:
    """The one run graph of a store (named by a keyed reference in a private store)."""
    names = [name for name in stored if name.startswith("<urn:ioa-trace:run:")]
    assert len(names) == 1, names
    return stored[names[0]]


def test_a_large_runs_graph_is_written_in_bounded_transactions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        ) -> None:
    run = large_run(tmp_path / "runs", 700)  # about 2,100 calls, 40,000 quads
    manifests = trace_runs.write_manifests(tmp_path / "m")
    sizes: dict[str, list[int]] = {"commit": [], "load": []}
    commit, load = TraceStore.commit, TraceStore.load

    def spy_commit(self: TraceStore, batch: list[Any]) -> None:
        sizes["commit"].append(len(batch))
        commit(self, batch)

    def spy_load(self: TraceStore, batch: Chunk) -> None:
        sizes["load"].append(len(batch))
        load(self, batch)

    compacted: list[int] = []
    monkeypatch.setattr(TraceStore, "commit", spy_commit)
    monkeypatch.setattr(TraceStore, "load", spy_load)
    monkeypatch.setattr(TraceStore, "compact", lambda self: compacted.append(self.written))
    monkeypatch.setattr(store_module, "CHUNK_QUADS", 5_000)
    monkeypatch.setattr(store_module, "COMPACT_QUADS", 30_000)
    status = main(["trace", str(run), "--manifests", str(manifests), "--no-shapes",
                   "--format", "json", "--store", str(tmp_path / "store"), "--at", AT])
    assert status == 1
    capsys.readouterr()
    stored = run_graph(graphs(tmp_path / "store"))
    assert len(stored) > 30_000
    # The graph was loaded in chunks, none larger than a chunk's size (the structural nodes,
    # a few dozen quads, ride with the last); the verdict and the record came in a
    # transaction of their own, after them, and no transaction was large.
    assert len(sizes["load"]) >= 6 and max(sizes["load"]) <= 5_000 + 200, sizes
    assert sum(sizes["load"]) >= len(stored) - 2
    assert max(sizes["commit"]) < 1_000, sizes
    # The feed wrote past a million quads' worth of the test's scale: the store compacted.
    assert compacted and compacted[0] >= 30_000
    assert sum(1 for t in stored if t[1] == RECORD_SHA256) == 1


def test_a_large_runs_graph_loaded_in_bulk_is_not_flushed_chunk_by_chunk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        ) -> None:
    """The bulk loader writes the store's files itself: its chunks leave nothing in the
    memory tables, so they do not count toward FLUSH_QUADS (flushing after them cost a
    quarter of a long feed's time). Transactions still do."""
    run = large_run(tmp_path / "runs", 700)  # about 40,000 quads of graph
    flushed: list[int] = []
    flush = TraceStore.flush

    def spy_flush(self: TraceStore) -> None:
        flushed.append(self.written)
        flush(self)

    monkeypatch.setattr(TraceStore, "flush", spy_flush)
    monkeypatch.setattr(store_module, "CHUNK_QUADS", 5_000)
    monkeypatch.setattr(store_module, "FLUSH_QUADS", 4_000)
    main(["trace", str(run), "--no-shapes", "--format", "json", "--store",
          str(tmp_path / "store"), "--at", AT])
    capsys.readouterr()
    assert len(run_graph(graphs(tmp_path / "store"))) > 30_000
    # Once, at the feed's end (the reading's checkpoints are far fewer than 4,000 quads).
    assert len(flushed) == 1, flushed
    # Transactions count: 4,000 quads committed in small transactions are flushed.
    flushed.clear()
    opened = TraceStore(str(tmp_path / "store"))
    for index in range(5):
        opened.commit(Chunk.lines([f"<urn:x:{index}:{n}> <urn:x:p> <urn:x:o> <urn:x:g> .\n"
                                   for n in range(1_000)]))
    assert len(flushed) == 1, flushed
    del opened


def test_a_small_feed_leaves_the_compaction_to_a_larger(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        ) -> None:
    compacted: list[int] = []
    monkeypatch.setattr(TraceStore, "compact", lambda self: compacted.append(self.written))
    run = trace_runs.write_run(tmp_path / "runs", trace_runs.generate(1)[0])
    main(["trace", str(run), "--no-shapes", "--format", "json", "--store",
          str(tmp_path / "store"), "--at", AT])
    capsys.readouterr()
    assert compacted == []


def test_a_write_cut_short_in_a_large_graph_resumes_to_the_store_fed_whole(
        tmp_path: Path) -> None:
    run = large_run(tmp_path / "runs", 700)  # two chunks of 20,000 quads and a last one
    manifests = trace_runs.write_manifests(tmp_path / "m")
    options = ["--manifests", manifests, "--batch-size", "100000"]
    whole = keyed(tmp_path / "whole")
    expected = feed([run], whole, tmp_path, *options)
    assert expected.returncode == 1, expected.stderr
    fed = graphs(whole)
    whole_run = run_graph(fed)
    assert sum(1 for t in whole_run if t[1] == RECORD_SHA256) == 1
    # Transactions: the store made (1), the input's checkpoint (1), the graph dropped (1), then
    # a chunk each. Killed after each of those, the store holds part of the graph and no
    # record; fed again, it is the store fed whole.
    for after in (3, 4, 5):
        killed = keyed(tmp_path / f"killed-{after}")
        proc = feed([run], killed, tmp_path, *options, env={KILL_AFTER_ENV: str(after)})
        assert proc.returncode == -9, proc.stderr
        cut = graphs(killed)
        part = run_graph(cut) if after > 3 else set()
        assert not any(t[1] == RECORD_SHA256 for t in part)
        if after > 3:
            assert 0 < len(part) < len(whole_run)
        else:
            assert not any(name.startswith("<urn:ioa-trace:run:") for name in cut)
        again = feed([run], killed, tmp_path, *options)
        assert again.stdout == expected.stdout, again.stderr
        assert graphs(killed) == fed


@pytest.mark.parametrize("size", [1, 7, 500, 1 << 62])
@pytest.mark.parametrize("trajectory", [False, True])
def test_the_graph_in_chunks_is_the_graph(tmp_path: Path, size: int, trajectory: bool) -> None:
    """Whatever the chunk size, the chunks hold the quads of the whole graph, each chunk at
    most ``size`` quads but the last (which carries the structural nodes)."""
    spec = trace_runs.generate(3, seed=size % 97)[0]
    run = trace_runs.write_run(tmp_path, spec)
    fold = Fold()
    source = resolve(str(run))
    consume(source, fold)
    built = build(source, fold, Disclosure(None, False))
    declarations = Declarations(manifests=None, bindings=None, registrations=None)
    disclose = Disclosure(None, False)
    whole = quads(built, declarations, disclose, "urn:g", trajectory)
    chunks = list(quad_chunks(built, declarations, disclose, "urn:g", trajectory, size))
    assert {q for chunk in chunks for q in chunk} == set(whole)
    assert all(len(chunk) <= size for chunk in chunks[:-1])
    if size == 1:
        assert len(chunks) > 50



def _transitions(stored: set[tuple[str, str, str]]) -> int:
    return sum(1 for t in stored if t[2].endswith("#Transition>"))


def replacement_cut_short(tmp_path: Path, store: Path | str,
                          read: Callable[[], dict[str, set[tuple[str, str, str]]]],
                          *more: str, env: dict[str, str] | None = None) -> None:
    """A stored large run replaced by its grown version, the write killed after the old graph
    was dropped: the next feeds still know the run the store held. A feed of part of its calls
    is refused (it would lose some), and the grown version fed without --trajectory keeps the
    trajectory the stored graph had, as when nothing was cut short. (On a server too:
    tests/test_trace_store_remote.py, which gives ``env`` to every feed.)"""
    # 1,200 calls, 1,200 transitions: with its trajectory the graph is two chunks of 20,000
    # quads and a last one of 14,600, enough for a kill between chunks (the 2,100 calls of
    # large_run(700) made five chunks, each written four times, for the same statement).
    run = large_run(tmp_path / "runs", 400)
    manifests = trace_runs.write_manifests(tmp_path / "m")
    options = ["--manifests", manifests, "--batch-size", "100000", *more]
    assert feed([run], store, tmp_path, *options, "--trajectory", env=env).returncode == 1
    assert _transitions(run_graph(read())) > 1000
    events = run / "traces" / "events.jsonl"
    lines = events.read_text().splitlines(keepends=True)
    part = tmp_path / "part" / "large-run"
    (part / "traces").mkdir(parents=True)
    (part / "traces" / "events.jsonl").write_text("".join(lines[:len(lines) // 2]))
    events.write_text("".join(lines) + lines[-1].replace("large-run-mas", "large-run-mas-2"))
    # Transactions of this feed: the input's checkpoint, the old graph dropped (what the
    # replacement keeps of it written aside), then chunks: killed after the second of three,
    # the store holds part of the new graph.
    killed = feed([run], store, tmp_path, *options, env={**(env or {}), KILL_AFTER_ENV: "4"})
    assert killed.returncode == -9, killed.stderr
    assert not any(t[1] == RECORD_SHA256 for t in run_graph(read()))
    narrowed = feed([part], store, tmp_path, *options, env=env)
    assert narrowed.returncode == 2 and b"one invocation" in narrowed.stderr, narrowed.stderr
    assert feed([run], store, tmp_path, *options, env=env).returncode == 1
    stored = read()
    assert _transitions(run_graph(stored)) > 1000
    assert sum(1 for t in run_graph(stored) if t[1] == RECORD_SHA256) == 1
    assert [name for name in stored if "replacing" in name] == []


def test_a_replacement_cut_short_keeps_what_the_replaced_graph_promised(tmp_path: Path) -> None:
    store = keyed(tmp_path / "store")
    replacement_cut_short(tmp_path, store, lambda: graphs(store))


def test_a_large_runs_trajectory_is_taken_in_chunks_as_it_is_made(tmp_path: Path) -> None:
    """The trajectory of a run of 2,100 calls (60,000 quads of its own) is handed on in
    chunks as it is made, like the calls' quads: the memory the chunks take at most (traced
    allocations, not time) grows by far less than the trajectory's quads with it."""
    import tracemalloc

    run = large_run(tmp_path / "runs", 700)
    fold = Fold()
    source = resolve(str(run))
    consume(source, fold)
    built = build(source, fold, Disclosure(None, False))
    declarations = Declarations(manifests=None, bindings=None, registrations=None)
    peaks, counts = [], []
    for trajectory in (False, True):
        tracemalloc.start()
        taken = 0
        for chunk in quad_chunks(built, declarations, Disclosure(None, False), "urn:g",
                                 trajectory, 500):
            taken += len(chunk)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        counts.append(taken)
    assert counts[1] - counts[0] > 50_000
    # Held whole, the trajectory's quads took about 8 MB more; taken as made, what grows is
    # its ends of each call (a few hundred bytes a call).
    assert peaks[1] - peaks[0] < 3 << 20, peaks


RECORD = "<https://example.org/ioa/trace#runRecord>"
PARTS = "<https://example.org/ioa/trace#runRecordParts>"


def _record_of(store: Path) -> tuple[str, str]:
    """The one run's record text (reassembled) and its stored digest."""
    opened = TraceStore(str(store))
    try:
        (name, text), = opened.stored_runs()
        (digest,) = opened.objects(name, "recordSha256", name)
        return text, str(digest.value)
    finally:
        opened.store.flush()
        del opened


def test_a_large_record_is_stored_in_parts_and_read_back_whole(tmp_path: Path) -> None:
    """A record past the part size is written in parts with the graph's chunks, never whole;
    read back it is the record a feed that stores it whole writes, with the same digest, so
    a feed of the same run again writes nothing, and a write cut short among the parts
    resumes to the store fed whole."""
    run = large_run(tmp_path / "runs", 700)
    manifests = trace_runs.write_manifests(tmp_path / "m")
    options = ["--manifests", manifests, "--batch-size", "100000"]
    whole, parted = keyed(tmp_path / "whole"), keyed(tmp_path / "parted")
    one_part = {"IOA_CHECK_TEST_RECORD_PART_CHARS": str(1 << 30)}
    assert feed([run], whole, tmp_path, *options, env=one_part).returncode == 1
    # A part loaded at a time, so that the kills below fall among them.
    small = {"IOA_CHECK_TEST_RECORD_PART_CHARS": "50000", "IOA_CHECK_TEST_RECORD_LOAD_PARTS": "1"}
    assert feed([run], parted, tmp_path, *options, env=small).returncode == 1
    stored = run_graph(graphs(parted))
    (count,) = [t[2] for t in stored if t[1] == PARTS]
    assert int(count.split('"')[1]) > 5
    assert not any(t[1] == RECORD for t in stored)
    assert any(t[1] == RECORD for t in run_graph(graphs(whole)))
    text, digest = _record_of(parted)
    assert (text, digest) == _record_of(whole)
    assert store_module.record_digest(json.loads(text)) == digest
    # Fed again: judged so already, nothing written.
    before = graphs(parted)
    again = feed([run], parted, tmp_path, *options, env=small)
    assert again.returncode == 1 and graphs(parted) == before
    assert _record_of(parted) == (text, digest)
    # Cut short among the parts (transactions: the checkpoint, the graph dropped, two
    # graph chunks and a last one, then the parts): no record; fed again, whole.
    for after in (7, 9):
        killed = keyed(tmp_path / f"killed-{after}")
        cut = feed([run], killed, tmp_path, *options, env={**small, KILL_AFTER_ENV: str(after)})
        assert cut.returncode == -9, cut.stderr
        part = run_graph(graphs(killed))
        assert not any(t[1] in (RECORD_SHA256, PARTS) for t in part)
        assert feed([run], killed, tmp_path, *options, env=small).returncode == 1
        assert _record_of(killed) == (text, digest)


def test_a_records_parts_are_small_and_loaded_many_at_a_time() -> None:
    """A long run's record is stored in parts far smaller than a chunk of the graph (the
    store's compaction holds a block of every file it merges, and a part larger than a block
    is a block of its own: parts of 4 MiB held 300 MiB more at a million-event feed's end),
    and the parts go to the store many to a bulk load, in order, each under its own node."""
    assert store_module.RECORD_PART_CHARS <= 64 << 10
    iri = "https://example.org/ioa/trace/run/r"
    texts = [f"part {index}" for index in range(2 * store_module.RECORD_LOAD_PARTS + 2)]
    chunks = list(store_module._part_chunks(iri, iter(texts), store_module.RECORD_LOAD_PARTS))
    assert [len(chunk) for chunk in chunks] == [store_module.RECORD_LOAD_PARTS] * 2 + [2]
    quads = [quad for chunk in chunks for quad in chunk]
    graph = ox.NamedNode(iri)
    assert quads == [ox.Quad(ox.NamedNode(store_module.record_part(iri, index)),
                             store_module.term("recordPart"), ox.Literal(text), graph)
                     for index, text in enumerate(texts)]


@settings(max_examples=60, deadline=None)
@given(nquads_runs(), st.booleans())
def test_the_record_made_a_call_at_a_time_is_the_record(events: list[dict[str, Any]],
                                                       identity: bool) -> None:
    """Whatever the run holds (names of every character, a run id that spells a JSON
    string), the record's pieces join to ``json.dumps`` of the record, and the identity's to
    the text its digest was always taken of."""
    fold = Fold()
    for seq, event in enumerate(events, 1):
        fold.value(seq, event)
    run = build(NQUADS_SOURCE, fold, Disclosure(None, False))
    run = run._replace(run_id='"calls-0", "x": [', mas="\u2028\x00")
    value = {"mode": "plain", "run": store_module.run_record(run)}
    joined = "".join(store_module.record_pieces("plain", run, identity))
    if identity:
        assert joined == store_module._identity(value)
    else:
        assert joined == json.dumps(value, ensure_ascii=False)
    assert store_module.pieces_digest(store_module.record_pieces("plain", run, True)) == (
        store_module.record_digest(value))
