"""What the command writes is UTF-8 (issue 35): a file name whose bytes are not UTF-8 is named
in every format with the escape ``\\udcXX`` (in JSON, a string ``json.loads`` reads back to
the name ``os.fsencode`` gives the bytes of), never as its raw bytes; a ``--param`` that is
not text is a usage error. Runs the installed command, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IOA_CHECK = str(Path(sys.executable).parent / "ioa-check")
NAME = b"env\xff\xfe.jsonld"
AT = "2026-06-01T00:00:00Z"

pytestmark = pytest.mark.skipif(sys.platform == "darwin", reason="file names are UTF-8 there")


def _run(args: list[bytes | str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([IOA_CHECK, *args], cwd=cwd, capture_output=True, timeout=120,
                          check=False)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / os.fsdecode(NAME)).write_bytes((ROOT / "examples" / "envelope-6.2.jsonld").read_bytes())
    (tmp_path / "reg.jsonl").write_bytes(b"")
    return tmp_path


def _utf8_json_lines(data: bytes) -> list[object]:
    text = data.decode("utf-8")  # raises if a raw byte got through
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_check_names_an_undecodable_file_in_utf8_json_and_text(folder: Path) -> None:
    as_json = _run([NAME, "--profile", "cs-translation", "--at", AT, "--format", "json"], folder)
    (result,) = _utf8_json_lines(as_json.stdout)
    assert isinstance(result, dict) and os.fsencode(result["source"]) == NAME
    as_text = _run([NAME, "--profile", "cs-translation", "--at", AT], folder)
    assert "env\\udcff\\udcfe.jsonld" in as_text.stdout.decode("utf-8")


@pytest.mark.parametrize("fmt", ["json", "text", "sarif", "html"])
def test_an_audit_names_an_undecodable_file_in_every_format(folder: Path, fmt: str) -> None:
    (folder / os.fsdecode(b"reg\xff.json")).write_bytes(
        (ROOT / "examples" / "registration-6.3.jsonld").read_bytes())
    out = _run(["audit", ".", "--profile", "cs-translation", "--format", fmt], folder)
    assert out.returncode in (0, 1), out.stderr
    text = out.stdout.decode("utf-8")
    # The envelope is no registration: the audit reports it, by its name (the HTML report
    # shows a hidden character as its code point, <U+DCFF>; SARIF's uri, a URI reference,
    # percent-encodes the name's bytes).
    named = {"html": "U+DCFF", "sarif": "env%FF%FE.jsonld"}.get(fmt, "env\\udcff\\udcfe.jsonld")
    assert named in text
    written = _run(["audit", ".", "--profile", "cs-translation", "--format", fmt,
                    "--output", f"report.{fmt}"], folder)
    assert written.returncode in (0, 1), written.stderr
    assert named in (folder / f"report.{fmt}").read_bytes().decode("utf-8")


def test_a_param_that_is_not_text_is_a_usage_error(folder: Path) -> None:
    run = _run([NAME, "--profile", "cs-translation", "--at", AT, "--param", b"x=\xff",
                "--format", "json"], folder)
    assert run.returncode == 2 and run.stdout == b""
    assert "is not text" in run.stderr.decode("utf-8")
