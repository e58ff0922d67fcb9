"""The fold holds a mas-lab run's calls compact (issue 37): one object of slots a call, not a
dict, read and written as the dict it was, and checkpointed as that dict's JSON.

Memory is read (tracemalloc), never timed. The bound: a call of bench/bench_trace_scale.py's
run holds about 730 bytes of members (its key, two times, two digests, its lines, tokens for a
model call) and its share of the fold's tables; with its slots object (224 bytes on CPython
3.11-3.13) the fold measured 955 bytes a call, with a dict instead 1,195 (dict and key table
about 465 bytes). 1,050 lies between: it holds while the calls are slotted and fails when a
call is a dict again.
"""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import bench_trace_scale

from ioa_semantic.trace.events import DEFAULT_MAX_LINE_BYTES, Fold, lines, resolve
from ioa_semantic.trace.folded import ORDER, RARE, FoldedCall
from ioa_semantic.trace.state import consume

# 976 before digests were held as their bytes (issue 37), 754 after; 596 since the members few
# calls have share one slot and the times are held as the floats they were written as.
BYTES_A_CALL = 650


def folded(tmp_path: Path, events: int) -> Fold:
    fold = Fold()
    consume(resolve(str(bench_trace_scale.maslab_run(tmp_path, events))), fold)
    return fold


def checkpointed(tmp_path: Path, events: int) -> Fold:
    """A fold fed as a checkpoint reads it: all its changes since the start kept."""
    source, fold = resolve(str(bench_trace_scale.maslab_run(tmp_path, events))), Fold()
    assert source.stream is not None
    with open(source.stream, "rb") as handle:
        for line in lines(handle, 0, DEFAULT_MAX_LINE_BYTES):
            fold.line(line)
    return fold


def test_the_folds_calls_are_slotted_objects_without_a_dict(tmp_path: Path) -> None:
    fold = folded(tmp_path, 400)
    assert fold.calls and all(type(c) is FoldedCall for c in fold.calls.values())
    assert not any(hasattr(c, "__dict__") for c in fold.calls.values())
    # One slot a common member (the times under names of their own: held as floats), one for
    # the members few calls have, nothing else.
    assert FoldedCall.__slots__ == (*(f"_{n}" if n in ("start", "end") else n
                                      for n in ORDER if n not in RARE), "_rare")
    assert all(c._rare is None for c in fold.calls.values())  # none of them here
    assert sum(type(c._start) is float for c in fold.calls.values()) == len(fold.calls)


def test_a_long_runs_fold_holds_its_calls_in_under_650_bytes_a_call(tmp_path: Path) -> None:
    run = bench_trace_scale.maslab_run(tmp_path / "long", 6000)
    # Warmed on the same run: the ids its calls name as parents are interned by then, so the
    # measure holds no growth of the interpreter's table of interned strings, whose next
    # size, when it falls in the measure, depends on what else the process has interned
    # (1,394 bytes a call measured after other test files' imports).
    consume(resolve(str(run)), Fold())
    gc.collect()
    tracemalloc.start()
    try:
        fold = Fold()
        consume(resolve(str(run)), fold)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(fold.calls) == 3000
    assert held / len(fold.calls) < BYTES_A_CALL, held / len(fold.calls)


def test_a_checkpoint_writes_a_call_as_its_dict_did_and_reads_it_back(tmp_path: Path) -> None:
    fold = checkpointed(tmp_path, 40)
    delta = fold.delta()
    model = next(c for c in delta["calls"] if c["cls"] == "llm")
    # The members in the order the fold wrote them: its start's, then its end's.
    assert list(json.loads(json.dumps(model))) == [
        "key", "id", "cls", "first", "startLine", "start", "agent", "parent", "target",
        "input", "endLine", "end", "tokens", "output"]
    again = Fold()
    again.restore(json.loads(json.dumps(delta)))
    assert again.calls == fold.calls
    assert all(type(c) is FoldedCall for c in again.calls.values())


def test_a_checkpoint_written_before_calls_were_slotted_is_read() -> None:
    # A dict kept the order its members came in: an end read before its start wrote its end's
    # members first. A checkpoint's call is read by name, whatever the order.
    old = {"key": "m1", "id": "m1", "cls": "llm", "first": 3, "endLine": 3, "agent": "lead",
           "parent": "lead", "target": "gpt-x", "tokens": {"prompt": 3},
           "output": ["ab" * 32, 3], "startLine": 4, "start": "4.0", "temperature": 0.5,
           "input": ["cd" * 32, 2]}
    fold = Fold()
    fold.restore({"calls": [old], "open": {}, "events": 2, "kinds": {}, "unknown": {},
                  "runIds": {}, "problems": [], "records": []})
    call = fold.calls["m1"]
    assert {k: call[k] for k in old if k not in ("input", "output")} == {
        k: v for k, v in old.items() if k not in ("input", "output")}
    assert call.input is not None and call.input.as_json() == {"sha256": "cd" * 32, "chars": 2}
    assert sorted(call.as_json()) == sorted(old) and "end" not in call


def test_a_member_is_absent_as_a_missing_key_was() -> None:
    call = FoldedCall("~1", "", "agent", 1)
    assert "agent" not in call and call.get("agent", "none") == "none"
    with pytest.raises(KeyError):
        call["placed"]
    call["placed"] = None  # placed under no call: present, and None
    assert "placed" in call and call["placed"] is None
    call.setdefault("candidates", []).append("~0")
    assert call.as_json() == {"key": "~1", "id": "", "cls": "agent", "first": 1,
                              "placed": None, "candidates": ["~0"]}
    assert call.pop("candidates") == ["~0"] and "candidates" not in call
    del call["placed"]
    assert "placed" not in call and list(call) == ["key", "id", "cls", "first"]
    with pytest.raises(ValueError):
        call["status"] = None  # None is absence: it would read as no member


def test_a_disputed_agent_is_present_and_none(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in (
        {"kind": "tool_call_start", "agent_id": "a", "call_id": "t", "tool_name": "x",
         "timestamp": 1},
        {"kind": "tool_call_end", "agent_id": "b", "call_id": "t", "tool_name": "x",
         "timestamp": 2},
        {"kind": "tool_call_start", "agent_id": "a", "call_id": "u", "timestamp": 3})))
    fold = Fold()
    consume(resolve(str(events)), fold)
    disputed, plain = fold.calls["t"], fold.calls["u"]
    assert "agent" in disputed and disputed["agent"] is None
    assert disputed.as_json()["ambiguous"] == ["agent"] and "agent" in disputed.as_json()
    assert "target" not in plain and plain.get("target") is None
    assert fold.problems == [["trace.call-conflict", 2, "t"]]


def test_a_fold_no_checkpoint_reads_keeps_no_list_of_its_changes(tmp_path: Path) -> None:
    # Without --state nothing takes a delta: the keys of the calls changed since the last one
    # would be every call's, held to the end of the input (about 40 bytes a call).
    fold = folded(tmp_path, 400)
    assert len(fold.calls) > 100
    assert not fold.touched and not any(fold._changed.values())
    # Fed as a checkpoint reads it, the same fold keeps them for the delta.
    kept = checkpointed(tmp_path / "kept", 400)
    assert len(kept.touched) == len(fold.calls) == len(kept.delta()["calls"])
