"""A trace state's checkpoints carry their checks, chained from its header (state version 6).

A review edited a tool's name in a state (``sed``) after a run that had found an undeclared
tool: the resumed run restored the edited fold, and the same trace, still holding the tool,
was judged COMPATIBLE (exit 0). Every member had the type the fold writes, which was all a
checkpoint was held to. Now an edited, moved or removed checkpoint is refused (exit 2,
"damaged"); only the last ones cut off, as a kill leaves a state, resume (from there).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support import IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "trace" / "mas-lab"


def _trace(cwd: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IOA_CHECK, "trace", "run", "--manifests", str(EXAMPLE / "manifests"),
                           "--no-shapes", "--state", "st", "--batch-size", "2", *more],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture
def run_with_a_stranger(tmp_path: Path) -> Path:
    """The example run with one of its tool calls made a tool nobody declared, judged once
    with a state of many checkpoints."""
    shutil.copytree(EXAMPLE / "run", tmp_path / "run")
    events = tmp_path / "run" / "traces" / "events.jsonl"
    lines = events.read_text().splitlines()
    named = [i for i, line in enumerate(lines) if '"tool_name"' in line]
    tool = json.loads(lines[named[0]])["tool_name"]
    for i in named:
        if json.loads(lines[i])["tool_name"] == tool:
            lines[i] = lines[i].replace(json.dumps(tool), '"exfiltrate_db"')
    events.write_text("\n".join(lines) + "\n")
    first = _trace(tmp_path)
    assert first.returncode == 1, first.stderr  # the stranger: INCOMPATIBLE
    assert (tmp_path / "st").read_text().count("\n") > 3
    return tmp_path


def test_a_state_read_again_resumes_to_the_same_verdict(run_with_a_stranger: Path) -> None:
    again = _trace(run_with_a_stranger)
    assert again.returncode == 1, again.stderr


def test_an_edited_checkpoint_is_refused_not_restored(run_with_a_stranger: Path) -> None:
    state = run_with_a_stranger / "st"
    text = state.read_text()
    assert "exfiltrate_db" in text
    state.write_text(text.replace("exfiltrate_db", "lookup_schedule"))
    edited = _trace(run_with_a_stranger)
    assert edited.returncode == 2, edited.stderr
    assert "is damaged" in edited.stderr and "its check is not that of its content" in (
        edited.stderr)
    assert state.read_text() == text.replace("exfiltrate_db", "lookup_schedule")


def test_a_checkpoint_left_out_is_refused(run_with_a_stranger: Path) -> None:
    state = run_with_a_stranger / "st"
    lines = state.read_text().splitlines(keepends=True)
    state.write_text("".join(lines[:2] + lines[3:]))
    assert _trace(run_with_a_stranger).returncode == 2


def test_the_last_checkpoints_cut_off_resume_from_the_one_before(
        run_with_a_stranger: Path) -> None:
    state = run_with_a_stranger / "st"
    lines = state.read_text().splitlines(keepends=True)
    state.write_text("".join(lines[:3]))
    again = _trace(run_with_a_stranger)
    assert again.returncode == 1, again.stderr
