"""A text report's lines (reporters.lines): off a terminal, written as their text without
rich, and that text is what rich would have written; on a terminal, drawn by rich."""

from __future__ import annotations

import io
import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ioa_semantic import Checker
from ioa_semantic.reporters.check import text
from ioa_semantic.reporters.lines import Lines, Piece, styled, text_console

from support import IOA_CHECK

ROOT = Path(__file__).resolve().parents[1]
AT = "2026-06-01T00:00:00Z"
# Text a report quotes from its input: markup's brackets, backslashes, hidden characters.
_TEXT = st.text(alphabet=st.sampled_from(list("ab [/]\\#@=:\t\x1b\u202e\udcff é")), max_size=12)
_PIECES = st.lists(st.one_of(_TEXT, st.tuples(_TEXT, st.sampled_from(
    ["dim", "bold red", "green"]))), max_size=5)


def _plain(pieces: list[Piece], surrogates: bool) -> str:
    stream = io.StringIO()
    out = Lines(stream, surrogates=surrogates)
    assert out.console is None  # a StringIO is no terminal
    out.line(*pieces)
    return stream.getvalue()


def _by_rich(pieces: list[Piece], surrogates: bool) -> str:
    stream = io.StringIO()
    Lines(stream, surrogates=surrogates, console=text_console(stream)).line(*pieces)
    return stream.getvalue()


@given(_PIECES, st.booleans())
@example(["a\\", ("[b]", "dim")], False)
@example(["\\[x]", ("c\\\\", "green"), "[/]"], True)
def test_a_line_off_a_terminal_is_what_rich_would_write(pieces: list[Piece],
                                                       surrogates: bool) -> None:
    assert _plain(pieces, surrogates) == _by_rich(pieces, surrogates)


def _decisions() -> list[object]:
    checker = Checker("cs-translation")
    at = datetime(2026, 6, 1, tzinfo=UTC)
    named = {"envelope-6.2.jsonld": "a [bold]name[/] \\ of\x1b[31m a file",
             "legal-contract.jsonld": "legal-contract.jsonld",
             "legal-contract-unbound-terms.jsonld": "unbound.jsonld"}
    return [checker.check((ROOT / "examples" / name).read_bytes(), source=source, at=at)
            for name, source in named.items()]


def test_a_check_report_off_a_terminal_is_what_rich_would_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    decisions = _decisions()
    plain, drawn = io.StringIO(), io.StringIO()
    text(decisions, plain)  # type: ignore[arg-type]
    assert "[bold]name[/] \\ of<U+001B>[31m" in plain.getvalue()

    import ioa_semantic.reporters.check as check

    class ByRich(Lines):
        def __init__(self, stream: io.StringIO, **kw: bool) -> None:
            super().__init__(stream, console=text_console(stream), **kw)

    monkeypatch.setattr(check, "Lines", ByRich)
    text(decisions, drawn)  # type: ignore[arg-type]
    assert plain.getvalue() == drawn.getvalue()
    assert plain.getvalue().count("\n") > 10


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, False), ({"FORCE_COLOR": "1"}, True), ({"FORCE_COLOR": ""}, False),
    ({"TTY_COMPATIBLE": "1"}, True), ({"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}, False)])
def test_styled_follows_riches_rules(monkeypatch: pytest.MonkeyPatch, environ: dict[str, str],
                                     expected: bool) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    stream = io.StringIO()
    assert styled(stream) is expected
    assert text_console(stream).is_terminal is expected  # rich's own answer


def test_a_report_coloured_on_request_reads_as_the_plain_one(tmp_path: Path) -> None:
    """FORCE_COLOR asks rich for colour on a pipe: the same words, in colour."""
    args = [IOA_CHECK, str(ROOT / "examples" / "legal-contract.jsonld"), "--profile",
            "cs-translation", "--at", AT]
    plain_env = {k: v for k, v in os.environ.items()
                 if k not in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE")}
    plain = subprocess.run(args, capture_output=True, env=plain_env, timeout=60, cwd=tmp_path)
    coloured = subprocess.run(args, capture_output=True, timeout=60, cwd=tmp_path,
                              env={**plain_env, "FORCE_COLOR": "1"})
    assert b"\x1b[" in coloured.stdout and b"\x1b[" not in plain.stdout
    assert re.sub(rb"\x1b\[[0-9;]*m", b"", coloured.stdout) == plain.stdout
    assert plain.returncode == coloured.returncode == 1
