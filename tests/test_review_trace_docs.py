"""What the trace audit's pages promise, held to the installed command where it does otherwise.

Each test is a claim of docs/tutorials/traces.md (once the README's "The trace audit") or
docs/trace.md that the command breaks, run through real subprocesses on the shipped
OpenTelemetry example.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support import EXAMPLES, IOA_CHECK

pytest.importorskip("oxp_ontology", reason="the trace extra is not installed")

OTEL = EXAMPLES / "trace" / "otel"
AT = "2026-12-02T00:00:00Z"


def ioa(args: list[Any], cwd: Path, env: dict[Any, Any] | None = None,
        ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([IOA_CHECK, *map(str, args)], cwd=cwd, capture_output=True,
                          timeout=300, env=env)


def verdicts(store: str, cwd: Path) -> int:
    proc = ioa(["trace", "query", store, "runs"], cwd)
    assert proc.returncode == 0, proc.stderr.decode()
    (row,) = [json.loads(line) for line in proc.stdout.splitlines()]
    count: int = row["verdicts"]
    return count


@pytest.fixture
def incomplete_manifests(tmp_path: Path) -> Path:
    """The example's manifests with one agent manifest missing: mas.yaml names
    agents/booking_agent.yaml, which cannot be read (capability.declaration-unavailable)."""
    shutil.copy(OTEL / "otlp.jsonl", tmp_path / "otlp.jsonl")
    shutil.copytree(OTEL / "manifests", tmp_path / "man")
    (tmp_path / "man" / "agents" / "booking_agent.yaml").unlink()
    return tmp_path


def test_the_same_manifest_folder_spelled_otherwise_is_not_judged_again(
        incomplete_manifests: Path) -> None:
    # docs/trace.md, "--store DIR": a run already stored whose current verdict was judged
    # against the same declarations (byte for byte) is not judged again, "feeding the same
    # inputs twice writes nothing", and "`man` and `./man/` are one revision". With a
    # manifest that cannot be read, its path as spelled enters the declarations' digest, so
    # `man` then `./man/` (or the repository's folder then another one) adds a verdict.
    cwd = incomplete_manifests
    for manifests in ("man", "./man/", cwd / "man"):
        proc = ioa(["trace", "otlp.jsonl", "--manifests", manifests, "--store", "s",
                    "--no-shapes", "--at", AT], cwd)
        assert proc.returncode == 3, proc.stderr.decode()
    assert verdicts("s", cwd) == 1


def test_reaudit_against_the_same_manifest_folder_spelled_otherwise_adds_no_verdict(
        incomplete_manifests: Path) -> None:
    # docs/trace.md, "Revalidation": a run whose current verdict was judged against exactly
    # these declarations gets no second one, so an interrupted reaudit is simply run again.
    cwd = incomplete_manifests
    proc = ioa(["trace", "otlp.jsonl", "--manifests", "man", "--store", "s", "--no-shapes",
                "--at", AT], cwd)
    assert proc.returncode == 3, proc.stderr.decode()
    for manifests in ("./man/", cwd / "man"):
        proc = ioa(["trace", "reaudit", "s", "--manifests", manifests, "--at", AT], cwd)
        assert proc.returncode == 3, proc.stderr.decode()
    assert verdicts("s", cwd) == 1


@pytest.mark.parametrize("command", ["trace", "reaudit"])
def test_an_opaque_key_of_any_bytes_in_the_environment_is_no_traceback(
        tmp_path: Path, command: str) -> None:
    # docs/trace.md, "Privacy": the key comes from --opaque-key FILE or $IOA_CHECK_OPAQUE_KEY
    # (a file's key is any bytes). A variable holding bytes that are not UTF-8 (a key made
    # with `head -c 32 /dev/urandom`) ends in a traceback and exit 70, in both commands:
    # bad input gets a verdict or a usage error, never a traceback.
    shutil.copy(OTEL / "otlp.jsonl", tmp_path / "otlp.jsonl")
    env = {**os.environb, b"IOA_CHECK_OPAQUE_KEY": b"k\xff\xfe-key" * 3}
    if command == "reaudit":
        (tmp_path / "key").write_bytes(b"k\xff\xfe-key" * 3)
        proc = ioa(["trace", "otlp.jsonl", "--opaque-ids", "--opaque-key", "key", "--store",
                    "s", "--no-shapes", "--at", AT], tmp_path)
        assert proc.returncode == 1, proc.stderr.decode()
        args: list[Any] = ["trace", "reaudit", "s", "--manifests", OTEL / "manifests",
                           "--at", AT]
    else:
        args = ["trace", "otlp.jsonl", "--opaque-ids", "--no-shapes"]
    proc = ioa(args, tmp_path, env)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
    assert proc.returncode in (1, 2), proc.stderr.decode(errors="replace")


def test_query_list_names_each_query_in_a_whole_sentence(tmp_path: Path) -> None:
    # docs/tutorials/traces.md: "`ioa-check trace query --list` names the shipped queries". The summary of
    # verdict_changes is cut inside its parenthesis: "... (run ids as the verdicts name them".
    proc = ioa(["trace", "query", "--list"], tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 6
    for line in lines:
        assert line.count("(") == line.count(")"), line
