"""A trace state edited or damaged is refused (exit 2, "damaged"), never half read: a review
changed the type of one or two values of real checkpoints and found a fifth of them ending
in a traceback later (a call's line as a float, a counter as text, a problem of an unknown
code...), and the compiled build refusing where the pure one ran on. Each checkpoint's
members are now checked for the types the fold writes (trace/checkpoints.py) before the fold
is restored from it."""

from __future__ import annotations

import contextlib
import io
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

from ioa_semantic.cli.main import main
from ioa_semantic.trace import checkpoints

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "trace"
INPUTS = {"mas-lab": EXAMPLES / "mas-lab" / "run" / "traces" / "events.jsonl",
          "otlp": EXAMPLES / "otel" / "otlp.jsonl",
          "mas-lab-spans": EXAMPLES / "otel" / "maslab-spans.jsonl"}


def _run(*argv: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            return main(list(argv))
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 2


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _nodes(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _nodes(inner, (*path, index))


def _other(value: Any, rng: random.Random) -> Any:
    """A value of another type than ``value`` (or the same type, changed)."""
    if isinstance(value, bool):
        return rng.choice([1, 0, "true", None])
    if isinstance(value, int):
        return rng.choice([str(value), float(value), None, True, [value], -value - 1, 1 << 64])
    if isinstance(value, float):
        return rng.choice([str(value), int(value), None])
    if isinstance(value, str):
        return rng.choice([None, 1, [value], {value: 1}, "", value + "x", True, "-0.0"])
    if isinstance(value, list):
        return rng.choice([None, {}, "x", [None, *value], value[1:], [[1, 2, 3, 4]]])
    if isinstance(value, dict):
        return rng.choice([None, [], "x", list(value.items()), {**value, "zz": 1}])
    return rng.choice([0, "", [], {}])


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_a_checkpoint_with_a_value_of_another_type_is_refused_or_read(tmp_path: Path,
                                                                       name: str) -> None:
    rng = random.Random(f"state-{name}")
    events = INPUTS[name].read_bytes().splitlines(keepends=True)
    source = tmp_path / "trace.jsonl"
    source.write_bytes(b"".join(events[: max(1, len(events) * 2 // 3)]))
    state = tmp_path / "base.state"
    assert _run("trace", str(source), "--no-shapes", "--state", str(state),
                "--batch-size", "1", "--include-content") in (0, 1, 3, 4)
    source.write_bytes(b"".join(events))  # appended to: the resume reads on
    lines = state.read_text().splitlines()
    assert len(lines) >= 2
    outcomes: dict[int, int] = {}
    for attempt in range(60):
        index = rng.randrange(1, len(lines))
        record = json.loads(lines[index])
        path, old = rng.choice(list(_nodes(record))[1:])
        holder = record
        for step in path[:-1]:
            holder = holder[step]
        if rng.random() < 0.1 and isinstance(holder, dict):
            del holder[path[-1]]
        else:
            holder[path[-1]] = _other(old, rng)
        damaged = tmp_path / f"damaged-{attempt}.state"
        damaged.write_text("\n".join([*lines[:index], json.dumps(record), *lines[index + 1:]])
                           + "\n")
        status = _run("trace", str(source), "--no-shapes", "--state", str(damaged),
                      "--include-content")
        assert status in (0, 1, 2, 3, 4), (path, old, holder)
        outcomes[status] = outcomes.get(status, 0) + 1
    assert outcomes.get(2, 0) >= 30, outcomes  # most edits are refused as damage


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_every_checkpoint_the_fold_writes_passes_the_checks(tmp_path: Path, name: str) -> None:
    state = tmp_path / "s.state"
    assert _run("trace", str(INPUTS[name]), "--no-shapes", "--state", str(state),
                "--batch-size", "1", "--include-content") in (0, 1, 3, 4)
    lines = state.read_text().splitlines()[1:]
    assert lines and [checkpoints.problem(json.loads(line)) for line in lines] == [
        None] * len(lines)


def test_a_call_of_the_wrong_type_is_named() -> None:
    position = {"input": "x", "seq": 1, "offset": 10, "sha256": "0" * 64, "delta": {
        "calls": [{"key": "a", "id": "a", "cls": "tool", "first": 1, "startLine": 1,
                   "start": "1800000000.5", "agent": None, "target": "t", "parent": "p",
                   "input": ["0" * 64, 3], "tokens": {"prompt": 3}}],
        "open": {}, "events": 1, "kinds": {"tool_call_start": 1}, "unknown": {},
        "runIds": {"run_id": "r"}, "problems": [["trace.call-conflict", 1, "a"]],
        "records": [], "format": "events", "repeats": 0, "maslab": [], "otherRuns": {}}}
    assert checkpoints.problem(position) is None
    position["delta"]["calls"][0]["startLine"] = 1.0  # type: ignore[index]
    assert checkpoints.problem(position) == "a call's startLine"
