"""The pre-commit hooks users put in their own repositories (.pre-commit-hooks.yaml), run by
the real pre-commit on a sample repository: it installs this repository at its committed
HEAD into an environment of its own, as a user's pre-commit would, and runs each hook on the
files of its kind; a clean repository passes, and an incompatible envelope or a broken
profile fails the commit naming the file. (Slow: pre-commit builds the package and installs
its dependencies from the package index.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT

pytestmark = pytest.mark.slow

AT = "2026-12-02T00:00:00Z"
DATA = ROOT / "ioa_semantic" / "data"


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True,
                          text=True, timeout=120).stdout.strip()


def _config(head: str) -> str:
    return f"""repos:
  - repo: {ROOT}
    rev: {head}
    hooks:
      - id: ioa-check-envelopes
        args: [--profile, cs-translation, --at, "{AT}"]
        files: ^envelopes/
      - id: ioa-check-registrations
        args: [--profile, cs-translation, --at, "{AT}"]
        files: ^registrations/
      - id: ioa-check-profiles
        files: ^profiles/
      - id: ioa-check-artifacts
        files: ^artifacts/
"""


def _run(sample: Path, home: Path) -> subprocess.CompletedProcess[str]:
    # The hooks' environment installs the package as pre-commit does (pip install of the
    # repository); the pure build, which answers as the compiled one does, spares the test
    # the compiled build's minutes (IOA_EXPECT_BUILD is the suite's install's, not this one's).
    environment = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never",
                   "IOA_SEMANTIC_BUILD": "pure"}
    environment.pop("IOA_EXPECT_BUILD", None)
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"],
                          cwd=sample, capture_output=True, text=True, timeout=1800,
                          env=environment)


def test_the_hooks_pass_a_clean_repository_and_fail_a_bad_file(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    head = _git(ROOT, "rev-parse", "HEAD")
    shown = _git(ROOT, "show", f"{head}:.pre-commit-hooks.yaml")
    assert "ioa-check-envelopes" in shown, "the hooks file is not committed at HEAD"
    sample = tmp_path / "sample"
    for folder in ("envelopes", "registrations", "profiles", "artifacts"):
        (sample / folder).mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "envelope-6.2.jsonld", sample / "envelopes")
    shutil.copy(ROOT / "examples" / "registration-6.3.jsonld", sample / "registrations")
    shutil.copy(DATA / "profiles" / "cs-translation.ttl", sample / "profiles")
    shutil.copy(DATA / "alignments" / "cs-doc-v1.json", sample / "artifacts")
    (sample / ".pre-commit-config.yaml").write_text(_config(head))
    _git(sample, "init", "-q")
    _git(sample, "add", ".")
    home = tmp_path / "pre-commit-home"

    clean = _run(sample, home)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    for name in ("SemanticProfile envelopes", "capability registrations", "domain profiles",
                 "alignment artifacts"):
        assert name in clean.stdout, clean.stdout
    assert "Passed" in clean.stdout and "Failed" not in clean.stdout

    # An envelope the profile does not permit, and a profile that is no Turtle.
    shutil.copy(ROOT / "examples" / "legal-contract.jsonld", sample / "envelopes")
    (sample / "profiles" / "broken.ttl").write_text("@prefix : <urn:x#> .\n:a :b \n")
    _git(sample, "add", ".")
    failed = _run(sample, home)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "INCOMPATIBLE envelopes/legal-contract.jsonld" in failed.stdout, failed.stdout
    assert "profiles/broken.ttl" in failed.stdout, failed.stdout
    lines = [line for line in failed.stdout.splitlines() if line.startswith("ioa-check")]
    assert sum("Failed" in line for line in lines) == 2, lines
