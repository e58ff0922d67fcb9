"""A JSON number may write any exponent; Python's Decimal holds exponents of 18 digits. A
number past them (0e1000000000000000000, 1e-2000000000000000000) raised in the intake's exact
reading of numbers and ended `ioa-check check` and `ioa-check trace` in a traceback (a review
of the trace reader's fast path). It is kept as written, an exact number, like any number
whose float is not its value."""

from __future__ import annotations

import subprocess

import pytest

from ioa_semantic.pipeline.intake import ExactNumber, Limits, number_text, parse

from support import IOA_CHECK

PAST = ["0e1000000000000000000", "-0e1000000000000000000", "1e-2000000000000000000",
        "1.5e-999999999999999999999", "0e999999999999999999999999999999"]


@pytest.mark.parametrize("text", PAST)
def test_a_number_past_decimals_exponents_is_read_as_written(text: str) -> None:
    intake = parse(f'{{"a":{text}}}'.encode(), Limits())
    assert intake.ok, intake.findings
    value = intake.document["a"]
    assert isinstance(value, ExactNumber) and value.text == text
    assert number_text(value) == text  # no decimal form of it: kept as written


@pytest.mark.parametrize("text", PAST[:2])
def test_a_check_of_such_a_number_gives_a_verdict(tmp_path: object, text: str) -> None:
    proc = subprocess.run([IOA_CHECK, "-", "--profile", "cs-translation", "--at",
                           "2026-06-01T00:00:00Z"], input=f'{{"a":{text}}}'.encode(),
                          capture_output=True, timeout=60)
    assert proc.returncode in (1, 3, 4), proc.stderr
    assert b"Traceback" not in proc.stderr


@pytest.mark.parametrize("text", ["1e400", "-1e400", "1e-400", "0.1000000000000000000001",
                                  "1.10", "0e1000000000000000000"])
def test_a_number_kept_with_its_text_reaches_the_schemas_as_a_verdict(text: str) -> None:
    """The compact-form schemas' validator (jsonschema-rs) reads JSON's own types only: a
    number kept with its text (an ExactNumber) ended the check in a traceback wherever the
    schemas saw it. Each of these is a verdict; in an envelope's own field of another type it
    is that field's schema finding."""
    proc = subprocess.run([IOA_CHECK, "-", "--profile", "cs-translation", "--at",
                           "2026-06-01T00:00:00Z", "--format", "json"],
                          input=f'{{"@context":{text},"a":[{text}]}}'.encode(),
                          capture_output=True, timeout=60)
    assert proc.returncode == 4 and b"Traceback" not in proc.stderr, proc.stderr
    assert b'"verdict": "invalid"' in proc.stdout
