"""A long run's calls are held once however many ways they are worded or shown: a private
store's runs share the report's calls, a run revealed as it was recorded shares its record's,
and the keyed references a disclosure keeps are bounded, not one a call to the end.

Each test states the sharing by identity (what the memory saving rests on) beside the
equality that keeps it honest: what is shared is what a build of its own would have made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

from operations import patched

from ioa_semantic.cli import trace as trace_cli
from ioa_semantic.trace import privacy, store
from ioa_semantic.trace.calls import Run
from ioa_semantic.trace.declarations import Declarations
from ioa_semantic.trace.events import (
    DEFAULT_MAX_LINE_BYTES,
    Fold,
    Source,
    build,
    build_worded,
    lines,
    resolve,
)
from ioa_semantic.trace.nesting import in_order
from ioa_semantic.trace.privacy import Disclosure, Private
from ioa_semantic.trace.state import consume

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "trace"
MASLAB = EXAMPLES / "mas-lab" / "run"
OTLP = EXAMPLES / "otel" / "otlp.jsonl"


def consumed(*paths: Path) -> list[Source | tuple[Source, Fold]]:
    out: list[Source | tuple[Source, Fold]] = []
    for path in paths:
        source = resolve(str(path))
        fold = Fold()
        consume(source, fold)
        out.append((source, fold))
    return out


def built(disclose: Disclosure, path: Path = MASLAB) -> Run:
    """The run of ``path`` read afresh (a fold is built once), worded through ``disclose``."""
    (source, fold), = consumed(path)  # type: ignore[misc]
    return build(source, fold, disclose)


def test_a_private_stores_runs_share_the_reports_calls_whatever_the_order_of_inputs() -> None:
    # OTLP inputs are read together and their runs stand at the first one's place: a mas-lab
    # run after them is matched to its own run, not to a trace's.
    shown = Disclosure(None)
    keyed = Private(b"k" * 32, frozenset(), frozenset())
    report, kept = trace_cli._runs(consumed(OTLP, MASLAB), [(shown, None), (keyed, None)])
    (alone,) = trace_cli._runs(consumed(OTLP, MASLAB), [(keyed, None)])
    assert [r.unit for r in report] == [r.unit for r in kept] == ["spans"] * (
        len(report) - 1) + ["events"]
    assert kept == alone  # the same runs as a build of their own
    for mine, theirs in zip(kept, report, strict=True):
        assert mine.calls is theirs.calls
    # The wording is the keyed one's still: the runs differ in their sources' findings only.
    assert [r.findings for r in kept] == [r.findings for r in alone]


@patched
def test_a_fold_is_built_once_its_calls_let_go_as_its_runs_are_made() -> None:
    # Issue 37: a long run's calls were held twice while its run was built (the fold's and
    # the run's), the most a feed held. The build spends the fold: each of its calls is let go
    # as the run's is made, and a second build of it is refused, not made of nothing.
    import gc

    from ioa_semantic.trace import events
    from ioa_semantic.trace.folded import FoldedCall

    def alive() -> int:
        return sum(1 for o in gc.get_objects() if type(o) is FoldedCall)

    (source, fold), = consumed(MASLAB)  # type: ignore[misc]
    total = len(fold.calls)
    root = next((index for index, c in enumerate(in_order(fold.calls.values()))
                 if c.cls == "mas"), None)
    assert total > 3 and alive() == total
    seen: list[int] = []
    real_call = events._call

    def call(*args: Any) -> Any:
        seen.append(alive())  # before the call is made: the calls before it let go
        return real_call(*args)

    shown = Disclosure(None)
    keyed = Private(b"k" * 32, frozenset(), frozenset())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(events, "_call", call)
        report, kept = build_worded(fold, [(source, shown), (source, keyed)])
    # The n-th call made, n - 1 of the fold's are gone, but its root (its MAS call, read once
    # the calls are made), held to the end once passed.
    assert seen == [total - made + (1 if root is not None and root < made else 0)
                    for made in range(total)], seen
    assert alive() <= 1
    assert fold.calls == {}
    assert kept.calls is report.calls
    with pytest.raises(ValueError, match="built once"):
        build(source, fold, shown)
    # Each wording's run is the run a build of its own makes.
    (source, again), = consumed(MASLAB)  # type: ignore[misc]
    assert report == build(source, again, shown)
    (source, other), = consumed(MASLAB)  # type: ignore[misc]
    assert kept == build(source, other, keyed)


def test_a_run_revealed_as_its_record_holds_it_shares_the_records_calls() -> None:
    (source, fold), = consumed(MASLAB)  # type: ignore[misc]
    run = build(source, fold, Disclosure(None))
    keys = Private(b"k" * 32, frozenset(), frozenset())
    (recorded,) = store.private_runs([run], keys)
    same = store.revealed(recorded, keys)  # nothing published since: nothing to turn back
    assert same.calls == recorded.calls
    assert all(a is b for a, b in zip(same.calls, recorded.calls, strict=True))
    agents = {c.agent for c in run.calls if c.agent}
    published = Private(b"k" * 32, frozenset(agents), frozenset())
    named = store.revealed(recorded, published)  # every agent published since: all named
    assert {c.agent for c in named.calls if c.agent} == agents


def test_a_disclosures_references_are_bounded_and_unchanged_by_the_bound() -> None:
    disclose = Disclosure(b"k" * 32)
    first = [disclose.call(f"call-{n}") for n in range(privacy._REF_CACHE * 3)]
    assert len(disclose._cache) <= privacy._REF_CACHE
    again = Disclosure(b"k" * 32)
    assert [again.call(f"call-{n}") for n in reversed(range(len(first)))] == first[::-1]
    assert disclose.call("call-0") == first[0]  # made again after the cache let it go


def test_a_checkpoint_gives_back_the_digests_old_and_new_checkpoints_wrote() -> None:
    # A checkpoint's JSON holds the fold's calls as they are: a digest as a pair now, as an
    # object in a store fed before; both read back as the digest the fold holds.
    import json

    from ioa_semantic.trace.calls import Digest

    source, fold = resolve(str(MASLAB)), Fold()
    assert source.stream is not None
    with open(source.stream, "rb") as handle:  # a fold a checkpoint reads: all its changes
        for line in lines(handle, 0, DEFAULT_MAX_LINE_BYTES):
            fold.line(line)
    delta = json.loads(json.dumps(fold.delta()))
    digested = [c for c in delta["calls"] if c.get("input") is not None]
    assert digested and all(isinstance(c["input"], list) for c in digested)
    old = json.loads(json.dumps(delta))
    for call in old["calls"]:
        for side in ("input", "output"):
            if call.get(side) is not None:
                call[side] = dict(zip(("sha256", "chars"), call[side], strict=True))
    restored = []
    for written in (delta, old):
        again = Fold()
        again.restore(written)
        assert again.calls == fold.calls
        assert all(isinstance(c.get("input"), Digest | None) for c in again.calls.values())
        restored.append(again)
    expected = build(source, fold, Disclosure(None))  # a fold is built once
    assert [build(source, again, Disclosure(None)) for again in restored] == [expected] * 2


def test_a_runs_calls_are_left_out_of_the_collectors_passes_while_it_is_judged_and_given_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # The cyclic collector walks every container it tracks, again at each of its full passes:
    # a long run's calls were walked over and over (a sixth of the time of a 120,000-event
    # run). Each batch read is frozen as it is read, and the runs once built; when the
    # command ends, the objects go back to the collector (a program calling it in-process
    # keeps its own collector as it was).
    import gc

    from ioa_semantic.cli.main import main

    seen: dict[str, int] = {}
    real_runs = trace_cli._runs

    def runs(*args: object, **kwargs: object) -> object:
        seen.setdefault("reading", gc.get_freeze_count())
        return real_runs(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(trace_cli, "_runs", runs)
    assert gc.get_freeze_count() == 0
    status = main(["trace", str(MASLAB), "--batch-size", "2", "--no-shapes", "--format",
                   "json"])
    capsys.readouterr()
    assert status in (0, 1, 3)
    # The fold of the run read so far was frozen (its calls among what the count holds).
    assert seen["reading"] > 0
    assert gc.get_freeze_count() == 0


def _judged_both_ways(published: frozenset[str]) -> tuple[Any, Any, Run]:
    keys = Private(b"k" * 32, frozenset(), frozenset())
    disclose = Private(b"k" * 32, published, frozenset())
    (recorded,) = store.private_runs([built(Disclosure(None))], keys)
    shown = store.revealed(recorded, disclose)
    runs = [built(Disclosure(None))]
    made = store._judged_privately(runs, keys, disclose)
    assert runs == []  # taken out, as private_runs takes them
    return made, shown, recorded


@pytest.mark.parametrize("published", ["none", "all"])
def test_a_private_feed_holds_each_call_once_its_records_made_as_written(published: str) -> None:
    # Issue 37: the store's record of a run and the run judged (revealed) were two tuples of
    # every call, held to the end of the writing. The record's calls are now made from the
    # judged ones as they are written: the same calls, none held.
    (source, fold), = consumed(MASLAB)  # type: ignore[misc]
    agents = frozenset(c.agent for c in build(source, fold, Disclosure(None)).calls if c.agent)
    (shown_runs, heads, calls_of), shown, recorded = _judged_both_ways(
        agents if published == "all" else frozenset())
    assert shown_runs == [shown]
    assert heads == [recorded._replace(calls=())]
    assert list(calls_of[0]) == list(recorded.calls) and len(calls_of[0]) == len(recorded.calls)
    assert list(calls_of[0]) == list(calls_of[0])  # read again, the same
    # What it holds: the judged run's calls, nothing of its own.
    assert calls_of[0].shown is shown_runs[0].calls and calls_of[0].kept == {}
    if published == "all":
        assert any(a != b for a, b in zip(shown.calls, recorded.calls, strict=True))


def test_a_published_name_spelling_a_reference_keeps_its_record_as_it_was() -> None:
    # A name a manifest publishes that spells another agent's reference (one would need the
    # store's key to make it) turns back into nothing else: that call is kept as it was.
    (source, fold), = consumed(MASLAB)  # type: ignore[misc]
    run = build(source, fold, Disclosure(None))
    keys = Private(b"k" * 32, frozenset(), frozenset())
    agent = next(c.agent for c in run.calls if c.agent)
    other = next(c.agent for c in run.calls if c.agent and c.agent != agent)
    spelled = keys.keyed("agent", other)  # published, and another agent's reference
    (shown_runs, _, calls_of), shown, recorded = _judged_both_ways(
        frozenset({agent, spelled}))
    assert list(calls_of[0]) == list(recorded.calls)
    assert calls_of[0].kept  # the calls of `other`, whose reference reads as a name
    assert shown_runs == [shown]


def test_a_private_stores_judged_runs_leave_their_records_calls_to_be_made() -> None:
    feed_keys = Private(b"k" * 32, frozenset(), frozenset())
    runs = [built(Disclosure(None))]
    (recorded,) = store.private_runs([built(Disclosure(None))], feed_keys)
    feed = store.Feed.__new__(store.Feed)  # the judging alone: no store is opened
    feed.keys = feed_keys
    judged = feed.judged(runs, Declarations(None, None, None), Private(
        b"k" * 32, frozenset(), frozenset()))
    assert judged.records[0].calls == () and judged.record_calls is not None
    assert judged.record_calls[0].shown is judged.audits[0].run.calls
    assert list(judged.record_calls[0]) == list(recorded.calls)
