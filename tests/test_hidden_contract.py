"""The contract as an outside tester reads it: the installed ``ioa-check``, run from a folder
outside the repository, with the files a hidden case would bring (a profile of its own, a
registration, a mas-lab run folder written as the trajectory schema documents it).

Each test names the sentence of ``CONTRACT.md`` (or of the seeds) it holds the product to.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support import AT, EXAMPLES, IOA_CHECK, ROOT, envelope_62, registration_63

PROFILE = (ROOT / "ioa_semantic" / "data" / "profiles" / "cs-translation.ttl").read_text()
SCHEMES = '    iop:allowedScheme "https", "http", "urn" ;'


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IOA_CHECK, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NO_COLOR": "1"})


def _results(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def _codes(result: dict[str, Any]) -> list[str]:
    return [reason["code"] for reason in result["reasons"]]


# --- profiles are read strictly -----------------------------------------------------------


@pytest.mark.parametrize("schemes", ['"https:", "http:", "urn:"', '""', '"ht tp"', '"1https"'])
def test_an_allowed_scheme_that_is_no_scheme_is_a_configuration_error(
        tmp_path: Path, schemes: str) -> None:
    """"A value of the wrong kind ... [is a] configuration error (exit 2) naming the term":
    an allowed scheme written with its colon (or blank) matches no IRI, so every envelope
    would be invalid (17 jsonld.scheme-not-allowed reasons for the 6.2 envelope) for a
    reason that lies in the receiver's own profile."""
    assert SCHEMES in PROFILE
    (tmp_path / "p.ttl").write_text(PROFILE.replace(SCHEMES, f"    iop:allowedScheme {schemes} ;"))
    (tmp_path / "e.jsonld").write_text(json.dumps(envelope_62()))

    proc = _run(["e.jsonld", "--profile", "p.ttl", "--at", AT, "--format", "json"], tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout == ""
    assert "iop:allowedScheme" in proc.stderr and "line " in proc.stderr, proc.stderr

    lint = _run(["lint", "p.ttl"], tmp_path)
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert "iop:allowedScheme" in lint.stdout + lint.stderr


def test_allowed_schemes_are_names_in_any_case(tmp_path: Path) -> None:
    """The other side of the rule above: RFC 3986 schemes are case-insensitive names."""
    (tmp_path / "p.ttl").write_text(PROFILE.replace(
        SCHEMES, '    iop:allowedScheme "HTTPS", "Http", "urn", "did+key.v-1" ;'))
    (tmp_path / "e.jsonld").write_text(json.dumps(envelope_62()))
    proc = _run(["e.jsonld", "--profile", "p.ttl", "--at", AT, "--format", "json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _results(proc)[0]["verdict"] == "compatible"


# --- --capability ------------------------------------------------------------------------


@pytest.mark.parametrize(("named", "absent"), [("ontologyId", "ontologyVersion"),
                                               ("ontologyVersion", "ontologyId")])
def test_a_capability_naming_half_an_ontology_pair_says_which_half_is_missing(
        tmp_path: Path, named: str, absent: str) -> None:
    """"An unreadable or malformed --capability file is a configuration error (exit 2)":
    a registration with an ontologyId but no version (or the reverse) is one, and the
    message names the missing half, not the profile (which accepts exactly one ontology,
    so blaming it sent the operator the wrong way)."""
    registration = registration_63()
    registration["@context"]["ontologyId"] = {"@id": "ioa:ontologyId", "@type": "@id"}
    registration["@context"]["ontologyVersion"] = "ioa:ontologyVersion"
    registration[named] = {"ontologyId": "https://example.org/onto/agent-core",
                           "ontologyVersion": "1.0"}[named]
    (tmp_path / "cap.jsonld").write_text(json.dumps(registration))
    (tmp_path / "e.jsonld").write_text(json.dumps(envelope_62()))

    proc = _run(["e.jsonld", "--profile", "cs-translation", "--capability", "cap.jsonld",
                 "--at", AT, "--format", "json"], tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"names an {named} but no {absent}" in proc.stderr, proc.stderr
    assert "does not accept exactly one ontology" not in proc.stderr
