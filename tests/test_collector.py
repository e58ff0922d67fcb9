"""The cyclic collector during a long run (``_runtime.frozen``): it runs less often while an
audit or a trace is read, and the process is left as it was found.

Counted in collections (``gc.callbacks``), never timed.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ioa_semantic import _runtime
from ioa_semantic.cli.main import main

from support import registration_63


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """How many collections of each generation started."""
    seen = [0, 0, 0]

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen[info["generation"]] += 1

    gc.callbacks.append(count)
    try:
        yield seen
    finally:
        gc.callbacks.remove(count)


def test_a_long_run_raises_the_collectors_thresholds_and_restores_them() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with _runtime.frozen():
            assert gc.get_threshold() == _runtime.LONG_RUN_THRESHOLDS
        assert gc.get_threshold() == (700, 10, 10)
        with pytest.raises(KeyError), _runtime.frozen():
            raise KeyError("stopped")
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_a_threshold_the_process_set_higher_is_never_lowered() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(500_000, 3, 1000)
        with _runtime.frozen():
            assert gc.get_threshold() == (500_000, 50, 1000)
        assert gc.get_threshold() == (500_000, 3, 1000)
    finally:
        gc.set_threshold(*before)


def test_an_audit_of_thousands_of_senders_collects_seldom(
        tmp_path: Path, collections: list[int], capsys: pytest.CaptureFixture[str]) -> None:
    """An audit whose memories grow with every sender (each registration its own context
    and media types): at the default thresholds it collected the youngest generation about
    170 times and the older ones 15; in the run, a handful and none."""
    lines = []
    for number in range(3000):
        doc = registration_63()
        doc["@context"][f"p{number}"] = f"https://example.org/p{number}#"
        doc["@id"] = f"p{number}:Capability"
        doc["inputs"] = [f"text/x-in{number}"]
        doc["outputs"] = [f"text/x-out{number}"]
        lines.append(json.dumps(doc))
    path = tmp_path / "many.jsonl"
    path.write_text("\n".join(lines) + "\n")
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        assert main(["audit", str(path), "--profile", "cs-translation", "--format", "json",
                     "--jobs", "1"]) == 0
    finally:
        gc.set_threshold(*before)
    assert len(capsys.readouterr().out.splitlines()) > 3000
    assert collections[0] < 30 and collections[1] == collections[2] == 0, collections


def test_overlapping_long_runs_restore_what_the_first_found_when_the_last_ends() -> None:
    """A service runs two audits at once: the first to end restored what it had found while
    the other still ran, and the other then restored the raised thresholds for good."""
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        first, second = _runtime.frozen(), _runtime.frozen()
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert gc.get_threshold() == _runtime.LONG_RUN_THRESHOLDS  # the second still runs
        assert gc.get_freeze_count() > 0
        second.__exit__(None, None, None)
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_long_runs_on_threads_leave_the_process_as_found() -> None:
    import threading

    before = gc.get_threshold()
    started, go = threading.Barrier(4), threading.Event()

    def run() -> None:
        with _runtime.frozen():
            started.wait()
            go.wait()

    try:
        gc.set_threshold(700, 10, 10)
        threads = [threading.Thread(target=run) for _ in range(3)]
        for thread in threads:
            thread.start()
        started.wait()
        assert gc.get_threshold() == _runtime.LONG_RUN_THRESHOLDS
        go.set()
        for thread in threads:
            thread.join()
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)
