"""``ioa-check trace --state``: a consumer cursor that loses and doubles nothing.

The real ``ioa-check trace`` is killed with SIGKILL at several points of a stream and rerun
with the same state; the result must equal an uninterrupted run's. Torn checkpoints, appended
events and rewritten inputs are exercised on copies of the golden trip-planner run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from support import IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

from test_trace import GOLDEN, MANIFESTS, TRACES

from ioa_semantic.trace.state import STATE_VERSION

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/reference is absent")


def trace(args: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """The installed command without the SHACL step: the state does not touch it."""
    return subprocess.run([IOA_CHECK, "trace", *map(str, args), "--no-shapes"], cwd=cwd,
                          capture_output=True, timeout=300)


def checkpoints(state: Path) -> list[dict[str, Any]]:
    lines = state.read_text().splitlines()
    assert json.loads(lines[0]) == {"ioa-check-trace-state": STATE_VERSION, "includeContent": False}
    return [json.loads(line) for line in lines[1:]]


def test_a_rerun_neither_skips_nor_doubles(tmp_path: Path) -> None:
    base: list[str | Path] = [GOLDEN, "--manifests", MANIFESTS, "--format", "json"]
    plain = trace(base, tmp_path)
    first = trace([*base, "--state", "s", "--batch-size", "50"], tmp_path)
    assert first.returncode == plain.returncode == 3
    assert first.stdout == plain.stdout
    assert [c["seq"] for c in checkpoints(tmp_path / "s")] == [50, 100, 150, 193]
    again = trace([*base, "--state", "s", "--batch-size", "50"], tmp_path)
    assert again.stdout == plain.stdout
    assert len(checkpoints(tmp_path / "s")) == 4  # nothing new was consumed


def test_appended_events_are_consumed_incrementally(tmp_path: Path) -> None:
    lines = (GOLDEN / "events.jsonl").read_text().splitlines(keepends=True)
    stream = tmp_path / "events.jsonl"
    stream.write_text("".join(lines[:120]))
    args: list[str | Path] = ["events.jsonl", "--manifests", MANIFESTS, "--format", "json",
                              "--state", "s", "--batch-size", "32"]
    trace(args, tmp_path)
    with stream.open("a") as handle:
        handle.write("".join(lines[120:]))
    resumed = trace(args, tmp_path)
    whole = trace([GOLDEN / "events.jsonl", "--manifests", MANIFESTS, "--format", "json"],
                  tmp_path)
    assert resumed.stdout.replace(b'"source": "events.jsonl"', b"") == whole.stdout.replace(
        f'"source": "{GOLDEN / "events.jsonl"}"'.encode(), b"")
    assert [c["seq"] for c in checkpoints(tmp_path / "s")] == [32, 64, 96, 120, 152, 184, 193]


@pytest.mark.parametrize("damage", ["torn", "lost"])
def test_a_batch_without_a_complete_checkpoint_is_replayed(tmp_path: Path, damage: str) -> None:
    """Killed while writing a checkpoint (torn) or before writing it (lost): the batch replays."""
    base: list[str | Path] = [GOLDEN, "--manifests", MANIFESTS, "--format", "json"]
    plain = trace(base, tmp_path)
    trace([*base, "--state", "s", "--batch-size", "40"], tmp_path)
    state = tmp_path / "s"
    text = state.read_text()
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    cut = len(text) - len(last) - 1 + (len(last) // 2 if damage == "torn" else 0)
    state.write_text(text[:cut])
    resumed = trace([*base, "--state", "s", "--batch-size", "40"], tmp_path)
    assert resumed.stdout == plain.stdout
    assert [c["seq"] for c in checkpoints(state)] == [40, 80, 120, 160, 193]


def test_a_rewritten_input_is_refused(tmp_path: Path) -> None:
    stream = tmp_path / "events.jsonl"
    stream.write_bytes((GOLDEN / "events.jsonl").read_bytes())
    assert trace(["events.jsonl", "--state", "s"], tmp_path).returncode == 3
    stream.write_bytes(stream.read_bytes().replace(b'"agent_id": "moderator"',
                                                   b'"agent_id": "moderat0r"', 1))
    proc = trace(["events.jsonl", "--state", "s"], tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"no longer begins with" in proc.stderr


def test_a_state_of_another_mode_is_refused(tmp_path: Path) -> None:
    assert trace([GOLDEN, "--state", "s"], tmp_path).returncode == 3
    proc = trace([GOLDEN, "--state", "s", "--include-content"], tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""


def test_checkpoints_hold_digests_never_trace_text(tmp_path: Path) -> None:
    trace([GOLDEN, "--state", "s"], tmp_path)
    state = (tmp_path / "s").read_text()
    assert "What is 2+2" not in state and "Celestia" not in state
    assert '"sha256"' in state


def _long_stream(path: Path, copies: int) -> None:
    """The golden run repeated with distinct call ids: one long stream of many turns."""
    lines = (GOLDEN / "events.jsonl").read_text().splitlines()
    out = []
    for copy in range(copies):
        for line in lines:
            event = json.loads(line)
            for member in ("call_id", "parent_call_id"):
                if event.get(member):
                    event[member] = f"{event[member]}/{copy}"
            out.append(json.dumps(event))
    path.write_text("\n".join(out) + "\n")


def _triples(path: Path) -> set[tuple[str, str, str]]:
    import rdflib

    graph = rdflib.Graph()
    graph.parse(path, format="turtle")
    return {(str(s), str(p), str(o)) for s, p, o in graph}


def kill_at_checkpoints(command: list[str], cwd: Path, state: Path,
                        targets: tuple[int, ...]) -> list[int]:
    """Run ``command`` once per target and SIGKILL it once ``state`` holds more than that
    many lines (checkpoints); the targets at which it was killed (a run that finished first
    is not)."""
    kills = []
    for target in targets:
        proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        # A hang guard only (the loop ends with the run): at a minute, a run a loaded
        # machine slowed past it would go unkilled, and the wait for its end time out.
        deadline = time.monotonic() + 600
        while proc.poll() is None and time.monotonic() < deadline:
            if state.exists() and state.read_bytes().count(b"\n") > target:
                proc.send_signal(signal.SIGKILL)
                kills.append(target)
                break
            time.sleep(0.002)
        proc.wait(timeout=600)
    return kills


def test_killed_with_sigkill_at_several_points_it_resumes_to_the_same_result(
        tmp_path: Path) -> None:
    _long_stream(tmp_path / "events.jsonl", 10)
    base: list[str | Path] = ["events.jsonl", "--manifests", MANIFESTS, "--format", "json",
                              "--batch-size", "5"]
    reference = trace([*base, "--emit-kg", "whole.ttl"], tmp_path)
    assert reference.returncode == 3, reference.stderr
    state = tmp_path / "state"
    resumable = [IOA_CHECK, "trace", *map(str, base), "--state", "state", "--emit-kg", "kg.ttl",
                 "--no-shapes"]
    # Checkpoints (of 386) before each kill.
    kills = kill_at_checkpoints(resumable, tmp_path, state, (1, 40, 90, 170, 260, 330))
    assert len(kills) >= 4, f"the run finished before it could be interrupted: {kills}"
    assert not (tmp_path / "kg.ttl").exists()  # nothing is written before the end
    finished = trace([*base, "--state", "state", "--emit-kg", "kg.ttl"], tmp_path)
    assert finished.returncode == 3
    assert finished.stdout == reference.stdout
    assert _triples(tmp_path / "kg.ttl") == _triples(tmp_path / "whole.ttl")
    seqs = [c["seq"] for c in checkpoints(state)]
    assert seqs == sorted(set(seqs)) and seqs[-1] == 1930



def _long_idless_run(folder: Path, turns: int) -> Path:
    """The trajectory schema's example run (tests/mas_lab_run.py) as one long run of
    ``turns`` turns, its events without call ids: the fold nests them by their order."""
    import mas_lab_run

    lines = []
    for turn in range(turns):
        for event in mas_lab_run.events():
            lines.append(json.dumps({**event, "timestamp": event["timestamp"] + 100 * turn}))
    (folder / "traces").mkdir(parents=True)
    (folder / "traces" / "events.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "run.json").write_text(json.dumps(mas_lab_run.RUN_JSON))
    return folder


def test_a_run_without_call_ids_killed_with_sigkill_resumes_to_the_same_result(
        tmp_path: Path) -> None:
    """Open calls, the interval tree and what it found are checkpointed with the calls: a
    batch that ends inside a delegation resumes inside it."""
    from test_trace_nesting import EXAMPLE

    _long_idless_run(tmp_path / "run", 12)
    base: list[str | Path] = ["run", "--manifests", EXAMPLE / "manifests", "--format", "json",
                              "--batch-size", "4"]
    reference = trace([*base, "--emit-kg", "whole.ttl"], tmp_path)
    assert reference.returncode == 0, reference.stderr
    assert b'"verdict": "compatible"' in reference.stdout
    state = tmp_path / "state"
    resumable = [IOA_CHECK, "trace", *map(str, base), "--state", "state", "--emit-kg", "kg.ttl",
                 "--no-shapes"]
    # Checkpoints (of 63) before each kill: batches of 4 end inside every level of the tree.
    kills = kill_at_checkpoints(resumable, tmp_path, state, (1, 6, 13, 22, 37, 50))
    assert len(kills) >= 4, f"the run finished before it could be interrupted: {kills}"
    finished = trace([*base, "--state", "state", "--emit-kg", "kg.ttl"], tmp_path)
    assert finished.returncode == 0
    assert finished.stdout == reference.stdout
    assert _triples(tmp_path / "kg.ttl") == _triples(tmp_path / "whole.ttl")
    seqs = [c["seq"] for c in checkpoints(state)]
    assert seqs == sorted(set(seqs)) and seqs[-1] == 12 * 21
    assert any("tree" in c["delta"] for c in checkpoints(state))
