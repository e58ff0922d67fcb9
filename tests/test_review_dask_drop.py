"""pyoxigraph's iterators are let go on the thread that made them (review h58).

``ioa-check impact LOG --scheduler local:1`` printed now and then, after a correct report,
"PyQuerySolutions is unsendable, but is being dropped on another thread" on stderr. A Dask
worker's profiler runs on the worker's event loop: every 10 ms it takes the frames of the
thread running a task (``sys._current_frames``), and a frame still held when its call
returns keeps that call's locals, freed later on the event loop's thread. pyoxigraph's
``QuerySolutions`` and ``QuadIter`` refuse that: the object is kept for good and a traceback
goes to stderr. Whether the profiler samples at the wrong moment is a race; here every
frame of the thread is held, as the profiler holds those it samples, and let go on the
test's thread, so the outcome is the same in every run.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import pyoxigraph
import pytest

from ioa_semantic import Checker
from ioa_semantic.impact import Change, DecisionLog, Impact
from ioa_semantic.impact.rejudge import Outcome, Touched

from support import EXAMPLES

JUNE = datetime(2026, 6, 1, tzinfo=UTC)
LANGUAGES = {"sourceLang": "zh", "targetLang": "en"}


def frames_held_and_let_go_here(work: Callable[[], Any],
                                monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``work`` run on a thread of its own whose every frame is held past its call, the
    frames then let go on this thread; what was said about an object freed here
    (``sys.unraisablehook``)."""
    said: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: said.append(str(u.exc_value)))
    held: list[FrameType] = []
    failed: list[BaseException] = []

    def run() -> None:
        # A frame passed to the tracer at each call is held by the list, as a sampling
        # profiler holds the frames it took (None: no tracing of the call's lines).
        sys.settrace(lambda frame, event, arg: held.append(frame))
        try:
            work()
        except BaseException as exc:  # raised here, once the thread is done
            failed.append(exc)
        finally:
            sys.settrace(None)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    assert held
    held.clear()
    gc.collect()
    return said


def test_a_frame_held_past_its_call_is_seen_to_keep_a_query_result(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # What the tests below rely on: a call that returns with a QuerySolutions in a local,
    # its frame held and let go on another thread, is said.
    def query() -> None:
        solutions = pyoxigraph.Store().query("SELECT ?s WHERE { ?s ?p ?o }")
        assert isinstance(solutions, pyoxigraph.QuerySolutions)

    said = frames_held_and_let_go_here(query, monkeypatch)
    assert len(said) == 1 and "dropped on another thread" in said[0]


@pytest.mark.parametrize("engine", ["compiled", "reference"])
@pytest.mark.parametrize(("profile", "inputs", "params"), [
    # The named queries (Dataset.select, the compiled tables).
    ("cs-translation", {"capabilities": [str(EXAMPLES / "provider-12.1.jsonld")],
                        "alignments": ["cs-doc-v1"]}, LANGUAGES),
    # And the compiled shapes, which read the store's quads by pattern.
    ("legal-translation", {}, {"jurisdiction": "DE"}),
], ids=["cs-translation", "legal-translation"])
def test_a_checker_on_a_thread_leaves_no_pyoxigraph_iterator_to_another(
        engine: str, profile: str, inputs: dict[str, Any], params: dict[str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    envelopes = [(EXAMPLES / name).read_bytes() for name in (
        "envelope-12.1.jsonld", "legal-contract.jsonld", "legal-contract-into-japanese.jsonld")]
    verdicts: list[str] = []

    def build_and_check() -> None:
        checker = Checker(profile, engine=engine, **inputs)
        verdicts.extend(str(checker.check(envelope, params=params, at=JUNE).verdict)
                        for envelope in envelopes)

    assert frames_held_and_let_go_here(build_and_check, monkeypatch) == []
    assert len(verdicts) == len(envelopes)


@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_a_dask_worker_s_batch_leaves_no_pyoxigraph_iterator_to_its_event_loop(
        engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The reviewer's case: ioa-check impact LOG --at 2027-06-01T00:00:00Z --scheduler
    # local:1, whose one decision flips. The worker's task (impact.cluster.judge_batch)
    # builds the replayed Checker and judges the decision on the thread that runs it.
    pytest.importorskip("distributed", reason="the [dask] extra is not installed")
    from ioa_semantic.impact import cluster

    log = str(tmp_path / "d.jsonl")
    Checker("cs-translation", capabilities=[str(EXAMPLES / "provider-12.1.jsonld")],
            alignments=["cs-doc-v1"], engine=engine, recorder=DecisionLog(log)).check(
        (EXAMPLES / "envelope-12.1.jsonld").read_bytes(), params=LANGUAGES, at=JUNE)
    change = Change(at=datetime(2027, 6, 1, tzinfo=UTC))
    # A worker's Checkers, kept for its batches, are built by the task that first needs them.
    cluster._judging_for.cache_clear()
    outcomes: list[Outcome] = []

    def on_a_worker(touched: Iterator[Touched]) -> Iterator[tuple[Touched, Outcome]]:
        batch = cluster._carried(list(touched))
        said = frames_held_and_let_go_here(
            lambda: outcomes.extend(cluster.judge_batch(cluster.on_workers(change), batch)),
            monkeypatch)
        assert said == []
        yield from zip(batch, outcomes, strict=True)

    impact = Impact([log], change, judging=on_a_worker)
    assert [f.transition for f in impact] == ["compatible -> indeterminate"]
    cluster._judging_for.cache_clear()
