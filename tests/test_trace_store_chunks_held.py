"""A long run's graph goes to the store a chunk at a time, and a chunk loaded is let go: at
most the chunk being loaded and the one waiting for it are held (each a few MiB of N-Quads
text), whichever chunks they are, the first two (taken to tell a large graph from a small
one) too. Counted as objects, never timed."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

import trace_runs
from test_trace_store_scale import large_run

from ioa_semantic.cli.main import main
from ioa_semantic.trace import store
from ioa_semantic.trace.nquads import Chunk


def test_a_chunk_loaded_is_let_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    run = large_run(tmp_path / "runs", 300)
    manifests = trace_runs.write_manifests(tmp_path / "m")
    monkeypatch.setattr(store, "CHUNK_QUADS", 500)  # a graph of some dozen chunks
    held: list[int] = []
    real_load = store.TraceStore.load

    def load(self: store.TraceStore, quads: Chunk) -> None:
        held.append(sum(1 for o in gc.get_objects() if type(o) is Chunk))
        real_load(self, quads)

    monkeypatch.setattr(store.TraceStore, "load", load)
    status = main(["trace", str(run), "--manifests", str(manifests), "--no-shapes",
                   "--format", "json", "--store", str(tmp_path / "s"),
                   "--at", "2026-12-02T00:00:00Z"])
    capsys.readouterr()
    assert status == 1
    assert len(held) >= 8, held  # loaded in chunks
    # The chunk given to the loader and the one the builder handed on; no more.
    assert max(held) <= 2, held
