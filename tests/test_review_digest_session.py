"""The trace extra found installed but broken (an import of it fails: a shared library or a
dependency of its own missing, a dependency of another version); and, at the end, a state
file whose checkpoint is not as ioa-check writes it.

``ioa-check trace`` and its history commands learn whether the extra is installed by finding
its modules, no longer by importing them (a third of a second of every invocation). Before,
a module that was found but failed to import was reported as the extra missing: exit 2 and
the command to install it. Found now, it was imported where it is first used, mid-run, and
the ImportError ended the command as an internal error: "a bug", a traceback, exit 70. It is
said again as the extra's fault, exit 2, when the first import of it fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT, run_python

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

MAS_LAB = ROOT / "examples" / "trace" / "mas-lab"
OTEL = ROOT / "examples" / "trace" / "otel"
AT = "2026-06-01T00:00:00Z"


def broken_yaml(tmp_path: Path) -> Path:
    """A folder holding a ``yaml`` package that is found but fails to import, as PyYAML does
    when the C library its build links is gone."""
    package = tmp_path / "broken" / "yaml"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        'raise ImportError("libyaml-0.so.2: cannot open shared object file")\n')
    return package.parent


def with_broken(folder: Path, argv: list[str]) -> tuple[str, str]:
    """``ioa-check`` run on ``argv`` in a fresh interpreter whose path finds ``folder``'s
    packages first: its exit status and its stderr."""
    script = (
        "import io, sys, contextlib\n"
        f"sys.path.insert(0, {str(folder)!r})\n"
        "from ioa_semantic.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    status = main({argv!r})\n"
        "print(status)\n")
    proc = run_python(script)
    return proc.stdout.decode().strip(), proc.stderr.decode()


def test_a_trace_whose_manifests_need_a_broken_yaml_says_so_and_exits_2(
        tmp_path: Path) -> None:
    status, err = with_broken(broken_yaml(tmp_path), [
        "trace", str(MAS_LAB / "run"), "--manifests", str(MAS_LAB / "manifests"),
        "--no-shapes", "--format", "json"])
    assert "Traceback" not in err and "internal error" not in err, err
    assert status == "2", err
    assert "needs the trace extra (yaml is installed but cannot be imported" in err
    assert "libyaml-0.so.2" in err


def test_a_reaudit_whose_manifests_need_a_broken_yaml_says_so_and_exits_2(
        tmp_path: Path) -> None:
    from ioa_semantic.cli.main import main

    store = tmp_path / "store"
    assert main(["trace", str(OTEL / "otlp.jsonl"), "--no-shapes", "--store", str(store),
                 "--at", AT, "--format", "json"]) == 1
    status, err = with_broken(broken_yaml(tmp_path), [
        "trace", "reaudit", str(store), "--manifests", str(OTEL / "manifests"), "--at", AT])
    assert "Traceback" not in err and "internal error" not in err, err
    assert status == "2", err
    assert "needs the trace extra (yaml is installed but cannot be imported" in err


IOA_CHECK = str(Path(sys.executable).parent / "ioa-check")


@pytest.mark.parametrize("written", [[1], ["a" * 64], ["a" * 64, 1, 2], {"sha256": "a"}, 5,
                                     "abc"])
def test_a_state_file_with_a_damaged_checkpoint_is_refused_not_a_traceback(
        tmp_path: Path, written: object) -> None:
    # A digest of a call in a --state checkpoint that is no pair nor object ioa-check writes
    # (a hand edit, a damaged disk) ended the feed in a traceback, exit 70, before and after
    # digests were held as bytes: now the state is refused, exit 2, saying what to do.
    state = tmp_path / "state.jsonl"
    args = [IOA_CHECK, "trace", str(MAS_LAB / "run"), "--no-shapes", "--format", "json",
            "--state", str(state), "--batch-size", "2"]
    first = subprocess.run(args, capture_output=True, timeout=120)
    assert first.returncode in (0, 1, 3), first.stderr
    lines = state.read_bytes().splitlines()
    edited = False
    for index, line in enumerate(lines):
        entry = json.loads(line)
        for call in entry.get("delta", {}).get("calls", []):
            if call.get("input") is not None and not edited:
                call["input"] = written
                edited = True
        lines[index] = json.dumps(entry).encode()
    assert edited
    state.write_bytes(b"\n".join(lines) + b"\n")
    again = subprocess.run(args, capture_output=True, timeout=120)
    err = again.stderr.decode()
    assert "Traceback" not in err and again.returncode == 2, err
    assert "is damaged" in err and "remove the state to start over" in err
